"""aiokafka against a FakeCluster run with ``async with`` on the same asyncio loop.

That the cluster serves from inside the test's own asyncio loop (anyio's pytest plugin,
``anyio_backend = "asyncio"``) is part of what these tests prove. No consumer groups yet:
consumers read with assign() + seek, group_id=None, and never commit.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import anyio
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka import codec as aiokafka_codec  # noqa: E402

from fakebroker.cluster import FakeCluster  # noqa: E402
from fakebroker.protocol import records as rec  # noqa: E402

from .conftest import assert_dropped_after_handling, expected_records  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.anyio]

N = 300
PARTITIONS = 6
TIMEOUT_S = 15.0
CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODEC_AVAILABLE = {
    "gzip": aiokafka_codec.has_gzip(),
    "snappy": aiokafka_codec.has_snappy(),
    "lz4": aiokafka_codec.has_lz4(),
    "zstd": aiokafka_codec.has_zstd(),
}
COMMON = {"request_timeout_ms": 10_000, "retry_backoff_ms": 50, "metadata_max_age_ms": 5_000}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _producer(cluster, **config) -> AIOKafkaProducer:
    settings = dict(COMMON, bootstrap_servers=cluster.bootstrap_servers, linger_ms=5)
    settings.update(config)
    return AIOKafkaProducer(**settings)


def _consumer(cluster, **config) -> AIOKafkaConsumer:
    settings = dict(
        COMMON,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    settings.update(config)
    return AIOKafkaConsumer(**settings)


async def _read_all(consumer: AIOKafkaConsumer, want: int, timeout_s: float = TIMEOUT_S) -> list:
    """getmany() until ``want`` records arrived or the deadline passes (then returns what it has)."""
    got: list = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        for _tp, batch in (await consumer.getmany(timeout_ms=200)).items():
            got.extend(batch)
    return got


async def _produce_plan(producer: AIOKafkaProducer, topic: str, n: int, partitions: int) -> list:
    futures = [
        await producer.send(topic, key=f"key-{i}".encode(), value=f"value-{i}".encode(), partition=i % partitions)
        for i in range(n)
    ]
    return await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT_S)


def _by_partition(messages) -> dict[int, list[tuple[int, bytes, bytes]]]:
    out: dict[int, list[tuple[int, bytes, bytes]]] = {}
    for m in messages:
        out.setdefault(m.partition, []).append((m.offset, m.key, m.value))
    return out


def _stored_compressions(cluster, topic: str) -> set[int]:
    out = set()
    for partition in cluster.state.topics[topic].partitions:
        for stored in partition.log.batches:
            out.update(h.compression for h in rec.iter_batch_headers(stored.data))
    return out


def _assert_plan_read_back(cluster, topic: str, n: int, partitions: int, metadata: list, messages: list) -> None:
    expected = expected_records(n, partitions)
    for i, md in enumerate(metadata):
        assert (md.topic, md.partition, md.offset) == (topic, i % partitions, i // partitions)
    assert len(messages) == n
    got = _by_partition(messages)
    for p in range(partitions):
        assert got.get(p, []) == [(o, k, v) for o, (k, v) in enumerate(expected[p])], f"partition {p}"
    stored = cluster.records(topic)
    assert stored == [(p, o, k, v) for p in range(partitions) for o, (k, v) in enumerate(expected[p])]
    for p in range(partitions):
        assert cluster.offsets(topic, p) == (0, len(expected[p]))


def _no_broker_errors(cluster) -> None:
    assert not [e for e in cluster.events if e.kind in ("handler_error", "produce_rejected")]


async def _consume_plan(cluster, topic: str, n: int, partitions: int) -> list:
    consumer = _consumer(cluster)
    await asyncio.wait_for(consumer.start(), TIMEOUT_S)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning()
        messages = await _read_all(consumer, n)
        # Nothing more arrives.
        assert await _read_all(consumer, 1, timeout_s=0.5) == []
        positions = {tp: await consumer.position(tp) for tp in tps}
        expected = expected_records(n, partitions)
        assert positions == {tp: len(expected[tp.partition]) for tp in tps}
        return messages
    finally:
        await consumer.stop()


async def test_produce_and_read_back_300():
    with anyio.fail_after(45):
        async with FakeCluster(brokers=3, topics={"orders": PARTITIONS}) as cluster:
            producer = _producer(cluster, acks=1)
            await asyncio.wait_for(producer.start(), TIMEOUT_S)
            try:
                metadata = await _produce_plan(producer, "orders", N, PARTITIONS)
            finally:
                await producer.stop()
            messages = await _consume_plan(cluster, "orders", N, PARTITIONS)
            _assert_plan_read_back(cluster, "orders", N, PARTITIONS, metadata, messages)
            _no_broker_errors(cluster)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
async def test_compression_round_trip(codec):
    if not CODEC_AVAILABLE[codec]:
        pytest.fail(f"aiokafka has no {codec} codec installed: it uses cramjam, a core dependency")
    topic = f"codec-{codec}"
    n = 120
    with anyio.fail_after(45):
        async with FakeCluster(brokers=3, topics={topic: 3}) as cluster:
            producer = _producer(cluster, acks="all", compression_type=codec, linger_ms=50, max_batch_size=64 * 1024)
            await asyncio.wait_for(producer.start(), TIMEOUT_S)
            try:
                metadata = await _produce_plan(producer, topic, n, 3)
            finally:
                await producer.stop()
            assert _stored_compressions(cluster, topic) == {CODEC_IDS[codec]}
            messages = await _consume_plan(cluster, topic, n, 3)
            _assert_plan_read_back(cluster, topic, n, 3, metadata, messages)
            _no_broker_errors(cluster)


async def test_idempotent_producer_exactly_once():
    with anyio.fail_after(45):
        async with FakeCluster(brokers=3, topics={"orders": PARTITIONS}) as cluster:
            producer = _producer(cluster, acks="all", enable_idempotence=True, linger_ms=1, max_batch_size=256)
            await asyncio.wait_for(producer.start(), TIMEOUT_S)
            try:
                metadata = await _produce_plan(producer, "orders", N, PARTITIONS)
            finally:
                await producer.stop()

            producer_ids = [e for e in cluster.events if e.kind == "producer_id"]
            assert len(producer_ids) == 1, producer_ids
            pid = producer_ids[0].details["producer_id"]
            assert pid >= 0 and producer_ids[0].details["transactional_id"] is None
            for partition in cluster.state.topics["orders"].partitions:
                next_seq = 0
                for stored in partition.log.batches:
                    for h in rec.iter_batch_headers(stored.data):
                        assert h.producer_id == pid
                        assert h.base_sequence == next_seq
                        next_seq += h.last_offset_delta + 1
                assert next_seq == N // PARTITIONS

            messages = await _consume_plan(cluster, "orders", N, PARTITIONS)
            _assert_plan_read_back(cluster, "orders", N, PARTITIONS, metadata, messages)
            _no_broker_errors(cluster)


async def test_idempotent_producer_retries_are_deduplicated():
    """The broker appends the first produce requests but drops their connections instead of
    answering: the producer resends those batches with the same sequences and the broker must
    answer them as duplicates, so every record is stored exactly once."""
    with anyio.fail_after(45):
        async with FakeCluster(brokers=3, topics={"orders": PARTITIONS}) as cluster:
            rule = cluster.faults.add(api="Produce", action="drop_after", times=3)
            producer = _producer(cluster, acks="all", enable_idempotence=True, linger_ms=1, max_batch_size=256)
            await asyncio.wait_for(producer.start(), TIMEOUT_S)
            try:
                metadata = await _produce_plan(producer, "orders", N, PARTITIONS)
            finally:
                await producer.stop()
            assert_dropped_after_handling(cluster, rule, 3)
            # Resent batches were answered from the producer state, not appended again.
            expected = expected_records(N, PARTITIONS)
            assert cluster.records("orders") == [
                (p, o, k, v) for p in range(PARTITIONS) for o, (k, v) in enumerate(expected[p])
            ]
            messages = await _consume_plan(cluster, "orders", N, PARTITIONS)
            _assert_plan_read_back(cluster, "orders", N, PARTITIONS, metadata, messages)


async def test_admin():
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    topic = f"admin-{uuid.uuid4().hex[:8]}"
    with anyio.fail_after(45):
        async with FakeCluster(brokers=3, topics={"orders": PARTITIONS}) as cluster:
            admin = AIOKafkaAdminClient(
                bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000, retry_backoff_ms=50
            )
            await asyncio.wait_for(admin.start(), TIMEOUT_S)
            try:
                # create_topics with a config
                response = await admin.create_topics(
                    [
                        NewTopic(
                            topic,
                            num_partitions=2,
                            replication_factor=1,
                            topic_configs={"retention.ms": "3600000", "cleanup.policy": "delete"},
                        )
                    ],
                    timeout_ms=5_000,
                )
                [(name, code, *_)] = response.topic_errors
                assert (name, code) == (topic, 0)
                assert cluster.topics()[topic] == 2
                assert topic in await admin.list_topics()

                # create_partitions: 2 -> 4
                response = await admin.create_partitions({topic: NewPartitions(4)}, timeout_ms=5_000)
                assert [(t, c) for t, c, *_ in response.topic_errors] == [(topic, 0)]
                assert cluster.topics()[topic] == 4
                [described] = await admin.describe_topics([topic])
                assert sorted(p["partition"] for p in described["partitions"]) == [0, 1, 2, 3]

                # describe_configs: all of the topic's entries, and a chosen one
                [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
                [resource] = response.to_object()["resources"]
                assert (resource["error_code"], resource["resource_name"]) == (0, topic)
                entries = {e["config_names"]: e for e in resource["config_entries"]}
                assert entries["retention.ms"]["config_value"] == "3600000"
                assert entries["cleanup.policy"]["config_value"] == "delete"
                assert "max.message.bytes" in entries
                if "config_source" in entries["retention.ms"]:
                    assert entries["retention.ms"]["config_source"] == 1  # DYNAMIC_TOPIC_CONFIG
                    assert entries["max.message.bytes"]["config_source"] != 1
                [response] = await admin.describe_configs(
                    [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": None})]
                )
                [resource] = response.to_object()["resources"]
                assert [(e["config_names"], e["config_value"]) for e in resource["config_entries"]] == [
                    ("retention.ms", "3600000")
                ]

                # 10 records into every partition, with known timestamps
                base_ts = int(time.time() * 1000) - 60_000
                producer = _producer(cluster, acks="all")
                await asyncio.wait_for(producer.start(), TIMEOUT_S)
                try:
                    futures = [
                        await producer.send(
                            topic, key=f"k{p}-{i}".encode(), value=b"v", partition=p, timestamp_ms=base_ts + i * 1000
                        )
                        for p in range(4)
                        for i in range(10)
                    ]
                    await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT_S)
                finally:
                    await producer.stop()
                for p in range(4):
                    assert cluster.offsets(topic, p) == (0, 10)

                tps = [TopicPartition(topic, p) for p in range(4)]
                consumer = _consumer(cluster)
                await asyncio.wait_for(consumer.start(), TIMEOUT_S)
                try:
                    assert await consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
                    assert await consumer.end_offsets(tps) == {tp: 10 for tp in tps}
                    found = await consumer.offsets_for_times({tp: base_ts + 4500 for tp in tps})
                    assert {tp: (o.offset, o.timestamp) for tp, o in found.items()} == {
                        tp: (5, base_ts + 5000) for tp in tps
                    }
                    assert await consumer.offsets_for_times({tps[0]: base_ts + 10 * 1000}) == {tps[0]: None}

                    # delete_records: partition 0 before 3, partition 1 before 10 (everything)
                    deleted = await admin.delete_records(
                        {tps[0]: RecordsToDelete(3), tps[1]: RecordsToDelete(10)}, timeout_ms=5_000
                    )
                    assert deleted == {tps[0]: 3, tps[1]: 10}
                    assert cluster.offsets(topic, 0) == (3, 10)
                    assert cluster.offsets(topic, 1) == (10, 10)
                    assert [o for _, o, _, _ in cluster.records(topic, 0)] == list(range(3, 10))
                    assert cluster.records(topic, 1) == []
                    assert await consumer.beginning_offsets(tps) == {tps[0]: 3, tps[1]: 10, tps[2]: 0, tps[3]: 0}
                    assert await consumer.end_offsets(tps) == {tp: 10 for tp in tps}
                    found = await consumer.offsets_for_times({tps[0]: base_ts})
                    assert (found[tps[0]].offset, found[tps[0]].timestamp) == (3, base_ts + 3000)

                    # The consumer reads only what is left.
                    consumer.assign(tps[:2])
                    await consumer.seek_to_beginning()
                    messages = await _read_all(consumer, 7)
                    assert [(m.partition, m.offset, m.key) for m in messages] == [
                        (0, i, f"k0-{i}".encode()) for i in range(3, 10)
                    ]
                finally:
                    await consumer.stop()

                # delete_topics
                response = await admin.delete_topics([topic], timeout_ms=5_000)
                assert [(t, c) for t, c, *_ in response.topic_error_codes] == [(topic, 0)]
                assert topic not in cluster.topics()
                assert topic not in await admin.list_topics()
            finally:
                await admin.close()
            kinds = [(e.kind, e.details.get("topic")) for e in cluster.events]
            for kind in ("topic_created", "partitions_created", "records_deleted", "topic_deleted"):
                assert (kind, topic) in kinds
            _no_broker_errors(cluster)

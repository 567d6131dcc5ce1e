"""kafka-python (the pure-Python client) against a running FakeCluster.

No consumer groups yet: every consumer reads with assign() + seek, group_id=None, and never
commits offsets.
"""

from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka import codec as kafka_codec  # noqa: E402
from kafka.admin import ConfigResource, ConfigResourceType  # noqa: E402

from fakebroker.protocol import records as rec  # noqa: E402

from .conftest import assert_dropped_after_handling, expected_records  # noqa: E402

pytestmark = pytest.mark.clients

N = 300
PARTITIONS = 6
TIMEOUT_S = 15.0
# Kafka's compression ids in the record batch attributes.
CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODEC_AVAILABLE = {
    "gzip": kafka_codec.has_gzip(),
    "snappy": kafka_codec.has_snappy(),
    "lz4": kafka_codec.has_lz4(),
    "zstd": kafka_codec.has_zstd(),
}
# The test extra installs kafka-python >= 3.0, which has idempotent producers: no skipping.
assert "enable_idempotence" in KafkaProducer.DEFAULT_CONFIG, "kafka-python >= 2.1 is needed"
COMMON = {
    "request_timeout_ms": 10_000,
    "retry_backoff_ms": 50,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 500,
    "metadata_max_age_ms": 5_000,
}


def _producer(cluster, **config) -> KafkaProducer:
    settings = dict(
        COMMON,
        bootstrap_servers=cluster.bootstrap_servers,
        max_block_ms=10_000,
        delivery_timeout_ms=12_000,
        linger_ms=5,
    )
    settings.update(config)
    return KafkaProducer(**settings)


def _consumer(cluster, **config) -> KafkaConsumer:
    settings = dict(
        COMMON,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        consumer_timeout_ms=1_000,
    )
    settings.update(config)
    return KafkaConsumer(**settings)


def _read_all(consumer: KafkaConsumer, want: int, timeout_s: float = TIMEOUT_S) -> list:
    """Poll until ``want`` records arrived or the deadline passes (then returns what it has)."""
    got: list = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        for _tp, batch in consumer.poll(timeout_ms=200).items():
            got.extend(batch)
    return got


def _by_partition(messages) -> dict[int, list[tuple[int, bytes, bytes]]]:
    out: dict[int, list[tuple[int, bytes, bytes]]] = {}
    for m in messages:
        out.setdefault(m.partition, []).append((m.offset, m.key, m.value))
    return out


def _stored_compressions(cluster, topic: str) -> set[int]:
    """Compression ids of every batch the cluster stored for ``topic`` (read after the writes)."""
    out = set()
    for partition in cluster.state.topics[topic].partitions:
        for stored in partition.log.batches:
            out.update(h.compression for h in rec.iter_batch_headers(stored.data))
    return out


def _produce_plan(producer: KafkaProducer, topic: str, n: int, partitions: int) -> list:
    futures = [
        producer.send(topic, key=f"key-{i}".encode(), value=f"value-{i}".encode(), partition=i % partitions)
        for i in range(n)
    ]
    producer.flush(timeout=TIMEOUT_S)
    return [f.get(timeout=TIMEOUT_S) for f in futures]


def _assert_plan_read_back(cluster, topic: str, n: int, partitions: int, metadata: list, messages: list) -> None:
    expected = expected_records(n, partitions)
    # The producer's acknowledgements: partition i % 6, offsets 0, 1, 2, ... per partition in send order.
    for i, md in enumerate(metadata):
        assert (md.topic, md.partition, md.offset) == (topic, i % partitions, i // partitions)
    # The consumer's view: every record once, exact offsets, per-partition order.
    assert len(messages) == n
    got = _by_partition(messages)
    for p in range(partitions):
        assert got.get(p, []) == [(o, k, v) for o, (k, v) in enumerate(expected[p])], f"partition {p}"
    # The broker's own view.
    stored = cluster.records(topic)
    assert stored == [(p, o, k, v) for p in range(partitions) for o, (k, v) in enumerate(expected[p])]
    for p in range(partitions):
        assert cluster.offsets(topic, p) == (0, len(expected[p]))


def test_produce_and_read_back_300(cluster3):
    producer = _producer(cluster3, acks=1, enable_idempotence=False)
    try:
        metadata = _produce_plan(producer, "orders", N, PARTITIONS)
    finally:
        producer.close(timeout=5)

    consumer = _consumer(cluster3)
    try:
        tps = [TopicPartition("orders", p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        messages = _read_all(consumer, N)
        assert {tp: consumer.position(tp) for tp in tps} == {tp: N // PARTITIONS for tp in tps}
        # Nothing more arrives.
        assert _read_all(consumer, 1, timeout_s=0.5) == []
    finally:
        consumer.close()
    _assert_plan_read_back(cluster3, "orders", N, PARTITIONS, metadata, messages)
    assert not [e for e in cluster3.events if e.kind in ("handler_error", "produce_rejected")]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(cluster3, codec):
    if not CODEC_AVAILABLE[codec]:
        pytest.fail(
            f"kafka-python has no {codec} codec installed: the test extra installs python-snappy, lz4, zstandard"
        )
    topic = f"codec-{codec}"
    cluster3.create_topic(topic, 3)
    n = 120
    producer = _producer(cluster3, acks="all", compression_type=codec, linger_ms=50, batch_size=64 * 1024)
    try:
        metadata = _produce_plan(producer, topic, n, 3)
    finally:
        producer.close(timeout=5)
    assert _stored_compressions(cluster3, topic) == {CODEC_IDS[codec]}

    consumer = _consumer(cluster3)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(3)])
        consumer.seek_to_beginning()
        messages = _read_all(consumer, n)
    finally:
        consumer.close()
    _assert_plan_read_back(cluster3, topic, n, 3, metadata, messages)
    assert not [e for e in cluster3.events if e.kind in ("handler_error", "produce_rejected")]


def test_idempotent_producer_exactly_once(cluster3):
    producer = _producer(
        cluster3,
        acks="all",
        enable_idempotence=True,
        max_in_flight_requests_per_connection=5,
        linger_ms=1,
        batch_size=256,
    )
    try:
        metadata = _produce_plan(producer, "orders", N, PARTITIONS)
    finally:
        producer.close(timeout=5)

    producer_ids = [e for e in cluster3.events if e.kind == "producer_id"]
    assert len(producer_ids) == 1, producer_ids
    pid = producer_ids[0].details["producer_id"]
    assert pid >= 0 and producer_ids[0].details["transactional_id"] is None
    # Every stored batch carries that producer id with gap-free sequences per partition.
    for partition in cluster3.state.topics["orders"].partitions:
        next_seq = 0
        for stored in partition.log.batches:
            for h in rec.iter_batch_headers(stored.data):
                assert h.producer_id == pid
                assert h.base_sequence == next_seq
                next_seq += h.last_offset_delta + 1
        assert next_seq == N // PARTITIONS

    consumer = _consumer(cluster3)
    try:
        consumer.assign([TopicPartition("orders", p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        messages = _read_all(consumer, N)
        assert _read_all(consumer, 1, timeout_s=0.5) == []
    finally:
        consumer.close()
    _assert_plan_read_back(cluster3, "orders", N, PARTITIONS, metadata, messages)


def test_idempotent_producer_retries_are_deduplicated(cluster3):
    """The broker appends the first produce requests but drops their connections instead of
    answering: the producer resends those batches with the same sequences and the broker must
    answer them as duplicates, so every record is stored exactly once."""
    rule = cluster3.faults.add(api="Produce", action="drop_after", times=3)
    producer = _producer(
        cluster3,
        acks="all",
        enable_idempotence=True,
        linger_ms=1,
        batch_size=256,
        max_in_flight_requests_per_connection=5,
    )
    try:
        metadata = _produce_plan(producer, "orders", N, PARTITIONS)
    finally:
        producer.close(timeout=5)
    assert_dropped_after_handling(cluster3, rule, 3)
    # Resent batches were answered from the producer state, not appended again.
    expected = expected_records(N, PARTITIONS)
    assert cluster3.records("orders") == [
        (p, o, k, v) for p in range(PARTITIONS) for o, (k, v) in enumerate(expected[p])
    ]

    consumer = _consumer(cluster3)
    try:
        consumer.assign([TopicPartition("orders", p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        messages = _read_all(consumer, N)
        assert _read_all(consumer, 1, timeout_s=0.5) == []
    finally:
        consumer.close()
    _assert_plan_read_back(cluster3, "orders", N, PARTITIONS, metadata, messages)


def test_admin(cluster3):
    topic = f"admin-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(
        bootstrap_servers=cluster3.bootstrap_servers, request_timeout_ms=10_000, retry_backoff_ms=50
    )
    try:
        # create_topics with a config
        created = admin.create_topics(
            {
                topic: {
                    "num_partitions": 2,
                    "replication_factor": 1,
                    "configs": {"retention.ms": "3600000", "cleanup.policy": "delete"},
                }
            },
            timeout_ms=5_000,
        )
        [result] = created["topics"]
        assert result["name"] == topic and result["error_code"] == 0
        assert cluster3.topics()[topic] == 2
        assert topic in admin.list_topics()

        # create_partitions: 2 -> 4
        response = admin.create_partitions({topic: 4}, timeout_ms=5_000)
        assert [(r.name, r.error_code) for r in response.results] == [(topic, 0)]
        assert cluster3.topics()[topic] == 4
        described = admin.describe_topics([topic])
        assert sorted(p["partition_index"] for p in described[0]["partitions"]) == [0, 1, 2, 3]

        # describe_configs: the override and a default
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        topic_configs = _topic_configs(configs, topic)
        assert topic_configs["retention.ms"]["value"] == "3600000"
        assert topic_configs["cleanup.policy"]["value"] == "delete"
        assert "max.message.bytes" in topic_configs
        modified = _topic_configs(admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]), topic)
        assert set(modified) == {"retention.ms", "cleanup.policy"}

        # 10 records into every partition, with known timestamps
        base_ts = int(time.time() * 1000) - 60_000
        producer = _producer(cluster3, acks="all")
        try:
            futures = [
                producer.send(topic, key=f"k{p}-{i}".encode(), value=b"v", partition=p, timestamp_ms=base_ts + i * 1000)
                for p in range(4)
                for i in range(10)
            ]
            producer.flush(timeout=TIMEOUT_S)
            for f in futures:
                f.get(timeout=TIMEOUT_S)
        finally:
            producer.close(timeout=5)
        for p in range(4):
            assert cluster3.offsets(topic, p) == (0, 10)

        tps = [TopicPartition(topic, p) for p in range(4)]
        consumer = _consumer(cluster3)
        try:
            assert consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
            assert consumer.end_offsets(tps) == {tp: 10 for tp in tps}
            found = consumer.offsets_for_times({tp: base_ts + 4500 for tp in tps})
            assert {tp: (o.offset, o.timestamp) for tp, o in found.items()} == {tp: (5, base_ts + 5000) for tp in tps}
            assert consumer.offsets_for_times({tps[0]: base_ts + 10 * 1000}) == {tps[0]: None}

            # delete_records: partition 0 before 3, partition 1 before 10 (everything)
            deleted = admin.delete_records({tps[0]: 3, tps[1]: 10}, timeout_ms=5_000)
            assert {tp: r["low_watermark"] for tp, r in deleted.items()} == {tps[0]: 3, tps[1]: 10}
            assert cluster3.offsets(topic, 0) == (3, 10)
            assert cluster3.offsets(topic, 1) == (10, 10)
            assert [o for p, o, _, _ in cluster3.records(topic, 0)] == list(range(3, 10))
            assert cluster3.records(topic, 1) == []
            assert consumer.beginning_offsets(tps) == {tps[0]: 3, tps[1]: 10, tps[2]: 0, tps[3]: 0}
            assert consumer.end_offsets(tps) == {tp: 10 for tp in tps}
            # A timestamp now before the log start finds the first remaining record.
            found = consumer.offsets_for_times({tps[0]: base_ts})
            assert (found[tps[0]].offset, found[tps[0]].timestamp) == (3, base_ts + 3000)

            # The consumer reads only what is left.
            consumer.assign(tps[:2])
            consumer.seek_to_beginning()
            messages = _read_all(consumer, 7)
            assert [(m.partition, m.offset, m.key) for m in messages] == [
                (0, i, f"k0-{i}".encode()) for i in range(3, 10)
            ]
        finally:
            consumer.close()

        # delete_topics
        deleted_topics = admin.delete_topics([topic], timeout_ms=5_000)
        assert [(t["name"], t["error_code"]) for t in deleted_topics["topics"]] == [(topic, 0)]
        assert topic not in cluster3.topics()
        deadline = time.monotonic() + 5
        while topic in admin.list_topics() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert topic not in admin.list_topics()
    finally:
        admin.close()
    kinds = [(e.kind, e.details.get("topic")) for e in cluster3.events]
    for kind in ("topic_created", "partitions_created", "records_deleted", "topic_deleted"):
        assert (kind, topic) in kinds
    assert not [e for e in cluster3.events if e.kind == "handler_error"]


def _topic_configs(described: dict, topic: str) -> dict:
    """kafka-python's describe_configs answer -> {name: entry} for one topic, whatever the key style."""
    by_type = described.get("topic") or described.get(ConfigResourceType.TOPIC) or described.get(2)
    assert by_type is not None, described
    return by_type[topic]

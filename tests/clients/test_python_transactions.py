"""Transactions from the pure-Python clients: aiokafka 0.14 and kafka-python 3.0.

Both have transactional producers (``transactional_id``) and ``send_offsets_to_transaction``:
aiokafka takes a bare group id (TxnOffsetCommit without member or generation, so no KIP-447
fencing); kafka-python also takes ``KafkaConsumer.group_metadata()`` (KIP-447). Each test
produces a committed and an aborted transaction, reads them back with the same library's
read_committed consumer, and checks that offsets sent in a transaction reach the group only
at its commit.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition
from kafka.errors import CommitFailedError
from kafka.structs import OffsetAndMetadata

from fakebroker.cluster import FakeCluster
from fakebroker.testing import poll_until

from .kafka_python_join import knows_partitions

pytestmark = pytest.mark.clients

TOPIC, IN = "out", "in"
PARTITIONS = 3
TIMEOUT_S = 15.0
TOPICS = {TOPIC: PARTITIONS, IN: PARTITIONS}


class Boom(Exception):
    pass


def no_broker_errors(cluster: FakeCluster) -> None:
    assert not [e.describe() for e in cluster.events if e.kind in ("handler_error", "produce_rejected")]


def txn_events(cluster: FakeCluster, tid: str) -> list[str]:
    return [e.kind for e in cluster.events if e.kind.startswith("txn_") and e.details.get("transactional_id") == tid]


def keys(prefix: str, n: int = 6) -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(n)]


def committed_keys(cluster: FakeCluster) -> list[bytes]:
    return [k for _, _, k, _ in cluster.records(TOPIC, committed=True)]


def in_log_order(*batches: list[bytes]) -> list[bytes]:
    """The keys of batches sent one after the other, key i of each to partition i % PARTITIONS,
    in (partition, offset) order."""
    return [k for p in range(PARTITIONS) for ks in batches for i, k in enumerate(ks) if i % PARTITIONS == p]


# == aiokafka =========================================================================================
@pytest.fixture
def anyio_backend():
    return "asyncio"


def aio_producer(cluster: FakeCluster, tid: str) -> AIOKafkaProducer:
    return AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        transactional_id=tid,
        request_timeout_ms=10_000,
        retry_backoff_ms=50,
        linger_ms=5,
    )


async def aio_read(cluster: FakeCluster, isolation: str) -> list[bytes]:
    """Everything a reader with this isolation level gets from offset 0 up to the partitions' ends
    (no transaction is open, so the LSO is the high watermark)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level=isolation,
        fetch_max_wait_ms=100,
    )
    await asyncio.wait_for(consumer.start(), TIMEOUT_S)
    try:
        tps = [AioTopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = {tp: cluster.offsets(TOPIC, tp.partition)[1] for tp in tps}
        got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + TIMEOUT_S
        while [await consumer.position(tp) for tp in tps] < [ends[tp] for tp in tps]:
            assert time.monotonic() < deadline, "the reader did not reach the partitions' ends"
            for tp, batch in (await consumer.getmany(timeout_ms=100)).items():
                got[tp.partition].extend(m.key for m in batch)
        return [k for p in range(PARTITIONS) for k in got[p]]
    finally:
        await consumer.stop()


@pytest.mark.anyio
async def test_aiokafka_committed_and_aborted_transactions_read_committed():
    async with FakeCluster(brokers=3, topics=TOPICS) as cluster:
        producer = aio_producer(cluster, "aio-txn")
        await asyncio.wait_for(producer.start(), TIMEOUT_S)
        try:
            async with producer.transaction():
                for i, k in enumerate(keys("c")):
                    await producer.send(TOPIC, key=k, value=b"v", partition=i % PARTITIONS)
            with pytest.raises(Boom):
                async with producer.transaction():
                    for i, k in enumerate(keys("a")):
                        await producer.send(TOPIC, key=k, value=b"v", partition=i % PARTITIONS)
                    await producer.flush()  # stored in the log before the abort
                    assert cluster.transaction("aio-txn").state == "Ongoing"
                    raise Boom
            async with producer.transaction():
                for i, k in enumerate(keys("d")):
                    await producer.send(TOPIC, key=k, value=b"v", partition=i % PARTITIONS)
        finally:
            await producer.stop()
        assert txn_events(cluster, "aio-txn")[-4:] == [
            "txn_began",
            "txn_partitions_added",
            "txn_prepared",
            "txn_committed",
        ]
        assert txn_events(cluster, "aio-txn").count("txn_aborted") == 1
        assert sorted(k for _, _, k, _ in cluster.records(TOPIC)) == sorted(keys("a") + keys("c") + keys("d"))
        committed = in_log_order(keys("c"), keys("d"))  # the aborted a records in between are skipped
        assert committed_keys(cluster) == committed
        assert await aio_read(cluster, "read_committed") == committed
        assert await aio_read(cluster, "read_uncommitted") == in_log_order(keys("c"), keys("a"), keys("d"))
        no_broker_errors(cluster)


@pytest.mark.anyio
async def test_aiokafka_send_offsets_to_transaction_commits_only_at_commit():
    async with FakeCluster(brokers=3, topics=TOPICS) as cluster:
        gid = "aio-group"
        producer = aio_producer(cluster, "aio-offsets")
        await asyncio.wait_for(producer.start(), TIMEOUT_S)
        try:
            with pytest.raises(Boom):
                async with producer.transaction():
                    await producer.send(TOPIC, key=b"x", value=b"v", partition=0)
                    await producer.send_offsets_to_transaction({AioTopicPartition(IN, 0): 7}, gid)
                    raise Boom
            assert cluster.committed(gid) == {}, "offsets of an aborted transaction are dropped"
            async with producer.transaction():
                await producer.send(TOPIC, key=b"y", value=b"v", partition=0)
                await producer.send_offsets_to_transaction(
                    {AioTopicPartition(IN, 0): 5, AioTopicPartition(IN, 2): 9}, gid
                )
                assert cluster.committed(gid) == {}, "pending until the commit"
                view = cluster.transaction("aio-offsets")
                assert view.state == "Ongoing" and (TOPIC, 0) in view.partitions
            assert cluster.committed(gid) == {(IN, 0): 5, (IN, 2): 9}
        finally:
            await producer.stop()
        offsets_added = [e.details for e in cluster.events if e.kind == "txn_offsets_added"]
        assert [(d["group"], d["offsets"]) for d in offsets_added] == [
            (gid, {"in-0": 7}),
            (gid, {"in-0": 5, "in-2": 9}),
        ]
        assert committed_keys(cluster) == [b"y"]
        no_broker_errors(cluster)


# == kafka-python =====================================================================================
@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics=TOPICS, config={"group.min.session.timeout.ms": 1000}).run_in_thread() as c:
        yield c
        no_broker_errors(c)


def kp_producer(cluster: FakeCluster, tid: str) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        transactional_id=tid,
        request_timeout_ms=10_000,
        retry_backoff_ms=50,
        max_block_ms=10_000,
        linger_ms=5,
    )


def kp_consumer(cluster: FakeCluster, **config) -> KafkaConsumer:
    settings = dict(
        bootstrap_servers=cluster.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        request_timeout_ms=10_000,
        retry_backoff_ms=50,
    )
    settings.update(config)
    return KafkaConsumer(**settings)


def kp_read(cluster: FakeCluster, isolation: str) -> list[bytes]:
    """What a reader with this isolation level gets up to the partitions' ends, by partition."""
    consumer = kp_consumer(cluster, group_id=None, isolation_level=isolation)
    try:
        tps = [KTopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = {tp: cluster.offsets(TOPIC, tp.partition)[1] for tp in tps}
        got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + TIMEOUT_S
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, "the reader did not reach the partitions' ends"
            for tp, batch in consumer.poll(timeout_ms=100).items():
                got[tp.partition].extend(m.key for m in batch)
        return [k for p in range(PARTITIONS) for k in got[p]]
    finally:
        consumer.close()


def kp_send(producer: KafkaProducer, ks: list[bytes]) -> None:
    for i, k in enumerate(ks):
        producer.send(TOPIC, key=k, value=b"v", partition=i % PARTITIONS)
    producer.flush(TIMEOUT_S)


def test_kafka_python_committed_and_aborted_transactions_read_committed(cluster):
    producer = kp_producer(cluster, "kp-txn")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        kp_send(producer, keys("c"))
        producer.commit_transaction()
        producer.begin_transaction()
        kp_send(producer, keys("a"))
        assert cluster.transaction("kp-txn").state == "Ongoing"
        assert committed_keys(cluster) == in_log_order(keys("c"))
        producer.abort_transaction()
        producer.begin_transaction()
        kp_send(producer, keys("d"))
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)
    assert txn_events(cluster, "kp-txn").count("txn_committed") == 2
    assert txn_events(cluster, "kp-txn").count("txn_aborted") == 1
    expected = in_log_order(keys("c"), keys("d"))
    assert committed_keys(cluster) == expected
    assert kp_read(cluster, "read_committed") == expected
    assert kp_read(cluster, "read_uncommitted") == in_log_order(keys("c"), keys("a"), keys("d"))


def test_kafka_python_send_offsets_to_transaction_with_group_metadata(cluster):
    """A consume-transform-produce step with KIP-447 group metadata: the offsets reach the group at
    the commit; after a rebalance the old metadata is refused (ILLEGAL_GENERATION)."""
    gid = "kp-group"
    seed = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    for i in range(30):
        seed.send(IN, key=b"k%d" % i, value=b"v%d" % i, partition=i % PARTITIONS)
    seed.flush(TIMEOUT_S)
    seed.close()
    timings = dict(session_timeout_ms=3000, heartbeat_interval_ms=200, max_poll_interval_ms=10_000)
    consumer = kp_consumer(cluster, group_id=gid, isolation_level="read_committed", **timings)
    consumer.subscribe([IN])
    knows_partitions(consumer, IN, PARTITIONS)  # kafka-python 3.0.12: see kafka_python_join.py
    producer = kp_producer(cluster, "kp-offsets")
    other = None
    try:
        producer.init_transactions()
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 30:
            assert time.monotonic() < deadline, f"read {len(got)} of 30"
            for batch in consumer.poll(timeout_ms=100).values():
                got.extend(batch)
        producer.begin_transaction()
        kp_send(producer, [m.key for m in got])
        offsets = {KTopicPartition(IN, p): OffsetAndMetadata(10, "", -1) for p in range(PARTITIONS)}
        metadata = consumer.group_metadata()
        producer.send_offsets_to_transaction(offsets, metadata)
        assert cluster.committed(gid) == {}
        producer.commit_transaction()
        assert cluster.committed(gid) == {(IN, p): 10 for p in range(PARTITIONS)}

        # A second member joins: a new generation; the snapshot taken before is stale.
        generation = cluster.group(gid).generation
        other = kp_consumer(cluster, group_id=gid, isolation_level="read_committed", **timings)
        other.subscribe([IN])
        knows_partitions(other, IN, PARTITIONS)  # as for the first
        # poll_until polls the two each in a thread of its own: polled in turn from one thread, a
        # join that completes while kafka-python 3.0.12 polls the other consumer is thrown away
        # and done again, and on a loaded machine the two can keep each other rebalancing
        view = poll_until(
            [consumer, other],
            lambda: (
                (v := cluster.group(gid)) is not None
                and v.state == "Stable"
                and len(v.members) == 2
                and v.generation > generation
                and len(consumer.assignment()) + len(other.assignment()) == PARTITIONS  # both took theirs in
                and v
            ),
            on_record=lambda who, record: None,  # the records read again after the rebalance: not this test's
            timeout=20,
        )
        assert view.generation > generation
        producer.begin_transaction()
        producer.send(TOPIC, key=b"zombie", value=b"v", partition=0)
        # TxnOffsetCommit answers ILLEGAL_GENERATION; kafka-python raises it as an abortable
        # CommitFailedError naming the mismatch.
        with pytest.raises(CommitFailedError, match="metadata mismatch: IllegalGenerationError"):
            producer.send_offsets_to_transaction({KTopicPartition(IN, 0): OffsetAndMetadata(20, "", -1)}, metadata)
        producer.abort_transaction()
        assert cluster.committed(gid) == {(IN, p): 10 for p in range(PARTITIONS)}
        assert b"zombie" not in committed_keys(cluster)
        assert txn_events(cluster, "kp-offsets")[-1] == "txn_aborted"
    finally:
        producer.close(timeout=5)
        consumer.close()
        if other is not None:
            other.close()
    assert sorted(committed_keys(cluster)) == sorted(b"k%d" % i for i in range(30))

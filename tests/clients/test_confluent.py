"""confluent-kafka (librdkafka) against fakebroker: produce, consume, codecs, idempotence, admin."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from fakebroker.cluster import FakeCluster  # noqa: E402

from .conftest import expected_records  # noqa: E402

pytestmark = pytest.mark.clients
QUIET = {"log_level": 3}  # librdkafka errors only: the tests assert what matters


def produce(bootstrap: str, n: int, partitions: int, topic: str = "orders", **config) -> list:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **QUIET, **config})
    reports = []

    def on_delivery(err, msg):
        reports.append((err, msg.partition(), msg.offset()))

    for i in range(n):
        producer.produce(
            topic,
            key=f"key-{i}".encode(),
            value=f"value-{i}".encode(),
            partition=i % partitions,
            on_delivery=on_delivery,
        )
        producer.poll(0)
    assert producer.flush(15) == 0
    assert all(err is None for err, _, _ in reports), reports[:3]
    return reports


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 15) -> dict[int, list]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused-no-subscribe", "enable.auto.commit": False, **QUIET}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout
    count = 0
    try:
        while count < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got[msg.partition()].append((msg.offset(), msg.key(), msg.value()))
            count += 1
    finally:
        consumer.close()
    return got


def assert_round_trip(got: dict[int, list], n: int, partitions: int) -> None:
    want = expected_records(n, partitions)
    for p in range(partitions):
        assert [(k, v) for _, k, v in got[p]] == want[p], f"partition {p}"
        assert [o for o, _, _ in got[p]] == list(range(len(want[p]))), f"offsets of partition {p}"


def test_produce_and_consume_every_record_in_order(cluster3):
    reports = produce(cluster3.bootstrap_servers, 600, 6)
    assert sorted(o for _, p, o in reports if p == 0) == list(range(100))
    got = consume_all(cluster3.bootstrap_servers, "orders", 6, 600)
    assert_round_trip(got, 600, 6)
    leaders = {cluster3.leader("orders", p) for p in range(6)}
    assert leaders == {0, 1, 2}, "leadership spreads over the brokers"


@pytest.mark.parametrize("kafka_version", ["4.3", "3.9"])
def test_an_older_kafka_release_serves_librdkafka_end_to_end(kafka_version):
    """Posing as Kafka 4.3 or 3.9, librdkafka negotiates within that release's window (it speaks
    Produce v10 and Fetch v16 at most, below both) and an idempotent round trip works."""
    with FakeCluster(brokers=3, topics={"orders": 6}, kafka_version=kafka_version).run_in_thread() as cluster:
        cluster.faults.add(api=["Produce", "Fetch", "ListOffsets"], action="delay", delay=0.0)  # to see versions
        produce(cluster.bootstrap_servers, 120, 6, **{"enable.idempotence": True, "acks": "all"})
        got = consume_all(cluster.bootstrap_servers, "orders", 6, 120)
        assert_round_trip(got, 120, 6)
        used: dict[str, int] = {}
        for e in cluster.events:
            if e.kind == "fault_fired":
                used[e.api] = max(used.get(e.api, 0), e.version)
        assert used["Produce"] <= (11 if kafka_version == "3.9" else 13), used
        assert used["Fetch"] <= (17 if kafka_version == "3.9" else 18), used
        assert len(cluster.records("orders")) == 120
        assert any(e.kind == "producer_id" for e in cluster.events)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_each_compression_codec(cluster3, codec):
    produce(cluster3.bootstrap_servers, 120, 6, **{"compression.type": codec, "batch.num.messages": 50})
    assert len(cluster3.records("orders")) == 120
    assert_round_trip(consume_all(cluster3.bootstrap_servers, "orders", 6, 120), 120, 6)


def test_idempotent_producer_with_acks_all(cluster3):
    produce(
        cluster3.bootstrap_servers,
        300,
        6,
        **{"enable.idempotence": True, "acks": "all", "max.in.flight.requests.per.connection": 5},
    )
    stored = cluster3.records("orders")
    assert len(stored) == 300, "each record exactly once"
    assert any(e.kind == "producer_id" for e in cluster3.events)
    assert_round_trip(consume_all(cluster3.bootstrap_servers, "orders", 6, 300), 300, 6)


def test_a_bulk_producers_large_batches_round_trip(cluster3):
    """Uncompressed batches of hundreds of KB whose records share one layout, as a bulk
    producer sends them: checked where they lie, kept in the log as they came (their head
    rewritten), and read back whole, from any offset, by a consumer."""
    producer = Producer(
        {
            "bootstrap.servers": cluster3.bootstrap_servers,
            "linger.ms": 100,
            "batch.size": 1_000_000,
            "batch.num.messages": 100_000,
            "enable.idempotence": True,
            **QUIET,
        }
    )
    n = 30_000
    for i in range(n):
        producer.produce("orders", key=b"%08d" % i, value=b"v" * 100, partition=i % 2)
    assert producer.flush(30) == 0
    sizes = [len(b.data) for p in (0, 1) for b in cluster3.state.topics["orders"].partitions[p].log.batches]
    assert max(sizes) >= 64 * 1024 and sum(sizes) > n * 100, sizes
    got = consume_all(cluster3.bootstrap_servers, "orders", 2, n, timeout=30)
    for p in (0, 1):
        assert [o for o, _, _ in got[p]] == list(range(n // 2)), f"offsets of partition {p}"
        assert [k for _, k, _ in got[p]] == [b"%08d" % i for i in range(p, n, 2)], f"keys of partition {p}"
        assert all(v == b"v" * 100 for _, _, v in got[p])
    consumer = Consumer({"bootstrap.servers": cluster3.bootstrap_servers, "group.id": "g-mid", **QUIET})
    consumer.assign([TopicPartition("orders", 1, 7_777)])  # inside a large batch
    try:
        first = None
        for _ in range(50):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                first = msg
                break
        assert first is not None and (first.offset(), first.key()) == (7_777, b"%08d" % (2 * 7_777 + 1))
    finally:
        consumer.close()


def test_admin_topics_partitions_configs_offsets_and_delete_records(cluster3):
    admin = AdminClient({"bootstrap.servers": cluster3.bootstrap_servers, **QUIET})
    futures = admin.create_topics(
        [NewTopic("audit", num_partitions=3, replication_factor=2, config={"retention.ms": "3600000"})]
    )
    futures["audit"].result(10)
    assert cluster3.topics()["audit"] == 3
    with pytest.raises(KafkaException) as info:
        admin.create_topics([NewTopic("audit", num_partitions=1)])["audit"].result(10)
    assert info.value.args[0].name() == "TOPIC_ALREADY_EXISTS"

    admin.create_partitions([NewPartitions("audit", 5)])["audit"].result(10)
    assert cluster3.topics()["audit"] == 5

    resource = ConfigResource(ConfigResource.Type.TOPIC, "audit")
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["retention.ms"].value == "3600000"
    assert configs["cleanup.policy"].value == "delete"

    produce(cluster3.bootstrap_servers, 50, 5, topic="audit")
    tp = TopicPartition("audit", 0)
    offsets = admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(10)
    assert offsets.offset == 0
    offsets = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(10)
    assert offsets.offset == 10

    deleted = admin.delete_records([TopicPartition("audit", 0, 4)])
    result = list(deleted.values())[0].result(10)
    assert result.low_watermark == 4
    assert cluster3.offsets("audit", 0) == (4, 10)
    assert admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(10).offset == 4

    admin.delete_topics(["audit"])["audit"].result(10)
    assert "audit" not in cluster3.topics()


def test_wrong_broker_gets_not_leader_and_client_recovers(cluster3):
    # Leadership of partition 0 moves after the producer learned it: the producer is told
    # NOT_LEADER_OR_FOLLOWER, refreshes metadata and delivers to the new leader.
    producer = Producer({"bootstrap.servers": cluster3.bootstrap_servers, "linger.ms": 0, **QUIET})
    producer.produce("orders", value=b"first", partition=0)
    assert producer.flush(10) == 0
    old = cluster3.leader("orders", 0)
    new = (old + 1) % 3
    cluster3.move_leader("orders", 0, new)
    errors = []
    producer.produce("orders", value=b"second", partition=0, on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(15) == 0
    assert errors == [None]
    assert [v for _, _, _, v in cluster3.records("orders", 0)] == [b"first", b"second"]
    assert any(e.details.get("error") == "NOT_LEADER_OR_FOLLOWER" for e in cluster3.events if e.kind == "request_error")


def test_clusters_in_turn_on_one_kept_loop_each_serve_librdkafka_from_scratch():
    """run_in_thread() keeps a stopped cluster's loop for the next one: three clusters in turn
    run on one loop thread, and each answers a fresh producer and consumer as a new broker
    would (its own topics, offsets from 0, no fault of the cluster before)."""
    FakeCluster.stop_idle_loops()
    threads = set()
    for turn in range(3):
        with FakeCluster(topics={f"turn-{turn}": 2}).run_in_thread() as cluster:
            threads.add(cluster.call(threading.get_ident))
            assert cluster.topics() == {f"turn-{turn}": 2}
            assert cluster.faults.list() == []
            cluster.faults.add(api="Produce", action="delay", delay=0.0)
            reports = produce(cluster.bootstrap_servers, 20, 2, topic=f"turn-{turn}")
            assert sorted(o for _, p, o in reports if p == 0) == list(range(10))
            assert_round_trip(consume_all(cluster.bootstrap_servers, f"turn-{turn}", 2, 20), 20, 2)
    assert len(threads) == 1

"""Real consumers with small fetch budgets: every record arrives exactly once and in order.

Fetch answers end with a partial record batch once the byte budget is spent, as Kafka's log
read cuts them (``FileRecords.slice`` of exactly ``partition_max_bytes``, the first batch whole
even if bigger, KIP-74), so each client must drop the partial batch and fetch it again from its
first offset. The partition budgets here (256 bytes) are smaller than most batches and the
request budgets hold two or three of them, so nearly every answer ends mid-batch.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import records as R
from tests.raw_client import RawClient

from . import test_franz_go, test_java_client, test_kafkajs
from .node_driver import NodeDriver
from .test_franz_go import go_client  # noqa: F401 (fixture)
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

node = test_kafkajs.node  # the session fixture: the node binary, with js/node_modules installed

pytestmark = [pytest.mark.clients]

TOPIC, PARTITIONS = "partial", 2
PARTITION_BYTES, REQUEST_BYTES = 256, 400
DEADLINE = 40.0  # s, per consumer run


@pytest.fixture
def filled():
    """A one-broker cluster whose topic holds batches of 1-4 records of 5-80 byte values
    (seeded, so every run stores the same bytes); yields (cluster, expected rows per partition)."""
    rng = random.Random(15)
    with FakeCluster(brokers=1, topics={TOPIC: PARTITIONS}).run_in_thread() as cluster:
        expected: dict[int, list[tuple[int, str, str]]] = {p: [] for p in range(PARTITIONS)}
        port = int(cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])
        i = 0
        with RawClient(port) as client:
            for _ in range(40):
                for p in range(PARTITIONS):
                    rows = []
                    for _ in range(rng.randint(1, 4)):
                        rows.append((f"key-{i}", f"value-{i}-" + "x" * rng.randint(5, 80)))
                        i += 1
                    blob = R.build_batch([(k.encode(), v.encode()) for k, v in rows])
                    body = {
                        "transactional_id": None,
                        "acks": -1,
                        "timeout_ms": 5000,
                        "topic_data": [{"name": TOPIC, "partition_data": [{"index": p, "records": blob}]}],
                    }
                    answer = client.request(0, 9, body)
                    part = answer.responses[0].partition_responses[0]
                    assert part.error_code == 0, part
                    base = part.base_offset
                    expected[p] += [(base + j, k, v) for j, (k, v) in enumerate(rows)]
        yield cluster, expected


def check(got: list[tuple[int, int, str, str]], expected: dict[int, list[tuple[int, str, str]]]) -> None:
    """``got``: (partition, offset, key, value) in the order the client delivered them."""
    by_partition = {p: [(o, k, v) for q, o, k, v in got if q == p] for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        assert by_partition[p] == expected[p], f"partition {p}: {len(by_partition[p])} of {len(expected[p])}"
    assert len(got) == sum(len(rows) for rows in expected.values())


def total(expected) -> int:
    return sum(len(rows) for rows in expected.values())


def test_librdkafka_reads_partial_batches(filled):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    cluster, expected = filled
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "partial-librdkafka",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": PARTITION_BYTES,
            "fetch.max.bytes": 1000,  # librdkafka's floor is message.max.bytes, itself at least 1000
            "message.max.bytes": 1000,
            "fetch.wait.max.ms": 50,
        }
    )
    got = []
    try:
        consumer.assign(
            [confluent_kafka.TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING) for p in range(PARTITIONS)]
        )
        deadline = time.monotonic() + DEADLINE
        while len(got) < total(expected) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.partition(), msg.offset(), msg.key().decode(), msg.value().decode()))
        for msg in consumer.consume(100, timeout=0.5):  # anything more would be a duplicate
            got.append((msg.partition(), msg.offset(), msg.key().decode(), msg.value().decode()))
    finally:
        consumer.close()
    check(got, expected)


def _kafka_python_consume(bootstrap: str, n: int) -> list[tuple[int, int, str, str]]:
    kafka = pytest.importorskip("kafka")
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        max_partition_fetch_bytes=PARTITION_BYTES,
        fetch_max_bytes=REQUEST_BYTES,
        fetch_max_wait_ms=50,
        request_timeout_ms=10000,
    )
    got = []
    try:
        tps = [kafka.TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + DEADLINE
        while len(got) <= n and time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=200)
            if not batch and len(got) == n:
                break
            for records in batch.values():
                got += [(r.partition, r.offset, r.key.decode(), r.value.decode()) for r in records]
    finally:
        consumer.close()
    return got


def test_kafka_python_reads_partial_batches(filled):
    cluster, expected = filled
    check(_kafka_python_consume(cluster.bootstrap_servers, total(expected)), expected)


def test_aiokafka_reads_partial_batches(filled):
    aiokafka = pytest.importorskip("aiokafka")
    cluster, expected = filled
    n = total(expected)

    async def consume() -> list[tuple[int, int, str, str]]:
        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            enable_auto_commit=False,
            max_partition_fetch_bytes=PARTITION_BYTES,
            fetch_max_bytes=REQUEST_BYTES,
            fetch_max_wait_ms=50,
        )
        await consumer.start()
        got = []
        try:
            tps = [aiokafka.TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            deadline = time.monotonic() + DEADLINE
            while time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=200)
                if not batch and len(got) >= n:
                    break
                for records in batch.values():
                    got += [(r.partition, r.offset, r.key.decode(), r.value.decode()) for r in records]
        finally:
            await consumer.stop()
        return got

    check(asyncio.run(consume()), expected)


class GroupsDriver(NodeDriver):
    script = "groups.js"
    name = "groups.js"
    process_timeout = 80


@pytest.mark.node
def test_kafkajs_reads_partial_batches(node, filled):
    cluster, expected = filled
    with GroupsDriver(node, cluster) as driver:
        driver.call(
            "start",
            name="a",
            groupId="partial-kafkajs",
            topic=TOPIC,
            maxBytes=REQUEST_BYTES,
            maxBytesPerPartition=PARTITION_BYTES,
        )
        driver.call("waitConsumed", total=total(expected), timeoutMs=30000)
        time.sleep(0.5)  # anything more would be a duplicate
        records = driver.call("consumed")["records"]
    values = {k: v for rows in expected.values() for _, k, v in rows}
    check([(p, o, k, values[k]) for _, p, o, k in records], expected)


@pytest.mark.java
def test_java_client_reads_partial_batches(java_client_jar, cluster3):  # noqa: F811 (fixture)
    """JavaClient's produce-consume (idempotent producer of one-record batches, then assign and
    read to the end) with a consumer of 256-byte partition and 400-byte request budgets."""
    n = 120
    cmd = test_java_client.java_command(
        "-Dfakebroker.producer.batch.size=1",  # one record per batch
        f"-Dfakebroker.consumer.max.partition.fetch.bytes={PARTITION_BYTES}",
        f"-Dfakebroker.consumer.fetch.max.bytes={REQUEST_BYTES}",
        "-Dfakebroker.consumer.fetch.max.wait.ms=50",
        "-jar",
        str(java_client_jar),
        cluster3.bootstrap_servers,
        "produce-consume",
        "orders",
        str(n),
    )
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=test_java_client.RUN_TIMEOUT)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    errors = [line for line in lines if line["type"] == "error"]
    assert out.returncode == 0 and not errors and lines[-1]["type"] == "end", (errors, out.stderr[-6000:])
    test_java_client.check_round_trip(lines, cluster3, "orders", n, 6)


@pytest.mark.go
def test_franz_go_reads_partial_batches(go_client, cluster3, monkeypatch):  # noqa: F811 (fixture)
    """fbclient's produce-consume (idempotent producer of batches of at most 512 bytes, franz-go's
    floor, then consume the partitions directly) with 700-byte partition and 1000-byte request
    budgets: a whole batch and part of the next."""
    n = 600
    monkeypatch.setenv("FAKEBROKER_GO_BATCH_MAX_BYTES", "512")
    monkeypatch.setenv("FAKEBROKER_GO_FETCH_MAX_PARTITION_BYTES", "700")
    monkeypatch.setenv("FAKEBROKER_GO_FETCH_MAX_BYTES", "1000")
    lines = test_franz_go.run_go(go_client, cluster3.bootstrap_servers, "produce-consume", "orders", n, 6)
    test_franz_go.check_round_trip(lines, cluster3, "orders", n, 6)

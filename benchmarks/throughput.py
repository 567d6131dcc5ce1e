"""Produce-then-consume throughput with confluent-kafka: fakebroker vs librdkafka's mock
cluster and, when Java and the conformance tests' Kafka jars are there, a real Kafka 4.4 broker.

    python benchmarks/throughput.py [--records 200000] [--size 100] [--no-kafka]

Every run uses the same client and settings in the same process; only the cluster differs.
The consumer is tuned as a benchmark would tune it (``fetch.queue.backoff.ms=0``, large
fetches), so the mock's slow default consume does not flatter anyone. librdkafka's mock
cluster (``test.mock.num.brokers``) runs inside the producer's own librdkafka instance and
its brokers' addresses show in its metadata, so the consumer bootstraps from there. The real
Kafka is one KRaft broker on 127.0.0.1 (``tests/conformance/kafka_broker.py``). Also measured:
time from FakeCluster start to the first answered Metadata request, and resident memory idle
and after the run. The mock keeps only about 5 MB per partition, so each cluster is read from
its log start and consume rates are per record actually read.

The embedded cluster shares this process, and so its memory, with the clients (librdkafka
keeps what it queued and freed in this process's heap); a ``fakebroker serve`` row runs the
same against a broker of its own (3 brokers, events printed into a pipe this process drains)
and gives that process's resident memory idle and after the run: the broker's alone.

The last lines give produce and consume separately: ``produce_ratio_mock_serve`` and
``rss_after_serve_mb`` for the ``serve`` row, then for the embedded cluster
``produce_ratio_mock: X``, ``consume_ratio_mock: Y`` and, where Kafka ran,
``produce_ratio_kafka: Z`` and ``consume_ratio_kafka: W`` (fakebroker's rate / theirs).
"""

from __future__ import annotations

import argparse
import socket
import struct
import subprocess
import sys
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import headers

try:
    from ._measure import real_kafka, rss_mb
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import real_kafka, rss_mb

TOPIC = "bench"
PARTITIONS = 4  # what librdkafka's mock cluster gives an auto-created topic; used for both
QUIET = {"log_level": 3}


def produce(config: dict, n: int, size: int) -> float:
    producer = Producer({**config, "linger.ms": 5, "batch.num.messages": 10000, "acks": 1, **QUIET})
    value = b"x" * size
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce(TOPIC, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - start
    if remaining:
        raise RuntimeError(f"{remaining} records not delivered")
    return elapsed


def retained(bootstrap: str) -> int:
    """Records the cluster still holds (librdkafka's mock keeps only ~5 MB per partition)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", **QUIET})
    try:
        marks = [consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10) for p in range(PARTITIONS)]
    finally:
        consumer.close()
    return sum(high - low for low, high in marks)


def consume(bootstrap: str, n: int) -> float:
    """Seconds to read ``n`` records from the start of every partition's retained log."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-unused",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.queue.backoff.ms": 0,  # fetch again at once, not after librdkafka's default 1 s back-off
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
            **QUIET,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got = 0
    start = time.perf_counter()
    deadline = start + 120
    while got < n and time.perf_counter() < deadline:
        for msg in consumer.consume(10000, 0.5):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if got < n:
        raise RuntimeError(f"consumed only {got} of {n}")
    return elapsed


def first_metadata_ms() -> float:
    """From FakeCluster start to the first answered Metadata request, in ms (median of 5)."""
    times = []
    for _ in range(5):
        start = time.perf_counter()
        with FakeCluster(brokers=1).run_in_thread() as cluster:
            with socket.create_connection(("127.0.0.1", cluster.servers[0].port)) as sock:
                req = headers.encode_request(3, 12, 1, {"topics": None})
                sock.sendall(struct.pack(">i", len(req)) + req)
                size = struct.unpack(">i", sock.recv(4))[0]
                while size > 0:
                    size -= len(sock.recv(size))
            times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[2]


def against_serve(n: int, size: int) -> tuple[tuple[float, float], float, float]:
    """(produce, consume) records/s against ``fakebroker serve`` in a process of its own, and
    that process's resident memory (MiB) idle and after the run."""
    command = [sys.executable, "-m", "fakebroker", "serve", "--brokers", "3", "--port", "0"]
    proc = subprocess.Popen([*command, "--topic", f"{TOPIC}:{PARTITIONS}"], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        bootstrap = proc.stdout.readline().decode().split("bootstrap: ", 1)[1].strip()
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain the event lines
        idle = rss_mb(proc.pid)
        p = produce({"bootstrap.servers": bootstrap}, n, size)
        kept = retained(bootstrap)
        c = consume(bootstrap, kept)
        return (n / p, kept / c), idle, rss_mb(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def against_kafka(n: int, size: int) -> tuple[float, float] | str:
    """(produce, consume) records/s against one real Kafka broker, or why it was not measured."""
    KafkaBroker = real_kafka()
    if isinstance(KafkaBroker, str):
        return KafkaBroker
    from confluent_kafka.admin import AdminClient, NewTopic

    with KafkaBroker() as kafka:
        bootstrap = f"127.0.0.1:{kafka.port}"
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
        p = produce({"bootstrap.servers": bootstrap}, n, size)
        kept = retained(bootstrap)
        c = consume(bootstrap, kept)
    return n / p, kept / c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--no-kafka", action="store_true", help="skip the real Kafka broker")
    args = parser.parse_args()
    n, size = args.records, args.size
    results = {}

    startup = first_metadata_ms()
    idle_before = rss_mb()
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}).run_in_thread() as cluster:
        idle = rss_mb()
        p = produce({"bootstrap.servers": cluster.bootstrap_servers}, n, size)
        kept = retained(cluster.bootstrap_servers)
        c = consume(cluster.bootstrap_servers, kept)
        after = rss_mb()
        results["fakebroker"] = (n / p, kept / c)
    results["fakebroker serve"], serve_idle, serve_after = against_serve(n, size)

    # librdkafka's mock cluster lives inside the producer's instance; keep it alive while consuming.
    mock = Producer({"test.mock.num.brokers": 3, **QUIET})
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in mock.list_topics(timeout=10).brokers.values())
    # The mock has no controller for CreateTopics; it auto-creates the topic with 4 partitions.
    warm = Producer({"bootstrap.servers": bootstrap, **QUIET})
    warm.produce(TOPIC, b"")
    warm.flush(10)
    if len(warm.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions) != PARTITIONS:
        raise RuntimeError("the mock cluster's auto-created topic does not have the expected partition count")
    del warm
    p = produce({"bootstrap.servers": bootstrap}, n, size)
    kept = retained(bootstrap)
    c = consume(bootstrap, kept)
    results["librdkafka mock"] = (n / p, kept / c)
    del mock
    kafka = "not measured: --no-kafka" if args.no_kafka else against_kafka(n, size)
    if not isinstance(kafka, str):
        results["Kafka 4.4 (1 broker)"] = kafka

    table = Table(title=f"{n:,} records of {size} bytes, 3 brokers, {PARTITIONS} partitions (confluent-kafka)")
    for col in ("cluster", "produce rec/s", "produce MB/s", "consume rec/s", "consume MB/s"):
        table.add_column(col, justify="right" if col != "cluster" else "left")
    for name, (p, c) in results.items():
        table.add_row(name, f"{p:,.0f}", f"{p * size / 1e6:,.1f}", f"{c:,.0f}", f"{c * size / 1e6:,.1f}")
    console = Console(width=150)
    console.print(table)
    console.print(f"FakeCluster start to first Metadata answer: {startup:.1f} ms (median of 5)")
    console.print(
        f"resident memory: {idle_before:.0f} MB before start, {idle:.0f} MB idle, {after:.0f} MB after the run"
        " (this process: the embedded cluster and the clients)"
    )
    console.print(f"resident memory of the serve process: {serve_idle:.0f} MB idle, {serve_after:.0f} MB after the run")
    console.print(
        "(the mock keeps only about 5 MB per partition, so it is consumed from its log start; "
        "rates are per record read)"
    )
    if isinstance(kafka, str):
        console.print(f"real Kafka: {kafka}")
    fake, mock_rates = results["fakebroker"], results["librdkafka mock"]
    serve = results["fakebroker serve"]
    print(f"produce_ratio_mock_serve: {serve[0] / mock_rates[0]:.2f}")
    print(f"rss_after_serve_mb: {serve_after:.0f}")
    print(f"produce_ratio_mock: {fake[0] / mock_rates[0]:.2f}")
    print(f"consume_ratio_mock: {fake[1] / mock_rates[1]:.2f}")
    if not isinstance(kafka, str):
        print(f"produce_ratio_kafka: {fake[0] / kafka[0]:.2f}")
        print(f"consume_ratio_kafka: {fake[1] / kafka[1]:.2f}")


if __name__ == "__main__":
    main()

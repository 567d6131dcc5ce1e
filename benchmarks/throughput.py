"""Produce-then-consume throughput with confluent-kafka: fakebroker vs librdkafka's mock
cluster and, when Java and the conformance tests' Kafka jars are there, a real Kafka 4.4 broker.

    python benchmarks/throughput.py [--records 200000] [--size 100] [--rounds 3] [--no-kafka]

Every run uses the same client and settings in the same process; only the cluster differs.
All the clusters run at once, and each of ``--rounds`` rounds produces ``--records`` records to
a topic of its own on each cluster in turn and reads them back, each round in another order.
A single measurement of each says little: on this shared VM one cluster's rate moves by up to
2x from one minute to the next, so the table gives each rate's median and range over the
rounds, and each ratio is the median (and range) of the rounds' ratios, whose two sides were
measured seconds apart.

The consumer is tuned as a benchmark would tune it (``fetch.queue.backoff.ms=0``, large
fetches), so the mock's slow default consume does not flatter anyone. librdkafka's mock
cluster (``test.mock.num.brokers``) runs inside a producer's own librdkafka instance and its
brokers' addresses show in its metadata, so the clients bootstrap from there; it keeps only
about 5 MB per partition, so each topic is read from its log start and consume rates are per
record actually read. The real Kafka is one KRaft broker on 127.0.0.1
(``tests/conformance/kafka_broker.py``). Also measured: time from FakeCluster start to the
first answered Metadata request.

The embedded cluster shares this process, and so its memory, with the clients and the mock,
so its resident memory is given only before the others start; a ``fakebroker serve`` row runs
the same against a broker of its own (3 brokers, events printed into a pipe this process
drains) and gives that process's resident memory idle and after the run: the broker's alone.

The last lines give produce and consume separately: ``produce_ratio_mock_serve`` and
``rss_after_serve_mb`` for the ``serve`` row, then for the embedded cluster
``produce_ratio_mock: X``, ``consume_ratio_mock: Y`` and, where Kafka ran,
``produce_ratio_kafka: Z`` and ``consume_ratio_kafka: W`` (fakebroker's rate / theirs).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import headers

try:
    from ._measure import real_kafka, rss_mb, spread
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import real_kafka, rss_mb, spread

TOPIC = "bench"
PARTITIONS = 4  # what librdkafka's mock cluster gives an auto-created topic; used for both
QUIET = {"log_level": 3}


def produce(config: dict, n: int, size: int, topic: str) -> float:
    producer = Producer({**config, "linger.ms": 5, "batch.num.messages": 10000, "acks": 1, **QUIET})
    value = b"x" * size
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - start
    if remaining:
        raise RuntimeError(f"{remaining} records not delivered")
    return elapsed


def retained(bootstrap: str, topic: str) -> int:
    """Records the cluster still holds (librdkafka's mock keeps only ~5 MB per partition)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", **QUIET})
    try:
        marks = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(PARTITIONS)]
    finally:
        consumer.close()
    return sum(high - low for low, high in marks)


def consume(bootstrap: str, n: int, topic: str) -> float:
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
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
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


@contextmanager
def embedded(topics: list[str]) -> Iterator[str]:
    with FakeCluster(brokers=3, topics=dict.fromkeys(topics, PARTITIONS)).run_in_thread() as cluster:
        yield cluster.bootstrap_servers


@contextmanager
def served(topics: list[str], memory: dict[str, float]) -> Iterator[str]:
    """``fakebroker serve`` in a process of its own; its resident memory (MiB) goes into
    ``memory`` idle at start and ``after`` when the block ends."""
    command = [sys.executable, "-m", "fakebroker", "serve", "--brokers", "3", "--port", "0"]
    for topic in topics:
        command += ["--topic", f"{topic}:{PARTITIONS}"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        bootstrap = proc.stdout.readline().decode().split("bootstrap: ", 1)[1].strip()
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain the event lines
        memory["idle"] = rss_mb(proc.pid)
        yield bootstrap
        memory["after"] = rss_mb(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def mocked(topics: list[str]) -> Iterator[str]:
    """librdkafka's mock cluster. It lives inside a producer's instance, kept alive until the
    block ends; it has no controller for CreateTopics, so one record auto-creates each topic
    (with 4 partitions, which is checked) and is read back with the rest."""
    mock = Producer({"test.mock.num.brokers": 3, **QUIET})
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in mock.list_topics(timeout=10).brokers.values())
    warm = Producer({"bootstrap.servers": bootstrap, **QUIET})
    for topic in topics:
        warm.produce(topic, b"")
    warm.flush(10)
    for topic in topics:
        if len(warm.list_topics(topic, timeout=10).topics[topic].partitions) != PARTITIONS:
            raise RuntimeError("the mock cluster's auto-created topic does not have the expected partition count")
    del warm
    try:
        yield bootstrap
    finally:
        del mock


@contextmanager
def kafka_broker(broker_type: Any, topics: list[str]) -> Iterator[str]:
    from confluent_kafka.admin import AdminClient, NewTopic

    with broker_type() as kafka:
        bootstrap = f"127.0.0.1:{kafka.port}"
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1) for topic in topics]).values():
            future.result(30)
        yield bootstrap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each cluster measured once in each")
    parser.add_argument("--no-kafka", action="store_true", help="skip the real Kafka broker")
    args = parser.parse_args()
    if args.rounds < 1 or args.records < 1:
        parser.error("--rounds and --records take a whole number of at least 1")
    n, size = args.records, args.size
    topics = [f"{TOPIC}-{r}" for r in range(args.rounds)]

    startup = first_metadata_ms()
    idle_before = rss_mb()
    memory: dict[str, float] = {}
    clusters: dict[str, str] = {}
    with ExitStack() as stack:
        clusters["fakebroker"] = stack.enter_context(embedded(topics))
        idle = rss_mb()
        clusters["fakebroker serve"] = stack.enter_context(served(topics, memory))
        clusters["librdkafka mock"] = stack.enter_context(mocked(topics))
        kafka = "not measured: --no-kafka" if args.no_kafka else real_kafka()
        if not isinstance(kafka, str):
            clusters["Kafka 4.4 (1 broker)"] = stack.enter_context(kafka_broker(kafka, topics))
        rates: dict[str, list[tuple[float, float]]] = {name: [] for name in clusters}
        names = list(clusters)
        for index, topic in enumerate(topics):  # each round in another order, so none always goes first
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                bootstrap = clusters[name]
                p = produce({"bootstrap.servers": bootstrap}, n, size, topic)
                kept = retained(bootstrap, topic)
                c = consume(bootstrap, kept, topic)
                rates[name].append((n / p, kept / c))

    table = Table(
        title=f"{n:,} records of {size} bytes, 3 brokers, {PARTITIONS} partitions (confluent-kafka); "
        f"median of {args.rounds} rounds taking turns (range)"
    )
    for col in ("cluster", "produce rec/s", "produce MB/s", "consume rec/s", "consume MB/s"):
        table.add_column(col, justify="right" if col != "cluster" else "left")
    for name, pairs in rates.items():
        p = statistics.median(r[0] for r in pairs)
        c = statistics.median(r[1] for r in pairs)
        produced, consumed = [r[0] for r in pairs], [r[1] for r in pairs]
        table.add_row(name, spread(produced), f"{p * size / 1e6:,.1f}", spread(consumed), f"{c * size / 1e6:,.1f}")
    console = Console(width=150)
    console.print(table)
    console.print(f"FakeCluster start to first Metadata answer: {startup:.1f} ms (median of 5)")
    console.print(
        f"resident memory of this process: {idle_before:.0f} MB before the embedded cluster's start, {idle:.0f} MB idle"
    )
    console.print(
        f"resident memory of the serve process: {memory['idle']:.0f} MB idle, {memory['after']:.0f} MB after the run"
    )
    console.print(
        "(the mock keeps only about 5 MB per partition, so it is consumed from its log start; "
        "rates are per record read)"
    )
    if isinstance(kafka, str):
        console.print(f"real Kafka: {kafka}")

    def ratio(name: str, other: str, column: int) -> str:
        """The median of each round's ratio (and their range): rounds are minutes apart at most."""
        per_round = [a[column] / b[column] for a, b in zip(rates[name], rates[other], strict=True)]
        return spread(per_round, 2)

    mock = "librdkafka mock"
    print(f"produce_ratio_mock_serve: {ratio('fakebroker serve', mock, 0)}")
    print(f"rss_after_serve_mb: {memory['after']:.0f}")
    print(f"produce_ratio_mock: {ratio('fakebroker', mock, 0)}")
    print(f"consume_ratio_mock: {ratio('fakebroker', mock, 1)}")
    if not isinstance(kafka, str):
        kafka_name = "Kafka 4.4 (1 broker)"
        print(f"produce_ratio_kafka: {ratio('fakebroker', kafka_name, 0)}")
        print(f"consume_ratio_kafka: {ratio('fakebroker', kafka_name, 1)}")


if __name__ == "__main__":
    main()

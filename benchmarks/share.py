"""Share groups (KIP-932): two confluent-kafka ShareConsumers of one group read N records from a
4-partition topic with implicit acknowledgement — fakebroker against a real Kafka 4.4 broker
in the same run, when Java and the conformance tests' Kafka jars are there.

    python benchmarks/share.py [--records 200000] [--size 100] [--no-kafka]

The records are produced first; the group's ``share.auto.offset.reset`` is set to earliest
with IncrementalAlterConfigs (resource type GROUP), as a user would, and the clock runs from
the consumers' creation to the last record: joining, the first assignment (Kafka hands a new
group its partitions one heartbeat later, ~5 s; fakebroker at once) and reading. The last
lines are ``share_records_per_s_fakebroker``, ``..._kafka`` and ``share_ratio_kafka``
(fakebroker's records/s over Kafka's; also without the join, ``share_ratio_kafka_reading``).
"""

from __future__ import annotations

import argparse
import threading
import time

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster

try:
    from ._measure import real_kafka
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import real_kafka

TOPIC = "share-bench"
PARTITIONS = 4
QUIET = {"log_level": 3}


def prepare(bootstrap: str, group: str, n: int, size: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10000, **QUIET})
    value = b"x" * size
    for i in range(n):
        while True:
            try:
                producer.produce(TOPIC, value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(60):
        raise RuntimeError("records left unsent")


def consume(bootstrap: str, group: str, n: int, seconds: float) -> tuple[float, float]:
    """(seconds to read all ``n`` records, seconds from the first record to the last)."""
    counts = [0, 0]
    firsts: list[float] = []
    done = threading.Event()
    start = time.perf_counter()

    def member(index: int) -> None:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **QUIET})
        consumer.subscribe([TOPIC])
        try:
            while not done.is_set() and time.perf_counter() - start < seconds:
                messages = consumer.poll(0.2)
                got = sum(1 for m in messages if not m.error())
                if got and not firsts:
                    firsts.append(time.perf_counter())
                counts[index] += got
                if sum(counts) >= n:
                    done.set()
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    done.wait(seconds)
    end = time.perf_counter()
    done.set()
    for t in threads:
        t.join(30)
    if sum(counts) < n:
        raise RuntimeError(f"read {sum(counts)} of {n} records in {seconds} s")
    return end - start, end - (firsts[0] if firsts else start)


def against_kafka(n: int, size: int) -> tuple[float, float] | str:
    KafkaBroker = real_kafka()
    if isinstance(KafkaBroker, str):
        return KafkaBroker
    with KafkaBroker() as kafka:
        bootstrap = f"127.0.0.1:{kafka.port}"
        prepare(bootstrap, "bench", n, size)
        return consume(bootstrap, "bench", n, 300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--no-kafka", action="store_true", help="skip the real Kafka broker")
    args = parser.parse_args()
    n, size = args.records, args.size
    results: dict[str, tuple[float, float]] = {}
    with FakeCluster(brokers=1).run_in_thread() as cluster:
        prepare(cluster.bootstrap_servers, "bench", n, size)
        results["fakebroker"] = consume(cluster.bootstrap_servers, "bench", n, 300)
    kafka = "not measured: --no-kafka" if args.no_kafka else against_kafka(n, size)
    if not isinstance(kafka, str):
        results["Kafka 4.4 (1 broker)"] = kafka

    table = Table(title=f"2 ShareConsumers, {n:,} records of {size} bytes, {PARTITIONS} partitions (confluent-kafka)")
    for col in ("cluster", "total s", "records/s", "reading s", "records/s reading"):
        table.add_column(col, justify="right" if col != "cluster" else "left")
    for name, (total, reading) in results.items():
        table.add_row(name, f"{total:.2f}", f"{n / total:,.0f}", f"{reading:.2f}", f"{n / reading:,.0f}")
    Console(width=150).print(table)
    fake = results["fakebroker"]
    print(f"share_records_per_s_fakebroker: {n / fake[0]:.0f}")
    if isinstance(kafka, str):
        print(f"real Kafka: {kafka}")
        return
    print(f"share_records_per_s_kafka: {n / kafka[0]:.0f}")
    print(f"share_ratio_kafka: {kafka[0] / fake[0]:.2f}")
    print(f"share_ratio_kafka_reading: {kafka[1] / fake[1]:.2f}")


if __name__ == "__main__":
    main()

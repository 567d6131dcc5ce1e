"""Transactions per second with confluent-kafka: fakebroker vs librdkafka's mock cluster.

    python benchmarks/transactions.py [--seconds 5] [--records 10]

One transactional producer runs transactions back to back for a bounded time: begin,
produce ``--records`` records (one per partition in turn), commit; against a 3-broker
FakeCluster and, in the same run and with the same client settings, against a 3-broker
librdkafka mock cluster (``test.mock.num.brokers``, which supports transactions). Both are on
loopback. The table shows transactions per second, records per second, the median and 99th
percentile of one transaction's time (begin to commit answered), and how long
``init_transactions`` took. Then every committed record is read back with a read_committed
consumer from each cluster as a check. The last line is ``ratio: X`` = fakebroker / mock
transactions per second.
"""

from __future__ import annotations

import argparse
import statistics
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster

TOPIC = "bench-txn"
PARTITIONS = 4  # what librdkafka's mock cluster gives an auto-created topic; used for both
QUIET = {"log_level": 3}


def run_transactions(bootstrap: str, seconds: float, records: int) -> dict:
    """Back-to-back transactions for ``seconds``; their count, latencies and init time."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "bench-txn", "linger.ms": 0, **QUIET})
    began = time.perf_counter()
    producer.init_transactions(30)
    init_s = time.perf_counter() - began
    value = b"x" * 100
    latencies = []
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        producer.begin_transaction()
        for i in range(records):
            producer.produce(TOPIC, value=value, partition=i % PARTITIONS)
        producer.commit_transaction(30)
        latencies.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - start
    producer.flush(10)
    latencies.sort()
    return {
        "txns": len(latencies),
        "elapsed": elapsed,
        "init_s": init_s,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


def read_committed(bootstrap: str, expected: int, timeout: float = 60) -> int:
    """Records a read_committed consumer reads from the start of every partition (stops at
    ``expected`` or after ``timeout`` seconds)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-txn-check",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got = 0
    deadline = time.monotonic() + timeout
    while got < expected and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(10000, 0.5) if m.error() is None)
    consumer.close()
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="how long each cluster is measured")
    parser.add_argument("--records", type=int, default=10, help="records per transaction")
    args = parser.parse_args()
    results: dict[str, dict] = {}

    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}).run_in_thread() as cluster:
        results["fakebroker"] = r = run_transactions(cluster.bootstrap_servers, args.seconds, args.records)
        r["read"] = read_committed(cluster.bootstrap_servers, r["txns"] * args.records)
        r["stored"] = len(cluster.records(TOPIC, committed=True))

    # librdkafka's mock cluster lives inside this producer's instance; keep it alive until done.
    mock = Producer({"test.mock.num.brokers": 3, **QUIET})
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in mock.list_topics(timeout=10).brokers.values())
    warm = Producer({"bootstrap.servers": bootstrap, **QUIET})  # the mock auto-creates the topic
    warm.produce(TOPIC, b"")
    warm.flush(10)
    if len(warm.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions) != PARTITIONS:
        raise RuntimeError("the mock cluster's auto-created topic does not have the expected partition count")
    del warm
    results["librdkafka mock"] = r = run_transactions(bootstrap, args.seconds, args.records)
    r["read"] = read_committed(bootstrap, r["txns"] * args.records + 1) - 1  # minus the warm-up record
    del mock

    table = Table(
        title=f"transactions of {args.records} records of 100 bytes, {args.seconds:g} s each, "
        f"3 brokers, {PARTITIONS} partitions (confluent-kafka)"
    )
    for col in ("cluster", "txn/s", "records/s", "p50 ms", "p99 ms", "init_transactions s", "read back"):
        table.add_column(col, justify="left" if col == "cluster" else "right")
    for name, r in results.items():
        rate = r["txns"] / r["elapsed"]
        table.add_row(
            name,
            f"{rate:,.0f}",
            f"{rate * args.records:,.0f}",
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            f"{r['init_s']:.2f}",
            f"{r['read']:,} of {r['txns'] * args.records:,}",
        )
    console = Console(width=150)
    console.print(table)
    fake, base = results["fakebroker"], results["librdkafka mock"]
    if fake["stored"] != fake["txns"] * args.records:
        raise RuntimeError(
            f"fakebroker holds {fake['stored']} committed records, expected {fake['txns'] * args.records}"
        )
    print(f"ratio: {(fake['txns'] / fake['elapsed']) / (base['txns'] / base['elapsed']):.2f}")


if __name__ == "__main__":
    main()

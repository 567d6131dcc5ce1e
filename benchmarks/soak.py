"""A soak run: N minutes of group churn, leader and coordinator moves, faults and an acks=all
producer against an in-process cluster on 127.0.0.1; then what was acknowledged, lost and
duplicated, and RSS over time.

    python -m benchmarks.soak [--minutes 2] [--samples 8] [--seed 1]

- a producer (confluent-kafka, idempotent, ``acks=all``) writes numbered records to ``soak``
  (3 partitions, 3 brokers) as fast as the loop allows, with 1 KB values;
- a verifier (assigned, not in a group) reads every partition from the start all along and
  records every value it sees: an acknowledged value it never saw is *lost*, a value seen twice
  is *duplicated*, a partition whose numbers go down is *out of order*;
- group churn: two consumers of group ``soak-g`` join, poll a few seconds and leave, over and
  over;
- chaos, every few seconds, one of: move a partition's leader, move the group coordinator,
  a Produce error (NOT_LEADER_OR_FOLLOWER, twice), a slow Fetch, a failed Heartbeat;
- retention: ``retention.bytes`` 4 MB and ``segment.bytes`` 1 MB per partition, checked every
  2 s, so the logs stay bounded and RSS can stay flat.

Every loop is bounded by the deadline and stops by itself. The table shows RSS (this process:
the cluster runs in it, and so do the librdkafka clients' native buffers), the Python heap in
allocated blocks (``sys.getallocatedblocks``: the broker's side without librdkafka), the event
log's length, records kept and acknowledged over time; ``--tracemalloc`` adds the allocation
sites that grew most between the first and the last sample.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import tracemalloc
from array import array
from collections import defaultdict

from confluent_kafka import Consumer, Producer, TopicPartition
from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster

try:
    from ._measure import rss_mb
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import rss_mb

TOPIC = "soak"
PARTITIONS = 3
GROUP = "soak-g"
QUIET = {"log_level": 3}


class Soak:
    def __init__(self, cluster: FakeCluster, deadline: float, seed: int):
        self.cluster = cluster
        self.deadline = deadline
        self.rng = random.Random(seed)
        # partition -> numbers acknowledged / read by the verifier; arrays of int64, not lists of
        # int objects, so that the harness's own bookkeeping barely shows in RSS
        self.acked: dict[int, array] = defaultdict(lambda: array("q"))
        self.seen: dict[int, array] = defaultdict(lambda: array("q"))
        self.produce_errors = 0
        self.joins = 0
        self.chaos: dict[str, int] = defaultdict(int)
        self.producer_done = threading.Event()

    def running(self) -> bool:
        return time.monotonic() < self.deadline

    def produce(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True, **QUIET}
        )

        def done(err, msg):
            if err is None:
                self.acked[msg.partition()].append(int(msg.key()))
            else:
                self.produce_errors += 1

        n = 0
        pad = b"x" * 1000
        while self.running():
            try:
                producer.produce(TOPIC, key=str(n).encode(), value=pad, partition=n % PARTITIONS, on_delivery=done)
                n += 1
            except BufferError:
                pass
            producer.poll(0.001 if n % 50 else 0.01)
        producer.flush(30)
        self.producer_done.set()

    def verify(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.cluster.bootstrap_servers, "group.id": "soak-verifier", **QUIET})
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        idle_since = None
        while True:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                self.seen[msg.partition()].append(int(msg.key()))
                idle_since = None
            elif self.producer_done.is_set():  # drain: stop once nothing came for 3 s
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since > 3:
                    break
        consumer.close()

    def churn(self, name: str) -> None:
        while self.running():
            consumer = Consumer(
                {
                    "bootstrap.servers": self.cluster.bootstrap_servers,
                    "group.id": GROUP,
                    "client.id": name,
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 500,
                    "auto.offset.reset": "latest",
                    **QUIET,
                }
            )
            consumer.subscribe([TOPIC])
            self.joins += 1
            stay = time.monotonic() + self.rng.uniform(1, 4)
            while time.monotonic() < min(stay, self.deadline):
                consumer.poll(0.2)
            consumer.close()

    def chaos_loop(self) -> None:
        c = self.cluster
        while self.running():
            time.sleep(self.rng.uniform(1, 3))
            what = self.rng.choice(["leader", "coordinator", "produce_error", "slow_fetch", "heartbeat_error"])
            self.chaos[what] += 1
            if what == "leader":
                p = self.rng.randrange(PARTITIONS)
                c.move_leader(TOPIC, p, (c.leader(TOPIC, p) + 1) % len(c.servers))
            elif what == "coordinator":
                c.move_coordinator(GROUP)
            elif what == "produce_error":
                c.faults.add(api="Produce", topic=TOPIC, error="NOT_LEADER_OR_FOLLOWER", times=2)
            elif what == "slow_fetch":
                c.faults.add(api="Fetch", delay=0.3, times=3)
            else:
                c.faults.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS", times=1)
            if self.rng.random() < 0.2:
                c.faults.clear()  # spent rules stay listed; drop them now and then

    def stored(self) -> int:
        return sum(hw - lo for lo, hw in (self.cluster.offsets(TOPIC, p) for p in range(PARTITIONS)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--event-log-size",
        type=int,
        default=None,
        help="events the cluster keeps (default: FakeCluster's 100,000; a small ring fills, and so levels off, sooner)",
    )
    parser.add_argument(
        "--tracemalloc", action="store_true", help="also list the Python allocation sites that grew most (slower)"
    )
    args = parser.parse_args()
    if args.tracemalloc:
        tracemalloc.start(8)
    seconds = args.minutes * 60
    topics = {TOPIC: {"partitions": PARTITIONS, "config": {"retention.bytes": 4_000_000, "segment.bytes": 1_048_576}}}
    config = {"log.retention.check.interval.ms": 2000}
    console = Console()
    rows = []
    sizing = {} if args.event_log_size is None else {"event_log_size": args.event_log_size}
    with FakeCluster(brokers=3, topics=topics, config=config, **sizing).run_in_thread() as cluster:
        started = time.monotonic()
        soak = Soak(cluster, started + seconds, args.seed)
        rows.append((0.0, rss_mb(), sys.getallocatedblocks(), len(cluster.events), 0, 0))
        first_snapshot = None
        threads = [
            threading.Thread(target=soak.produce, daemon=True),
            threading.Thread(target=soak.verify, daemon=True),
            threading.Thread(target=soak.churn, args=("churn-a",), daemon=True),
            threading.Thread(target=soak.churn, args=("churn-b",), daemon=True),
            threading.Thread(target=soak.chaos_loop, daemon=True),
        ]
        for t in threads:
            t.start()
        for i in range(1, args.samples + 1):
            time.sleep(max(0.0, started + seconds * i / args.samples - time.monotonic()))
            acked = sum(len(v) for v in soak.acked.values())
            rows.append(
                (
                    time.monotonic() - started,
                    rss_mb(),
                    sys.getallocatedblocks(),
                    len(cluster.events),
                    soak.stored(),
                    acked,
                )
            )
            if args.tracemalloc and i == 1:
                first_snapshot = tracemalloc.take_snapshot()
        growth = []
        if first_snapshot is not None:
            growth = tracemalloc.take_snapshot().compare_to(first_snapshot, "traceback")[:5]
        for t in threads:
            t.join(60)
        handler_errors = sum(1 for e in cluster.events if e.kind == "handler_error")
        event_kinds: dict[str, int] = defaultdict(int)
        for e in cluster.events:
            event_kinds[e.kind] += 1

    table = Table(title=f"soak, {args.minutes} min: RSS over time (this process)")
    for col in ("t (s)", "RSS (MB)", "Python blocks", "events", "records kept", "acknowledged"):
        table.add_column(col, justify="right")
    for t, rss, blocks, events, kept, acked in rows:
        table.add_row(f"{t:.0f}", f"{rss:.1f}", f"{blocks:,}", str(events), str(kept), str(acked))
    console.print(table)
    for stat in growth:
        console.print(f"{stat.size_diff / 1e6:+.2f} MB in {stat.count_diff:+,} blocks")
        for line in stat.traceback.format()[-6:]:
            console.print("    " + line, markup=False, highlight=False)

    lost = duplicated = out_of_order = 0
    for p in range(PARTITIONS):
        seen = soak.seen[p]
        seen_set = set(seen)
        lost += sum(1 for n in soak.acked[p] if n not in seen_set)
        duplicated += len(seen) - len(seen_set)
        out_of_order += sum(1 for a, b in zip(seen, seen[1:]) if b <= a)
    acked = sum(len(v) for v in soak.acked.values())
    summary = Table(title="outcome")
    summary.add_column("what")
    summary.add_column("value", justify="right")
    for what, value in [
        ("records acknowledged", acked),
        ("lost (acknowledged, never read)", lost),
        ("duplicated (read twice)", duplicated),
        ("out of order", out_of_order),
        ("produce errors (delivery failed)", soak.produce_errors),
        ("group joins", soak.joins),
        ("handler errors", handler_errors),
        *((f"chaos: {k}", v) for k, v in sorted(soak.chaos.items())),
        *(
            (f"events: {k}", v)
            for k, v in sorted(event_kinds.items(), key=lambda kv: -kv[1])[:5]  # what fills the event log
        ),
        ("RSS growth first->last sample (MB)", f"{rows[-1][1] - rows[1][1]:+.1f}"),
    ]:
        summary.add_row(what, str(value))
    console.print(summary)


if __name__ == "__main__":
    main()

"""The consistent-region operator under churn: members join, leave and crash (their session
expires), a synchronous commit is refused, the group's coordinator moves and the topic grows
from 4 to 6 partitions while records stream in. The region resets many times, yet its final
checkpoint equals the totals computed in plain Python from every produced record."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Producer
from region_operator import member_consumer, region, totals

from fakebroker.testing import eventually, total_lag

pytestmark = pytest.mark.clients
RECORDS = 1500
KEYS = 17
SETTINGS = {
    "session.timeout.ms": 3000,
    "heartbeat.interval.ms": 300,
    "max.poll.interval.ms": 10000,
    "topic.metadata.refresh.interval.ms": 500,
    "log_level": 0,  # the crashed member's cut connections would log
}


def expected_totals(produced: list[tuple[str, int]]) -> dict[str, tuple[int, int]]:
    counts: Counter[str] = Counter()
    sums: Counter[str] = Counter()
    for key, amount in produced:
        counts[key] += 1
        sums[key] += amount
    return {key: (counts[key], sums[key]) for key in counts}


@pytest.mark.fakebroker(
    brokers=3,
    topics={"events": 4},
    coordinator_load_time_ms=300,
    config={"group.min.session.timeout.ms": 1000},  # Kafka's floor is 6 s; a crash expires sooner here
)
def test_region_is_exact_under_churn_crashes_and_new_partitions(fakebroker):
    servers = fakebroker.bootstrap_servers
    producer = Producer(
        {
            "bootstrap.servers": servers,
            "enable.idempotence": True,
            "linger.ms": 5,
            "topic.metadata.refresh.interval.ms": 500,
            "log_level": 2,
        }
    )
    ops = region(interval=0.25, merge_timeout=1.0)

    def add(name: str) -> None:
        ops.add(name, member_consumer(servers, "totals", "events", name, **SETTINGS))

    add("m1")
    add("m2")
    produced: list[tuple[str, int]] = []
    partitions = 4

    def grow() -> None:
        nonlocal partitions
        fakebroker.add_partitions("events", 6)
        # the producer writes to the new partitions once its metadata has them
        eventually(lambda: len(producer.list_topics("events", timeout=5).topics["events"].partitions) == 6)
        partitions = 6

    def crash_m2() -> None:
        fakebroker.cut("m2")  # no heartbeats reach the coordinator: its session expires
        ops.crash("m2")

    refusal = None

    def refuse_a_commit() -> None:
        nonlocal refusal
        refusal = fakebroker.faults.add(api="OffsetCommit", client_id="m3", error="REBALANCE_IN_PROGRESS", times=1)

    # each bad day happens once that many records have been produced
    churn = [
        (300, lambda: add("m3")),
        (500, grow),
        (700, refuse_a_commit),
        (900, crash_m2),
        (1100, lambda: ops.remove("m1")),
        (1300, lambda: fakebroker.move_coordinator("totals")),
    ]
    deadline = time.monotonic() + 90
    while len(produced) < RECORDS:
        assert time.monotonic() < deadline, f"produced {len(produced)} of {RECORDS}"
        for _ in range(10):
            i = len(produced)
            key, amount = f"k{i % KEYS}", i % 100
            producer.produce("events", key=key.encode(), value=str(amount).encode(), partition=i % partitions)
            produced.append((key, amount))
        producer.poll(0)
        while churn and len(produced) >= churn[0][0]:
            churn.pop(0)[1]()
        ops.step()
    assert producer.flush(10) == 0
    ends = {p: fakebroker.offsets("events", p)[1] for p in range(6)}
    assert sum(ends.values()) == RECORDS

    # Let the region catch up until a complete checkpoint covers every record (m2's partitions
    # move to m3 once its session has expired).
    while ops.store.latest.offsets != ends:
        assert time.monotonic() < deadline, f"checkpoint at {ops.store.latest.offsets}, log ends {ends}"
        ops.step()
    checkpoint = ops.store.latest
    truth = expected_totals(produced)
    assert totals(checkpoint.state.values()) == truth  # exactly once in effect
    assert totals(ops.live_state().values()) == truth
    assert checkpoint.offsets[4] == ends[4] > 0 and checkpoint.offsets[5] == ends[5] > 0  # new partitions too

    # every kind of reset happened, and work was really thrown away and redone
    reasons = ops.resets
    assert any("lost partitions" in r for r in reasons), reasons
    assert any("not merged within 1.0 s: no part from m2" in r for r in reasons), reasons  # the crash
    assert any(r.startswith("m3's commit failed") and "REBALANCE_IN_PROGRESS" in r for r in reasons), reasons
    assert refusal is not None and refusal.fired == 1
    # the coordinator expired m2's session (it never left), and m1 left (a coordinator that
    # loads the group before the next generation is stored gets m1 back, as Kafka's does, and
    # expires it too)
    events = [e for e in fakebroker.events if e.group == "totals"]
    expired = {e.client_id for e in events if e.kind == "member_expired"}
    left = {e.client_id for e in events if e.kind == "member_left"}
    assert "m2" in expired and "m2" not in left and "m1" in left and "m3" not in expired
    # Kafka's committed offsets, made synchronously after each checkpoint, catch up too
    while total_lag(fakebroker, "totals", "events"):
        assert time.monotonic() < deadline, f"lag {total_lag(fakebroker, 'totals', 'events')}"
        ops.step()
    fakebroker.heal("m2")
    ops.stop()
    discarded = sum(m.discarded for m in ops.everyone)
    processed = sum(m.processed for m in ops.everyone)
    assert discarded > 0
    assert processed == RECORDS + discarded  # every fold kept exactly once; the rest thrown away by resets
    print(
        f"resets={len(reasons)} checkpoints={len(ops.store.history)} aborted={ops.aborted} "
        f"processed={processed} discarded={discarded} skipped={sum(m.skipped for m in ops.everyone)}"
    )

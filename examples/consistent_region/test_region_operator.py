"""The consistent-region operator under churn: members join and leave, the group's
coordinator moves and the topic grows from 4 to 6 partitions while records stream in. The
region resets several times, yet its final checkpoint equals the totals computed in plain
Python from every produced record."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Producer
from region_operator import Region

from fakebroker.testing import eventually, total_lag

pytestmark = pytest.mark.clients
RECORDS = 1500
KEYS = 17
SETTINGS = {
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 300,
    "max.poll.interval.ms": 10000,
    "topic.metadata.refresh.interval.ms": 500,
    "log_level": 2,
}


def expected_totals(produced: list[tuple[str, int]]) -> dict[str, tuple[int, int]]:
    counts: Counter[str] = Counter()
    sums: Counter[str] = Counter()
    for key, amount in produced:
        counts[key] += 1
        sums[key] += amount
    return {key: (counts[key], sums[key]) for key in counts}


@pytest.mark.fakebroker(brokers=3, topics={"events": 4}, coordinator_load_time_ms=300)
def test_region_is_exact_under_churn_and_new_partitions(fakebroker):
    producer = Producer(
        {
            "bootstrap.servers": fakebroker.bootstrap_servers,
            "enable.idempotence": True,
            "linger.ms": 5,
            "topic.metadata.refresh.interval.ms": 500,
            "log_level": 2,
        }
    )
    region = Region(fakebroker.bootstrap_servers, "totals", "events", interval=0.25, **SETTINGS)
    region.add("m1")
    region.add("m2")
    produced: list[tuple[str, int]] = []
    partitions = 4

    def grow() -> None:
        nonlocal partitions
        fakebroker.add_partitions("events", 6)
        # the producer writes to the new partitions once its metadata has them
        eventually(lambda: len(producer.list_topics("events", timeout=5).topics["events"].partitions) == 6)
        partitions = 6

    # each bad day happens once that many records have been produced
    churn = [
        (300, lambda: region.add("m3")),
        (600, grow),
        (900, lambda: region.remove("m1")),
        (1200, lambda: fakebroker.move_coordinator("totals")),
    ]
    deadline = time.monotonic() + 60
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
        region.step()
    assert producer.flush(10) == 0
    ends = {p: fakebroker.offsets("events", p)[1] for p in range(6)}
    assert sum(ends.values()) == RECORDS

    # Let the region catch up until a complete checkpoint covers every record.
    while region.store.completed.offsets != ends:
        assert time.monotonic() < deadline, f"checkpoint at {region.store.completed.offsets}, log ends {ends}"
        region.step()
    checkpoint = region.store.completed
    truth = expected_totals(produced)
    assert checkpoint.totals() == truth  # exactly once in effect
    assert region.live_totals() == truth
    # the new partitions 4 and 5 were consumed and checkpointed
    assert checkpoint.offsets[4] == ends[4] > 0 and checkpoint.offsets[5] == ends[5] > 0
    # the region really reset, and work was really thrown away and redone
    store = region.store
    discarded = sum(m.discarded for m in region.everyone)
    processed = sum(m.processed for m in region.everyone)
    assert store.resets > 0 and discarded > 0
    assert processed == RECORDS + discarded  # every fold kept exactly once; the rest thrown away by resets
    # Kafka's committed offsets (made after each checkpoint, for monitoring) catch up too
    while total_lag(fakebroker, "totals", "events"):
        assert time.monotonic() < deadline, f"lag {total_lag(fakebroker, 'totals', 'events')}"
        region.step()
    region.stop()
    kinds = {e.kind for e in fakebroker.events if e.group == "totals"}
    assert {"member_left", "group_loaded", "rebalance_started"} <= kinds
    print(
        f"resets={store.resets} checkpoints={len(store.history)} aborted={store.aborted} "
        f"processed={processed} discarded={discarded} skipped={sum(m.skipped for m in region.everyone)}"
    )

"""A checkpointing stream operator in the style of a "consistent region", on
:mod:`fakebroker.testing.region`'s harness: this file only says what the operator computes and how
its consumers are made; draining, checkpoints, merges, synchronous commits and resets are the
harness's.

Each member of a consumer group folds its partitions' records into per-key running totals
(count and sum), kept per partition. A partition's state is a plain dict, changed in place by
the fold: the harness copies it whenever it goes into or comes out of a checkpoint.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from confluent_kafka import Consumer

from fakebroker.testing.region import ConfluentRegionConsumer, Record, Region

State = dict[str, tuple[int, int]]  # key -> (count, sum) for one partition


def fold(state: State, record: Record) -> State:
    key = record.key.decode()
    count, total = state.get(key, (0, 0))
    state[key] = (count + 1, total + int(record.value))
    return state


def totals(states: Iterable[State]) -> dict[str, tuple[int, int]]:
    """Per-key (count, sum) over per-partition states."""
    counts: Counter[str] = Counter()
    sums: Counter[str] = Counter()
    for state in states:
        for key, (count, total) in state.items():
            counts[key] += count
            sums[key] += total
    return {key: (counts[key], sums[key]) for key in counts}


def region(*, interval: float = 0.25, merge_timeout: float = 1.0) -> Region[State]:
    return Region(initial=lambda partition: {}, fold=fold, interval=interval, merge_timeout=merge_timeout)


def member_consumer(bootstrap: str, group: str, topic: str, name: str, **settings: object) -> ConfluentRegionConsumer:
    """A member's consumer. Eager assignment: every rebalance revokes everything, so every
    rebalance resets the region."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "roundrobin",
            **settings,
        }
    )
    return ConfluentRegionConsumer(consumer, topic)

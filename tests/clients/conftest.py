"""Fixtures for tests in which real Kafka clients talk to a running FakeCluster."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster


@pytest.fixture
def cluster3():
    """A 3-broker cluster with a 6-partition topic ``orders``, run in a background thread."""
    with FakeCluster(brokers=3, topics={"orders": 6}).run_in_thread() as cluster:
        yield cluster


@pytest.fixture
def cluster1():
    with FakeCluster(brokers=1).run_in_thread() as cluster:
        yield cluster


def expected_records(n: int, partitions: int) -> dict[int, list[tuple[bytes, bytes]]]:
    """The (key, value) pairs ``produce_plan`` sends, by partition, in order."""
    out: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(partitions)}
    for i in range(n):
        out[i % partitions].append((f"key-{i}".encode(), f"value-{i}".encode()))
    return out


def assert_dropped_after_handling(cluster: FakeCluster, rule, count: int) -> None:
    """The ``drop_after`` fault ``rule`` fired ``count`` times: each time the request was handled,
    then its connection closed instead of answering."""
    assert rule.fired == count
    reasons = [e.details["reason"] for e in cluster.events if e.kind == "connection_closed"]
    closed = [r for r in reasons if "drop after handling" in r]
    assert len(closed) == count and all(r.startswith(f"fault rule {rule.id}: ") for r in closed), reasons

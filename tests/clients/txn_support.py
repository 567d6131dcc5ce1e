"""What the transaction tests of every client share: waiting, the events of one transactional
id, the request versions a client used, and the exactly-once check of a consume-transform-
produce app (``in`` copied to ``out`` as ``k<i>`` -> ``t-v<i>``, partition for partition)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from fakebroker.cluster import FakeCluster

TXN_APIS = ["InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "Produce"]


def wait_until(check: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def txn_events(cluster: FakeCluster, kind: str, tid: str, since: int = 0) -> list:
    return [e for e in cluster.events[since:] if e.kind == kind and e.details.get("transactional_id") == tid]


def versions_used(cluster: FakeCluster, client_prefix: str = "") -> dict[str, set[int]]:
    """API -> versions seen by a do-nothing fault rule (``action="delay", delay=0``) on ``TXN_APIS``."""
    used: dict[str, set[int]] = {}
    for e in cluster.events:
        if e.kind == "fault_fired" and (e.client_id or "").startswith(client_prefix):
            used.setdefault(e.details["api"], set()).add(e.details["version"])
    return used


def input_end(cluster: FakeCluster, topic: str = "in", partitions: int = 6) -> dict[tuple[str, int], int]:
    return {(topic, p): cluster.offsets(topic, p)[1] for p in range(partitions)}


def assert_exactly_once(
    cluster: FakeCluster, gid: str, n: int, *, source: str = "in", sink: str = "out", partitions: int = 6
) -> None:
    """``sink`` as read_committed holds k0..k(n-1) once each, in input order per partition, and the
    group committed the input's end offsets."""
    out = cluster.records(sink, committed=True)
    keys = Counter(k.decode() for _, _, k, _ in out)
    assert keys == Counter(f"k{i}" for i in range(n)), {k: c for k, c in keys.items() if c != 1}
    for p in range(partitions):
        assert [k for q, _, k, _ in out if q == p] == [b"k%d" % i for i in range(p, n, partitions)]
    assert all(v == b"t-v" + k[1:] for _, _, k, v in out)
    assert cluster.committed(gid) == input_end(cluster, source, partitions)

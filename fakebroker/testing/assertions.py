"""Assertion helpers for tests against a FakeCluster: the facts users check most, each
failing with a message that says what was expected and what was there.

>>> eventually(lambda: 2 + 2 == 4, timeout=1)
True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..cluster import FakeCluster

T = TypeVar("T")
PROGRAMMING_ERRORS = (TypeError, NameError, AttributeError)


def eventually(
    check: Callable[[], T], timeout: float = 10.0, *, interval: float = 0.05, message: str | None = None
) -> T:
    """Call ``check`` until it returns something truthy (returned) or ``timeout`` passes; an
    exception counts as "not yet", but a programming error (TypeError, NameError,
    AttributeError) is raised at once rather than waited out. On timeout, AssertionError with
    ``message`` (default: the function's name), the last value and the last exception.

    To wait on the cluster while a client polls, ``cluster.wait_for_sync(condition,
    poll=consumer.poll)`` is the one to use."""
    from ..cluster.conditions import Condition  # here: `fakebroker.testing.ledger` loads no cluster

    if isinstance(check, Condition):
        raise TypeError(
            f"eventually() calls a function with no arguments; {check.describe()} is a cluster condition: "
            "use cluster.wait_for_sync(condition, poll=consumer.poll)"
        )
    if not callable(check):
        raise TypeError(f"eventually() takes a function to call, not {check!r}")
    deadline = time.monotonic() + timeout
    last: Any = None
    error: BaseException | None = None
    while True:
        try:
            last, error = check(), None
            if last:
                return last
        except PROGRAMMING_ERRORS:  # waiting will not fix a typo or a wrong call
            raise
        except Exception as exc:  # not there yet
            error = exc
        if time.monotonic() >= deadline:
            what = message or getattr(check, "__name__", "condition")
            detail = f"last exception: {error!r}" if error is not None else f"last value: {last!r}"
            raise AssertionError(f"{what} did not hold within {timeout:g} s ({detail})")
        time.sleep(interval)


def assignment(cluster: FakeCluster, group: str) -> dict[str, dict[str, list[int]]]:
    """client id -> {topic: partitions} of a consumer group's current generation."""
    view = cluster.group(group)
    if view is None:
        raise AssertionError(f"group {group!r} does not exist (groups: {cluster.groups()})")
    return view.assignment


def assert_assignment(cluster: FakeCluster, group: str, expected: dict[str, dict[str, list[int]]]) -> None:
    got = assignment(cluster, group)
    normalised = {c: {t: sorted(ps) for t, ps in a.items() if ps} for c, a in got.items()}
    wanted = {c: {t: sorted(ps) for t, ps in a.items() if ps} for c, a in expected.items()}
    assert normalised == wanted, f"group {group!r} assignment is {normalised}, expected {wanted}"


def partitions_covered_once(cluster: FakeCluster, group: str, topic: str) -> bool:
    """Every partition of ``topic`` is owned by exactly one member of ``group``."""
    view = cluster.group(group)
    owned = [p for m in (view.members if view else ()) for p in (m.assignment or {}).get(topic, [])]
    return sorted(owned) == list(range(cluster.topics()[topic]))


def committed(cluster: FakeCluster, group: str) -> dict[tuple[str, int], int]:
    return cluster.committed(group)


def lag(cluster: FakeCluster, group: str, topic: str) -> dict[int, int | None]:
    """partition -> high watermark minus committed offset (None where nothing is committed)."""
    offsets = cluster.committed(group)
    out: dict[int, int | None] = {}
    for p in range(cluster.topics()[topic]):
        high = cluster.offsets(topic, p)[1]
        done = offsets.get((topic, p))
        out[p] = None if done is None else high - done
    return out


def total_lag(cluster: FakeCluster, group: str, topic: str) -> int:
    """Records of ``topic`` not yet committed by ``group`` (uncommitted partitions count from the log start)."""
    total = 0
    for p, behind in lag(cluster, group, topic).items():
        total += behind if behind is not None else cluster.offsets(topic, p)[1] - cluster.offsets(topic, p)[0]
    return total


def values(cluster: FakeCluster, topic: str, partition: int | None = None) -> list[bytes | None]:
    """The values stored in a topic, in partition then offset order."""
    return [v for _, _, _, v in cluster.records(topic, partition)]

"""Committed offsets as the data directory's JSON keeps them (the snapshot, the journal, the
transaction state): [topic, partition, offset, leader epoch, metadata, commit time, expire time]."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.groups.offsets import CommittedOffset


def offset_row(topic: str, partition: int, o: CommittedOffset) -> list[Any]:
    return [topic, partition, o.offset, o.leader_epoch, o.metadata, o.commit_timestamp_ms, o.expire_timestamp_ms]


def is_count(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def row_problem(row: Any) -> str | None:
    if not isinstance(row, list) or len(row) != 7:
        return "not a list of 7"
    topic, partition, offset, epoch, metadata, committed, expire = row
    if not isinstance(topic, str) or not is_count(partition) or not is_count(offset, -1) or not is_count(epoch, -1):
        return "topic, partition, offset or epoch of the wrong type"
    if not isinstance(metadata, str) or not is_count(committed, -1) or not is_count(expire, -1):
        return "metadata, time or expiry of the wrong type"
    return None


def first_problem(entries: Any, entry_problem: Callable[[Any], str | None]) -> str | None:
    """What is wrong with a snapshot section of id -> entry (None: usable): the first entry's
    problem, named by its id."""
    if not isinstance(entries, dict):
        return "is not an object"
    for key, entry in entries.items():
        found = entry_problem(entry)
        if found:
            return f"{key}: {found}"
    return None


def plain_assignment(assignment: dict[str, set[int]]) -> dict[str, list[int]]:
    """An assignment as JSON keeps it: topic -> sorted partitions, empty topics left out."""
    return {t: sorted(ps) for t, ps in sorted(assignment.items()) if ps}


def assignment_sets(assignment: dict[str, list[int]]) -> dict[str, set[int]]:
    """An assignment read back from JSON."""
    return {t: set(ps) for t, ps in assignment.items()}

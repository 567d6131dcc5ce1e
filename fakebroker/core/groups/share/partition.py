"""One share partition: a share group's view of one topic partition (KIP-932's SharePartition).

Every offset from the share-partition start offset (SPSO, below which everything is done) up
to the end of what was ever acquired is in flight, in one of Kafka's record states; the
ranges below hold them, split only where some state differs, so a batch of 500 records
acquired together is one range until an acknowledgement covers part of it. Records past the
end were never delivered. Pure: the caller passes the log's batches, the clock and the group
configs in; lock timers are the caller's (each acquisition gets an id, its lock's name).
"""

from __future__ import annotations

import bisect
import enum
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from ....protocol.error_codes import ErrorCode as E


class RecordState(enum.IntEnum):
    """Kafka's ids, as persisted (``RecordState``)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    ARCHIVED = 4


TERMINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AckType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(slots=True)
class InFlight:
    """Offsets ``first``..``last`` in one state with one delivery count (and, while acquired,
    one owner and one lock)."""

    first: int
    last: int
    state: RecordState
    count: int = 0  # deliveries so far
    member: str = ""
    lock: int = 0  # the acquisition whose lock holds it (0: none)

    def same(self, other: InFlight) -> bool:
        return (self.state, self.count, self.member, self.lock) == (
            other.state,
            other.count,
            other.member,
            other.lock,
        )


@dataclass(frozen=True, slots=True)
class LogBatch:
    """What acquisition needs of one stored batch."""

    base: int
    last: int
    data: bytes
    aborted: bool = False  # a batch of an aborted transaction (read_committed archives it)


@dataclass(frozen=True, slots=True)
class Acquired:
    """One ``AcquiredRecords`` entry."""

    first: int
    last: int
    count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    first: int
    last: int
    types: tuple[int, ...]


class AckError(Exception):
    def __init__(self, code: E, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class SharePartition:
    """The in-flight records of one (group, topic, partition).

    :param start_offset: the SPSO loaded (already resolved from ``share.auto.offset.reset``).
    :param leader_epoch: the partition's leader epoch at load: a new leader reloads.
    """

    def __init__(self, group_id: str, topic: str, partition: int, start_offset: int, leader_epoch: int = 0):
        self.group_id = group_id
        self.topic = topic
        self.partition = partition
        self.start = start_offset
        self.end = start_offset  # the first offset never acquired (Kafka's SPEO + 1)
        self.ranges: list[InFlight] = []  # sorted, covering [start, end) without holes
        self.leader_epoch = leader_epoch
        self.state_epoch = 0

    # -- views -----------------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        """Kafka's ``numInFlightRecords``: acknowledged records inside the window count."""
        return self.end - self.start

    def delivery_complete_count(self) -> int:
        return sum(r.last - r.first + 1 for r in self.ranges if r.state in TERMINAL)

    def records(self) -> Iterator[InFlight]:
        return iter(self.ranges)

    def has_available(self) -> bool:
        return any(r.state == RecordState.AVAILABLE for r in self.ranges)

    def acquired_by(self, member: str) -> list[InFlight]:
        return [r for r in self.ranges if r.state == RecordState.ACQUIRED and r.member == member]

    def read_from(self) -> int:
        """Where acquisition reads the log from: the first never-delivered offset."""
        for r in self.ranges:
            if r.state == RecordState.AVAILABLE and r.count == 0:
                return r.first
        return self.end

    # -- loading ---------------------------------------------------------------------------------
    def load(self, start: int, batches: Iterable[tuple[int, int, int, int]]) -> None:
        """Persisted state: the SPSO and (first, last, state, count) batches; holes between
        them are offsets never delivered (acquired later as new, count 1)."""
        self.start = self.end = start
        self.ranges = []
        for first, last, state, count in sorted(batches):
            if last < self.end:
                continue
            first = max(first, self.end)
            if first > self.end:
                self.ranges.append(InFlight(self.end, first - 1, RecordState.AVAILABLE, 0))
            persisted = RecordState(state)
            if persisted == RecordState.ACQUIRED:
                persisted = RecordState.AVAILABLE  # an acquisition is never persisted
            self.ranges.append(InFlight(first, last, persisted, count))
            self.end = last + 1
        self._advance()

    def snapshot(self) -> tuple[int, tuple[tuple[int, int, int, int], ...]]:
        """What a WriteShareGroupState carries: the SPSO and every range not acquired (an
        acquisition is written as the state it came from: available with its earlier count)."""
        out = []
        for r in self.ranges:
            if r.state == RecordState.ACQUIRED:
                out.append((r.first, r.last, int(RecordState.AVAILABLE), r.count - 1))
            else:
                out.append((r.first, r.last, int(r.state), r.count))
        return self.start, tuple(out)

    # -- the range list --------------------------------------------------------------------------
    def _index(self, offset: int) -> int:
        """Index of the range holding ``offset`` (which must be in [start, end))."""
        return bisect.bisect_right(self.ranges, offset, key=lambda r: r.first) - 1

    def _cut(self, offset: int) -> None:
        """Make ``offset`` the first offset of a range (when inside the window)."""
        if not self.start < offset < self.end:
            return
        i = self._index(offset)
        r = self.ranges[i]
        if r.first == offset:
            return
        self.ranges[i : i + 1] = [replace(r, last=offset - 1), replace(r, first=offset)]

    def _span(self, first: int, last: int) -> list[InFlight]:
        """The ranges exactly covering [first, last] (clipped to the window), cut as needed."""
        first, last = max(first, self.start), min(last, self.end - 1)
        if first > last:
            return []
        self._cut(first)
        self._cut(last + 1)
        i, j = self._index(first), self._index(last)
        return self.ranges[i : j + 1]

    def _merge(self) -> None:
        merged: list[InFlight] = []
        for r in self.ranges:
            if merged and merged[-1].same(r) and merged[-1].last + 1 == r.first:
                merged[-1].last = r.last
            else:
                merged.append(r)
        self.ranges = merged

    def _advance(self) -> None:
        """Move the SPSO over the leading run of finished offsets (dropping them)."""
        i = 0
        while i < len(self.ranges) and self.ranges[i].state in TERMINAL:
            i += 1
        if i:
            del self.ranges[:i]
            self.start = self.ranges[0].first if self.ranges else self.end

    def skip_to(self, offset: int) -> None:
        """The log starts above the SPSO (retention, DeleteRecords): what lies below is gone."""
        if offset <= self.start:
            return
        for r in self._span(self.start, offset - 1):
            if r.state != RecordState.ACQUIRED:
                r.state = RecordState.ARCHIVED
        if offset > self.end:
            self.end = offset
        self.ranges = [r for r in self.ranges if r.last >= offset or r.state == RecordState.ACQUIRED]
        if not self.ranges or self.ranges[0].first >= offset:
            self.start = offset if not self.ranges else min(offset, self.ranges[0].first)
        self._advance()

    # -- acquisition -----------------------------------------------------------------------------
    def acquire(
        self,
        member: str,
        lock: int,
        max_records: int,
        batch_size: int,
        log_batches: Iterable[LogBatch],
        *,
        delivery_limit: int,
        max_locks: int,
        record_limit: bool = False,
    ) -> tuple[list[Acquired], list[LogBatch]]:
        """Acquire up to ``max_records`` for ``member`` under lock ``lock``: released records
        first, then new ones from ``log_batches`` (the log from :attr:`end` up to the high
        watermark, or the LSO under read_committed). Batch-optimized acquisition takes whole log
        batches, so it may exceed ``max_records`` (``record_limit`` does not). Returns the
        acquired ranges and the log batches that hold them."""
        budget = max(max_records, 0)
        got: list[InFlight] = []
        throttle_at = max(2, math.ceil(delivery_limit / 2))
        # 1. released records, in offset order
        for r in list(self.ranges):
            if budget <= 0:
                break
            if r.state != RecordState.AVAILABLE or r.count == 0:
                continue
            take_last = r.last
            if r.count + 1 >= delivery_limit and delivery_limit > 2:
                take_last = r.first  # its last attempt: alone, so a poison record is found
            elif r.count >= throttle_at:
                take_last = min(r.last, r.first + max(1, batch_size >> (r.count - throttle_at + 1)) - 1)
            if record_limit:
                take_last = min(take_last, r.first + budget - 1)
            for part in self._span(r.first, take_last):
                self._take(part, member, lock)
                got.append(part)
                budget -= part.last - part.first + 1
            if take_last < r.last and r.count + 1 >= delivery_limit and delivery_limit > 2:
                break
        # 2. never-delivered holes inside the window (after a reload), then new records
        fresh_room = max(0, min(budget, max_locks - self.in_flight))
        batches: list[LogBatch] = []
        for batch in log_batches:
            if batch.last < self.start:
                continue
            if batch.base >= self.end and fresh_room <= 0:
                break
            batches.append(batch)
            first = max(batch.base, self.start)
            # holes (count 0) inside the window
            if first < self.end:
                for part in self._span(first, min(batch.last, self.end - 1)):
                    if part.state == RecordState.AVAILABLE and part.count == 0 and budget > 0:
                        if batch.aborted:
                            part.state, part.count = RecordState.ARCHIVED, 1
                        else:
                            self._take(part, member, lock)
                            got.append(part)
                            budget -= part.last - part.first + 1
                first = self.end
            if batch.last < self.end or fresh_room <= 0:
                continue
            last = batch.last
            if record_limit:
                last = min(last, first + fresh_room - 1)
            state = RecordState.ARCHIVED if batch.aborted else RecordState.ACQUIRED
            new = InFlight(first, last, state, 1, member if not batch.aborted else "", lock if not batch.aborted else 0)
            self.ranges.append(new)
            self.end = last + 1
            taken = last - first + 1
            fresh_room -= taken
            budget -= taken
            if not batch.aborted:
                got.append(new)
        acquired = _acquired_entries(got)
        self.finish()
        wanted = [b for b in batches if any(a.first <= b.last and b.base <= a.last for a in acquired)]
        return acquired, wanted

    def _take(self, r: InFlight, member: str, lock: int) -> None:
        r.state = RecordState.ACQUIRED
        r.count += 1
        r.member = member
        r.lock = lock

    # -- acknowledgement -------------------------------------------------------------------------
    def acknowledge(
        self, member: str, batches: list[AckBatch], delivery_limit: int, renew_lock: int = 0
    ) -> list[tuple[int, int, int, bool, int]]:
        """Apply ``member``'s acknowledgements, all or none (raises :class:`AckError` with Kafka's
        code and message). Returns what changed: (first, last, ack type, archived, delivery
        count) per range
        (RENEW only moves the locks of its offsets to ``renew_lock``). The caller persists the
        change, then calls :meth:`finish`."""
        plan: list[tuple[int, int, int]] = []  # (first, last, type)
        for batch in batches:
            if batch.last < self.start:
                continue  # already done: success
            if batch.first >= self.end:
                raise AckError(
                    E.INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records."
                )
            if batch.last >= self.end:
                raise AckError(
                    E.INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records."
                )
            per_offset = len(batch.types) > 1
            for offset_first, offset_last, kind in _expand(batch, per_offset):
                lo = max(offset_first, self.start)
                if lo > offset_last:
                    continue
                for r in self._overlapping(lo, offset_last):
                    if r.state != RecordState.ACQUIRED:
                        raise AckError(
                            E.INVALID_RECORD_STATE,
                            "The batch cannot be acknowledged. The batch is not in the acquired state."
                            if not per_offset
                            else "The batch cannot be acknowledged. The offset is not acquired.",
                        )
                    if r.member != member:
                        raise AckError(
                            E.INVALID_RECORD_STATE,
                            "Member is not the owner of batch record"
                            if not per_offset
                            else "Member is not the owner of offset",
                        )
                plan.append((lo, offset_last, kind))
        changed: list[tuple[int, int, int, bool, int]] = []
        for first, last, kind in plan:
            for r in self._span(first, last):
                if kind == AckType.RENEW:
                    r.lock = renew_lock
                    changed.append((r.first, r.last, kind, False, r.count))
                    continue
                if kind == AckType.ACCEPT:
                    r.state = RecordState.ACKNOWLEDGED
                elif kind == AckType.RELEASE:
                    r.state = RecordState.ARCHIVED if r.count >= delivery_limit else RecordState.AVAILABLE
                else:  # GAP, REJECT
                    r.state = RecordState.ARCHIVED
                r.member, r.lock = "", 0
                changed.append((r.first, r.last, kind, r.state == RecordState.ARCHIVED, r.count))
        return changed

    def _overlapping(self, first: int, last: int) -> list[InFlight]:
        if first > last or first >= self.end:
            return []
        i, j = self._index(max(first, self.start)), self._index(min(last, self.end - 1))
        return self.ranges[i : j + 1]

    def finish(self) -> None:
        """After a change: move the SPSO and merge ranges alike."""
        self._advance()
        self._merge()

    # -- releases --------------------------------------------------------------------------------
    def release(
        self, delivery_limit: int, *, member: str | None = None, lock: int | None = None
    ) -> list[tuple[InFlight, bool]]:
        """Acquired records of ``member`` (a closed session) or under ``lock`` (it expired) go
        back to available, or to archived once delivered ``delivery_limit`` times. Returns each
        range released (as it was) and whether it was archived. The caller persists, then
        calls :meth:`finish`."""
        out = []
        for r in self.ranges:
            if r.state != RecordState.ACQUIRED:
                continue
            if member is not None and r.member != member or lock is not None and r.lock != lock:
                continue
            before = replace(r)
            archived = r.count >= delivery_limit
            r.state = RecordState.ARCHIVED if archived else RecordState.AVAILABLE
            r.member, r.lock = "", 0
            out.append((before, archived))
        return out

    def locks(self) -> set[int]:
        return {r.lock for r in self.ranges if r.state == RecordState.ACQUIRED}


def _expand(batch: AckBatch, per_offset: bool) -> Iterator[tuple[int, int, int]]:
    if not per_offset:
        yield batch.first, batch.last, batch.types[0]
        return
    # runs of equal types, so a long batch of one type stays one range
    run_start, run_type = batch.first, batch.types[0]
    for i, kind in enumerate(batch.types[1:], start=1):
        if kind != run_type:
            yield run_start, batch.first + i - 1, run_type
            run_start, run_type = batch.first + i, kind
    yield run_start, batch.last, run_type


def _acquired_entries(got: list[InFlight]) -> list[Acquired]:
    """AcquiredRecords entries: adjacent acquired ranges with one delivery count as one."""
    out: list[Acquired] = []
    for r in sorted(got, key=lambda r: r.first):
        if out and out[-1].last + 1 == r.first and out[-1].count == r.count:
            out[-1] = Acquired(out[-1].first, r.last, r.count)
        else:
            out.append(Acquired(r.first, r.last, r.count))
    return out


def validate_batches(batches: list[AckBatch], max_type: int, renew: bool) -> str | None:
    """ShareFetch/ShareAcknowledge's check of acknowledgement batches (Apis
    ``validateAcknowledgementBatches``): why they are an INVALID_REQUEST, or None."""
    previous_last = -1
    for i, b in enumerate(batches):
        if b.first > b.last:
            return "First offset of acknowledgement batch is greater than last offset."
        if i and b.first < previous_last:
            return "First offset of acknowledgement batch is less than last offset of previous batch."
        if not b.types:
            return "Acknowledge types are empty."
        if len(b.types) > 1 and len(b.types) != b.last - b.first + 1:
            return "Acknowledge types count does not match the offset range."
        for t in b.types:
            if t < 0 or t > max_type:
                return f"Invalid acknowledge type: {t}"
            if t == AckType.RENEW and not renew:
                return "Renew acknowledge type is only allowed with IsRenewAck."
        previous_last = b.last
    return None

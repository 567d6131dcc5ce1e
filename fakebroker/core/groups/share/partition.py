"""One share partition: a share group's view of one topic partition (KIP-932's SharePartition).

Every offset from the share-partition start offset (SPSO, below which everything is done) up
to the end of what was ever acquired is in flight, in one of Kafka's record states. As in
Kafka, records are acquired in *in-flight batches* (one per ``BatchSize`` records, cut at log
batch boundaries), and a batch keeps one state for all its offsets until some operation covers
only part of it (or sends a type per offset, or the SPSO moves into it): from then on it is
*tracked per offset* for good. The two kinds answer differently — an acknowledgement of a
whole batch fails with "The batch cannot be acknowledged...", one of a tracked batch with
"The offset cannot be acknowledged...", and a released batch comes back whole or offset by
offset — so the ranges below (split only where some state differs) remember their batch and
the partition which batches are tracked.

Redelivery follows Kafka's throttling (SharePartition ``acquire``, ``acquireSubsetBatchRecords``):
from ``max(2, ceil(limit / 2))`` deliveries on, a batch is handed out in shrinking parts and
ends the fetch, and with a limit above 2 a record's last delivery goes alone. Records past the
end were never delivered. Pure: the caller passes the log's batches, the clock and the group
configs in; lock timers are the caller's (each acquisition gets an id, its lock's name).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import replace

from ....protocol.error_codes import ErrorCode as E
from .records import (
    BATCH_NOT_ACQUIRED,
    FIRST_PAST,
    LAST_PAST,
    NOT_BATCH_OWNER,
    NOT_IN_CACHE,
    NOT_OFFSET_OWNER,
    OFFSET_NOT_ACQUIRED,
    SUBSET_NOT_ACQUIRED,
    TERMINAL,
    AckBatch,
    AckError,
    AckType,
    Acquired,
    InFlight,
    LogBatch,
    RecordState,
    expand,
    throttle_limit,
)


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
        self.tracked: set[int] = set()  # in-flight batches (by first offset) tracked per offset
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
        """Kafka's ``nextFetchOffset``: the first available offset, else the end."""
        for r in self.ranges:
            if r.state == RecordState.AVAILABLE:
                return r.first
        return self.end

    # -- loading ---------------------------------------------------------------------------------
    def load(self, start: int, batches: Iterable[tuple[int, int, int, int]]) -> None:
        """Persisted state: the SPSO and (first, last, state, count) batches, each an in-flight
        batch again; holes between them are offsets never delivered (acquired later as new,
        count 1)."""
        self.start = self.end = start
        self.ranges = []
        self.tracked = set()
        for first, last, state, count in sorted(batches):
            if last < self.end:
                continue
            first = max(first, self.end)
            if first > self.end:
                self.ranges.append(InFlight(self.end, first - 1, RecordState.AVAILABLE, 0, batch=self.end))
            persisted = RecordState(state)
            if persisted == RecordState.ACQUIRED:
                persisted = RecordState.AVAILABLE  # an acquisition is never persisted
            self.ranges.append(InFlight(first, last, persisted, count, batch=first))
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
        """Make ``offset`` the first offset of a range (when inside the window); a batch cut
        inside is tracked per offset from now on."""
        if not self.start < offset < self.end:
            return
        i = self._index(offset)
        r = self.ranges[i]
        if r.first == offset:
            return
        self.tracked.add(r.batch)
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
            live = {r.batch for r in self.ranges}
            self.tracked &= live

    def _batches(self, from_offset: int, to_offset: int) -> list[tuple[int, int, list[InFlight]]]:
        """The in-flight batches holding offsets in [from_offset, to_offset], in order: (first
        offset, last offset, their ranges). A batch's first offset may lie below the SPSO."""
        if not self.ranges or from_offset > to_offset:
            return []
        i = max(self._index(max(from_offset, self.start)), 0)
        # back to the first range of that batch
        while i > 0 and self.ranges[i - 1].batch == self.ranges[i].batch:
            i -= 1
        out: list[tuple[int, int, list[InFlight]]] = []
        while i < len(self.ranges) and self.ranges[i].batch <= to_offset:
            key = self.ranges[i].batch
            j = i
            while j < len(self.ranges) and self.ranges[j].batch == key:
                j += 1
            out.append((key, self.ranges[j - 1].last, self.ranges[i:j]))
            i = j
        return [b for b in out if b[1] >= from_offset]

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
        """Acquire for ``member`` under lock ``lock``, as Kafka's ``SharePartition.acquire``:
        ``log_batches`` is the log from the batch holding :meth:`read_from` up to the high
        watermark (or the LSO under read_committed); the in-flight batches in it are
        re-acquired where available (whole, or offset by offset when tracked, partly covered or
        throttled), then new records are acquired in batches of ``batch_size``. Batch-optimized
        acquisition takes whole batches, so it may exceed ``max_records`` (``record_limit`` does
        not). Returns the acquired ranges and the log batches that hold them."""
        if max_records <= 0:
            return [], []
        budget = min(max_records, max_locks - self.in_flight)
        fetch_offset = self.read_from()
        fetched = self._read(log_batches, fetch_offset, max(fetch_offset, self.end) + max(budget, 1) - 1)
        if not fetched or fetched[-1].last < self.start:
            return [], []
        last_offset = fetched[-1].last
        if budget <= 0:  # the lock window is full: only what is inside it can come back
            if fetch_offset > self.end - 1:
                return [], []
            budget = min(max_records, self.end - fetch_offset)
            last_offset = min(last_offset, self.end - 1)
        first_base = fetched[0].base
        base = first_base
        if self.ranges and self.ranges[0].batch <= base:
            floor = [b for b in self._batches(base, base) if b[0] <= base]
            if floor and floor[-1][1] >= base:
                base = floor[-1][0]
        elif base < self.start:
            base = self.start
        cached = self._batches(min(first_base, base), last_offset)
        got: list[Acquired] = []
        count = 0
        stopped = False
        if not cached:
            count += self._acquire_new(member, lock, fetched, base, last_offset, batch_size, budget, record_limit, got)
        else:
            for key, last, ranges in cached:
                if count >= budget:
                    break
                full = key >= first_base and last <= last_offset
                limit_subset = record_limit and last - key + 1 > budget - count
                throttled = self._should_throttle(key, ranges, first_base, last_offset, delivery_limit)
                if throttled and count > 0:
                    stopped = True
                    break
                if not full or key in self.tracked or limit_subset or throttled:
                    if key not in self.tracked:
                        if len(ranges) != 1 or ranges[0].state != RecordState.AVAILABLE:
                            continue
                        self.tracked.add(key)
                    n = self._acquire_subset(
                        member, lock, key, last, record_limit, budget - count, first_base, last_offset,
                        delivery_limit, got,
                    )  # fmt: skip
                    count += n
                    if throttled and n > 0:
                        stopped = True
                        break
                    continue
                whole = ranges[0]
                if whole.state != RecordState.AVAILABLE:
                    continue
                self._take(whole, member, lock)
                got.append(Acquired(whole.first, whole.last, whole.count))
                count += whole.last - whole.first + 1
            tail = cached[-1][1]
            if not stopped and count < budget and tail < last_offset:
                count += self._acquire_new(
                    member, lock, fetched, tail + 1, last_offset, batch_size, budget - count, record_limit, got
                )
        self.finish()
        wanted = [b for b in fetched if any(a.first <= b.last and b.base <= a.last for a in got)]
        return got, wanted

    @staticmethod
    def _read(log_batches: Iterable[LogBatch], fetch_offset: int, enough: int) -> list[LogBatch]:
        """The log batches a fetch from ``fetch_offset`` reads: the one holding it and those
        after, up to the one holding ``enough`` (what lies past it could not be acquired now)."""
        out: list[LogBatch] = []
        for batch in log_batches:
            if batch.last < fetch_offset:
                continue
            out.append(batch)
            if batch.last >= enough:
                break
        return out

    def _should_throttle(self, key: int, ranges: list[InFlight], first: int, last: int, delivery_limit: int) -> bool:
        """SharePartition ``shouldThrottleRecordsDelivery``: the batch (or, tracked, its available
        offsets in the fetched range) was delivered ``throttle_limit`` times already."""
        at = throttle_limit(delivery_limit)
        if key not in self.tracked:
            whole = ranges[0]
            return len(ranges) == 1 and whole.state == RecordState.AVAILABLE and whole.count >= at
        counts = [r.count for r in ranges if r.state == RecordState.AVAILABLE and r.last >= first and r.first <= last]
        return max(counts, default=0) >= at

    def _acquire_subset(
        self,
        member: str,
        lock: int,
        key: int,
        batch_last: int,
        record_limit: bool,
        room: int,
        first: int,
        last: int,
        delivery_limit: int,
        got: list[Acquired],
    ) -> int:
        """SharePartition ``acquireSubsetBatchRecords``: the available offsets of one tracked
        batch inside [first, last], one by one (a record's last delivery alone, throttled
        deliveries in shrinking numbers)."""
        taken = 0
        most = -1  # throttled: at most this many
        at = throttle_limit(delivery_limit)
        size = batch_last - key + 1
        acquired: list[Acquired] = []
        offset = max(first, self.start, key)
        while offset <= min(last, batch_last, self.end - 1):
            r = self.ranges[self._index(offset)]
            if r.state != RecordState.AVAILABLE:
                offset = r.last + 1
                continue
            if delivery_limit > 2 and r.count == delivery_limit - 1 and taken > 0:
                break
            if r.count >= at and most < 0:
                most = max(1, size >> (r.count - at + 1))
            [one] = self._span(offset, offset)
            self._take(one, member, lock)
            acquired.append(Acquired(offset, offset, one.count))
            taken += 1
            offset += 1
            if one.count == delivery_limit and delivery_limit > 2:
                break
            if record_limit and taken == room:
                break
            if most > 0 and taken == most:
                break
        got.extend(_acquired_entries_in_order(acquired))
        return taken

    def _acquire_new(
        self,
        member: str,
        lock: int,
        fetched: list[LogBatch],
        first: int,
        last: int,
        batch_size: int,
        room: int,
        record_limit: bool,
        got: list[Acquired],
    ) -> int:
        """SharePartition ``acquireNewBatchRecords`` and ``createBatches``: records never
        delivered, cut into in-flight batches of ``batch_size`` records at log batch boundaries
        (record_limit: one batch holding the whole log batches, the records past ``room``
        available)."""
        if not self.ranges and self.end > first:
            first = self.end
        first = max(first, self.end)
        if first > last or room <= 0:
            return 0
        if room < last - first + 1:
            want = first + room - 1
            holder = next((b for b in fetched if b.base <= want <= b.last), None)
            last = holder.last if holder is not None else want
        batches = [b for b in fetched if b.last >= first and b.base <= last]
        if record_limit:
            cuts = [(first, last)]
        else:
            cuts = []
            start = first
            if last - first + 1 > batch_size:
                for b in batches:
                    if b.base > last:
                        break
                    if b.base - start >= batch_size:
                        cuts.append((start, b.base - 1))
                        start = b.base
            cuts.append((start, last))
        if not self.ranges:
            self.start = first
        taken = 0
        for lo, hi in cuts:
            if record_limit and hi - lo + 1 > room:
                self.ranges.append(InFlight(lo, lo + room - 1, RecordState.ACQUIRED, 1, member, lock, lo))
                self.ranges.append(InFlight(lo + room, hi, RecordState.AVAILABLE, 0, batch=lo))
                self.tracked.add(lo)
                got.append(Acquired(lo, lo + room - 1, 1))
                taken += room
            else:
                self.ranges.append(InFlight(lo, hi, RecordState.ACQUIRED, 1, member, lock, lo))
                got.append(Acquired(lo, hi, 1))
                taken += hi - lo + 1
            self.end = hi + 1
        self._archive_aborted(batches, first, last, got)
        return taken

    def _archive_aborted(self, batches: list[LogBatch], first: int, last: int, got: list[Acquired]) -> None:
        """read_committed: the records of aborted transactions just acquired are archived at once
        and cut out of the acquired ranges (Kafka ``filterAbortedTransactionalAcquiredRecords``)."""
        for b in batches:
            if not b.aborted:
                continue
            lo, hi = max(b.base, first), min(b.last, last)
            if lo > hi:
                continue
            for r in self._span(lo, hi):
                if r.state == RecordState.ACQUIRED:
                    r.state, r.member, r.lock = RecordState.ARCHIVED, "", 0
            kept: list[Acquired] = []
            for a in got:
                if a.last < lo or a.first > hi:
                    kept.append(a)
                    continue
                if a.first < lo:
                    kept.append(Acquired(a.first, lo - 1, a.count))
                if a.last > hi:
                    kept.append(Acquired(hi + 1, a.last, a.count))
            got[:] = kept

    def _take(self, r: InFlight, member: str, lock: int) -> None:
        r.state = RecordState.ACQUIRED
        r.count += 1
        r.member = member
        r.lock = lock

    # -- acknowledgement -------------------------------------------------------------------------
    def acknowledge(
        self, member: str, batches: list[AckBatch], delivery_limit: int, renew_lock: int = 0
    ) -> list[tuple[int, int, int, bool, int]]:
        """Apply ``member``'s acknowledgements in order, all or none, as Kafka's
        ``SharePartition.acknowledge`` (each batch sees what the ones before it did; the first
        error undoes them all and raises :class:`AckError` with Kafka's code and message).
        Returns what changed: (first, last, ack type, archived, delivery count) per range (RENEW
        only moves the locks of its offsets to ``renew_lock``). The caller persists the change,
        then calls :meth:`finish`."""
        saved = ([replace(r) for r in self.ranges], set(self.tracked))
        changed: list[tuple[int, int, int, bool, int]] = []
        try:
            for batch in batches:
                if batch.last < self.start:
                    continue  # already done: success
                for key, last, ranges in self._ack_batches(batch):
                    changed += self._ack_one(member, batch, key, last, ranges, delivery_limit, renew_lock)
        except AckError:
            self.ranges, self.tracked = saved
            raise
        return changed

    def _ack_batches(self, batch: AckBatch) -> list[tuple[int, int, list[InFlight]]]:
        """SharePartition ``fetchSubMapForAcknowledgementBatch``: the in-flight batches from the
        one at or before the request's first offset to its last."""
        floor = self._floor(batch.first)
        if floor is None:
            if not (batch.first < self.start <= batch.last):
                raise AckError(E.INVALID_RECORD_STATE, NOT_IN_CACHE)
            floor = self._floor(self.start)
            if floor is None:
                raise AckError(E.INVALID_RECORD_STATE, NOT_IN_CACHE)
        found = [b for b in self._batches(floor, batch.last) if b[0] >= floor]
        if not found:
            raise AckError(E.INVALID_RECORD_STATE, NOT_IN_CACHE)
        if found[-1][1] < batch.first:
            raise AckError(E.INVALID_REQUEST, FIRST_PAST)
        if batch.last > found[-1][1]:
            raise AckError(E.INVALID_REQUEST, LAST_PAST)
        return found

    def _floor(self, offset: int) -> int | None:
        """The first offset of the last in-flight batch starting at or before ``offset``."""
        if not self.ranges or self.ranges[0].batch > offset:
            return None
        if offset >= self.end:
            return self.ranges[-1].batch
        i = self._index(max(offset, self.start))
        key = self.ranges[i].batch
        return key if key <= offset else (self.ranges[i - 1].batch if i > 0 else None)

    def _ack_one(
        self,
        member: str,
        batch: AckBatch,
        key: int,
        last: int,
        ranges: list[InFlight],
        delivery_limit: int,
        renew_lock: int,
    ) -> list[tuple[int, int, int, bool, int]]:
        """SharePartition ``acknowledgeBatchRecords`` for one in-flight batch."""
        if last < self.start:
            return []
        if key not in self.tracked:
            whole = ranges[0]
            if not whole.member:
                raise AckError(E.INVALID_RECORD_STATE, BATCH_NOT_ACQUIRED)
            if whole.member != member:
                raise AckError(E.INVALID_RECORD_STATE, NOT_BATCH_OWNER)
        full = key >= batch.first and last <= batch.last
        per_offset = len(batch.types) > 1
        start_within = key < self.start <= last
        if not full or key in self.tracked or per_offset or start_within:
            if key not in self.tracked:
                if ranges[0].state != RecordState.ACQUIRED:
                    raise AckError(E.INVALID_RECORD_STATE, SUBSET_NOT_ACQUIRED)
                self.tracked.add(key)
            lo, hi = max(batch.first, key, self.start), min(batch.last, last)
            for r in self._overlapping(lo, hi):
                if r.state != RecordState.ACQUIRED:
                    raise AckError(E.INVALID_RECORD_STATE, OFFSET_NOT_ACQUIRED)
                if r.member != member:
                    raise AckError(E.INVALID_RECORD_STATE, NOT_OFFSET_OWNER)
            out = []
            for first_o, last_o, kind in expand(batch, per_offset):
                a, b = max(first_o, lo), min(last_o, hi)
                if a <= b:
                    out += self._apply(self._span(a, b), kind, delivery_limit, renew_lock)
            return out
        whole = ranges[0]
        if whole.state != RecordState.ACQUIRED:
            raise AckError(E.INVALID_RECORD_STATE, BATCH_NOT_ACQUIRED)
        return self._apply([whole], batch.types[0], delivery_limit, renew_lock)

    @staticmethod
    def _apply(
        ranges: list[InFlight], kind: int, delivery_limit: int, renew_lock: int
    ) -> list[tuple[int, int, int, bool, int]]:
        out: list[tuple[int, int, int, bool, int]] = []
        for r in ranges:
            if kind == AckType.RENEW:
                r.lock = renew_lock
                out.append((r.first, r.last, kind, False, r.count))
                continue
            if kind == AckType.ACCEPT:
                r.state = RecordState.ACKNOWLEDGED
            elif kind == AckType.RELEASE:
                r.state = RecordState.ARCHIVED if r.count >= delivery_limit else RecordState.AVAILABLE
            else:  # GAP, REJECT
                r.state = RecordState.ARCHIVED
            r.member, r.lock = "", 0
            out.append((r.first, r.last, kind, r.state == RecordState.ARCHIVED, r.count))
        return out

    def _overlapping(self, first: int, last: int) -> list[InFlight]:
        first, last = max(first, self.start), min(last, self.end - 1)
        if first > last:
            return []
        i, j = self._index(first), self._index(last)
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


def _acquired_entries_in_order(got: list[Acquired]) -> list[Acquired]:
    """ShareFetchUtils ``accumulateAcquiredRecords``: adjacent entries with one delivery count
    as one."""
    out: list[Acquired] = []
    for a in got:
        if out and out[-1].last + 1 == a.first and out[-1].count == a.count:
            out[-1] = Acquired(out[-1].first, a.last, a.count)
        else:
            out.append(a)
    return out

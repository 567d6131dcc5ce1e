"""One partition's log: record batches stored as the bytes clients sent, in segments.

Appending rewrites only what Kafka rewrites (base offset and partition leader epoch in the
header; timestamps and CRC only under LogAppendTime), so a fetch returns slices of the
stored bytes without re-encoding. One replica, so the high watermark is the log end offset.

Segments, as Kafka's ``LogSegment``: the log is a run of segments, each named by its base
offset, the last one active (appended to). A new segment is rolled when the active one would
pass ``segment.bytes`` or its first batch is older than ``segment.ms`` (``LogSegment.shouldRoll``).
Retention deletes whole segments from the oldest (``UnifiedLog.deleteOldSegments``): those
below the log start offset, those past ``retention.bytes``, those whose newest record is
older than ``retention.ms``; the log start offset moves to the first remaining segment.

The bytes of the segments live in a :class:`SegmentStore` the log is given: in memory by
default (:class:`MemorySegmentStore`), in files when the cluster keeps a data directory (the
store is injected from outside the core, which does no IO). The log itself keeps, per segment,
only a few numbers and a sparse offset index (one entry every ``index.interval.bytes``, thinned
when it grows), so what it holds in memory besides the store is small and bounded by retention.

Transactions: the first offset of each producer's open transaction is kept, so the last
stable offset is the earliest of them (Kafka's first unstable offset); an ABORT marker
closes one into the aborted-transactions index that read_committed fetches carry.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Protocol

from ...lazy_dataclasses import dataclass
from ...protocol import records as rec
from .recovery import LogCut, scan_segment
from .segments import KEEP_FROM, MemorySegmentStore, Piece, Segment, SegmentStore

HEADER = rec.RECORD_BATCH_OVERHEAD  # enough bytes of an entry to know its offsets and length
SCAN_CHUNK = 64 * 1024  # bytes read at a time while walking batch headers

# Topic settings the log reads (names and defaults of Kafka's topic configs).
LOG_DEFAULTS = {
    "segment.bytes": 1073741824,
    "segment.ms": 604800000,
    "index.interval.bytes": 4096,
    "flush.messages": 2**63 - 1,
    "flush.ms": 2**63 - 1,
}


_INT64, _INT32 = struct.Struct(">q"), struct.Struct(">i")  # a v2 batch's base offset, leader epoch
_HEAD = rec.LOG_OVERHEAD + 4  # a v2 batch's bytes up to its leader epoch: those an append rewrites


class Settings(Protocol):
    def get_int(self, name: str) -> int: ...


class _Defaults:
    def get_int(self, name: str) -> int:
        return LOG_DEFAULTS[name]


@dataclass(slots=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes
    producer_id: int
    is_transactional: bool
    is_control: bool

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the offset of its ABORT marker


class PartitionLog:
    """Segments in offset order with the offsets Kafka exposes.

    :param store: where segment bytes live (:class:`MemorySegmentStore` by default).
    :param config: the topic's settings (``segment.bytes``, ``segment.ms``,
        ``index.interval.bytes``), read at each append so AlterConfigs applies at once.
    """

    def __init__(self, store: SegmentStore | None = None, config: Settings | None = None) -> None:
        self.store: SegmentStore = store if store is not None else MemorySegmentStore()
        self.config: Settings = config if config is not None else _Defaults()
        self.segments: list[Segment] = []
        self._bases: list[int] = []  # segment base offsets, for bisect
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.open_txns: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted_txns: list[AbortedTxn] = []  # in marker order
        self._open_epochs: dict[int, int] = {}  # while recovering: producer id -> epoch of its open transaction
        self.cut: LogCut | None = None  # where the last recover() cut a bad stored log
        self._unflushed = 0  # messages appended since the last fsync (a durable store only)
        self._last_flush_ms = -1

    # -- offsets -------------------------------------------------------------------------------
    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def size_bytes(self) -> int:
        """Bytes of every segment (``UnifiedLog.size``, what retention.bytes bounds)."""
        return sum(s.size for s in self.segments)

    @property
    def last_stable_offset(self) -> int:
        """Below the first offset of any open transaction (and the high watermark); never below
        the log start offset, which retention or DeleteRecords may have moved past it."""
        if not self.open_txns:
            return self.high_watermark
        return min(max(min(self.open_txns.values()), self.log_start_offset), self.high_watermark)

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions a read of [start, end) overlaps (``collectAbortedTransactions``)."""
        return [a for a in self.aborted_txns if a.last_offset >= start and a.first_offset < end]

    # -- append --------------------------------------------------------------------------------
    def append(
        self,
        batch: bytes | bytearray,
        header: rec.BatchHeader,
        *,
        leader_epoch: int,
        now_ms: int,
        log_append_time: bool,
    ) -> tuple[int, int]:
        """Store one validated batch; returns (base offset, log append time or -1)."""
        base = self.log_end_offset
        # A large v2 batch is kept as it came (the store keeps what it is given): only its first
        # bytes, which take this log's offset and epoch, are copied and rewritten apart. A bulk
        # producer's batch is not copied once more.
        kept = type(batch) is bytes and len(batch) >= KEEP_FROM and header.magic >= 2 and not log_append_time
        buf = bytearray(batch[:_HEAD] if kept else batch)
        try:  # a validated v2 batch: both numbers in one go (the rewrite helpers check and explain)
            if header.magic < 2 or len(batch) < rec.RECORD_BATCH_OVERHEAD:
                raise struct.error
            _INT64.pack_into(buf, 0, base)
            _INT32.pack_into(buf, rec.LOG_OVERHEAD, leader_epoch)
        except struct.error:
            rec.set_base_offset(buf, 0, base)
            if header.magic >= 2:
                rec.set_partition_leader_epoch(buf, 0, leader_epoch)
        append_time = -1
        max_ts = header.max_timestamp
        if log_append_time and header.magic >= 1:
            rec.set_log_append_time(buf, 0, now_ms)
            append_time = max_ts = now_ms
        last = base + header.last_offset_delta if header.magic >= 2 else base
        if kept:
            self._store(memoryview(batch)[_HEAD:], len(batch), base, last, max_ts, now_ms, head=buf)
        else:
            self._store(buf, len(buf), base, last, max_ts, now_ms)
        if header.is_transactional and not header.is_control:
            self.open_txns.setdefault(header.producer_id, base)
        return base, append_time

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        *,
        leader_epoch: int,
        now_ms: int,
    ) -> int:
        """Write a COMMIT or ABORT control batch for a producer's transaction; returns its offset."""
        base = self.log_end_offset
        data = rec.build_control_batch(
            "commit" if commit else "abort",
            producer_id,
            producer_epoch,
            coordinator_epoch,
            base_offset=base,
            timestamp=now_ms,
            partition_leader_epoch=leader_epoch,
        )
        self._store(data, len(data), base, base, now_ms, now_ms)
        first = self.open_txns.pop(producer_id, None)
        if not commit and first is not None:
            self.aborted_txns.append(AbortedTxn(producer_id, first, base))
        return base

    def _store(
        self, data: Piece, size: int, base: int, last: int, max_ts: int, now_ms: int, head: bytearray | None = None
    ) -> None:
        """Store one batch of ``size`` bytes: ``data``, after ``head`` when the batch comes in two."""
        segment = self._maybe_roll(size, max_ts, now_ms)
        if head is not None:
            self.store.append(segment.base_offset, head)
        self.store.append(segment.base_offset, data)
        self._note(segment, size, base, last, max_ts, now_ms)
        self.log_end_offset = last + 1
        if self.store.durable:
            self._maybe_flush(segment, last + 1 - base, now_ms)

    def _maybe_flush(self, segment: Segment, appended: int, now_ms: int) -> None:
        """fsync the active segment as ``flush.messages`` asks (``UnifiedLog.append``: once that
        many messages are unflushed) and ``flush.ms`` (here checked as records arrive, where
        Kafka's flush scheduler checks it on a timer). Kafka's defaults never flush: durability
        comes from replicas, and here a process killed at any moment loses nothing written."""
        self._unflushed += appended
        if self._last_flush_ms < 0:
            self._last_flush_ms = now_ms
        if self._unflushed >= self.config.get_int(
            "flush.messages"
        ) or now_ms - self._last_flush_ms >= self.config.get_int("flush.ms"):
            self.store.flush(segment.base_offset)
            self._unflushed, self._last_flush_ms = 0, now_ms

    @staticmethod
    def _note(segment: Segment, size: int, base: int, last: int, max_ts: int, now_ms: int) -> None:
        if segment.batches == 0:
            segment.first_batch_timestamp = max_ts
        segment.index(base, segment.size, size)
        segment.size += size
        segment.batches += 1
        segment.next_offset = last + 1
        segment.max_timestamp = max(segment.max_timestamp, max_ts)
        segment.last_modified_ms = now_ms

    def _maybe_roll(self, size: int, max_ts: int, now_ms: int) -> Segment:
        """The active segment, after rolling a new one if this append must go there
        (``LogSegment.shouldRoll``: ``segment.bytes`` would be passed, or ``segment.ms`` is up)."""
        if not self.segments:
            return self._new_segment(self.log_end_offset, now_ms)
        active = self.segments[-1]
        if active.size > 0:
            if active.first_batch_timestamp >= 0:
                waited = max_ts - active.first_batch_timestamp
            else:
                waited = now_ms - active.created_ms
            if active.size > self.config.get_int("segment.bytes") - size or waited > self.config.get_int("segment.ms"):
                return self._new_segment(self.log_end_offset, now_ms)
        return active

    def roll(self, now_ms: int) -> Segment:
        """Start a new active segment at the log end offset (kept if the active one is empty)."""
        if self.segments and self.segments[-1].size == 0:
            return self.segments[-1]
        return self._new_segment(self.log_end_offset, now_ms)

    def _new_segment(self, base: int, now_ms: int) -> Segment:
        segment = Segment(base, now_ms, index_interval=max(1, self.config.get_int("index.interval.bytes")))
        segment.last_modified_ms = now_ms
        self.store.create(base)
        self.segments.append(segment)
        self._bases.append(base)
        return segment

    # -- reading -------------------------------------------------------------------------------
    def _segment_index(self, offset: int) -> int:
        """Index of the segment holding ``offset`` (0 if before the first)."""
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def _walk(self, segment: Segment, position: int = 0, chunk_size: int = SCAN_CHUNK) -> Iterator[rec.BatchHeader]:
        """Headers of a segment's batches from ``position`` (a batch boundary), with their
        ``position`` in the segment; reads headers in chunks, skipping over batch bodies. A
        partial batch at the segment's end (only a crashed write leaves one) comes last,
        ``truncated``."""
        store, base, end = self.store, segment.base_offset, segment.size
        while position < end:
            chunk = store.read(base, position, min(chunk_size, end - position))
            chunk_size = SCAN_CHUNK
            step = 0
            for header in rec.iter_batch_headers(chunk):
                if header.truncated:
                    if header.available >= HEADER and header.batch_length >= 0 or header.position == 0:
                        step = header.position + max(header.size, 1)  # longer than the chunk: skip its body
                    else:
                        step = header.position  # read again from its start
                        break
                    header.position += position
                    header.truncated = header.position + header.size > end or header.batch_length < 0
                    yield header
                    if header.truncated:
                        return
                    break
                header.position += position
                yield header
                step = header.end - position
            position += step

    def _position(self, segment: Segment, offset: int) -> int:
        """Position in the segment of the batch holding ``offset``, or of the first after it."""
        # from the index entry, the batch is at most about an index interval away
        for header in self._walk(segment, segment.lookup(offset), min(SCAN_CHUNK, segment.index_interval + HEADER)):
            if header.last_offset >= offset:
                return header.position
        return segment.size

    def read(self, offset: int, max_bytes: int, *, upper_bound: int | None = None, min_one: bool = True) -> bytes:
        """A slice of the log of at most ``max_bytes`` from the batch holding ``offset``, as Kafka's
        ``LogSegment.read`` cuts it: whole batches, then the part of the next one that fits (the
        client drops a partial batch at the end). With ``min_one`` the first batch is whole even if
        larger (KIP-74), so a consumer always progresses; without it a first batch that does not
        fit gives nothing (``ReplicaManager`` drops an incomplete first entry). Nothing at or past
        ``upper_bound`` (default: the high watermark) is included. An offset below the log start
        offset reads from the log start offset."""
        limit = self.high_watermark if upper_bound is None else upper_bound
        offset = max(offset, self.log_start_offset)
        if not self.segments or offset >= self.log_end_offset:
            return b""  # a consumer at the end: nothing to look up
        out: list[bytes] = []
        total = 0
        i = self._segment_index(offset)
        position = self._position(self.segments[i], offset)
        while i < len(self.segments):
            segment = self.segments[i]
            while position < segment.size:
                first = not out
                want = max_bytes - total
                if first and min_one:
                    want = max(want, HEADER)
                if want <= 0:
                    return b"".join(out)
                chunk = self.store.read(segment.base_offset, position, min(want, segment.size - position))
                taken, done = _whole_batches(chunk, limit)
                if not taken and not done and first and min_one and len(chunk) >= rec.LOG_OVERHEAD:
                    # the first batch is larger than max_bytes: all of it (KIP-74)
                    taken = rec.LOG_OVERHEAD + _LENGTH.unpack_from(chunk, 8)[0]
                    chunk = self.store.read(segment.base_offset, position, taken)
                    done = True
                if taken:
                    out.append(chunk if taken == len(chunk) else chunk[:taken])
                    total += taken
                    position += taken
                if out and not done and taken < len(chunk):
                    # the budget ends inside a batch below the bound: the slice ends there too
                    rest = chunk[taken:]
                    head = rest if len(rest) >= 8 else self.store.read(segment.base_offset, position, 8)
                    if _OFFSET.unpack_from(head, 0)[0] < limit:
                        out.append(rest)
                    return b"".join(out)
                if done or not taken:
                    return b"".join(out)
            i += 1
            position = 0
        return b"".join(out)

    def iter_batches(self, start: int | None = None) -> Iterator[StoredBatch]:
        """Every batch holding an offset at or after ``start`` (default: the log start offset)."""
        start = self.log_start_offset if start is None else max(start, self.log_start_offset)
        for i in range(self._segment_index(start), len(self.segments)):
            segment = self.segments[i]
            if segment.next_offset <= start:
                continue
            position = self._position(segment, start) if segment.base_offset < start else 0
            for header in self._walk(segment, position):
                if header.last_offset < start:
                    continue
                data = self.store.read(segment.base_offset, header.position, header.size)
                yield StoredBatch(
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                    data,
                    header.producer_id,
                    header.is_transactional,
                    header.is_control,
                )

    @property
    def batches(self) -> list[StoredBatch]:
        """The batches from the log start offset on (reads them all: for tests and views)."""
        return list(self.iter_batches())

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """First (offset, timestamp) whose record timestamp is >= ``timestamp``; (-1, -1) if none."""
        for segment in self.segments:
            if segment.max_timestamp < timestamp or segment.next_offset <= self.log_start_offset:
                continue
            for batch in self.iter_batches(max(segment.base_offset, self.log_start_offset)):
                if batch.base_offset >= segment.next_offset:
                    break
                if batch.max_timestamp < timestamp:
                    continue
                for offset, ts in _record_timestamps(batch):
                    if ts >= timestamp and offset >= self.log_start_offset:
                        return offset, ts
        return -1, -1

    def max_timestamp_offset(self) -> tuple[int, int]:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        best = (-1, -1)
        for segment in self.segments:
            if segment.max_timestamp <= best[1] or segment.next_offset <= self.log_start_offset:
                continue
            for batch in self.iter_batches(max(segment.base_offset, self.log_start_offset)):
                if batch.base_offset >= segment.next_offset:
                    break
                if batch.is_control or batch.max_timestamp <= best[1]:
                    continue
                for offset, ts in _record_timestamps(batch):
                    if ts > best[1] and offset >= self.log_start_offset:
                        best = (offset, ts)
        return best

    # -- the log start offset and retention ----------------------------------------------------
    def delete_records_before(self, offset: int) -> None:
        """Move the log start offset forward to ``offset`` (DeleteRecords); the segments wholly
        below it go at once (Kafka deletes them at its next retention check)."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        self._delete_prefix(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, 0)
        self._forget_aborted()

    def apply_retention(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Delete old segments as ``UnifiedLog.deleteOldSegments`` does under cleanup.policy
        delete; returns how many batches went with them.

        In Kafka's order: segments wholly below the log start offset; then, while the log is
        larger than ``retention.bytes``, the oldest segments whose removal keeps at least that
        much (``deleteRetentionSizeBreachedSegments``); then the oldest segments whose newest
        record (their last write, without timestamps) is more than ``retention.ms`` old. Each
        rule deletes a prefix and stops at the first segment it spares. An empty active segment
        is never deleted; deleting every segment first rolls a new empty one at the log end.
        """
        return sum(n for _, n in self.retention_breaches(now_ms, retention_ms, retention_bytes))

    def retention_breaches(self, now_ms: int, retention_ms: int, retention_bytes: int) -> list[tuple[str, int]]:
        """:meth:`apply_retention`, returning (reason, batches deleted) for each rule that deleted."""
        out = []
        n = self._delete_prefix(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, now_ms)
        if n:
            out.append(("log_start_offset", n))
        if retention_bytes >= 0 and self.size_bytes >= retention_bytes:
            excess = self.size_bytes - retention_bytes

            def over_size(segment: Segment, _next: Segment | None) -> bool:
                nonlocal excess
                if excess - segment.size < 0:
                    return False
                excess -= segment.size
                return True

            n = self._delete_prefix(over_size, now_ms)
            if n:
                out.append(("retention.bytes", n))
        if retention_ms >= 0:
            n = self._delete_prefix(lambda s, _: now_ms - s.largest_timestamp() > retention_ms, now_ms)
            if n:
                out.append(("retention.ms", n))
        return out

    def _delete_prefix(self, condition: Callable[[Segment, Segment | None], bool], now_ms: int) -> int:
        """``UnifiedLog.deletableSegments`` + ``deleteSegments``: the oldest segments while
        ``condition(segment, next segment)`` holds; returns how many batches they held."""
        count = 0
        for i, segment in enumerate(self.segments):
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            if nxt is None and segment.size == 0:
                break
            if not condition(segment, nxt):
                break
            count += 1
        if not count:
            return 0
        if count == len(self.segments):
            self._new_segment(self.log_end_offset, now_ms)
        doomed, self.segments = self.segments[:count], self.segments[count:]
        del self._bases[:count]
        for segment in doomed:
            self.store.delete(segment.base_offset)
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        self._forget_aborted()
        return sum(s.batches for s in doomed)

    def _forget_aborted(self) -> None:
        """Aborted transactions wholly below the log start offset are of no use to a reader."""
        self.aborted_txns = [a for a in self.aborted_txns if a.last_offset >= self.log_start_offset]

    def truncate_all(self, now_ms: int = 0) -> None:
        for segment in self.segments:
            self.store.delete(segment.base_offset)
        self.segments.clear()
        self._bases.clear()
        self.log_start_offset = self.log_end_offset
        self.aborted_txns.clear()

    # -- reopening a stored log ----------------------------------------------------------------
    def recover(
        self, now_ms: int, log_start_offset: int = 0, on_batch: Callable[[rec.BatchHeader], None] | None = None
    ) -> dict[int, int]:
        """Rebuild what the log keeps in memory from the segments already in its store (a
        restart): offsets, sizes, timestamps, the sparse indexes and the transaction indexes.
        Every batch is checked (``core.log.recovery``: size, magic, CRC, offsets in order); at the
        first bad one the log is cut, as Kafka's recovery cuts it: that segment truncated there,
        every later segment deleted, and :attr:`cut` says where and why (None: nothing cut).
        Returns the producers (id -> epoch) whose transactions the stored log leaves open;
        ``on_batch`` is shown every batch kept, in offset order (the producers' state is
        rebuilt from them, as Kafka rebuilds it from the log)."""
        self._open_epochs.clear()
        self.segments.clear()
        self._bases.clear()
        self.open_txns.clear()
        self.aborted_txns.clear()
        self.cut = None
        bases = self.store.bases()
        expected: int | None = None  # where the previous segment ended
        for n, base in enumerate(bases):
            size = self.store.size(base)
            if self.cut is not None:  # after the first bad batch: the whole segment goes
                self.cut = replace(
                    self.cut,
                    bytes_dropped=self.cut.bytes_dropped + size,
                    segments_deleted=self.cut.segments_deleted + 1,
                )
                self.store.delete(base)
                continue
            segment = Segment(base, now_ms, index_interval=max(1, self.config.get_int("index.interval.bytes")))

            def note(header: rec.BatchHeader, chunk: bytes, start: int, segment: Segment = segment) -> None:
                self._note_header(segment, header, chunk, start)
                if on_batch is not None:
                    on_batch(header)

            good, fault = scan_segment(self.store, base, size, expected, note)
            segment.size = good
            modified = self.store.modified_ms(base)
            segment.last_modified_ms = modified if modified is not None else now_ms
            if fault is not None:
                dropped = not good and expected is not None  # nothing good left of it: the one before goes on
                lost = expected if dropped and expected is not None else segment.next_offset
                self.cut = LogCut(base, good, lost, fault, size - good, 0)
                if dropped:
                    self.store.delete(base)
                    continue
                self.store.truncate(base, good)
            elif segment.size == 0 and n < len(bases) - 1:
                self.store.delete(base)  # an empty segment before others is of no use
                continue
            expected = segment.next_offset
            self.segments.append(segment)
            self._bases.append(base)
        if self.segments:
            self.log_end_offset = max(self.log_end_offset, self.segments[-1].next_offset)
            self.log_start_offset = min(max(log_start_offset, self.segments[0].base_offset), self.log_end_offset)
        else:
            self.log_end_offset = self.log_start_offset = max(log_start_offset, self.log_end_offset)
        self._forget_aborted()
        left_open = {pid: self._open_epochs.get(pid, 0) for pid in self.open_txns}
        self._open_epochs.clear()
        return left_open

    def _note_header(self, segment: Segment, header: rec.BatchHeader, chunk: bytes, start: int) -> None:
        if segment.batches == 0:
            segment.first_batch_timestamp = header.max_timestamp
        segment.index(header.base_offset, header.position, header.size)
        segment.size = header.position + header.size
        segment.batches += 1
        segment.next_offset = header.last_offset + 1
        segment.max_timestamp = max(segment.max_timestamp, header.max_timestamp)
        if header.is_transactional and not header.is_control:
            self.open_txns.setdefault(header.producer_id, header.base_offset)
            self._open_epochs[header.producer_id] = header.producer_epoch
        elif header.is_control:
            first = self.open_txns.pop(header.producer_id, None)
            if first is not None and not _is_commit(chunk[start : start + header.size]):
                self.aborted_txns.append(AbortedTxn(header.producer_id, first, header.base_offset))


_LENGTH = struct.Struct(">i")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_OFFSET = struct.Struct(">q")


def _whole_batches(chunk: bytes, limit: int) -> tuple[int, bool]:
    """How many bytes of ``chunk`` (starting at a batch) are whole batches below offset
    ``limit``, and whether a batch at or past ``limit`` stopped the count (only the 12-byte
    log overhead of each batch is read: the hot path of Fetch)."""
    position, n = 0, len(chunk)
    unpack = _OFFSET_AND_LENGTH.unpack_from
    while position + 12 <= n:
        base, length = unpack(chunk, position)
        if base >= limit:
            return position, True
        end = position + 12 + length
        if end > n:
            break
        position = end
    return position, False


def _is_commit(control_batch: bytes) -> bool:
    for entry in rec.read_batches(control_batch, check_crc=False):
        if isinstance(entry, rec.RecordBatch):
            for record in entry.records:
                return rec.parse_control_record(record).type == rec.ControlRecordType.COMMIT
    return False


def _record_timestamps(batch: StoredBatch) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record of a stored batch (decodes it)."""
    out = []
    for entry in rec.read_batches(batch.data):
        if isinstance(entry, rec.RecordBatch):
            for record in entry.records:
                out.append((entry.offset_of(record), entry.timestamp_of(record)))
        else:
            for message in entry.messages:
                out.append((message.offset, message.timestamp if message.timestamp is not None else -1))
    return out

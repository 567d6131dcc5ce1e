"""One partition's log, in memory: record batches stored as the bytes clients sent.

Appending rewrites only what Kafka rewrites (base offset and partition leader epoch in the
header; timestamps and CRC only under LogAppendTime), so a fetch returns slices of the
stored bytes without re-encoding. One replica, so the high watermark is the log end offset.

Transactions: the first offset of each producer's open transaction is kept, so the last
stable offset is the earliest of them (Kafka's first unstable offset); an ABORT marker
closes one into the aborted-transactions index that read_committed fetches carry.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ..protocol import records as rec


@dataclass(slots=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes
    producer_id: int
    is_transactional: bool
    is_control: bool
    appended_at: int  # broker time (ms) of the append, for time retention fallbacks

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the offset of its ABORT marker


class PartitionLog:
    """Batches in offset order with the offsets Kafka exposes."""

    def __init__(self) -> None:
        self.batches: list[StoredBatch] = []
        self._bases: list[int] = []  # base offsets, for bisect
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.size_bytes = 0
        self.open_txns: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted_txns: list[AbortedTxn] = []  # in marker order

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

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
        buf = bytearray(batch)
        base = self.log_end_offset
        rec.set_base_offset(buf, 0, base)
        if header.magic >= 2:
            rec.set_partition_leader_epoch(buf, 0, leader_epoch)
        append_time = -1
        max_ts = header.max_timestamp
        if log_append_time and header.magic >= 1:
            rec.set_log_append_time(buf, 0, now_ms)
            append_time = max_ts = now_ms
        last = base + header.last_offset_delta if header.magic >= 2 else base
        stored = StoredBatch(
            base, last, max_ts, bytes(buf), header.producer_id, header.is_transactional, header.is_control, now_ms
        )
        self._store(stored)
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
        self._store(StoredBatch(base, base, now_ms, data, producer_id, True, True, now_ms))
        first = self.open_txns.pop(producer_id, None)
        if not commit and first is not None:
            self.aborted_txns.append(AbortedTxn(producer_id, first, base))
        return base

    def _store(self, stored: StoredBatch) -> None:
        self.batches.append(stored)
        self._bases.append(stored.base_offset)
        self.log_end_offset = stored.last_offset + 1
        self.size_bytes += stored.size

    def _index_of(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (or the first one after it)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        return i if self.batches[i].last_offset >= offset else i + 1

    def read(self, offset: int, max_bytes: int, *, upper_bound: int | None = None, min_one: bool = True) -> bytes:
        """A slice of the log of at most ``max_bytes`` from the batch holding ``offset``, as Kafka's
        ``LogSegment.read`` cuts it: whole batches, then the part of the next one that fits (the
        client drops a partial batch at the end). With ``min_one`` the first batch is whole even if
        larger (KIP-74), so a consumer always progresses; without it a first batch that does not
        fit gives nothing (``ReplicaManager`` drops an incomplete first entry). Nothing at or past
        ``upper_bound`` (default: the high watermark) is included."""
        limit = self.high_watermark if upper_bound is None else upper_bound
        first = self._index_of(offset)
        if first >= len(self.batches) or self.batches[first].base_offset >= limit:
            return b""
        budget = max(max_bytes, self.batches[first].size) if min_one else max_bytes
        if budget <= 0 or (not min_one and self.batches[first].size > budget):
            return b""
        out: list[bytes] = []
        for i in range(first, len(self.batches)):
            batch = self.batches[i]
            if batch.base_offset >= limit or budget <= 0:
                break
            out.append(batch.data if batch.size <= budget else batch.data[:budget])
            budget -= batch.size
        return b"".join(out)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """First (offset, timestamp) whose record timestamp is >= ``timestamp``; (-1, -1) if none."""
        for batch in self.batches:
            if batch.max_timestamp < timestamp or batch.last_offset < self.log_start_offset:
                continue
            for offset, ts in _record_timestamps(batch):
                if ts >= timestamp and offset >= self.log_start_offset:
                    return offset, ts
        return -1, -1

    def max_timestamp_offset(self) -> tuple[int, int]:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        best = (-1, -1)
        for batch in self.batches:
            if batch.is_control or batch.max_timestamp <= best[1]:
                continue
            for offset, ts in _record_timestamps(batch):
                if ts > best[1] and offset >= self.log_start_offset:
                    best = (offset, ts)
        return best

    def delete_records_before(self, offset: int) -> None:
        """Move the log start offset forward to ``offset`` (DeleteRecords)."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        self._drop_while(lambda b: b.last_offset < offset)
        self._forget_aborted()

    def apply_retention(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Drop old batches as Kafka's retention drops old segments (a batch here plays the
        part of a segment); returns how many were dropped.

        Time: a batch goes once its newest record timestamp (its append time if it has none)
        is older than ``retention_ms``. Size: the oldest batches go while what remains is still
        at least ``retention_bytes``, the rule of Kafka's ``UnifiedLog.deleteRetentionSizeBreachedSegments``.
        """
        before = len(self.batches)
        if retention_ms >= 0:
            cutoff = now_ms - retention_ms
            self._drop_while(lambda b: (b.max_timestamp if b.max_timestamp >= 0 else b.appended_at) < cutoff)
        if retention_bytes >= 0:
            self._drop_while(lambda b: self.size_bytes - b.size >= retention_bytes)
        if len(self.batches) != before:
            self.log_start_offset = max(
                self.log_start_offset, self.batches[0].base_offset if self.batches else self.log_end_offset
            )
            self._forget_aborted()
        return before - len(self.batches)

    def _forget_aborted(self) -> None:
        """Aborted transactions wholly below the log start offset are of no use to a reader."""
        self.aborted_txns = [a for a in self.aborted_txns if a.last_offset >= self.log_start_offset]

    def truncate_all(self) -> None:
        self.batches.clear()
        self._bases.clear()
        self.size_bytes = 0
        self.log_start_offset = self.log_end_offset
        self.aborted_txns.clear()

    def _drop_while(self, condition) -> None:
        n = 0
        while n < len(self.batches) and condition(self.batches[n]):
            self.size_bytes -= self.batches[n].size
            n += 1
        if n:
            del self.batches[:n]
            del self._bases[:n]


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

"""What one partition remembers of each producer: epochs and sequence tracking for idempotent
produce (the ids themselves are handed out by ``core/transactions/producer_ids.py``).

Mirrors what Kafka's ProducerStateManager checks on append: the last five batches of each
producer are remembered per partition, so a retried batch is acknowledged with its
original offset instead of being written twice; a gap in sequence numbers is
OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is fenced. A producer the partition has no state
for (new, or all its batches removed) may start at any sequence.
"""

from __future__ import annotations

from collections import deque
from dataclasses import field
from typing import TYPE_CHECKING

from ...lazy_dataclasses import dataclass
from ...protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from ...protocol.records import BatchHeader

MAX_CACHED_BATCHES = 5  # Kafka keeps the last five batches per producer and partition
INT32_MAX = 2**31 - 1


@dataclass
class CachedBatch:
    first_seq: int
    last_seq: int
    base_offset: int
    # BatchMetadata.timestamp: the batch's max timestamp (its append time under LogAppendTime), which
    # Kafka answers a duplicate with as log_append_time_ms, whatever the topic's timestamp type
    log_append_time: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque[CachedBatch] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    last_timestamp: int = -1
    coordinator_epoch: int = -1  # of the last transaction marker

    @property
    def last_seq(self) -> int | None:
        return self.batches[-1].last_seq if self.batches else None


@dataclass
class SequenceCheck:
    """Outcome of checking one batch: append it, acknowledge a duplicate, or an error."""

    error: ErrorCode = ErrorCode.NONE
    duplicate_of: CachedBatch | None = None


def next_seq(seq: int, delta: int = 1) -> int:
    """Sequences wrap from 2^31-1 to 0."""
    return (seq + delta) % (INT32_MAX + 1)


class PartitionProducers:
    """Producer state of one partition."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, base_seq: int, last_offset_delta: int) -> SequenceCheck:
        entry = self.entries.get(producer_id)
        last_seq = next_seq(base_seq, last_offset_delta)
        if entry is None:
            # ProducerAppendInfo.checkSequence: with no state for the producer (epoch NO_PRODUCER_EPOCH, e.g. all
            # its batches were removed by retention or DeleteRecords) a write with any sequence is accepted.
            return SequenceCheck()
        if epoch < entry.epoch:
            return SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH)
        if epoch > entry.epoch:
            # A bumped epoch starts over at sequence 0.
            return SequenceCheck() if base_seq == 0 else SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        for cached in entry.batches:
            if cached.first_seq == base_seq and cached.last_seq == last_seq:
                return SequenceCheck(duplicate_of=cached)
        if entry.last_seq is not None and base_seq != next_seq(entry.last_seq):
            return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return SequenceCheck()

    def record(
        self,
        producer_id: int,
        epoch: int,
        base_seq: int,
        last_offset_delta: int,
        base_offset: int,
        log_append_time: int,
        max_timestamp: int = -1,
    ) -> None:
        entry = self.entries.get(producer_id)
        if entry is None or epoch != entry.epoch:
            coordinator_epoch = entry.coordinator_epoch if entry is not None else -1
            entry = self.entries[producer_id] = ProducerEntry(epoch, coordinator_epoch=coordinator_epoch)
        last_seq = next_seq(base_seq, last_offset_delta)
        timestamp = log_append_time if log_append_time >= 0 else max_timestamp
        entry.batches.append(CachedBatch(base_seq, last_seq, base_offset, timestamp))
        entry.last_timestamp = timestamp

    def replay(self, header: BatchHeader) -> None:
        """A stored batch, met in offset order while a log is recovered: the producer state
        Kafka rebuilds from the log on a restart (``ProducerStateManager``, from the log start
        when it has no snapshot), so an idempotent producer's retry of a batch written before
        the crash is still answered as a duplicate, and its next sequence still follows."""
        if not header.has_producer_id:
            return
        if header.is_control:  # a marker's coordinator epoch is in its record: not needed here
            entry = self.entries.get(header.producer_id)
            self.record_marker(
                header.producer_id,
                header.producer_epoch,
                entry.coordinator_epoch if entry is not None else -1,
                header.max_timestamp,
            )
            return
        self.record(
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.last_offset_delta,
            header.base_offset,
            -1,
            header.max_timestamp,
        )

    def expire(self, now_ms: int, expiration_ms: int, keep: set[int] | dict[int, int]) -> int:
        """``ProducerStateManager.removeExpiredProducers``: forget producers silent for
        ``producer.id.expiration.ms`` (but none with a transaction open here, ``keep``)."""
        doomed = [
            pid
            for pid, entry in self.entries.items()
            if pid not in keep and entry.last_timestamp >= 0 and now_ms - entry.last_timestamp >= expiration_ms
        ]
        for pid in doomed:
            del self.entries[pid]
        return len(doomed)

    def record_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, now_ms: int) -> None:
        """A transaction marker: a higher epoch (fencing, or transaction version 2's bump at every
        end) starts the producer over; the same epoch keeps its sequences (version 1)."""
        entry = self.entries.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self.entries[producer_id] = ProducerEntry(epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = now_ms

"""Producer ids, epochs and per-partition sequence tracking for idempotent produce.

Mirrors what Kafka's ProducerStateManager checks on append: the last five batches of each
producer are remembered per partition, so a retried batch is acknowledged with its
original offset instead of being written twice; a gap in sequence numbers is
OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is fenced.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..protocol.error_codes import ErrorCode

MAX_CACHED_BATCHES = 5  # Kafka keeps the last five batches per producer and partition
INT32_MAX = 2**31 - 1


@dataclass
class CachedBatch:
    first_seq: int
    last_seq: int
    base_offset: int
    log_append_time: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque[CachedBatch] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))

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

    def check(self, producer_id: int, epoch: int, base_seq: int, last_offset_delta: int, *, state_may_be_lost: bool) -> SequenceCheck:
        entry = self.entries.get(producer_id)
        last_seq = next_seq(base_seq, last_offset_delta)
        if entry is None:
            if base_seq != 0 and state_may_be_lost:
                return SequenceCheck(ErrorCode.UNKNOWN_PRODUCER_ID)
            if base_seq != 0:
                return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
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

    def record(self, producer_id: int, epoch: int, base_seq: int, last_offset_delta: int, base_offset: int, log_append_time: int) -> None:
        entry = self.entries.get(producer_id)
        if entry is None or epoch != entry.epoch:
            entry = self.entries[producer_id] = ProducerEntry(epoch)
        entry.batches.append(CachedBatch(base_seq, next_seq(base_seq, last_offset_delta), base_offset, log_append_time))


class ProducerIds:
    """Hands out producer ids and tracks epochs of transactional ids (InitProducerId)."""

    def __init__(self, first_id: int = 1000):
        self._next = first_id
        self.transactional: dict[str, tuple[int, int]] = {}  # transactional id -> (producer id, epoch)
        self.epochs: dict[int, int] = {}  # producer id -> current epoch

    def init(self, transactional_id: str | None, producer_id: int = -1, producer_epoch: int = -1) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch) as InitProducerId answers them."""
        if transactional_id:
            current = self.transactional.get(transactional_id)
            if current is None:
                pid, epoch = self._allocate(), 0
            else:
                pid, epoch = current
                if producer_id != -1 and (producer_id, producer_epoch) != (pid, epoch):
                    return ErrorCode.PRODUCER_FENCED, -1, -1
                epoch += 1
                if epoch >= 2**15 - 1:  # epoch exhausted: a new id, as Kafka does
                    pid, epoch = self._allocate(), 0
            self.transactional[transactional_id] = (pid, epoch)
            self.epochs[pid] = epoch
            return ErrorCode.NONE, pid, epoch
        if producer_id != -1:
            # KIP-360: an idempotent producer bumps its own epoch after an error.
            current = self.epochs.get(producer_id)
            if current is None:
                return ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1
            if producer_epoch != current:
                return ErrorCode.PRODUCER_FENCED, -1, -1
            self.epochs[producer_id] = current + 1
            return ErrorCode.NONE, producer_id, current + 1
        pid = self._allocate()
        self.epochs[pid] = 0
        return ErrorCode.NONE, pid, 0

    def _allocate(self) -> int:
        pid = self._next
        self._next += 1
        return pid

"""Producer ids, epochs and per-partition sequence tracking for idempotent produce.

Mirrors what Kafka's ProducerStateManager checks on append: the last five batches of each
producer are remembered per partition, so a retried batch is acknowledged with its
original offset instead of being written twice; a gap in sequence numbers is
OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is fenced. A producer the partition has no state
for (new, or all its batches removed) may start at any sequence.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..protocol.error_codes import ErrorCode

MAX_CACHED_BATCHES = 5  # Kafka keeps the last five batches per producer and partition
INT32_MAX = 2**31 - 1
EPOCH_MAX = 2**15 - 1  # Short.MAX_VALUE


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


def epoch_exhausted(epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: Short.MaxValue is kept free so a producer can always be fenced."""
    return epoch >= EPOCH_MAX - 1


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
    ) -> None:
        entry = self.entries.get(producer_id)
        if entry is None or epoch != entry.epoch:
            entry = self.entries[producer_id] = ProducerEntry(epoch)
        last_seq = next_seq(base_seq, last_offset_delta)
        entry.batches.append(CachedBatch(base_seq, last_seq, base_offset, log_append_time))


class ProducerIds:
    """Hands out producer ids and tracks epochs of transactional ids (InitProducerId).

    Follows Kafka's ``TransactionCoordinator.handleInitProducerId`` and
    ``TransactionMetadata.prepareIncrementProducerEpoch`` / ``prepareProducerIdRotation`` for a
    transactional id with no transaction in progress (the only state this broker has).
    """

    def __init__(self, first_id: int = 1000):
        self._next = first_id
        self.transactional: dict[str, tuple[int, int]] = {}  # transactional id -> (producer id, epoch)
        # transactional id -> (previous producer id, last epoch): Kafka's prevProducerId, the producer id before
        # the last InitProducerId, and lastProducerEpoch, the epoch before the last bump made for a producer that
        # sent its id and epoch (-1 after a bump without them), so that a retry of that bump can be recognised.
        self.previous: dict[str, tuple[int, int]] = {}
        self.epochs: dict[int, int] = {}  # producer id -> current epoch

    def init(
        self, transactional_id: str | None, producer_id: int = -1, producer_epoch: int = -1
    ) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch) as InitProducerId answers them."""
        if transactional_id is None:
            # "if the transactional id is null, then always blindly accept the request and return a new producerId"
            pid = self._allocate()
            self.epochs[pid] = 0
            return ErrorCode.NONE, pid, 0
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, -1, -1
        expected_epoch = producer_epoch if producer_id != -1 else None
        current = self.transactional.get(transactional_id)
        if current is None:
            # New metadata (epoch NO_PRODUCER_EPOCH): whatever id and epoch were sent, the first epoch is 0.
            pid = self._allocate()
            self._set(transactional_id, pid, 0, previous_id=pid, last_epoch=-1)
            return ErrorCode.NONE, pid, 0
        pid, epoch = current
        previous_id, last_epoch = self.previous[transactional_id]
        if (
            expected_epoch is not None
            and producer_id != pid
            and not (producer_id == previous_id and epoch_exhausted(expected_epoch))
        ):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if epoch_exhausted(epoch) and expected_epoch in (None, epoch):
            # prepareProducerIdRotation: a new producer id at epoch 0; the last epoch is kept for a retry.
            new_pid = self._allocate()
            self._set(transactional_id, new_pid, 0, previous_id=pid, last_epoch=-1 if expected_epoch is None else epoch)
            return ErrorCode.NONE, new_pid, 0
        if epoch_exhausted(epoch):
            # prepareIncrementProducerEpoch throws IllegalStateException ("Cannot allocate any more producer
            # epochs"), which the broker answers as an unexpected error.
            return ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1
        if expected_epoch is None:
            # A new instance: bump, and forget the last epoch so an older instance cannot pass for a retry.
            self._set(transactional_id, pid, epoch + 1, previous_id=pid, last_epoch=-1)
            return ErrorCode.NONE, pid, epoch + 1
        if expected_epoch == epoch:
            # KIP-360: the producer continues after an error and nothing else was initialised since.
            self._set(transactional_id, pid, epoch + 1, previous_id=pid, last_epoch=epoch)
            return ErrorCode.NONE, pid, epoch + 1
        if expected_epoch == last_epoch:
            # A retry of a successful bump whose response was lost: the current epoch, not bumped again.
            self._set(transactional_id, pid, epoch, previous_id=pid, last_epoch=last_epoch)
            return ErrorCode.NONE, pid, epoch
        return ErrorCode.PRODUCER_FENCED, -1, -1

    def _set(self, transactional_id: str, pid: int, epoch: int, *, previous_id: int, last_epoch: int) -> None:
        self.transactional[transactional_id] = (pid, epoch)
        self.previous[transactional_id] = (previous_id, last_epoch)
        self.epochs[pid] = epoch

    def _allocate(self) -> int:
        pid = self._next
        self._next += 1
        return pid

"""What a share partition holds and is told, as plain data: Kafka's record states and
acknowledgement types, the in-flight ranges, the log batches acquisition reads, the
``AcquiredRecords`` it answers, acknowledgement batches and their validation, and the error
texts of SharePartition."""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator

from ....lazy_dataclasses import dataclass
from ....protocol.error_codes import ErrorCode as E

# SharePartition's InvalidRecordStateException / InvalidRequestException texts
BATCH_NOT_ACQUIRED = "The batch cannot be acknowledged. The batch is not in the acquired state."
SUBSET_NOT_ACQUIRED = "The batch cannot be acknowledged. The subset batch is not in the acquired state."
OFFSET_NOT_ACQUIRED = "The offset cannot be acknowledged. The offset is not acquired."
NOT_BATCH_OWNER = "Member is not the owner of batch record"
NOT_OFFSET_OWNER = "Member is not the owner of offset"
NOT_IN_CACHE = "Batch record not found. The request batch offsets are not found in the cache."
FIRST_PAST = "Batch record not found. The first offset in request is past acquired records."
LAST_PAST = "Batch record not found. The last offset in request is past acquired records."


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
    one owner and one lock), inside the in-flight batch whose first offset is ``batch``."""

    first: int
    last: int
    state: RecordState
    count: int = 0  # deliveries so far
    member: str = ""
    lock: int = 0  # the acquisition whose lock holds it (0: none)
    batch: int = -1  # the in-flight batch (Kafka's cache key: the batch's first offset)

    def same(self, other: InFlight) -> bool:
        return (self.state, self.count, self.member, self.lock, self.batch) == (
            other.state,
            other.count,
            other.member,
            other.lock,
            other.batch,
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


def throttle_limit(delivery_limit: int) -> int:
    """SharePartition ``throttleRecordsDeliveryLimit``: from this many deliveries on, a batch is
    handed out in shrinking parts."""
    return max(2, math.ceil(delivery_limit / 2))


def expand(batch: AckBatch, per_offset: bool) -> Iterator[tuple[int, int, int]]:
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


def validate_batches(batches: list[AckBatch], max_type: int, renew: bool) -> str | None:
    """ShareFetch/ShareAcknowledge's check of acknowledgement batches (Apis
    ``validateAcknowledgementBatches``): why they are an INVALID_REQUEST (for logs: Kafka sends
    the code without a message), or None."""
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

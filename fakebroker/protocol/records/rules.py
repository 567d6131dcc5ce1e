"""What produce validation checks records against: :class:`ProduceLimits` (a topic's settings,
one value) and :class:`_RecordRules` (what is checked of each record of one batch)."""

from __future__ import annotations

from ...lazy_dataclasses import dataclass
from .layout import _INT64_MAX, CREATE_TIME, LOG_APPEND_TIME

#: fakebroker's bound on what one produced batch may decompress to (Kafka has none besides the
#: per-record ``max.decompressed.message.bytes``; it streams records instead of inflating a batch).
MAX_DECOMPRESSED_BATCH_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ProduceLimits:
    """The settings produced records are validated against, as one immutable value (the broker
    derives it once per change of a topic's config). The defaults check nothing but the shape.

    ``compacted``: ``cleanup.policy`` contains ``compact`` (every record needs a key).
    ``max_message_size``: ``max.message.bytes``, the bound on one batch (None: no bound).
    ``message_timestamp_type``: ``message.timestamp.type`` (:data:`.layout.CREATE_TIME` or
    :data:`.layout.LOG_APPEND_TIME`).
    ``timestamp_before_max_ms``/``timestamp_after_max_ms``:
    ``message.timestamp.before.max.ms``/``after.max.ms``, how far a CreateTime record's
    timestamp may lie behind/ahead of the broker's now.
    ``max_record_size``: ``max.decompressed.message.bytes``, Kafka's per-record bound in a
    compressed batch (None: no bound).
    ``max_decompressed_batch``: fakebroker's bound on what a whole batch may decompress to.
    """

    compacted: bool = False
    max_message_size: int | None = None
    message_timestamp_type: int = CREATE_TIME
    timestamp_before_max_ms: int = _INT64_MAX
    timestamp_after_max_ms: int = _INT64_MAX
    max_record_size: int | None = None
    max_decompressed_batch: int = MAX_DECOMPRESSED_BATCH_BYTES

    @property
    def log_append_time(self) -> bool:
        """Whether the broker stamps the append time on every batch (LogAppendTime)."""
        return self.message_timestamp_type == LOG_APPEND_TIME


#: What the validators check when given no limits: the records' shape and CRCs only.
NO_LIMITS = ProduceLimits()


@dataclass(slots=True)  # not frozen: a frozen __init__ cost every produce ~1 us
class _RecordRules:
    """What ``validateRecord`` checks per record of one v2 batch (see validation.py)."""

    compacted: bool
    now: int | None
    message_timestamp_type: int
    before: int
    after: int
    tp: str
    base_offset: int
    base_timestamp: int
    max_timestamp: int
    batch_timestamp_type: int

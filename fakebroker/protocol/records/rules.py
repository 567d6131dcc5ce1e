"""What produce validation checks of each record of one v2 batch: :class:`_RecordRules`."""

from __future__ import annotations

from dataclasses import dataclass


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

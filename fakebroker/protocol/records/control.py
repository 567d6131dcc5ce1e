"""Control records (transaction markers and other control types): types and parsing.

Control *batches* are encoded by :func:`~fakebroker.protocol.records.batch.build_control_batch`.
"""

from __future__ import annotations

from enum import IntEnum

from ...lazy_dataclasses import dataclass
from .errors import InvalidRecordError
from .layout import CONTROL_RECORD_KEY, END_TXN_MARKER
from .record import Record

# --------------------------------------------------------------------------------------------
# Control records
# --------------------------------------------------------------------------------------------


class ControlRecordType(IntEnum):
    """Type field of a control record key (``ControlRecordType.java``)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(slots=True)
class ControlRecord:
    """A decoded control record: its key, and for COMMIT/ABORT the EndTxnMarker value.

    ``type`` is kept as an int: unknown types are legal and must be ignored by readers.
    """

    version: int
    type: int
    value: bytes | None
    coordinator_epoch: int | None = None
    marker_version: int | None = None

    @property
    def kind(self) -> ControlRecordType | None:
        """The known :class:`ControlRecordType`, or None for an unknown type."""
        try:
            return ControlRecordType(self.type)
        except ValueError:
            return None

    @property
    def is_commit(self) -> bool:
        return self.type == ControlRecordType.COMMIT

    @property
    def is_abort(self) -> bool:
        return self.type == ControlRecordType.ABORT


def parse_control_record(record: Record) -> ControlRecord:
    """Decode a control record's key and, for COMMIT/ABORT, its EndTxnMarker value.

    Unknown types are returned as they are (not an error); a key shorter than 4 bytes, a
    negative key version, or a COMMIT/ABORT value shorter than 6 bytes raise
    :class:`InvalidRecordError` like ``ControlRecordType.parse`` / ``EndTransactionMarker``.
    Newer (higher) versions are parsed as version 0, as Kafka does.
    """
    key = record.key
    if key is None or len(key) < CONTROL_RECORD_KEY.sizeof():
        size = -1 if key is None else len(key)
        raise InvalidRecordError(
            f"Invalid value size found for end control record key. Must have at least 4 bytes, but found only {size}"
        )
    parsed_key = CONTROL_RECORD_KEY.parse(key)
    if parsed_key.version < 0:
        raise InvalidRecordError(
            f"Invalid version found for control record: {parsed_key.version}. May indicate data corruption"
        )
    control = ControlRecord(version=parsed_key.version, type=parsed_key.type, value=record.value)
    if parsed_key.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = record.value
        if value is None or len(value) < END_TXN_MARKER.sizeof():
            size = -1 if value is None else len(value)
            raise InvalidRecordError(
                "Invalid value size found for end transaction marker. Must have at least 6 bytes, "
                f"but found only {size}"
            )
        marker = END_TXN_MARKER.parse(value)
        if marker.version < 0:
            raise InvalidRecordError(
                f"Invalid version found for end transaction marker: {marker.version}. May indicate data corruption"
            )
        control.marker_version = marker.version
        control.coordinator_epoch = marker.coordinator_epoch
    return control

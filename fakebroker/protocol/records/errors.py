"""The :class:`RecordsError` hierarchy: every error the records package raises, with its Kafka code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, NamedTuple

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class RecordsError(ValueError):
    """Records that cannot be read or are refused; base of every error this package raises.

    ``message`` (also ``str(exc)``) is Kafka's message, what a broker puts in ``error_message``;
    ``offset`` is the byte position in the blob of the entry at fault, ``record_index`` the
    record's index in its batch when one record is at fault, ``error_code`` the Kafka code.
    """

    error_code: ClassVar[int] = -1
    error_name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"

    def __init__(self, message: str, *, offset: int = 0, record_index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.record_index = record_index

    def __str__(self) -> str:
        # Only Kafka's message: this is what goes to clients as ``error_message``.
        return self.message

    def __repr__(self) -> str:
        index = "" if self.record_index is None else f", record_index={self.record_index}"
        return f"{type(self).__name__}({self.message!r}, offset={self.offset}{index})"


class CorruptRecordsError(RecordsError):
    """Kafka CORRUPT_MESSAGE (2): CRC mismatch, impossible sizes, bad magic, undecodable data.

    Kafka itself answers some of the undecodable-payload cases (a compressed stream that does
    not decompress, compression codec 5-7) with UNKNOWN_SERVER_ERROR; we use this class.
    """

    error_code = 2
    error_name = "CORRUPT_MESSAGE"


class InvalidRecordError(RecordsError):
    """Kafka INVALID_RECORD (87): well-formed bytes the broker refuses (or malformed records).

    ``record_errors`` lists ``(batch_index, message)`` pairs for ProduceResponse v8+
    ``record_errors`` when individual records were refused.
    """

    error_code = 87
    error_name = "INVALID_RECORD"

    def __init__(
        self,
        message: str,
        *,
        offset: int = 0,
        record_index: int | None = None,
        record_errors: Sequence[tuple[int, str]] = (),
    ) -> None:
        super().__init__(message, offset=offset, record_index=record_index)
        self.record_errors: list[tuple[int, str]] = list(record_errors)


class InvalidTimestampError(InvalidRecordError):
    """Kafka INVALID_TIMESTAMP (32): a record timestamp outside the topic's allowed range."""

    error_code = 32
    error_name = "INVALID_TIMESTAMP"


class UnsupportedCompressionTypeError(RecordsError):
    """Kafka UNSUPPORTED_COMPRESSION_TYPE (76): zstd in a Produce request older than v7."""

    error_code = 76
    error_name = "UNSUPPORTED_COMPRESSION_TYPE"


class RecordTooLargeError(RecordsError):
    """Kafka MESSAGE_TOO_LARGE (10): a batch larger than ``max.message.bytes``."""

    error_code = 10
    error_name = "MESSAGE_TOO_LARGE"


class OverBudget(Exception):
    """Not a verdict: checking these records would take longer than the caller's
    :class:`LoopBudget` allows (the broker then checks them again off its event loop)."""


class LoopBudget(NamedTuple):
    """How much produce validation may do where it holds everybody up (the broker's event loop):
    at most ``bytes`` of a records section (decompressed), and at most ``records`` records read
    one by one (a section of one layout is checked in one C pass and does not count)."""

    bytes: int
    records: int

"""Kafka record formats: RecordBatch (magic v2) and the legacy MessageSet (magic v0/v1).

The ``records`` field of Produce and Fetch is a plain concatenation of *entries* (v2 batches
or legacy messages) with no count in front; every entry starts with int64 offset, int32 length
and has its magic byte at byte 16. See ``shared/kafka-protocol/README.md`` ("Record batches")
for the byte layouts; this module follows Kafka's Java classes ``DefaultRecordBatch``,
``DefaultRecord``, ``LegacyRecord``, ``ByteBufferLogInputStream`` and ``LogValidator``.

What the broker uses, by cost:

* :func:`iter_batch_headers` walks a blob reading headers only (no decompression, no
  record parsing): produce-time shape checks, fetch-time slicing.
* :func:`verify_crc` and the in-place rewrites (:func:`set_base_offset`,
  :func:`set_last_offset`, :func:`set_partition_leader_epoch`, :func:`set_max_timestamp`,
  :func:`set_log_append_time`) touch only header bytes, so a stored batch is never re-encoded.
* :func:`read_batches` decodes everything (decompressing) and :func:`validate_produce_records`
  applies Kafka's produce-time checks in Kafka's order.
* :func:`build_batch`, :func:`build_control_batch` and :func:`build_message_set` encode.

Errors: decoding functions raise only :class:`RecordsError` subclasses (never IndexError,
struct.error or construct errors), each carrying the Kafka error code it maps to and the byte
position (``.offset``) in the blob of the entry at fault.

Fixed layouts are ``construct`` schemas (:data:`BATCH_HEADER`, :data:`LEGACY_HEADER`,
:data:`LEGACY_BODY`, :data:`CONTROL_RECORD_KEY`, :data:`END_TXN_MARKER`); field offsets and
the fast header parser are *derived* from them, so the schemas are the only definition.
Records inside a v2 batch use zig-zag varints and are decoded by hand (see
:func:`_decode_records` for why).

This module imports nothing from trio or the server.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, ClassVar, Final, Iterable, Iterator, Literal, Sequence, Union

import crc32c as _crc32c
from construct import (
    Bytes,
    ConstructError,
    FocusedSeq,
    If,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Rebuild,
    Struct,
    this,
)

from . import compression as _compression

__all__ = [
    # data
    "Record",
    "RecordBatch",
    "LegacyMessage",
    "BatchHeader",
    "ControlRecord",
    "ControlRecordType",
    "Header",
    "RecordInput",
    "LegacyInput",
    # errors
    "RecordsError",
    "CorruptRecordsError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "UnsupportedCompressionTypeError",
    "RecordTooLargeError",
    # reading
    "iter_batch_headers",
    "read_batches",
    "verify_crc",
    "parse_control_record",
    "validate_produce_records",
    # writing
    "build_batch",
    "build_control_batch",
    "build_message_set",
    # in place
    "set_base_offset",
    "set_last_offset",
    "set_partition_leader_epoch",
    "set_max_timestamp",
    "set_log_append_time",
    # schemas and constants
    "BATCH_HEADER",
    "LEGACY_HEADER",
    "LEGACY_PREFIX",
    "LEGACY_BODY",
    "CONTROL_RECORD_KEY",
    "END_TXN_MARKER",
    "RECORD_BATCH_OVERHEAD",
    "LOG_OVERHEAD",
    "NO_TIMESTAMP",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
]

# --------------------------------------------------------------------------------------------
# Schemas (construct) and what is derived from them
# --------------------------------------------------------------------------------------------

#: The 61-byte header of a magic-v2 RecordBatch (``DefaultRecordBatch``).
BATCH_HEADER: Final = Struct(
    "base_offset" / Int64sb,
    "batch_length" / Int32sb,  # bytes after this field: total size - 12
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,
    "crc" / Int32ub,  # CRC-32C of bytes [21, end)
    "attributes" / Int16sb,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "records_count" / Int32sb,
)

#: The first 18 bytes of a legacy (magic 0/1) message: log overhead, crc, magic, attributes.
LEGACY_HEADER: Final = Struct(
    "offset" / Int64sb,
    "message_size" / Int32sb,  # bytes after this field
    "crc" / Int32ub,  # CRC-32 (zlib) of bytes [16, end): magic .. end of value
    "magic" / Int8sb,
    "attributes" / Int8sb,
)

#: The 16 bytes in front of the CRC-covered part of a legacy message.
LEGACY_PREFIX: Final = Struct("offset" / Int64sb, "message_size" / Int32sb, "crc" / Int32ub)

#: Kafka ``bytes`` with an int32 length; a negative length is null.
_NULLABLE_BYTES32: Final = FocusedSeq(
    "data",
    "length" / Rebuild(Int32sb, lambda ctx: -1 if ctx.data is None else len(ctx.data)),
    "data" / If(this.length >= 0, Bytes(this.length)),
)

#: The CRC-covered part of a legacy message (bytes [16, end)).
LEGACY_BODY: Final = Struct(
    "magic" / Int8sb,
    "attributes" / Int8sb,
    "timestamp" / If(this.magic >= 1, Int64sb),
    "key" / _NULLABLE_BYTES32,
    "value" / _NULLABLE_BYTES32,
)

#: Key of a control record (``ControlRecordTypeSchema.json``).
CONTROL_RECORD_KEY: Final = Struct("version" / Int16sb, "type" / Int16sb)

#: Value of a COMMIT/ABORT control record (``EndTxnMarker.json``).
END_TXN_MARKER: Final = Struct("version" / Int16sb, "coordinator_epoch" / Int32sb)


def _field_offsets(schema: Struct) -> dict[str, int]:
    offsets: dict[str, int] = {}
    pos = 0
    for sub in schema.subcons:
        offsets[sub.name] = pos
        pos += sub.sizeof()
    return offsets


def _fast_struct(schema: Struct) -> struct.Struct:
    """A ``struct.Struct`` equivalent to a fixed, big-endian construct ``Struct``.

    Measured on the 61-byte batch header: construct's interpreter ~40 us per parse, its
    compiled form ~9 us, ``struct.unpack_from`` ~0.8 us. Header walking is the broker's hot
    path (every produce and fetch), so it unpacks with a struct derived here from the
    schema; the schema stays the single definition (tests check both agree).
    """
    fmt = ">"
    for sub in schema.subcons:
        fmtstr = getattr(sub.subcon, "fmtstr", None)
        if not fmtstr or fmtstr[0] != ">":
            raise TypeError(f"field {sub.name!r} is not a fixed big-endian format field")
        fmt += fmtstr[1:]
    fast = struct.Struct(fmt)
    assert fast.size == schema.sizeof()
    return fast


_BATCH_FIELDS: Final = {sub.name: sub.subcon for sub in BATCH_HEADER.subcons}
_BATCH_OFFSETS: Final = _field_offsets(BATCH_HEADER)
_LEGACY_OFFSETS: Final = _field_offsets(LEGACY_HEADER)
_BATCH_HEADER_FAST: Final = _fast_struct(BATCH_HEADER)
_LEGACY_HEADER_FAST: Final = _fast_struct(LEGACY_HEADER)
_BATCH_HEADER_BUILD: Final = BATCH_HEADER.compile()  # ~2x faster builds than interpreted

LOG_OVERHEAD: Final = _BATCH_OFFSETS["partition_leader_epoch"]  # 12: offset + length
MAGIC_OFFSET: Final = _BATCH_OFFSETS["magic"]  # 16, the same in every format
HEADER_SIZE_UP_TO_MAGIC: Final = MAGIC_OFFSET + 1  # 17
CRC_OFFSET: Final = _BATCH_OFFSETS["crc"]  # 17
ATTRIBUTES_OFFSET: Final = _BATCH_OFFSETS["attributes"]  # 21: CRC-32C covers [21, end)
MAX_TIMESTAMP_OFFSET: Final = _BATCH_OFFSETS["max_timestamp"]  # 35
RECORDS_COUNT_OFFSET: Final = _BATCH_OFFSETS["records_count"]  # 57
RECORD_BATCH_OVERHEAD: Final = BATCH_HEADER.sizeof()  # 61
LEGACY_HEADER_SIZE: Final = LEGACY_HEADER.sizeof()  # 18
LEGACY_CRC_OFFSET: Final = _LEGACY_OFFSETS["crc"]  # 12
LEGACY_ATTRIBUTES_OFFSET: Final = _LEGACY_OFFSETS["attributes"]  # 17
LEGACY_TIMESTAMP_OFFSET: Final = LEGACY_HEADER_SIZE  # 18 (v1 only)
#: crc + magic + attributes + key length + value length (``LegacyRecord.RECORD_OVERHEAD_V0``)
LEGACY_RECORD_OVERHEAD_V0: Final = 14
LEGACY_RECORD_OVERHEAD_V1: Final = 22  # ... + timestamp

NO_TIMESTAMP: Final = -1
CREATE_TIME: Final = 0
LOG_APPEND_TIME: Final = 1

_COMPRESSION_MASK: Final = 0x07
_TIMESTAMP_TYPE_MASK: Final = 0x08
_TRANSACTIONAL_MASK: Final = 0x10
_CONTROL_MASK: Final = 0x20
_DELETE_HORIZON_MASK: Final = 0x40
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class RecordsError(ValueError):
    """Records that cannot be read or are refused; base of every error this module raises.

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


# --------------------------------------------------------------------------------------------
# Data classes
# --------------------------------------------------------------------------------------------

#: A record header: UTF-8 key (never null) and nullable value.
Header = tuple[str, Union[bytes, None]]


@dataclass(slots=True)
class Record:
    """One record of a v2 batch, as stored: offset and timestamp are deltas to the batch's."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    attributes: int = 0

    @property
    def is_tombstone(self) -> bool:
        """A null value (deletes the key on compacted topics)."""
        return self.value is None


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


@dataclass(slots=True)
class RecordBatch:
    """A decoded magic-v2 record batch (records decompressed)."""

    base_offset: int = 0
    partition_leader_epoch: int = -1
    magic: int = 2
    crc: int = 0
    attributes: int = 0
    last_offset_delta: int = 0
    base_timestamp: int = NO_TIMESTAMP
    max_timestamp: int = NO_TIMESTAMP
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    records: list[Record] = field(default_factory=list)

    @property
    def compression(self) -> int:
        """Compression codec id (attributes bits 0-2)."""
        return self.attributes & _COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime (attributes bit 3)."""
        return (self.attributes & _TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        """Bit 6: base_timestamp holds the compaction delete horizon."""
        return bool(self.attributes & _DELETE_HORIZON_MASK)

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    def offset_of(self, record: Record) -> int:
        """Absolute offset of one of this batch's records."""
        return self.base_offset + record.offset_delta

    def timestamp_of(self, record: Record) -> int:
        """Timestamp of one of this batch's records (the batch's max_timestamp under LogAppendTime)."""
        if self.attributes & _TIMESTAMP_TYPE_MASK:
            return self.max_timestamp
        return self.base_timestamp + record.timestamp_delta

    def sequence_of(self, record: Record) -> int:
        """Producer sequence of a record (-1 without one); sequences wrap at 2**31."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + record.offset_delta) % (2**31)

    def control_records(self) -> list[ControlRecord]:
        """The decoded control records of a control batch (empty for a data batch)."""
        if not self.is_control:
            return []
        return [parse_control_record(r) for r in self.records]

    def to_bytes(self) -> bytes:
        """Re-encode this batch (new CRC; records re-compressed with ``compression``)."""
        return build_batch(
            self.records,
            base_offset=self.base_offset,
            compression=self.compression,
            timestamp_type=self.timestamp_type,
            base_timestamp=self.base_timestamp,
            max_timestamp=self.max_timestamp,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            transactional=self.is_transactional,
            control=self.is_control,
            partition_leader_epoch=self.partition_leader_epoch,
            last_offset_delta=self.last_offset_delta,
            extra_attributes=self.attributes & ~0x3F,
        )


@dataclass(slots=True)
class LegacyMessage:
    """A legacy (magic 0 or 1) message; a compressed one is a wrapper around ``inner``.

    For a wrapper, ``value`` is the compressed inner message set and ``inner`` the decoded
    inner messages with absolute offsets (v1 relative offsets already resolved, and under
    LogAppendTime the wrapper's timestamp applied). ``timestamp`` is None for magic 0.
    """

    offset: int
    magic: int
    attributes: int
    timestamp: int | None
    key: bytes | None
    value: bytes | None
    crc: int = 0
    inner: list[LegacyMessage] = field(default_factory=list)

    @property
    def compression(self) -> int:
        return self.attributes & _COMPRESSION_MASK

    @property
    def is_compressed(self) -> bool:
        return bool(self.attributes & _COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> int | None:
        """0 CreateTime, 1 LogAppendTime; None for magic 0 (no timestamps)."""
        if self.magic == 0:
            return None
        return (self.attributes & _TIMESTAMP_TYPE_MASK) >> 3

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def messages(self) -> list[LegacyMessage]:
        """The messages this entry carries: ``inner`` for a wrapper, else itself."""
        return self.inner if self.is_compressed else [self]


@dataclass(slots=True)
class BatchHeader:
    """Header of one entry of a records blob, read without touching its records.

    For a v2 batch every field is the header field of the same name. For a legacy message:
    ``base_offset`` is the message offset (for a compressed wrapper: its *last* inner offset),
    ``batch_length`` the message size, ``base_timestamp``/``max_timestamp`` its timestamp (-1 for
    v0), ``records_count`` 1 for an uncompressed message and -1 (unknown) for a wrapper, and
    the v2-only fields -1/0.

    ``truncated`` marks a trailing partial entry (Kafka fetch responses may end with one):
    ``available`` bytes of ``size`` are present and fields beyond them are -1.
    """

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    truncated: bool = False
    available: int = -1

    @property
    def size(self) -> int:
        """Total bytes of the entry (``batch_length + 12``)."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def end(self) -> int:
        """Position just past the entry in the blob."""
        return self.position + self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        if self.magic >= 2:
            return self.base_offset + self.last_offset_delta
        return self.base_offset

    @property
    def is_legacy(self) -> bool:
        return self.magic < 2

    @property
    def compression(self) -> int:
        return self.attributes & _COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return (self.attributes & _TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & _TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & _CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & _DELETE_HORIZON_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0


# --------------------------------------------------------------------------------------------
# Zig-zag varints (record level)
# --------------------------------------------------------------------------------------------


class _Underflow(Exception):
    """Internal: ran past the end of a buffer while decoding records."""


class _BadVarint(Exception):
    """Internal: a varint longer than Java's ``ByteUtils`` accepts."""


def _varint32(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint (int32) at ``pos`` -> (value, new pos), as ``ByteUtils.readVarint``.

    At most 5 bytes; bits beyond 32 are dropped like Java's ``int`` arithmetic does.
    """
    raw = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            raise _BadVarint("Varint is too long, the most significant bit in the 5th byte is set")
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def _varint64(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varlong (int64), at most 10 bytes (``ByteUtils.readVarlong``)."""
    raw = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise _BadVarint("Varlong is too long, most significant bit in the 10th byte is set")
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


_ONE_BYTE_VARINTS: Final = [bytes([i]) for i in range(0x80)]


def _zigzag_varint(value: int) -> bytes:
    """Zig-zag encode a signed int64 as a protobuf-style varint."""
    z = (value << 1) ^ (value >> 63)
    if z < 0x80:
        return _ONE_BYTE_VARINTS[z]
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


# --------------------------------------------------------------------------------------------
# Header walking
# --------------------------------------------------------------------------------------------


def _truncated_header(data: Any, pos: int, n: int) -> BatchHeader:
    remaining = n - pos
    base_offset = batch_length = magic = -1
    if remaining >= LOG_OVERHEAD:
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
    if remaining >= HEADER_SIZE_UP_TO_MAGIC:
        magic = struct.unpack_from(">b", data, pos + MAGIC_OFFSET)[0]
    if magic == 2 and remaining >= RECORD_BATCH_OVERHEAD:
        return BatchHeader(pos, *_BATCH_HEADER_FAST.unpack_from(data, pos), truncated=True, available=remaining)
    if magic in (0, 1) and remaining >= LEGACY_HEADER_SIZE:
        _, _, crc, _, attributes = _LEGACY_HEADER_FAST.unpack_from(data, pos)
        return BatchHeader(
            pos, base_offset, batch_length, -1, magic, crc, attributes & 0xFF, 0, -1, -1, -1, -1, -1, -1,
            truncated=True, available=remaining,
        )
    return BatchHeader(
        pos, base_offset, batch_length, -1, magic, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        truncated=True, available=remaining,
    )


def iter_batch_headers(data: bytes | bytearray | memoryview, *, allow_truncated: bool = True) -> Iterator[BatchHeader]:
    """Walk a ``records`` blob entry by entry, reading headers only (no decompression).

    Checks what Kafka's ``ByteBufferLogInputStream`` checks while walking: a size below the
    minimum overhead or a magic byte other than 0-2 raises :class:`CorruptRecordsError`.
    A trailing partial entry is yielded last with ``truncated=True`` when
    ``allow_truncated`` (Kafka ignores it), else raises :class:`CorruptRecordsError`.
    CRCs are *not* checked here (see :func:`verify_crc`).
    """
    n = len(data)
    pos = 0
    while pos < n:
        remaining = n - pos
        if remaining < LOG_OVERHEAD:
            yield _partial(data, pos, n, allow_truncated)
            return
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        if batch_length < LEGACY_RECORD_OVERHEAD_V0:
            raise CorruptRecordsError(
                f"Record size {batch_length} is less than the minimum record overhead "
                f"({LEGACY_RECORD_OVERHEAD_V0})",
                offset=pos,
            )
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            yield _partial(data, pos, n, allow_truncated)
            return
        magic = data[pos + MAGIC_OFFSET]
        if magic > 2:  # a negative int8 reads as >= 128 here
            signed = magic - 256 if magic > 127 else magic
            raise CorruptRecordsError(f"Invalid magic found in record: {signed}", offset=pos)
        size = batch_length + LOG_OVERHEAD
        if remaining < size:
            yield _partial(data, pos, n, allow_truncated)
            return
        if magic == 2:
            if size < RECORD_BATCH_OVERHEAD:
                raise CorruptRecordsError(
                    f"Record batch is corrupt (the size {size} is smaller than the minimum "
                    f"allowed overhead {RECORD_BATCH_OVERHEAD})",
                    offset=pos,
                )
            yield BatchHeader(pos, *_BATCH_HEADER_FAST.unpack_from(data, pos))
        else:
            if magic == 1 and batch_length < LEGACY_RECORD_OVERHEAD_V1:
                raise CorruptRecordsError(
                    f"Record size {batch_length} is less than the minimum record overhead "
                    f"({LEGACY_RECORD_OVERHEAD_V1}) of magic v1",
                    offset=pos,
                )
            _, _, crc, _, attributes = _LEGACY_HEADER_FAST.unpack_from(data, pos)
            attributes &= 0xFF
            timestamp = -1
            if magic == 1:
                (timestamp,) = struct.unpack_from(">q", data, pos + LEGACY_TIMESTAMP_OFFSET)
            yield BatchHeader(
                pos, base_offset, batch_length, -1, magic, crc, attributes, 0, timestamp, timestamp,
                -1, -1, -1, -1 if attributes & _COMPRESSION_MASK else 1,
            )
        pos += size


def _partial(data: Any, pos: int, n: int, allow_truncated: bool) -> BatchHeader:
    if not allow_truncated:
        raise CorruptRecordsError(
            f"Truncated entry at the end of the records: only {n - pos} bytes present", offset=pos
        )
    return _truncated_header(data, pos, n)


# --------------------------------------------------------------------------------------------
# CRC
# --------------------------------------------------------------------------------------------


def _stored_and_computed_crc(data: Any, pos: int) -> tuple[int, int] | None:
    n = len(data)
    if n - pos < HEADER_SIZE_UP_TO_MAGIC or pos < 0:
        return None
    (batch_length,) = struct.unpack_from(">i", data, pos + 8)
    end = pos + batch_length + LOG_OVERHEAD
    magic = data[pos + MAGIC_OFFSET]
    view = memoryview(data)
    if magic == 2:
        if end > n or end - pos < RECORD_BATCH_OVERHEAD:
            return None
        (stored,) = struct.unpack_from(">I", data, pos + CRC_OFFSET)
        return stored, _crc32c.crc32c(view[pos + ATTRIBUTES_OFFSET : end])
    if magic in (0, 1):
        if end > n or batch_length < LEGACY_RECORD_OVERHEAD_V0:
            return None
        (stored,) = struct.unpack_from(">I", data, pos + LEGACY_CRC_OFFSET)
        return stored, zlib.crc32(view[pos + MAGIC_OFFSET : end])
    return None


def verify_crc(data: bytes | bytearray | memoryview, pos: int = 0) -> bool:
    """Whether the entry at ``pos`` has a valid CRC; False also for anything unreadable.

    v2: CRC-32C (Castagnoli) over bytes [21, end). Legacy: CRC-32 (zlib) over [16, end).
    """
    try:
        crcs = _stored_and_computed_crc(data, pos)
    except (struct.error, IndexError, TypeError, ValueError):
        return False
    return crcs is not None and crcs[0] == crcs[1]


def _check_crc(data: bytes, header: BatchHeader) -> None:
    crcs = _stored_and_computed_crc(data, header.position)
    if crcs is None or crcs[0] != crcs[1]:
        stored, computed = crcs if crcs else (header.crc, -1)
        raise CorruptRecordsError(
            f"Record is corrupt (stored crc = {stored}, computed crc = {computed})", offset=header.position
        )


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def _decode_records(buf: bytes, count: int, batch_pos: int) -> list[Record]:
    """Decode ``count`` v2 records from ``buf`` (the uncompressed records section).

    Hand-written rather than a construct schema: a record is six or more zig-zag varints,
    and a ``construct`` schema of it (``ZigZag`` fields, ``PrefixedArray`` of headers) was
    measured at ~57 ms for 1,000 small records (compiling it does not help, ``ZigZag`` does
    not compile), over the 50 ms budget; this loop, with one-byte varints inlined, takes
    ~1.5-2 ms for the same 1,000 records. Checks and messages follow
    ``DefaultRecord.readFrom`` and ``DefaultRecordBatch.RecordIterator``.
    """
    n = len(buf)
    pos = 0
    records: list[Record] = []
    append = records.append
    i = 0

    def invalid(message: str) -> InvalidRecordError:
        return InvalidRecordError(message, offset=batch_pos, record_index=i)

    try:
        for i in range(count):
            if pos >= n:
                raise invalid("Incorrect declared batch size, premature EOF reached")
            b = buf[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = _varint32(buf, pos)
            if n - pos < length:
                raise invalid(
                    f"Invalid record size: expected {length} bytes in record payload, but instead "
                    f"the buffer has only {n - pos} remaining bytes."
                )
            start = pos
            attributes = buf[pos]
            pos += 1
            b = buf[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                timestamp_delta, pos = _varint64(buf, pos)
            b = buf[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = _varint32(buf, pos)
            # key
            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                size, pos = _varint32(buf, pos)
            if size >= 0:
                if pos + size > n:
                    raise _Underflow
                key: bytes | None = buf[pos : pos + size]
                pos += size
            else:
                key = None
            # value
            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                size, pos = _varint32(buf, pos)
            if size >= 0:
                if pos + size > n:
                    raise _Underflow
                value: bytes | None = buf[pos : pos + size]
                pos += size
            else:
                value = None
            # headers
            b = buf[pos]
            if b < 0x80:
                header_count = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                header_count, pos = _varint32(buf, pos)
            headers: list[Header] = []
            if header_count:
                if header_count < 0:
                    raise invalid(f"Found invalid number of record headers {header_count}")
                if header_count > n - pos:
                    raise invalid(
                        f"Found invalid number of record headers. {header_count} is larger than "
                        "the remaining size of the buffer"
                    )
                for _ in range(header_count):
                    size, pos = _varint32(buf, pos)
                    if size < 0:
                        raise invalid(f"Invalid negative header key size {size}")
                    if pos + size > n:
                        raise _Underflow
                    header_key = buf[pos : pos + size].decode("utf-8", "surrogateescape")
                    pos += size
                    size, pos = _varint32(buf, pos)
                    if size >= 0:
                        if pos + size > n:
                            raise _Underflow
                        header_value: bytes | None = buf[pos : pos + size]
                        pos += size
                    else:
                        header_value = None
                    headers.append((header_key, header_value))
            if pos - start != length:
                raise invalid(
                    f"Invalid record size: expected to read {length} bytes in record payload, "
                    f"but instead read {pos - start}"
                )
            append(Record(offset_delta, timestamp_delta, key, value, headers, attributes))
    except (IndexError, _Underflow, _BadVarint) as exc:
        raise invalid("Found invalid record structure") from exc
    if pos != n:
        raise InvalidRecordError(
            "Incorrect declared batch size, records still remaining in file", offset=batch_pos
        )
    return records


def _decompress(codec: int, payload: bytes, position: int, magic: int) -> bytes:
    try:
        return _compression.decompress(codec, payload, broken_lz4_checksum=(magic == 0))
    except _compression.UnsupportedCodec:
        raise CorruptRecordsError(f"Unknown compression type id: {codec}", offset=position) from None
    except _compression.CompressionError as exc:
        raise CorruptRecordsError(
            f"Failed to decompress {_compression.CODEC_NAMES[codec]} record stream: {exc}", offset=position
        ) from exc


def _decode_v2(data: bytes, header: BatchHeader, check_crc: bool) -> RecordBatch:
    if check_crc:
        _check_crc(data, header)
    count = header.records_count
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch", offset=header.position)
    records: list[Record] = []
    if count:  # like DefaultRecordBatch.iterator(): a count of 0 reads nothing
        payload = data[header.position + RECORD_BATCH_OVERHEAD : header.end]
        codec = header.attributes & _COMPRESSION_MASK
        if codec:
            payload = _decompress(codec, payload, header.position, 2)
        records = _decode_records(payload, count, header.position)
    return RecordBatch(
        base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        magic=2,
        crc=header.crc,
        attributes=header.attributes,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        records=records,
    )


def _decode_legacy(data: bytes, header: BatchHeader, check_crc: bool, *, nested: bool = False) -> LegacyMessage:
    if check_crc:
        _check_crc(data, header)
    body = data[header.position + MAGIC_OFFSET : header.end]
    try:
        parsed = LEGACY_BODY.parse(body)
    except ConstructError as exc:
        raise CorruptRecordsError(
            f"Record is corrupt (the key and value do not fit in its {header.batch_length} bytes)",
            offset=header.position,
        ) from exc
    message = LegacyMessage(
        offset=header.base_offset,
        magic=parsed.magic,
        attributes=parsed.attributes & 0xFF,
        timestamp=parsed.timestamp,
        key=parsed.key,
        value=parsed.value,
        crc=header.crc,
    )
    codec = message.compression
    if codec and not nested:
        message.inner = _decode_legacy_inner(message, header.position, check_crc)
    return message


def _decode_legacy_inner(wrapper: LegacyMessage, position: int, check_crc: bool) -> list[LegacyMessage]:
    codec = wrapper.compression
    if codec == _compression.ZSTD:
        raise InvalidRecordError(
            f"Invalid wrapper compressionType found in legacy deep record: zstd (magic {wrapper.magic})",
            offset=position,
        )
    if wrapper.value is None:
        raise InvalidRecordError("Found invalid compressed record set with null value", offset=position)
    raw = _decompress(codec, wrapper.value, position, wrapper.magic)
    inner: list[LegacyMessage] = []
    try:
        for index, header in enumerate(iter_batch_headers(raw, allow_truncated=False)):
            if header.magic >= 2:
                raise InvalidRecordError(
                    f"Compressed legacy message has an inner entry of magic {header.magic}",
                    offset=position,
                    record_index=index,
                )
            message = _decode_legacy(raw, header, check_crc, nested=True)
            if message.is_compressed:
                raise InvalidRecordError(
                    "Compressed outer record should not have an inner record with a compression "
                    "attribute set",
                    offset=position,
                    record_index=index,
                )
            inner.append(message)
    except RecordsError as exc:
        exc.offset = position  # position of the wrapper in the outer blob
        raise
    if not inner:
        raise InvalidRecordError("Found invalid compressed record set with no inner records", offset=position)
    if wrapper.magic >= 1:
        # v1: inner offsets are relative; the wrapper carries the absolute last offset.
        base = wrapper.offset - inner[-1].offset
        for message in inner:
            message.offset += base
        if wrapper.attributes & _TIMESTAMP_TYPE_MASK:
            for message in inner:
                message.timestamp = wrapper.timestamp
    return inner


def _safe(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    try:
        return bytes(data)
    except TypeError as exc:
        raise CorruptRecordsError(f"records must be bytes-like, not {type(data).__name__}") from exc


def read_batches(
    data: bytes | bytearray | memoryview, *, allow_truncated: bool = True, check_crc: bool = True
) -> list[RecordBatch | LegacyMessage]:
    """Decode every entry of a ``records`` blob (v2 batches and legacy messages).

    Compressed payloads are decompressed; legacy wrappers get their ``inner`` messages.
    A trailing partial entry is skipped (``allow_truncated``) or is an error. With
    ``check_crc`` (default) a CRC mismatch raises :class:`CorruptRecordsError`.
    Raises only :class:`RecordsError` subclasses.
    """
    blob = _safe(data)
    out: list[RecordBatch | LegacyMessage] = []
    try:
        for header in iter_batch_headers(blob, allow_truncated=allow_truncated):
            if header.truncated:
                break
            if header.magic == 2:
                out.append(_decode_v2(blob, header, check_crc))
            else:
                out.append(_decode_legacy(blob, header, check_crc))
    except RecordsError:
        raise
    except (IndexError, struct.error, ConstructError, OverflowError, UnicodeError) as exc:  # safety net
        raise CorruptRecordsError(f"Malformed records: {exc}") from exc
    return out


# --------------------------------------------------------------------------------------------
# Control records
# --------------------------------------------------------------------------------------------


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


def build_control_batch(
    kind: Literal["commit", "abort"] | int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    timestamp: int = NO_TIMESTAMP,
    *,
    partition_leader_epoch: int = -1,
    value: bytes | None = None,
) -> bytes:
    """Encode a control batch the way ``MemoryRecords.writeEndTransactionalMarker`` does.

    ``kind`` is ``"commit"``, ``"abort"`` or a :class:`ControlRecordType`/int. For COMMIT and
    ABORT the value is the EndTxnMarker (version 0, ``coordinator_epoch``); other types need
    an explicit ``value``. ``timestamp`` should be the broker's ``now`` (Kafka uses it as
    the batch's base and max timestamp). Transactional + control bits set, baseSequence -1,
    no compression, exactly one record at offset delta 0, no headers.
    """
    if isinstance(kind, str):
        names = {"commit": ControlRecordType.COMMIT, "abort": ControlRecordType.ABORT}
        if kind.lower() not in names:
            raise ValueError(f"unknown control record kind {kind!r}")
        control_type = int(names[kind.lower()])
    else:
        control_type = int(kind)
    key = CONTROL_RECORD_KEY.build(dict(version=0, type=control_type))
    if value is None and control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = END_TXN_MARKER.build(dict(version=0, coordinator_epoch=coordinator_epoch))
    record = Record(offset_delta=0, timestamp_delta=0, key=key, value=value, headers=[])
    return build_batch(
        [record],
        base_offset=base_offset,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


# --------------------------------------------------------------------------------------------
# Encoding v2
# --------------------------------------------------------------------------------------------

#: What :func:`build_batch` accepts per record: a :class:`Record` (deltas as given), or a tuple
#: ``(key, value)``, ``(key, value, headers)`` or ``(key, value, headers, timestamp)`` whose
#: offset delta is its index and whose timestamp (absolute, or None) is optional.
RecordInput = Union[
    Record,
    tuple[Union[bytes, None], Union[bytes, None]],
    tuple[Union[bytes, None], Union[bytes, None], Sequence[Header]],
    tuple[Union[bytes, None], Union[bytes, None], Sequence[Header], Union[int, None]],
]


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} {value} out of range [{low}, {high}]")


def _encode_record(out: bytearray, record: Record) -> None:
    body = bytearray()
    body.append(record.attributes & 0xFF)
    body += _zigzag_varint(record.timestamp_delta)
    body += _zigzag_varint(record.offset_delta)
    for data in (record.key, record.value):
        if data is None:
            body += _ONE_BYTE_VARINTS[1]  # zig-zag -1
        else:
            body += _zigzag_varint(len(data))
            body += data
    body += _zigzag_varint(len(record.headers))
    for header_key, header_value in record.headers:
        encoded_key = header_key.encode("utf-8", "surrogateescape")
        body += _zigzag_varint(len(encoded_key))
        body += encoded_key
        if header_value is None:
            body += _ONE_BYTE_VARINTS[1]
        else:
            body += _zigzag_varint(len(header_value))
            body += header_value
    out += _zigzag_varint(len(body))
    out += body


def _normalize(records: Iterable[RecordInput], base_timestamp: int | None) -> tuple[list[Record], int]:
    items = list(records)
    if base_timestamp is None:
        base_timestamp = NO_TIMESTAMP
        for item in items:
            if not isinstance(item, Record) and len(item) >= 4 and item[3] is not None:  # type: ignore[misc]
                base_timestamp = item[3]  # type: ignore[misc]
                break
    out: list[Record] = []
    for index, item in enumerate(items):
        if isinstance(item, Record):
            out.append(item)
            continue
        if not isinstance(item, tuple) or not 2 <= len(item) <= 4:
            raise TypeError(f"record {index}: expected a Record or a (key, value[, headers[, timestamp]]) tuple")
        key, value = item[0], item[1]
        headers = list(item[2]) if len(item) >= 3 and item[2] is not None else []  # type: ignore[misc]
        timestamp = item[3] if len(item) == 4 else None  # type: ignore[misc]
        delta = 0 if timestamp is None else timestamp - base_timestamp
        out.append(
            Record(
                offset_delta=index,
                timestamp_delta=delta,
                key=None if key is None else bytes(key),
                value=None if value is None else bytes(value),
                headers=headers,
            )
        )
    return out, base_timestamp


def build_batch(
    records: Iterable[RecordInput],
    *,
    base_offset: int = 0,
    compression: int = 0,
    timestamp_type: int = CREATE_TIME,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
    extra_attributes: int = 0,
) -> bytes:
    """Encode one magic-v2 record batch, with a correct CRC-32C over bytes [21, end).

    ``records`` are :class:`Record` objects or ``(key, value[, headers[, timestamp]])`` tuples
    (see :data:`RecordInput`). ``base_timestamp`` defaults to the first tuple timestamp given,
    else -1 (no timestamp). ``max_timestamp`` defaults to the largest record timestamp (at
    least -1), as ``MemoryRecordsBuilder`` computes it; under LogAppendTime pass the append time.
    ``last_offset_delta`` defaults to the last record's offset delta (0 for no records).
    ``extra_attributes`` ORs raw bits into attributes (e.g. 0x40, delete horizon).
    """
    items, base_ts = _normalize(records, base_timestamp)
    _compression.codec_name(compression)
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"timestamp_type must be 0 (CreateTime) or 1 (LogAppendTime), not {timestamp_type}")
    payload = bytearray()
    computed_max = NO_TIMESTAMP
    for record in items:
        _check_range("offset_delta", record.offset_delta, _INT32_MIN, _INT32_MAX)
        _check_range("timestamp_delta", record.timestamp_delta, _INT64_MIN, _INT64_MAX)
        timestamp = base_ts + record.timestamp_delta
        if timestamp > computed_max:
            computed_max = timestamp
        _encode_record(payload, record)
    if compression:
        payload = bytearray(_compression.compress(compression, bytes(payload)))
    attributes = (
        compression
        | (timestamp_type << 3)
        | (_TRANSACTIONAL_MASK if transactional else 0)
        | (_CONTROL_MASK if control else 0)
        | extra_attributes
    )
    if last_offset_delta is None:
        last_offset_delta = items[-1].offset_delta if items else 0
    fields = dict(
        base_offset=base_offset,
        batch_length=RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(payload),
        partition_leader_epoch=partition_leader_epoch,
        magic=2,
        crc=0,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_ts,
        max_timestamp=computed_max if max_timestamp is None else max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=len(items),
    )
    try:
        header = _BATCH_HEADER_BUILD.build(fields)
        crc = _crc32c.crc32c(bytes(payload), _crc32c.crc32c(header[ATTRIBUTES_OFFSET:]))
        fields["crc"] = crc
        header = _BATCH_HEADER_BUILD.build(fields)
    except (ConstructError, struct.error) as exc:
        raise ValueError(f"batch header field out of range: {exc}") from exc
    return header + bytes(payload)


# --------------------------------------------------------------------------------------------
# Encoding legacy
# --------------------------------------------------------------------------------------------

#: What :func:`build_message_set` accepts per message: a :class:`LegacyMessage` (its key,
#: value and timestamp are used) or ``(key, value)`` / ``(key, value, timestamp)``.
LegacyInput = Union[
    LegacyMessage,
    tuple[Union[bytes, None], Union[bytes, None]],
    tuple[Union[bytes, None], Union[bytes, None], Union[int, None]],
]


def _encode_legacy(offset: int, magic: int, attributes: int, timestamp: int | None, key: bytes | None, value: bytes | None) -> bytes:
    body = LEGACY_BODY.build(
        dict(magic=magic, attributes=attributes, timestamp=timestamp if magic >= 1 else None, key=key, value=value)
    )
    prefix = LEGACY_PREFIX.build(dict(offset=offset, message_size=len(body) + 4, crc=zlib.crc32(body)))
    return prefix + body


def build_message_set(
    messages: Iterable[LegacyInput],
    *,
    magic: int = 1,
    compression: int = 0,
    base_offset: int = 0,
    log_append_time: int | None = None,
) -> bytes:
    """Encode a legacy (magic 0 or 1) message set.

    Uncompressed: one message per input at offsets ``base_offset + i``. Compressed (gzip,
    snappy, lz4; zstd does not exist before v2): one wrapper whose value is the compressed
    inner set -- inner offsets absolute for v0, relative ``0..n-1`` for v1 -- with a null key,
    the offset of the last message, and (v1) the largest inner timestamp. LZ4 with magic 0
    gets the historic wrong frame checksum. ``log_append_time`` (v1) sets the LogAppendTime
    bit and every timestamp to that value.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    _compression.codec_name(compression)
    if compression == _compression.ZSTD:
        raise ValueError("zstd compression needs magic 2")
    normalized: list[tuple[bytes | None, bytes | None, int]] = []
    for item in messages:
        if isinstance(item, LegacyMessage):
            key, value, timestamp = item.key, item.value, item.timestamp
        else:
            key, value = item[0], item[1]
            timestamp = item[2] if len(item) >= 3 else None  # type: ignore[misc]
        if log_append_time is not None:
            timestamp = log_append_time
        normalized.append((key, value, NO_TIMESTAMP if timestamp is None else timestamp))
    timestamp_bit = _TIMESTAMP_TYPE_MASK if (log_append_time is not None and magic == 1) else 0
    if not compression:
        return b"".join(
            _encode_legacy(base_offset + i, magic, timestamp_bit, ts, key, value)
            for i, (key, value, ts) in enumerate(normalized)
        )
    if not normalized:
        return b""
    inner = b"".join(
        _encode_legacy(i if magic == 1 else base_offset + i, magic, timestamp_bit, ts, key, value)
        for i, (key, value, ts) in enumerate(normalized)
    )
    wrapped = _compression.compress(compression, inner, broken_lz4_checksum=(magic == 0))
    wrapper_ts = log_append_time if log_append_time is not None else max(
        [NO_TIMESTAMP] + [ts for _, _, ts in normalized]
    )
    return _encode_legacy(
        base_offset + len(normalized) - 1, magic, compression | timestamp_bit, wrapper_ts, None, wrapped
    )


# --------------------------------------------------------------------------------------------
# In-place rewrites (no re-encoding)
# --------------------------------------------------------------------------------------------


def _require(buf: bytearray | memoryview, pos: int, size: int) -> int:
    """Check ``size`` header bytes exist at ``pos``; return the magic byte (-1 if not included)."""
    if pos < 0 or len(buf) - pos < size:
        raise CorruptRecordsError(f"no entry header of {size} bytes at position {pos}", offset=pos)
    return buf[pos + MAGIC_OFFSET] if size > MAGIC_OFFSET else -1


def _put(buf: bytearray | memoryview, pos: int, name: str, value: int) -> None:
    start = pos + _BATCH_OFFSETS[name]
    encoded = _BATCH_FIELDS[name].build(value)
    buf[start : start + len(encoded)] = encoded


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Write the int64 offset at the start of the entry at ``pos`` (not covered by any CRC).

    For v2 that is the base offset; for a legacy message its offset (see :func:`set_last_offset`
    for a legacy compressed wrapper, whose offset is its last inner offset).
    """
    _require(buf, pos, LOG_OVERHEAD)
    _put(buf, pos, "base_offset", base_offset)


def set_last_offset(buf: bytearray | memoryview, pos: int, last_offset: int) -> None:
    """Kafka's ``setLastOffset``: v2 base = last - lastOffsetDelta; legacy offset = last."""
    magic = _require(buf, pos, HEADER_SIZE_UP_TO_MAGIC)
    if magic == 2:
        _require(buf, pos, RECORD_BATCH_OVERHEAD)
        (delta,) = struct.unpack_from(">i", buf, pos + _BATCH_OFFSETS["last_offset_delta"])
        _put(buf, pos, "base_offset", last_offset - delta)
    else:
        _put(buf, pos, "base_offset", last_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Write a v2 batch's partitionLeaderEpoch (bytes 12-15, outside the CRC).

    Legacy messages have no such field: -1 is accepted as a no-op, anything else raises,
    like ``AbstractLegacyRecordBatch.setPartitionLeaderEpoch``.
    """
    magic = _require(buf, pos, HEADER_SIZE_UP_TO_MAGIC)
    if magic == 2:
        _put(buf, pos, "partition_leader_epoch", epoch)
    elif epoch != -1:
        raise RecordsError(f"Magic versions prior to 2 do not support partition leader epoch (magic {magic})", offset=pos)


def set_max_timestamp(buf: bytearray | memoryview, pos: int, timestamp_type: int, max_timestamp: int) -> None:
    """Kafka's ``setMaxTimestamp``: set the timestamp-type bit and max timestamp, redo the CRC.

    v2: attributes are recomputed from the known bits (codec, transactional, control, delete
    horizon) plus the timestamp type, maxTimestamp is written, CRC-32C recomputed. Legacy v1:
    the message's attributes and timestamp are rewritten and its CRC-32 recomputed. Nothing
    changes when type and timestamp are already those. Magic 0 has no timestamps: raises.
    """
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"timestamp_type must be 0 or 1, not {timestamp_type}")
    magic = _require(buf, pos, HEADER_SIZE_UP_TO_MAGIC)
    (batch_length,) = struct.unpack_from(">i", buf, pos + 8)
    end = pos + batch_length + LOG_OVERHEAD
    if end > len(buf):
        raise CorruptRecordsError("entry extends past the end of the buffer", offset=pos)
    view = memoryview(buf)
    if magic == 2:
        _require(buf, pos, RECORD_BATCH_OVERHEAD)
        if batch_length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordsError(f"batch length {batch_length} is below the v2 minimum", offset=pos)
        (attributes,) = struct.unpack_from(">h", buf, pos + ATTRIBUTES_OFFSET)
        (current,) = struct.unpack_from(">q", buf, pos + MAX_TIMESTAMP_OFFSET)
        if ((attributes & _TIMESTAMP_TYPE_MASK) >> 3) == timestamp_type and current == max_timestamp:
            return
        _put(buf, pos, "attributes", (attributes & 0x77) | (timestamp_type << 3))
        _put(buf, pos, "max_timestamp", max_timestamp)
        _put(buf, pos, "crc", _crc32c.crc32c(view[pos + ATTRIBUTES_OFFSET : end]))
    elif magic == 1:
        if batch_length < LEGACY_RECORD_OVERHEAD_V1:
            raise CorruptRecordsError("legacy v1 message too small to hold a timestamp", offset=pos)
        attributes = buf[pos + LEGACY_ATTRIBUTES_OFFSET]
        (current,) = struct.unpack_from(">q", buf, pos + LEGACY_TIMESTAMP_OFFSET)
        if ((attributes & _TIMESTAMP_TYPE_MASK) >> 3) == timestamp_type and current == max_timestamp:
            return
        buf[pos + LEGACY_ATTRIBUTES_OFFSET] = (attributes & _COMPRESSION_MASK) | (timestamp_type << 3)
        buf[pos + LEGACY_TIMESTAMP_OFFSET : pos + LEGACY_TIMESTAMP_OFFSET + 8] = Int64sb.build(max_timestamp)
        buf[pos + LEGACY_CRC_OFFSET : pos + LEGACY_CRC_OFFSET + 4] = Int32ub.build(
            zlib.crc32(view[pos + MAGIC_OFFSET : end])
        )
    else:
        raise RecordsError(f"Cannot set timestamp for a record with magic = {magic}", offset=pos)


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Stamp the entry at ``pos`` with LogAppendTime ``timestamp`` (see :func:`set_max_timestamp`).

    This is what Kafka does on append for a LogAppendTime topic; record-level timestamps are
    left alone (readers use the batch's max timestamp for every record).
    """
    set_max_timestamp(buf, pos, LOG_APPEND_TIME, timestamp)


# --------------------------------------------------------------------------------------------
# Produce-time validation
# --------------------------------------------------------------------------------------------


def validate_produce_records(
    data: bytes | bytearray | memoryview,
    *,
    produce_version: int | None = None,
    compacted: bool = False,
    max_message_size: int | None = None,
    now: int | None = None,
    message_timestamp_type: int = CREATE_TIME,
    timestamp_before_max_ms: int = _INT64_MAX,
    timestamp_after_max_ms: int = _INT64_MAX,
    topic_partition: str = "",
) -> list[RecordBatch | LegacyMessage]:
    """Apply the checks Kafka makes on a produced partition's records, in Kafka's order.

    1. ``ProduceRequest.validateRecords`` (when ``produce_version`` >= 3): at least one
       batch, magic 2, no zstd before v7 (:class:`UnsupportedCompressionTypeError`), exactly
       one batch -- :class:`InvalidRecordError` otherwise.
    2. ``UnifiedLog.analyzeAndValidateRecords``: entry sizes and magic (walking), v2
       baseOffset 0, size <= ``max_message_size`` (:class:`RecordTooLargeError`), CRC
       (:class:`CorruptRecordsError`).
    3. ``LogValidator.validateBatch``: one batch if v2 or compressed, same magic, v2 offset
       range vs record count, no control batches from clients, producer id needs a sequence.
    4. Records (decoding: malformed -> :class:`InvalidRecordError`) and ``validateRecord``:
       legacy inner CRCs (corrupt), compressed inner records, keys on ``compacted`` topics,
       and with ``now`` timestamps against ``message.timestamp.before/after.max.ms``
       (:class:`InvalidTimestampError`). Record-level errors are collected with their index
       in ``record_errors``.

    Returns the decoded entries. A trailing partial entry is ignored, as Kafka does.
    """
    blob = _safe(data)
    tp = f" in topic partition {topic_partition}" if topic_partition else ""
    try:
        headers = [h for h in iter_batch_headers(blob) if not h.truncated]
        # 1. ProduceRequest.validateRecords
        if produce_version is not None and produce_version >= 3:
            v = produce_version
            if not headers:
                raise InvalidRecordError(f"Produce requests with version {v} must have at least one record batch per partition")
            first = headers[0]
            if first.magic != 2:
                raise InvalidRecordError(
                    f"Produce requests with version {v} are only allowed to contain record batches with magic version 2",
                    offset=first.position,
                )
            if v < 7 and first.compression == _compression.ZSTD:
                raise UnsupportedCompressionTypeError(
                    f"Produce requests with version {v} are not allowed to use ZStandard compression",
                    offset=first.position,
                )
            if len(headers) > 1:
                raise InvalidRecordError(
                    f"Produce requests with version {v} are only allowed to contain exactly one record batch per partition",
                    offset=headers[1].position,
                )
        if not headers:
            return []
        # 2. analyzeAndValidateRecords
        source_compression = 0
        for h in headers:
            if h.magic >= 2 and h.base_offset != 0:
                raise InvalidRecordError(
                    f"The baseOffset of the record batch in the append to {topic_partition or 'the partition'} "
                    f"should be 0, but it is {h.base_offset}",
                    offset=h.position,
                )
            if max_message_size is not None and h.size > max_message_size:
                raise RecordTooLargeError(
                    f"The record batch size in the append to {topic_partition or 'the partition'} is {h.size} bytes "
                    f"which exceeds the maximum configured value of {max_message_size}.",
                    offset=h.position,
                )
            if not verify_crc(blob, h.position):
                raise CorruptRecordsError(f"Record is corrupt (stored crc = {h.crc}){tp}.", offset=h.position)
            if h.compression:
                source_compression = h.compression
        # 3. LogValidator.validateBatch
        first = headers[0]
        if (first.magic >= 2 or source_compression) and len(headers) > 1:
            raise InvalidRecordError("Compressed outer record has more than one batch", offset=headers[1].position)
        for h in headers:
            if h.magic != first.magic:
                raise InvalidRecordError(
                    f"Batch magic {h.magic} is not the same as the first batch's magic byte {first.magic}{tp}",
                    offset=h.position,
                )
            if h.magic >= 2:
                count_from_offsets = h.last_offset_delta + 1
                if count_from_offsets <= 0:
                    raise InvalidRecordError(
                        f"Batch has an invalid offset range: [{h.base_offset}, {h.last_offset}]{tp}", offset=h.position
                    )
                if h.records_count <= 0:
                    raise InvalidRecordError(
                        f"Invalid reported count for record batch: {h.records_count}{tp}", offset=h.position
                    )
                if count_from_offsets != h.records_count:
                    raise InvalidRecordError(
                        f"Inconsistent batch offset range [{h.base_offset}, {h.last_offset}] and count of "
                        f"records {h.records_count}{tp}",
                        offset=h.position,
                    )
            if h.is_control:
                raise InvalidRecordError(f"Clients are not allowed to write control records{tp}", offset=h.position)
            if h.has_producer_id and h.base_sequence < 0:
                raise InvalidRecordError(
                    f"Invalid sequence number {h.base_sequence} in record batch with producerId {h.producer_id}{tp}",
                    offset=h.position,
                )
        # 4. records
        entries: list[RecordBatch | LegacyMessage] = []
        for h in headers:
            if h.magic == 2:
                batch = _decode_v2(blob, h, check_crc=False)
                entries.append(batch)
                _validate_v2_records(batch, h, compacted, now, message_timestamp_type,
                                     timestamp_before_max_ms, timestamp_after_max_ms, tp)
            else:
                # Outer CRC already checked; this also checks inner CRCs, which Kafka reports
                # as CORRUPT_MESSAGE ("verify the record-level CRC ... of the deep entries").
                message = _decode_legacy(blob, h, check_crc=True)
                entries.append(message)
                _validate_legacy_records(message, h, compacted, now, message_timestamp_type,
                                         timestamp_before_max_ms, timestamp_after_max_ms, tp)
        return entries
    except RecordsError:
        raise
    except (IndexError, struct.error, ConstructError, OverflowError, UnicodeError) as exc:  # safety net
        raise CorruptRecordsError(f"Malformed records: {exc}") from exc


def _timestamp_error(
    timestamp: int, offset: int, batch_timestamp_type: int | None, now: int | None, message_timestamp_type: int,
    before: int, after: int, index: int,
) -> str | None:
    if now is None:
        return None
    if message_timestamp_type == CREATE_TIME and timestamp != NO_TIMESTAMP:
        diff = now - timestamp
        if diff > before or -diff > after:
            return (
                f"Timestamp {timestamp} of message with offset {offset} is out of range. The timestamp should be "
                f"within [{now - before}, {now + after}]"
            )
    elif batch_timestamp_type == LOG_APPEND_TIME:
        return f"Invalid timestamp type in message at index {index}. Producer should not set timestamp type to LogAppendTime."
    return None


def _raise_record_errors(errors: list[tuple[int, str, bool]], position: int) -> None:
    if not errors:
        return
    pairs = [(index, message) for index, message, _ in errors]
    if any(is_timestamp for _, _, is_timestamp in errors):
        raise InvalidTimestampError(
            "One or more records have been rejected due to invalid timestamp",
            offset=position,
            record_index=pairs[0][0],
            record_errors=pairs,
        )
    shown = ", ".join(f"(batchIndex={index}, message='{message}')" for index, message in pairs[:3])
    raise InvalidRecordError(
        f"One or more records have been rejected due to {len(pairs)} record errors in total, and only "
        f"showing the first three errors at most: [{shown}]",
        offset=position,
        record_index=pairs[0][0],
        record_errors=pairs,
    )


def _validate_v2_records(
    batch: RecordBatch, header: BatchHeader, compacted: bool, now: int | None, message_timestamp_type: int,
    before: int, after: int, tp: str,
) -> None:
    errors: list[tuple[int, str, bool]] = []
    for index, record in enumerate(batch.records):
        if compacted and record.key is None:
            errors.append((index, f"Compacted topic cannot accept message without key{tp}", False))
            continue
        message = _timestamp_error(
            batch.timestamp_of(record), batch.offset_of(record), batch.timestamp_type, now,
            message_timestamp_type, before, after, index,
        )
        if message:
            errors.append((index, message, True))
    _raise_record_errors(errors, header.position)


def _validate_legacy_records(
    message: LegacyMessage, header: BatchHeader, compacted: bool, now: int | None, message_timestamp_type: int,
    before: int, after: int, tp: str,
) -> None:
    errors: list[tuple[int, str, bool]] = []
    for index, inner in enumerate(message.messages):
        if inner.magic != message.magic:
            errors.append((index, f"Record's magic does not match outer magic {message.magic}{tp}", False))
            continue
        if compacted and inner.key is None:
            errors.append((index, f"Compacted topic cannot accept message without key{tp}", False))
            continue
        timestamp = NO_TIMESTAMP if inner.timestamp is None else inner.timestamp
        error = _timestamp_error(
            timestamp, inner.offset, message.timestamp_type, now, message_timestamp_type, before, after, index
        )
        if error:
            errors.append((index, error, True))
    _raise_record_errors(errors, header.position)

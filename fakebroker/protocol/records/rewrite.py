"""In-place rewrites of entry headers (offsets, leader epoch, timestamps): no re-encoding."""

from __future__ import annotations

import struct
import zlib

from construct import Int32ub, Int64sb

from . import crc as _crc32c
from .errors import CorruptRecordsError, RecordsError
from .layout import (
    _BATCH_FIELDS,
    _BATCH_OFFSETS,
    _COMPRESSION_MASK,
    _TIMESTAMP_TYPE_MASK,
    ATTRIBUTES_OFFSET,
    CREATE_TIME,
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_ATTRIBUTES_OFFSET,
    LEGACY_CRC_OFFSET,
    LEGACY_RECORD_OVERHEAD_V1,
    LEGACY_TIMESTAMP_OFFSET,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    RECORD_BATCH_OVERHEAD,
)

# --------------------------------------------------------------------------------------------
# In-place rewrites (no re-encoding)
# --------------------------------------------------------------------------------------------


def _require(buf: bytearray | memoryview, pos: int, size: int) -> int:
    """Check ``size`` header bytes exist at ``pos``; return the magic byte (-1 if not included)."""
    if pos < 0 or len(buf) - pos < size:
        raise CorruptRecordsError(f"no entry header of {size} bytes at position {pos}", offset=pos)
    return buf[pos + MAGIC_OFFSET] if size > MAGIC_OFFSET else -1


# the header's numbers as struct formats: construct's build cost every produce ~6 us per field
_PACKERS = {name: struct.Struct(sub.fmtstr) for name, sub in _BATCH_FIELDS.items() if hasattr(sub, "fmtstr")}


def _put(buf: bytearray | memoryview, pos: int, name: str, value: int) -> None:
    start = pos + _BATCH_OFFSETS[name]
    packer = _PACKERS.get(name)
    try:
        encoded = packer.pack(value) if packer is not None else _BATCH_FIELDS[name].build(value)
    except struct.error:  # construct's error for it
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
        raise RecordsError(
            f"Magic versions prior to 2 do not support partition leader epoch (magic {magic})", offset=pos
        )


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

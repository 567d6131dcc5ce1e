"""Entries of a ``records`` blob (v2 batches and legacy messages), read without decoding records.

:class:`BatchHeader` and :func:`iter_batch_headers` (header walking), the CRC checks
(:func:`verify_crc`), and helpers both formats' decoders share.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any

from ...lazy_dataclasses import dataclass
from .. import compression as _compression
from . import crc as _crc32c
from .errors import CorruptRecordsError
from .layout import (
    _BATCH_HEADER_FAST,
    _COMPRESSION_MASK,
    _CONTROL_MASK,
    _DELETE_HORIZON_MASK,
    _LEGACY_HEADER_FAST,
    _TIMESTAMP_TYPE_MASK,
    _TRANSACTIONAL_MASK,
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_CRC_OFFSET,
    LEGACY_HEADER_SIZE,
    LEGACY_RECORD_OVERHEAD_V0,
    LEGACY_RECORD_OVERHEAD_V1,
    LEGACY_TIMESTAMP_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_BATCH_OVERHEAD,
)

# --------------------------------------------------------------------------------------------
# Entry headers
# --------------------------------------------------------------------------------------------


class _Attributes:
    """What an entry's attributes, magic and offsets say: the properties :class:`BatchHeader` and
    :class:`.batch.RecordBatch` share (the v2-only bits read False for a legacy message)."""

    __slots__ = ()
    magic: int
    attributes: int
    base_offset: int
    last_offset_delta: int
    producer_id: int

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
        return self.magic >= 2 and bool(self.attributes & _TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & _CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        """Bit 6: base_timestamp holds the compaction delete horizon."""
        return self.magic >= 2 and bool(self.attributes & _DELETE_HORIZON_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_offset(self) -> int:
        if self.magic >= 2:
            return self.base_offset + self.last_offset_delta
        return self.base_offset


@dataclass(slots=True)
class BatchHeader(_Attributes):
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
    def is_legacy(self) -> bool:
        return self.magic < 2


# --------------------------------------------------------------------------------------------
# Header walking
# --------------------------------------------------------------------------------------------


def _legacy_header(
    data: Any, pos: int, timestamp: int = -1, *, truncated: bool = False, available: int = -1
) -> BatchHeader:
    """The header of the legacy message at ``pos`` (its first 18 bytes present): the v2-only
    fields -1/0, one record unless compressed (-1, unknown; and in a truncated entry)."""
    base_offset, batch_length, crc, magic, attributes = _LEGACY_HEADER_FAST.unpack_from(data, pos)
    attributes &= 0xFF
    count = -1 if truncated or attributes & _COMPRESSION_MASK else 1
    # in BatchHeader's order: leader epoch, last offset delta, producer id/epoch, sequence v2-only
    fields = (base_offset, batch_length, -1, magic, crc, attributes, 0, timestamp, timestamp, -1, -1, -1, count)
    return BatchHeader(pos, *fields, truncated=truncated, available=available)


def _truncated_header(data: Any, pos: int, n: int) -> BatchHeader:
    remaining = n - pos
    base_offset = batch_length = magic = -1
    if remaining >= LOG_OVERHEAD:
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
    if remaining >= HEADER_SIZE_UP_TO_MAGIC:
        magic = struct.unpack_from(">b", data, pos + MAGIC_OFFSET)[0]
    if magic == 2 and remaining >= RECORD_BATCH_OVERHEAD:
        header = BatchHeader(pos, *_BATCH_HEADER_FAST.unpack_from(data, pos))
        header.truncated, header.available = True, remaining
        return header
    if magic in (0, 1) and remaining >= LEGACY_HEADER_SIZE:
        return _legacy_header(data, pos, truncated=True, available=remaining)
    unknown = (-1,) * 9  # crc .. records_count
    return BatchHeader(pos, base_offset, batch_length, -1, magic, *unknown, truncated=True, available=remaining)


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
                f"Record size {batch_length} is less than the minimum record overhead ({LEGACY_RECORD_OVERHEAD_V0})",
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
            timestamp = -1
            if magic == 1:
                (timestamp,) = struct.unpack_from(">q", data, pos + LEGACY_TIMESTAMP_OFFSET)
            yield _legacy_header(data, pos, timestamp)
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
# Decoding helpers (both formats)
# --------------------------------------------------------------------------------------------


def _decompress(codec: int, payload: bytes, position: int, magic: int, max_size: int | None = None) -> bytes:
    """Decompress a batch's (or legacy wrapper's) payload; a :class:`~..compression.DecompressedTooLarge`
    (only with ``max_size``) passes through for the caller to judge."""
    try:
        return _compression.decompress(codec, payload, broken_lz4_checksum=(magic == 0), max_size=max_size)
    except _compression.DecompressedTooLarge:
        raise
    except _compression.UnsupportedCodec:
        raise CorruptRecordsError(f"Unknown compression type id: {codec}", offset=position) from None
    except _compression.CompressionError as exc:
        raise CorruptRecordsError(
            f"Failed to decompress {_compression.CODEC_NAMES[codec]} record stream: {exc}", offset=position
        ) from exc


def _safe(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    try:
        return bytes(data)
    except TypeError as exc:
        raise CorruptRecordsError(f"records must be bytes-like, not {type(data).__name__}") from exc

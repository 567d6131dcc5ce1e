"""The legacy MessageSet (magic v0/v1): :class:`LegacyMessage`, decoding, :func:`build_message_set`."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import field

from construct import ConstructError

from ...lazy_dataclasses import dataclass
from .. import compression as _compression
from .entries import BatchHeader, _check_crc, _decompress, iter_batch_headers
from .errors import CorruptRecordsError, InvalidRecordError, RecordsError, RecordTooLargeError
from .layout import _COMPRESSION_MASK, _TIMESTAMP_TYPE_MASK, LEGACY_BODY, LEGACY_PREFIX, MAGIC_OFFSET, NO_TIMESTAMP

# --------------------------------------------------------------------------------------------
# Data class
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Decoding legacy
# --------------------------------------------------------------------------------------------


def _decode_legacy(
    data: bytes, header: BatchHeader, check_crc: bool, *, nested: bool = False, max_decompressed: int | None = None
) -> LegacyMessage:
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
        message.inner = _decode_legacy_inner(message, header.position, check_crc, max_decompressed)
    return message


def _decode_legacy_inner(
    wrapper: LegacyMessage, position: int, check_crc: bool, max_decompressed: int | None = None
) -> list[LegacyMessage]:
    codec = wrapper.compression
    if codec == _compression.ZSTD:
        raise InvalidRecordError(
            f"Invalid wrapper compressionType found in legacy deep record: zstd (magic {wrapper.magic})",
            offset=position,
        )
    if wrapper.value is None:
        raise InvalidRecordError("Found invalid compressed record set with null value", offset=position)
    try:
        raw = _decompress(codec, wrapper.value, position, wrapper.magic, max_size=max_decompressed)
    except _compression.DecompressedTooLarge:
        raise RecordTooLargeError(
            f"The compressed message set decompresses to more than {max_decompressed} bytes, fakebroker's "
            "bound on a batch's decompressed size",
            offset=position,
        ) from None
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
                    "Compressed outer record should not have an inner record with a compression attribute set",
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


# --------------------------------------------------------------------------------------------
# Encoding legacy
# --------------------------------------------------------------------------------------------


#: What :func:`build_message_set` accepts per message: a :class:`LegacyMessage` (its key,
#: value and timestamp are used) or ``(key, value)`` / ``(key, value, timestamp)``.
LegacyInput = LegacyMessage | tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, int | None]


def _encode_legacy(
    offset: int, magic: int, attributes: int, timestamp: int | None, key: bytes | None, value: bytes | None
) -> bytes:
    body: bytes = LEGACY_BODY.build(
        dict(magic=magic, attributes=attributes, timestamp=timestamp if magic >= 1 else None, key=key, value=value)
    )
    prefix: bytes = LEGACY_PREFIX.build(dict(offset=offset, message_size=len(body) + 4, crc=zlib.crc32(body)))
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
            timestamp = item[2] if len(item) >= 3 else None
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
    wrapper_ts = (
        log_append_time if log_append_time is not None else max([NO_TIMESTAMP] + [ts for _, _, ts in normalized])
    )
    return _encode_legacy(
        base_offset + len(normalized) - 1, magic, compression | timestamp_bit, wrapper_ts, None, wrapped
    )

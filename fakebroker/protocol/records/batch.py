"""Magic-v2 record batches: :class:`RecordBatch`, decoding and encoding.

:func:`read_batches` decodes a whole ``records`` blob (v2 batches and legacy messages);
:func:`build_batch` and :func:`build_control_batch` encode one v2 batch.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Final, Literal, TypeVar

from construct import ConstructError

from ...lazy_dataclasses import dataclass
from .. import compression as _compression
from . import crc as _crc32c
from .control import ControlRecord, ControlRecordType, parse_control_record
from .entries import BatchHeader, _Attributes, _check_crc, _decompress, _safe, iter_batch_headers
from .errors import CorruptRecordsError, InvalidRecordError, RecordsError, RecordTooLargeError
from .layout import (
    _BATCH_HEADER_BUILD,
    _COMPRESSION_MASK,
    _CONTROL_MASK,
    _INT32_MAX,
    _INT32_MIN,
    _INT64_MAX,
    _INT64_MIN,
    _TIMESTAMP_TYPE_MASK,
    _TRANSACTIONAL_MASK,
    ATTRIBUTES_OFFSET,
    CONTROL_RECORD_KEY,
    CRC_OFFSET,
    CREATE_TIME,
    END_TXN_MARKER,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
)
from .legacy import LegacyMessage, _decode_legacy
from .record import Record, RecordInput, _decode_records, _encode_record, _normalize, _whole_records

_DecompressedTooLarge = _compression.DecompressedTooLarge
_T = TypeVar("_T")
#: The first, cheap attempt at a compressed batch (most batches fit; most bombs are judged on it).
_FIRST_DECOMPRESSION = 1024 * 1024

# --------------------------------------------------------------------------------------------
# Data class
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class RecordBatch(_Attributes):
    """A decoded magic-v2 record batch (records decompressed); its attribute bits read as
    :class:`.entries.BatchHeader`'s do."""

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
    def record_count(self) -> int:
        return len(self.records)

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


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def _decode_v2(
    data: bytes,
    header: BatchHeader,
    check_crc: bool,
    *,
    max_record_size: int | None = None,
    max_decompressed: int | None = None,
) -> RecordBatch:
    """Decode one v2 batch. For a compressed one, ``max_record_size`` is the topic's
    ``max.decompressed.message.bytes`` (per record, as Kafka) and ``max_decompressed`` bounds
    what the whole records section may decompress to (see :func:`_decode_compressed`)."""
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
            records = _decode_compressed(codec, payload, count, header.position, max_record_size, max_decompressed)
        else:
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


def _decode_compressed(
    codec: int,
    payload: bytes,
    count: int,
    position: int,
    max_record_size: int | None,
    max_decompressed: int | None,
    decode: Callable[[bytes, int, int, int | None], _T] = _decode_records,  # type: ignore[assignment]  # default for _T
) -> _T:
    """The records of a compressed v2 batch, decompressing at most ``max_decompressed`` bytes.

    Kafka never inflates a whole batch: it reads records off the decompressing stream one by
    one (``DefaultRecordBatch.StreamRecordIterator``), stops after the declared count and then
    reads one more byte. So a bomb of zeros is refused after a byte or two ("Found invalid record
    structure"), and good records followed by megabytes of filler with "records still remaining
    in file" -- both INVALID_RECORD. Here the stream is decompressed into a buffer capped at
    ``max_decompressed`` bytes (first 1 MiB, then the cap); when it does not fit, the records
    wholly inside the prefix are decoded and judged as Kafka would have on its way through them.
    Only a batch whose well-formed records really need more than the cap is refused with
    :class:`RecordTooLargeError` (MESSAGE_TOO_LARGE, which makes the Java producer split it).

    ``decode`` reads the records (produce validation passes a walker that builds none).
    """
    if max_decompressed is None:
        return decode(_decompress(codec, payload, position, 2), count, position, max_record_size)
    limits = sorted({min(max_decompressed, _FIRST_DECOMPRESSION), max_decompressed})
    for limit in limits:
        try:
            raw = _decompress(codec, payload, position, 2, max_size=limit)
        except _DecompressedTooLarge as exc:
            prefix = exc.prefix
        else:
            return decode(raw, count, position, max_record_size)
        k, end, length = _whole_records(prefix, count)
        decode(prefix[:end], k, position, max_record_size)  # Kafka's errors on the way come first
        if k == count:
            raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", offset=position)
        if length is None and len(prefix) - end >= 5:
            decode(prefix[end:], 1, position, max_record_size)  # a malformed length varint
        if length is not None and (length < 0 or (max_record_size is not None and length > max_record_size)):
            decode(prefix[end:], 1, position, max_record_size)  # refused before it is read
        if limit < max_decompressed:
            continue
        raise RecordTooLargeError(
            f"The compressed record batch decompresses to more than {max_decompressed} bytes, fakebroker's "
            f"bound on a batch's decompressed size (record {k} of {count} does not fit)",
            offset=position,
        )
    raise AssertionError("unreachable")


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
# Encoding v2
# --------------------------------------------------------------------------------------------


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} {value} out of range [{low}, {high}]")


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
        header = bytearray(_BATCH_HEADER_BUILD.build(fields))
    except (ConstructError, struct.error) as exc:
        raise ValueError(f"batch header field out of range: {exc}") from exc
    # the CRC covers everything after itself, so it is written into the built header
    crc = _crc32c.crc32c(bytes(payload), _crc32c.crc32c(bytes(header[ATTRIBUTES_OFFSET:])))
    header[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
    return bytes(header) + bytes(payload)


# --------------------------------------------------------------------------------------------
# Control batches
# --------------------------------------------------------------------------------------------


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
    if value is None and control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return _end_txn_marker_batch(
            control_type, coordinator_epoch, base_offset, timestamp, producer_id, producer_epoch, partition_leader_epoch
        )
    key = _control_key(control_type)
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


# A transaction's COMMIT or ABORT marker is written to each of its partitions at every
# EndTxn: built from a cached record and a struct-packed header (the same bytes build_batch
# writes for it: tests/protocol/test_control_batches.py), as the construct build of the
# header was a fifth of EndTxn's time.
_V2_HEADER: Final = struct.Struct(">qiibIhiqqqhii")  # BATCH_HEADER's fields, in its order
_MARKER_ATTRIBUTES: Final = _TRANSACTIONAL_MASK | _CONTROL_MASK


def _end_txn_marker_batch(
    control_type: int,
    coordinator_epoch: int,
    base_offset: int,
    timestamp: int,
    producer_id: int,
    producer_epoch: int,
    partition_leader_epoch: int,
) -> bytes:
    payload = _end_txn_marker_record(control_type, coordinator_epoch)
    try:
        header = bytearray(
            _V2_HEADER.pack(
                base_offset,
                RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(payload),
                partition_leader_epoch,
                2,
                0,
                _MARKER_ATTRIBUTES,
                0,
                timestamp,
                timestamp,
                producer_id,
                producer_epoch,
                -1,
                1,
            )
        )
    except struct.error as exc:
        raise ValueError(f"batch header field out of range: {exc}") from exc
    crc = _crc32c.crc32c(payload, _crc32c.crc32c(bytes(header[ATTRIBUTES_OFFSET:])))
    header[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
    return bytes(header) + payload


@functools.lru_cache(maxsize=256)
def _end_txn_marker_record(control_type: int, coordinator_epoch: int) -> bytes:
    out = bytearray()
    record = Record(
        offset_delta=0,
        timestamp_delta=0,
        key=_control_key(control_type),
        value=_end_txn_marker(coordinator_epoch),
        headers=[],
    )
    _encode_record(out, record)
    return bytes(out)


@functools.lru_cache(maxsize=16)
def _control_key(control_type: int) -> bytes:
    key: bytes = CONTROL_RECORD_KEY.build(dict(version=0, type=control_type))
    return key


@functools.lru_cache(maxsize=256)
def _end_txn_marker(coordinator_epoch: int) -> bytes:
    marker: bytes = END_TXN_MARKER.build(dict(version=0, coordinator_epoch=coordinator_epoch))
    return marker

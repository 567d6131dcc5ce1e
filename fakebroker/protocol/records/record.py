"""Records inside a magic-v2 batch: :class:`Record`, decoding a records section, encoding one record.

Record fields are zig-zag varints, decoded by hand (see :func:`_decode_records` for why).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field

from ...lazy_dataclasses import dataclass
from .errors import InvalidRecordError
from .layout import NO_TIMESTAMP
from .varints import _ONE_BYTE_VARINTS, _BadVarint, _Underflow, _varint32, _varint64, _zigzag_varint

# --------------------------------------------------------------------------------------------
# Data classes
# --------------------------------------------------------------------------------------------

#: A record header: UTF-8 key (never null) and nullable value.
Header = tuple[str, bytes | None]


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


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def _decode_records(buf: bytes, count: int, batch_pos: int, max_record_size: int | None = None) -> list[Record]:
    """Decode ``count`` v2 records from ``buf`` (the uncompressed records section).

    Hand-written rather than a construct schema: a record is six or more zig-zag varints,
    and a ``construct`` schema of it (``ZigZag`` fields, ``PrefixedArray`` of headers) was
    measured at ~57 ms for 1,000 small records (compiling it does not help, ``ZigZag`` does
    not compile), over the 50 ms budget; this loop, with one-byte varints inlined, takes
    ~1.5-2 ms for the same 1,000 records. Checks and messages follow
    ``DefaultRecord.readFrom`` and ``DefaultRecordBatch.RecordIterator``.

    ``max_record_size`` is the topic's ``max.decompressed.message.bytes``, which Kafka's
    ``DefaultRecord.readFrom`` applies to the records of a compressed batch: a record whose
    declared body is larger is refused (INVALID_RECORD) before it is read.
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
            if max_record_size is not None and (length < 0 or length > max_record_size):
                raise invalid(
                    f"Record body size {length} is negative"
                    if length < 0
                    else f"Record body size {length} exceeds the configured maximum record size {max_record_size}"
                )
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
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", offset=batch_pos)
    return records


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


#: What :func:`build_batch` accepts per record: a :class:`Record` (deltas as given), or a tuple
#: ``(key, value)``, ``(key, value, headers)`` or ``(key, value, headers, timestamp)`` whose
#: offset delta is its index and whose timestamp (absolute, or None) is optional.
RecordInput = (
    Record
    | tuple[bytes | None, bytes | None]
    | tuple[bytes | None, bytes | None, Sequence[Header]]
    | tuple[bytes | None, bytes | None, Sequence[Header], int | None]
)


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
            if not isinstance(item, Record) and len(item) >= 4 and item[3] is not None:
                base_timestamp = item[3]
                break
    out: list[Record] = []
    for index, item in enumerate(items):
        if isinstance(item, Record):
            out.append(item)
            continue
        if not isinstance(item, tuple) or not 2 <= len(item) <= 4:
            raise TypeError(f"record {index}: expected a Record or a (key, value[, headers[, timestamp]]) tuple")
        key, value = item[0], item[1]
        headers = list(item[2]) if len(item) >= 3 and item[2] is not None else []
        timestamp = item[3] if len(item) == 4 else None
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


def _whole_records(buf: bytes, count: int) -> tuple[int, int, int | None]:
    """How many of ``count`` records lie wholly inside ``buf`` (a decompressed prefix), where
    they end, and the declared body size of the first one that does not (None if its length
    varint itself is cut). Reads only the length varints."""
    n = len(buf)
    pos = k = 0
    while k < count:
        try:
            length, after = _varint32(buf, pos)
        except (IndexError, _BadVarint):
            return k, pos, None
        if length < 0 or after + length > n:
            return k, pos, length
        pos = after + length
        k += 1
    return k, pos, None

"""Walking a v2 records section without building records: :func:`_walk_records`.

Produce validation only needs a verdict, so it reads the same bytes in the same order as
:func:`.record._decode_records` (same checks, same messages) and applies the record-level
checks of ``LogValidator.validateRecord`` on the way, but keeps no key, value or header.
Decoding 1,000 small records into :class:`.record.Record` objects and then validating them
was ~80% of the broker's time on a 1,000-record Produce.
"""

from __future__ import annotations

from .errors import InvalidRecordError, OverBudget
from .layout import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP
from .rules import _RecordRules
from .uniform import uniform_and_clean
from .varints import _BadVarint, _Underflow, _varint32, _varint64


def _timestamp_error(
    timestamp: int, offset: int, batch_timestamp_type: int | None, rules: _RecordRules, index: int
) -> str | None:
    """What ``validateRecord`` says of the timestamp of record ``index`` (at ``offset``) of a
    batch of ``batch_timestamp_type`` under ``rules`` (None: nothing)."""
    now = rules.now
    if now is None:
        return None
    before, after = rules.before, rules.after
    if rules.message_timestamp_type == CREATE_TIME and timestamp != NO_TIMESTAMP:
        diff = now - timestamp
        if diff > before or -diff > after:
            return (
                f"Timestamp {timestamp} of message with offset {offset} is out of range. The timestamp should be "
                f"within [{now - before}, {now + after}]"
            )
    elif batch_timestamp_type == LOG_APPEND_TIME:
        return (
            f"Invalid timestamp type in message at index {index}. "
            "Producer should not set timestamp type to LogAppendTime."
        )
    return None


def _walk_records(
    buf: bytes,
    count: int,
    batch_pos: int,
    max_record_size: int | None = None,
    rules: _RecordRules | None = None,
    max_walk: int | None = None,
    strided: bool = True,
) -> list[tuple[int, str, bool]]:
    """Walk ``count`` v2 records of ``buf`` exactly as :func:`.record._decode_records` reads
    them, raising its errors; return the record-level errors ``rules`` finds, as
    ``(index, message, is_timestamp)``, for :func:`.validation._raise_record_errors`.

    Record-level errors are only collected: a structural error anywhere in the batch wins,
    as it does when the whole batch is decoded before any record is validated.

    With ``max_walk``, a section of more records than that which is not of one layout raises
    :class:`.errors.OverBudget` before any is read."""
    if uniform_and_clean(buf, count, max_record_size, rules, strided=strided):  # records of one layout, in C
        return []
    if max_walk is not None and count > max_walk:
        raise OverBudget(f"{count} records of mixed layouts")
    n = len(buf)
    pos = 0
    i = 0
    errors: list[tuple[int, str, bool]] = []
    check = rules is not None
    if rules is not None:
        compacted = rules.compacted
        log_append_batch = rules.batch_timestamp_type == LOG_APPEND_TIME
        # only a LogAppendTime batch can fail against a LogAppendTime topic (_timestamp_error)
        check_ts = rules.now is not None and (
            rules.message_timestamp_type == CREATE_TIME or rules.batch_timestamp_type == LOG_APPEND_TIME
        )
        # timestamps _timestamp_error surely accepts: [lo, hi] (-1, none, only in a CreateTime batch)
        create_time_topic = rules.message_timestamp_type == CREATE_TIME
        if check_ts and create_time_topic and rules.now is not None:  # (check_ts says now is set)
            lo, hi = rules.now - rules.before, rules.now + rules.after
        else:
            lo, hi = 1, 0  # nothing is surely fine: ask _timestamp_error for every record
        key_message = f"Compacted topic cannot accept message without key{rules.tp}" if compacted else ""
        base_timestamp, max_timestamp = rules.base_timestamp, rules.max_timestamp

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
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
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
            if pos >= n:  # the record's attributes byte (unused here)
                raise _Underflow
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
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                offset_delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                offset_delta, pos = _varint32(buf, pos)
            # key
            b = buf[pos]
            if b < 0x80:
                key_size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                key_size, pos = _varint32(buf, pos)
            if key_size >= 0:
                if pos + key_size > n:
                    raise _Underflow
                pos += key_size
            # value
            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                size = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                size, pos = _varint32(buf, pos)
            if size >= 0:
                if pos + size > n:
                    raise _Underflow
                pos += size
            # headers
            b = buf[pos]
            if b < 0x80:
                header_count = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                header_count, pos = _varint32(buf, pos)
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
                    pos += size
                    size, pos = _varint32(buf, pos)
                    if size >= 0:
                        if pos + size > n:
                            raise _Underflow
                        pos += size
            if pos - start != length:
                raise invalid(
                    f"Invalid record size: expected to read {length} bytes in record payload, "
                    f"but instead read {pos - start}"
                )
            if not check:
                continue
            if compacted and key_size < 0:
                errors.append((i, key_message, False))
                continue
            if not check_ts:
                continue
            timestamp = max_timestamp if log_append_batch else base_timestamp + timestamp_delta
            if timestamp == NO_TIMESTAMP:
                if create_time_topic and not log_append_batch:
                    continue  # no timestamp to check (librdkafka's default batches are like this)
            elif lo <= timestamp <= hi:
                continue
            assert rules is not None  # check_ts
            offset = rules.base_offset + offset_delta
            message = _timestamp_error(timestamp, offset, rules.batch_timestamp_type, rules, i)
            if message:
                errors.append((i, message, True))
    except (IndexError, _Underflow, _BadVarint) as exc:
        raise invalid("Found invalid record structure") from exc
    if pos != n:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", offset=batch_pos)
    return errors

"""A records section whose records all share one layout, checked in one regular-expression
pass: :func:`uniform_and_clean`.

A throughput test's producer sends records of one size: the same key size (or no key), the
same value size, no headers. Such a section can be checked without walking it record by
record in Python. Let the first record give the layout. Then one compiled pattern matches a
record of that layout: its length varint, any attributes byte, a timestamp delta and an
offset delta of one to three bytes each, that key and value size, and no header. The pattern
has one alternative per pair of delta widths, and each alternative carries the exact length
its widths make.

If the pattern's matches tile the whole section and there are as many as the batch
declares, Java's ``DefaultRecord.readFrom`` reads every record with those same fields and
finds no error. The deltas' widths also bound every timestamp within 2^20 ms of the base
timestamp, so the per-record timestamp checks need not run when that whole range is allowed.
A batch without timestamps (base -1) is taken when every delta is 0: no record then carries one.

Anything else (another layout anywhere, a header, keyless records on a compacted topic, a
timestamp range that needs checking record by record) makes :func:`uniform_and_clean`
answer False, and the walker (``walk.py``) reads the section and names the first error.

Before the pattern, a cheaper check takes the commonest case: every timestamp delta one
byte long and every offset delta its record's index (as producers write them). The records
then fall into at most three runs of one length each (offset deltas of one, two and three
bytes), and each fixed byte of a run's records is compared all at once, in a strided slice
(``buf[start:end:length]``): the same verdict as the pattern's on those records, at a
fraction of its cost (the pattern took a quarter of the broker's time under a bulk
producer). Whatever it does not take goes to the pattern.
"""

from __future__ import annotations

import re

from .layout import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP
from .rules import _RecordRules
from .varints import _BadVarint, _varint32, _varint64, _zigzag_varint

MIN_RECORDS = 32  # below this the walk is about as fast as building the layout's pattern
MAX_DELTA_BYTES = 3  # timestamp and offset deltas of up to 3 bytes: |delta| <= 2^20
TIMESTAMP_REACH = 1 << 20  # the largest |timestamp delta| a 3-byte zig-zag varlong holds
PROBE_BYTES = 16 * 1024  # a larger section's first bytes are tried alone first
_PATTERNS: dict[tuple[int | None, int | None, bool], re.Pattern[bytes]] = {}
_MAX_PATTERNS = 64  # distinct layouts kept compiled (a compile costs ~0.5 ms)


def _varint_of_width(width: int) -> bytes:
    """Any varint of exactly ``width`` bytes."""
    return rb"[\x80-\xff]" * (width - 1) + rb"[\x00-\x7f]"


def _length_prefix(size: int | None) -> bytes:
    """The varint that opens a key or value field of ``size`` bytes (None: null)."""
    return b"\x01" if size is None else _zigzag_varint(size)  # zig-zag -1: every producer's null


def _sized(size: int | None) -> tuple[bytes, int]:
    """(pattern, bytes) of a key or value field of ``size`` bytes (None: null)."""
    prefix = _length_prefix(size)
    if size is None:
        return re.escape(prefix), 1
    return re.escape(prefix) + b".{%d}" % size, len(prefix) + size


def _body_size(ts_width: int, offset_width: int, key_size: int | None, value_size: int | None) -> int:
    """A record's length: attributes, the two deltas, key, value, a header count of 0."""
    return 1 + ts_width + offset_width + _sized(key_size)[1] + _sized(value_size)[1] + 1


def _pattern(key_size: int | None, value_size: int | None, zero_timestamps: bool) -> re.Pattern[bytes]:
    """One record of the layout; with ``zero_timestamps``, only records whose timestamp
    delta is 0."""
    found = _PATTERNS.get((key_size, value_size, zero_timestamps))
    if found is None:
        key, _ = _sized(key_size)
        value, _ = _sized(value_size)
        alternatives = []
        for ts_width in (1,) if zero_timestamps else range(1, MAX_DELTA_BYTES + 1):
            for offset_width in range(1, MAX_DELTA_BYTES + 1):
                alternatives.append(
                    re.escape(_zigzag_varint(_body_size(ts_width, offset_width, key_size, value_size)))
                    + b"."
                    + (rb"\x00" if zero_timestamps else _varint_of_width(ts_width))
                    + _varint_of_width(offset_width)
                    + key
                    + value
                    + rb"\x00"
                )
        if len(_PATTERNS) >= _MAX_PATTERNS:
            _PATTERNS.clear()
        found = _PATTERNS[(key_size, value_size, zero_timestamps)] = re.compile(b"|".join(alternatives), re.DOTALL)
    return found


def _first_layout(buf: bytes, start: int = 0) -> tuple[int | None, int | None] | None:
    """(key size, value size) of the first record (at ``start``; None for null), or None when
    it has headers or anything the pattern does not cover."""
    try:
        _, pos = _varint32(buf, start)
        _, pos = _varint64(buf, pos + 1)  # past the attributes byte: the timestamp delta
        _, pos = _varint32(buf, pos)  # the offset delta
        key_size, pos = _varint32(buf, pos)
        if key_size >= 0:
            pos += key_size
        value_size, pos = _varint32(buf, pos)
        if value_size >= 0:
            pos += value_size
        header_count, pos = _varint32(buf, pos)
    except (IndexError, _BadVarint):
        return None
    if header_count != 0 or key_size < -1 or value_size < -1:
        return None
    return (None if key_size < 0 else key_size), (None if value_size < 0 else value_size)


def _timestamps_allowed(rules: _RecordRules | None) -> bool | None:
    """Which timestamp deltas keep every record within ``LogValidator``'s checks, so that no
    record's own timestamp needs reading: True for any delta the pattern allows (within
    ``TIMESTAMP_REACH`` of the base), False for zero deltas only, None for "walk it"."""
    if rules is None or rules.now is None:
        return True
    if rules.batch_timestamp_type == LOG_APPEND_TIME:
        return None  # a LogAppendTime batch from a producer: the walker decides per record
    if rules.message_timestamp_type != CREATE_TIME:
        return True  # a LogAppendTime topic checks no CreateTime timestamp
    base = rules.base_timestamp
    if base == NO_TIMESTAMP:
        return False  # records of no timestamp (-1 + 0) are not checked; others would be
    low, high = base - TIMESTAMP_REACH, base + TIMESTAMP_REACH
    if low <= NO_TIMESTAMP:
        return None  # a record could land on -1 (no timestamp), which is judged differently
    if rules.now - rules.before <= low and high <= rules.now + rules.after:
        return True
    return None


_CONTINUED = bytes(range(0x80, 0x100))  # a varint's bytes before its last
_OFFSET_DELTA_RUNS = ((1, 64), (2, 8192), (3, 1 << 20))  # (width, first index past it) of zig-zag i


def _fixed_width_runs(
    buf: bytes, start: int, stop: int, count: int, key_size: int | None, value_size: int | None, zero: bool
) -> bool:
    """Whether ``buf[start:stop]`` is exactly ``count`` records of the layout, each with a
    one-byte timestamp delta (0 with ``zero``) and an offset delta as wide as its index's, by
    strided comparisons (see the module's docstring); False says nothing about the records."""
    key_prefix, value_prefix = _length_prefix(key_size), _length_prefix(value_size)
    pos, first = start, 0
    for width, past in _OFFSET_DELTA_RUNS:
        n = min(count, past) - first
        if n <= 0:
            break
        body = _body_size(1, width, key_size, value_size)
        length = _zigzag_varint(body)
        size = len(length) + body
        end = pos + n * size
        if end > stop:
            return False
        at = pos
        for byte in length:  # the record's length: the same bytes in every record of the run
            if buf[at:end:size] != bytes((byte,)) * n:
                return False
            at += 1
        at += 1  # the attributes byte: any
        stamps = buf[at:end:size]
        if (stamps != bytes(n)) if zero else not stamps.isascii():  # one byte: below 0x80
            return False
        at += 1
        for _ in range(width - 1):  # the offset delta's leading bytes carry the continuation bit
            if buf[at:end:size].translate(None, _CONTINUED):
                return False
            at += 1
        if not buf[at:end:size].isascii():
            return False
        at += 1
        for prefix, field_size in ((key_prefix, key_size), (value_prefix, value_size)):
            for byte in prefix:
                if buf[at:end:size] != bytes((byte,)) * n:
                    return False
                at += 1
            at += field_size or 0
        if buf[at:end:size] != bytes(n):  # no header
            return False
        pos, first = end, first + n
    return first == count and pos == stop


def uniform_and_clean(
    buf: bytes,
    count: int,
    max_record_size: int | None,
    rules: _RecordRules | None,
    *,
    start: int = 0,
    stop: int | None = None,
    strided: bool = True,
    pattern: bool = True,
) -> bool:
    """True when ``buf[start:stop]`` (all of ``buf`` by default) holds exactly ``count`` records
    of one layout (see the module's docstring) that Kafka would accept as they are; False means
    "walk it". ``strided`` and ``pattern`` say which of the two checks to try: the strided one
    reads ``buf`` in place, the pattern a copy of the section when it is not the whole."""
    if count < MIN_RECORDS:
        return False
    stop = len(buf) if stop is None else stop
    layout = _first_layout(buf, start)
    if layout is None:
        return False
    key_size, value_size = layout
    if rules is not None and rules.compacted and key_size is None:
        return False  # keyless records on a compacted topic: the walker names each refused one
    any_delta = _timestamps_allowed(rules)
    if any_delta is None:
        return False
    if max_record_size is not None:  # a compressed batch's bound on each record's length
        if _body_size(MAX_DELTA_BYTES, MAX_DELTA_BYTES, key_size, value_size) > max_record_size:
            return False
    if (
        strided
        and isinstance(buf, (bytes, bytearray))
        and _fixed_width_runs(buf, start, stop, count, key_size, value_size, not any_delta)
    ):
        return True
    if not pattern:
        return False
    section = buf if start == 0 and stop == len(buf) else buf[start:stop]
    one_record = _pattern(key_size, value_size, not any_delta)
    if len(section) > 2 * PROBE_BYTES:
        # records of one layout leave at most the one cut at the probe's end unmatched; a section
        # of mixed layouts leaves far more, found here at a small part of a whole pass's cost
        left, _ = one_record.subn(b"", section[:PROBE_BYTES])
        if len(left) > 5 + _body_size(MAX_DELTA_BYTES, MAX_DELTA_BYTES, key_size, value_size):
            return False
    # one C pass: whether every byte lies inside a match, and how many matches
    left, matched = one_record.subn(b"", section)
    return matched == count and not left

"""Produce-time validation of a partition's records: :func:`validate_produce_records` (returns
the decoded entries) and :func:`check_produce_records` (the same verdict, building no records)."""

from __future__ import annotations

import functools
import struct

from construct import ConstructError

from .. import compression as _compression
from . import crc as _crc
from .batch import RecordBatch, _decode_compressed, _decode_v2, _DecompressedTooLarge
from .entries import BatchHeader, _decompress, _safe, iter_batch_headers, verify_crc
from .errors import (
    CorruptRecordsError,
    InvalidRecordError,
    InvalidTimestampError,
    LoopBudget,
    OverBudget,
    RecordsError,
    RecordTooLargeError,
    UnsupportedCompressionTypeError,
)
from .layout import (
    _BATCH_HEADER_FAST,
    _COMPRESSION_MASK,
    _CONTROL_MASK,
    ATTRIBUTES_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
)
from .legacy import LegacyMessage, _decode_legacy
from .rules import NO_LIMITS, ProduceLimits, _RecordRules
from .uniform import uniform_and_clean
from .walk import _timestamp_error, _walk_records

# what reading malformed records raises below the RecordsError checks: CORRUPT_MESSAGE
_MALFORMED = (IndexError, struct.error, ConstructError, OverflowError, UnicodeError)

# --------------------------------------------------------------------------------------------
# Produce-time validation
# --------------------------------------------------------------------------------------------


def validate_produce_records(
    data: bytes | bytearray | memoryview,
    limits: ProduceLimits = NO_LIMITS,
    *,
    produce_version: int | None = None,
    now: int | None = None,
    topic_partition: str = "",
) -> list[RecordBatch | LegacyMessage]:
    """Apply the checks Kafka makes on a produced partition's records, in Kafka's order.

    1. ``ProduceRequest.validateRecords`` (when ``produce_version`` >= 3): at least one
       batch, magic 2, no zstd before v7 (:class:`UnsupportedCompressionTypeError`), exactly
       one batch -- :class:`InvalidRecordError` otherwise.
    2. ``UnifiedLog.analyzeAndValidateRecords``: entry sizes and magic (walking), v2
       baseOffset 0, size <= ``limits.max_message_size`` (:class:`RecordTooLargeError`), CRC
       (:class:`CorruptRecordsError`).
    3. ``LogValidator.validateBatch``: one batch if v2 or compressed, same magic, v2 offset
       range vs record count, no control batches from clients, producer id needs a sequence.
    4. Records (decoding: malformed -> :class:`InvalidRecordError`) and ``validateRecord``:
       legacy inner CRCs (corrupt), compressed inner records, keys on ``limits.compacted``
       topics, and with ``now`` timestamps against ``message.timestamp.before/after.max.ms``
       (:class:`InvalidTimestampError`). Record-level errors are collected with their index
       in ``record_errors``. A compressed batch is never inflated past
       ``limits.max_decompressed_batch`` bytes (a decompression bomb is refused as Kafka
       refuses it, see ``batch._decode_compressed``); ``limits.max_record_size`` is the topic's
       ``max.decompressed.message.bytes`` (a compressed record above it: INVALID_RECORD).

    ``limits`` are the topic's settings (:class:`.rules.ProduceLimits`); ``topic_partition``
    names the partition in messages. Returns the decoded entries. A trailing partial entry is
    ignored, as Kafka does.
    """
    return _validate(data, True, limits, produce_version, now, topic_partition)[1]


def check_produce_records(
    data: bytes | bytearray | memoryview,
    limits: ProduceLimits = NO_LIMITS,
    *,
    produce_version: int | None = None,
    now: int | None = None,
    topic_partition: str = "",
) -> None:
    """What :func:`validate_produce_records` does, with the same errors in the same order, but
    without building records: v2 records are walked (:func:`.walk._walk_records`), not decoded.
    The broker's produce path uses this (as :func:`checked_produce_headers`); only legacy
    messages are still decoded."""
    checked_produce_headers(data, limits, produce_version=produce_version, now=now, topic_partition=topic_partition)


def checked_produce_headers(
    data: bytes | bytearray | memoryview,
    limits: ProduceLimits = NO_LIMITS,
    *,
    produce_version: int | None = None,
    now: int | None = None,
    topic_partition: str = "",
    budget: LoopBudget | None = None,
) -> list[BatchHeader]:
    """:func:`check_produce_records`, returning the headers of the entries it passed (a trailing
    partial entry left out), so that the append need not walk them again.

    With ``budget``, records that would cost more than it allows to check raise
    :class:`.errors.OverBudget` (no verdict) after at most ``budget.bytes`` of work: more
    bytes than that, or decompressing to more, or more records than ``budget.records`` not all
    of one layout."""
    blob = _safe(data)
    if budget is not None and len(blob) > budget.bytes:
        raise OverBudget(f"{len(blob)} bytes of records")
    # nearly every partition: one whole v2 batch that passes every batch-level check of
    # _validate (steps 1-3), so only its records are left to walk
    one = _one_clean_v2_batch(blob, produce_version, limits.max_message_size)
    if one is None:
        return _validate(blob, False, limits, produce_version, now, topic_partition, budget)[0]
    rules = _rules(limits, now, _in_partition(topic_partition), one)
    try:
        _raise_record_errors(_walk_v2(blob, one, limits, rules, budget), 0)
    except RecordsError:
        raise
    except _MALFORMED as exc:  # safety net
        raise CorruptRecordsError(f"Malformed records: {exc}") from exc
    return [one]


def _in_partition(topic_partition: str) -> str:
    """The tail Kafka's record-level messages name the partition with."""
    return f" in topic partition {topic_partition}" if topic_partition else ""


def _rules(limits: ProduceLimits, now: int | None, tp: str, header: BatchHeader) -> _RecordRules:
    """What is checked of each record of the batch with ``header``."""
    return _RecordRules(
        limits.compacted,
        now,
        limits.message_timestamp_type,
        limits.timestamp_before_max_ms,
        limits.timestamp_after_max_ms,
        tp,
        header.base_offset,
        header.base_timestamp,
        header.max_timestamp,
        header.timestamp_type,
    )


def _validate(
    data: bytes | bytearray | memoryview,
    decode: bool,
    limits: ProduceLimits,
    produce_version: int | None,
    now: int | None,
    topic_partition: str,
    budget: LoopBudget | None = None,
) -> tuple[list[BatchHeader], list[RecordBatch | LegacyMessage]]:
    """Steps 1-4 of :func:`validate_produce_records`: the headers of the entries passed, and
    with ``decode`` the decoded entries (else none)."""
    blob = _safe(data)
    tp = _in_partition(topic_partition)
    max_message_size = limits.max_message_size
    try:
        headers = [h for h in iter_batch_headers(blob) if not h.truncated]
        # 1. ProduceRequest.validateRecords
        if produce_version is not None and produce_version >= 3:
            v = produce_version
            if not headers:
                raise InvalidRecordError(
                    f"Produce requests with version {v} must have at least one record batch per partition"
                )
            first = headers[0]
            if first.magic != 2:
                raise InvalidRecordError(
                    f"Produce requests with version {v} are only allowed to contain record batches "
                    "with magic version 2",
                    offset=first.position,
                )
            if v < 7 and first.compression == _compression.ZSTD:
                raise UnsupportedCompressionTypeError(
                    f"Produce requests with version {v} are not allowed to use ZStandard compression",
                    offset=first.position,
                )
            if len(headers) > 1:
                raise InvalidRecordError(
                    f"Produce requests with version {v} are only allowed to contain exactly one "
                    "record batch per partition",
                    offset=headers[1].position,
                )
        if not headers:
            return [], []
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
        max_decompressed = limits.max_decompressed_batch
        entries: list[RecordBatch | LegacyMessage] = []
        for h in headers:
            if h.magic == 2 and not decode:
                _raise_record_errors(_walk_v2(blob, h, limits, _rules(limits, now, tp, h), budget), h.position)
            elif h.magic == 2:
                batch = _decode_v2(
                    blob, h, check_crc=False, max_record_size=limits.max_record_size, max_decompressed=max_decompressed
                )
                entries.append(batch)
                _validate_v2_records(batch, h, _rules(limits, now, tp, h))
            else:
                # Outer CRC already checked; this also checks inner CRCs, which Kafka reports
                # as CORRUPT_MESSAGE ("verify the record-level CRC ... of the deep entries").
                message = _decode_legacy(blob, h, check_crc=True, max_decompressed=max_decompressed)
                if decode:
                    entries.append(message)
                _validate_legacy_records(message, h, _rules(limits, now, tp, h))
        return headers, entries
    except RecordsError:
        raise
    except _MALFORMED as exc:  # safety net
        raise CorruptRecordsError(f"Malformed records: {exc}") from exc


def _one_clean_v2_batch(blob: bytes, produce_version: int | None, max_message_size: int | None) -> BatchHeader | None:
    """The header of ``blob`` when it is exactly one whole v2 batch that passes every
    batch-level check of :func:`_validate` (steps 1-3), as nearly every produced partition is;
    None for anything else, which the general path then judges (and names the first error)."""
    n = len(blob)
    if n < RECORD_BATCH_OVERHEAD or blob[MAGIC_OFFSET] != 2:
        return None
    fields = _BATCH_HEADER_FAST.unpack_from(blob, 0)
    # base_offset, batch_length, leader epoch, magic, crc, attributes, last_offset_delta,
    # base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, records_count
    base_offset, batch_length, _, _, crc, attributes, last_delta, _, _, producer_id, _, sequence, count = fields
    if base_offset != 0 or batch_length + LOG_OVERHEAD != n:
        return None
    if produce_version is not None and produce_version < 7 and attributes & _COMPRESSION_MASK == _compression.ZSTD:
        return None
    if max_message_size is not None and n > max_message_size:
        return None
    if last_delta + 1 <= 0 or count <= 0 or last_delta + 1 != count or attributes & _CONTROL_MASK:
        return None
    if producer_id >= 0 and sequence < 0:
        return None
    if crc != _crc.crc32c(memoryview(blob)[ATTRIBUTES_OFFSET:]):
        return None
    return BatchHeader(0, *fields)


def _walk_v2(
    blob: bytes, header: BatchHeader, limits: ProduceLimits, rules: _RecordRules, budget: LoopBudget | None = None
) -> list[tuple[int, str, bool]]:
    """:func:`.batch._decode_v2` without building records: the record-level errors (or
    :class:`.errors.OverBudget`, see :func:`checked_produce_headers`)."""
    max_record_size, max_decompressed = limits.max_record_size, limits.max_decompressed_batch
    count = header.records_count
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch", offset=header.position)
    if not count:  # like DefaultRecordBatch.iterator(): a count of 0 reads nothing
        return []
    start, codec = header.position + RECORD_BATCH_OVERHEAD, header.attributes & _COMPRESSION_MASK
    if not codec and uniform_and_clean(blob, count, None, rules, start=start, stop=header.end, pattern=False):
        return []  # a producer's usual records, checked where they lie: no copy of the section
    payload = blob[start : header.end]
    max_walk = budget.records if budget is not None else None
    if codec and budget is not None and max_decompressed > budget.bytes:
        try:  # what fits in the budget decompresses whole, as in _decode_compressed's first try
            raw = _decompress(codec, payload, header.position, 2, max_size=budget.bytes)
        except _DecompressedTooLarge:
            raise OverBudget(f"records decompressing to more than {budget.bytes} bytes") from None
        return _walk_records(raw, count, header.position, max_record_size, rules, max_walk)
    if codec:
        walk = functools.partial(_walk_records, rules=rules, max_walk=max_walk)
        return _decode_compressed(codec, payload, count, header.position, max_record_size, max_decompressed, walk)
    return _walk_records(payload, count, header.position, rules=rules, max_walk=max_walk, strided=False)


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


def _validate_v2_records(batch: RecordBatch, header: BatchHeader, rules: _RecordRules) -> None:
    errors: list[tuple[int, str, bool]] = []
    for index, record in enumerate(batch.records):
        if rules.compacted and record.key is None:
            errors.append((index, f"Compacted topic cannot accept message without key{rules.tp}", False))
            continue
        timestamp, offset = batch.timestamp_of(record), batch.offset_of(record)
        message = _timestamp_error(timestamp, offset, batch.timestamp_type, rules, index)
        if message:
            errors.append((index, message, True))
    _raise_record_errors(errors, header.position)


def _validate_legacy_records(message: LegacyMessage, header: BatchHeader, rules: _RecordRules) -> None:
    errors: list[tuple[int, str, bool]] = []
    tp = rules.tp
    for index, inner in enumerate(message.messages):
        if inner.magic != message.magic:
            errors.append((index, f"Record's magic does not match outer magic {message.magic}{tp}", False))
            continue
        if rules.compacted and inner.key is None:
            errors.append((index, f"Compacted topic cannot accept message without key{tp}", False))
            continue
        timestamp = NO_TIMESTAMP if inner.timestamp is None else inner.timestamp
        error = _timestamp_error(timestamp, inner.offset, message.timestamp_type, rules, index)
        if error:
            errors.append((index, error, True))
    _raise_record_errors(errors, header.position)

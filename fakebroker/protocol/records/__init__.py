"""Kafka record formats: RecordBatch (magic v2) and the legacy MessageSet (magic v0/v1).

The ``records`` field of Produce and Fetch is a plain concatenation of *entries* (v2 batches
or legacy messages) with no count in front; every entry starts with int64 offset, int32 length
and has its magic byte at byte 16. See ``shared/kafka-protocol/README.md`` ("Record batches")
for the byte layouts; this package follows Kafka's Java classes ``DefaultRecordBatch``,
``DefaultRecord``, ``LegacyRecord``, ``ByteBufferLogInputStream`` and ``LogValidator``.

What the broker uses, by cost:

* :func:`iter_batch_headers` walks a blob reading headers only (no decompression, no
  record parsing): produce-time shape checks, fetch-time slicing.
* :func:`verify_crc` and the in-place rewrites (:func:`set_base_offset`,
  :func:`set_last_offset`, :func:`set_partition_leader_epoch`, :func:`set_max_timestamp`,
  :func:`set_log_append_time`) touch only header bytes, so a stored batch is never re-encoded.
* :func:`read_batches` decodes everything (decompressing) and :func:`validate_produce_records`
  applies Kafka's produce-time checks in Kafka's order against a topic's :class:`ProduceLimits`;
  :func:`check_produce_records`, what the broker runs, gives the same verdict without building
  records.
* :func:`build_batch`, :func:`build_control_batch` and :func:`build_message_set` encode.

Errors: decoding functions raise only :class:`RecordsError` subclasses (never IndexError,
struct.error or construct errors), each carrying the Kafka error code it maps to and the byte
position (``.offset``) in the blob of the entry at fault.

Fixed layouts are ``construct`` schemas (:data:`BATCH_HEADER`, :data:`LEGACY_HEADER`,
:data:`LEGACY_BODY`, :data:`CONTROL_RECORD_KEY`, :data:`END_TXN_MARKER`); field offsets and
the fast header parser are *derived* from them, so the schemas are the only definition.
Records inside a v2 batch use zig-zag varints and are decoded by hand (see
:func:`.record._decode_records` for why).

Modules (everything public is re-exported here; callers use ``records.X``):

* ``layout``: the construct schemas, derived offsets/sizes, constants and attribute masks.
* ``errors``: the :class:`RecordsError` hierarchy.
* ``varints``: zig-zag varint helpers.
* ``record``: :class:`Record` and the records section of a v2 batch (decode/encode).
* ``control``: :class:`ControlRecordType`, :class:`ControlRecord`, :func:`parse_control_record`.
* ``entries``: :class:`BatchHeader`, :func:`iter_batch_headers`, :func:`verify_crc`.
* ``legacy``: :class:`LegacyMessage`, legacy decoding, :func:`build_message_set`.
* ``batch``: :class:`RecordBatch`, :func:`read_batches`, :func:`build_batch`,
  :func:`build_control_batch`.
* ``rewrite``: the in-place ``set_*`` functions.
* ``rules``: what produce validation checks records against: a topic's :class:`ProduceLimits`,
  and per record of one batch :class:`_RecordRules`.
* ``uniform``: a records section of one layout checked in one regular-expression pass.
* ``walk``: walking a v2 records section without building records (produce validation).
* ``validation``: :func:`validate_produce_records`, :func:`check_produce_records`.

Each module imports only modules listed above it (no cycles); this package imports nothing
from trio or the server.
"""

from __future__ import annotations

from .batch import RecordBatch, build_batch, build_control_batch, read_batches
from .control import ControlRecord, ControlRecordType, parse_control_record
from .entries import BatchHeader, iter_batch_headers, verify_crc
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

# Not in __all__, but reachable as ``records.X`` as they were before the split (tests use them).
from .layout import (  # noqa: F401
    _BATCH_HEADER_FAST,
    _LEGACY_HEADER_FAST,
    ATTRIBUTES_OFFSET,
    BATCH_HEADER,
    CONTROL_RECORD_KEY,
    CRC_OFFSET,
    CREATE_TIME,
    END_TXN_MARKER,
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_ATTRIBUTES_OFFSET,
    LEGACY_BODY,
    LEGACY_CRC_OFFSET,
    LEGACY_HEADER,
    LEGACY_HEADER_SIZE,
    LEGACY_PREFIX,
    LEGACY_RECORD_OVERHEAD_V0,
    LEGACY_RECORD_OVERHEAD_V1,
    LEGACY_TIMESTAMP_OFFSET,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
)
from .legacy import (
    LegacyInput,
    LegacyMessage,
    _encode_legacy,  # noqa: F401
    build_message_set,
)
from .record import Header, Record, RecordInput
from .rewrite import (
    set_base_offset,
    set_last_offset,
    set_log_append_time,
    set_max_timestamp,
    set_partition_leader_epoch,
)
from .rules import MAX_DECOMPRESSED_BATCH_BYTES, NO_LIMITS, ProduceLimits
from .validation import check_produce_records, checked_produce_headers, validate_produce_records

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
    "OverBudget",
    "LoopBudget",
    # reading
    "iter_batch_headers",
    "read_batches",
    "verify_crc",
    "parse_control_record",
    "validate_produce_records",
    "check_produce_records",
    "checked_produce_headers",
    "ProduceLimits",
    "NO_LIMITS",
    "MAX_DECOMPRESSED_BATCH_BYTES",
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

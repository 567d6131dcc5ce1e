"""Appending a produced batch: Kafka's validation, the idempotent producer's sequence checks
and the write to the partition's log, in the order Kafka runs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ...protocol import records as rec
from ...protocol.error_codes import ErrorCode
from ...protocol.records import ProduceLimits
from .. import events as ev
from ..configs import TopicConfig
from ..events import EventLog
from ..topics import Partition

# records exception -> the error Kafka answers with (first match wins)
_RECORD_ERRORS = [
    (rec.UnsupportedCompressionTypeError, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
    (rec.RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
    (rec.InvalidTimestampError, ErrorCode.INVALID_TIMESTAMP),
    (rec.InvalidRecordError, ErrorCode.INVALID_RECORD),
    (rec.CorruptRecordsError, ErrorCode.CORRUPT_MESSAGE),
    (rec.RecordsError, ErrorCode.CORRUPT_MESSAGE),
]


class AppendResult(NamedTuple):  # a tuple: made on every Produce, and a frozen dataclass costs ~1 us
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: tuple[tuple[int, str | None], ...] = ()
    duplicate: bool = False  # a retry of a batch already stored, acknowledged with its first offset

    @property
    def appended(self) -> bool:
        """Whether new records landed (a duplicate is acknowledged without landing)."""
        return not self.error and not self.duplicate and self.base_offset >= 0


# (producer id, epoch) of a transaction's first batch in a partition -> the coordinator's verdict
TxnVerifier = Callable[[int, int], ErrorCode]
NOT_ADDED = "Partition was not added to the transaction"  # Kafka's message with INVALID_TXN_STATE


# What validating one partition's records may cost on the broker's event loop: a few ms at
# most (1 MiB decompressed, or 2,048 records not of one layout, walked in Python). Records that
# need more (a compressed batch of millions of tiny records is within every limit) are checked
# on a worker thread instead (``check_batches``), so nobody else waits for them.
LOOP_BUDGET = rec.LoopBudget(bytes=1024 * 1024, records=2048)
Checked = list[rec.BatchHeader] | rec.RecordsError  # check_batches' verdict


def produce_limits(config: TopicConfig) -> ProduceLimits:
    """The topic settings produce validation and every append read, as one immutable value,
    derived once per change of any setting."""
    return config.derived("produce", _limits_of)


def _limits_of(config: TopicConfig) -> ProduceLimits:
    log_append_time = config.get("message.timestamp.type") == "LogAppendTime"
    return ProduceLimits(
        compacted="compact" in config.get("cleanup.policy"),
        max_message_size=config.get_int("max.message.bytes"),
        message_timestamp_type=rec.LOG_APPEND_TIME if log_append_time else rec.CREATE_TIME,
        # record timestamps against message.timestamp.before/after.max.ms (Kafka 4: 1 h ahead at most)
        timestamp_before_max_ms=config.get_int("message.timestamp.before.max.ms"),
        timestamp_after_max_ms=config.get_int("message.timestamp.after.max.ms"),
        # Kafka's per-record bound on a compressed batch's records (INVALID_RECORD above it)
        max_record_size=config.get_int("max.decompressed.message.bytes"),
    )


def check_batches(
    partition: Partition,
    limits: ProduceLimits,
    data: bytes | None,
    *,
    produce_version: int,
    now_ms: int,
    budget: rec.LoopBudget | None = None,
) -> Checked:
    """Kafka's produce-time validation of ``data`` for ``partition`` under ``limits``: the
    headers of the batches to append, or the error. Pure and reads nothing that changes, so it
    may run on any thread; with ``budget``, raises :class:`~...protocol.records.OverBudget`
    instead of doing more work than it allows."""
    try:
        return rec.checked_produce_headers(  # validate_produce_records' verdict, building no records
            data or b"",
            limits,
            produce_version=produce_version,
            now=now_ms,
            topic_partition=f"{partition.topic}-{partition.index}",
            budget=budget,
        )
    except rec.RecordsError as exc:
        return exc


def append_batches(
    events: EventLog,
    partition: Partition,
    config: TopicConfig,
    data: bytes | None,
    *,
    produce_version: int,
    transactional_id: str | None,
    now_ms: int,
    verify_txn: TxnVerifier | None = None,
    checked: Checked | None = None,
) -> AppendResult:
    """Validate ``data`` (one or more batches) for ``partition`` of a topic with ``config`` and append it.

    Validation runs here within :data:`LOOP_BUDGET` (beyond it
    :class:`~...protocol.records.OverBudget` is raised, and the caller passes ``checked``, the
    verdict of :func:`check_batches` run elsewhere, on a second call).

    A transaction's first batch in the partition is checked with its coordinator first
    (``verify_txn``, KIP-890), so a zombie or a producer that never added the partition
    cannot leave an open transaction behind."""
    topic, index = partition.topic, partition.index
    limits = produce_limits(config)
    log_append_time = limits.log_append_time
    if checked is None:
        checked = check_batches(
            partition, limits, data, produce_version=produce_version, now_ms=now_ms, budget=LOOP_BUDGET
        )
    if isinstance(checked, rec.RecordsError):
        exc = checked
        code = next(code for kind, code in _RECORD_ERRORS if isinstance(exc, kind))
        record_errors = tuple(getattr(exc, "record_errors", None) or ())
        if not record_errors and exc.record_index is not None:
            record_errors = ((exc.record_index, str(exc)),)
        events.append(ev.ProduceRejected(topic=topic, partition=index, error=code.name, reason=str(exc)), now_ms)
        # What ReplicaManager.appendToLocalLog answers: a record-level rejection (RecordValidationException)
        # carries its message and the log start offset; a corrupt or too large batch, or one that
        # ProduceRequest.validateRecords refused before the append, neither; any other failure
        # inside the append the log start offset without a message.
        if getattr(exc, "record_errors", None):
            return AppendResult(
                code, str(exc), record_errors=record_errors, log_start_offset=partition.log.log_start_offset
            )
        if isinstance(exc, (rec.RecordTooLargeError, rec.CorruptRecordsError)) or _before_append(exc):
            return AppendResult(code, None, record_errors=record_errors)
        return AppendResult(code, None, record_errors=record_errors, log_start_offset=partition.log.log_start_offset)
    payload = data or b""
    log = partition.log
    base_offset = append_time = -1
    for header in checked:
        if header.has_producer_id:
            if transactional_id is None and header.is_transactional:
                return AppendResult(ErrorCode.INVALID_RECORD, "Transactional records need a transactional id")
            error = _verify_transaction(partition, header, verify_txn)
            if error:
                reason = f"transactional check of producer {header.producer_id} epoch {header.producer_epoch}"
                events.append(ev.ProduceRejected(topic=topic, partition=index, error=error.name, reason=reason), now_ms)
                message = NOT_ADDED if error == ErrorCode.INVALID_TXN_STATE else None
                return AppendResult(error, message)
            check = partition.producers.check(
                header.producer_id, header.producer_epoch, header.base_sequence, header.last_offset_delta
            )
            if check.duplicate_of is not None:
                return AppendResult(
                    duplicate=True,
                    base_offset=check.duplicate_of.base_offset,
                    log_append_time_ms=check.duplicate_of.log_append_time,
                    log_start_offset=log.log_start_offset,
                )
            if check.error:
                # found while appending, so the answer carries the log start offset, as Kafka's does
                return AppendResult(check.error, log_start_offset=log.log_start_offset)
            if not header.is_transactional and header.producer_id in log.open_txns:
                # ProducerAppendInfo: a plain batch from a producer whose transaction is open here
                return AppendResult(ErrorCode.INVALID_TXN_STATE, log_start_offset=log.log_start_offset)
        offset, append_time = log.append(
            payload[header.position : header.end],
            header,
            leader_epoch=partition.leader_epoch,
            now_ms=now_ms,
            log_append_time=log_append_time,
        )
        if header.has_producer_id:
            partition.producers.record(
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                header.last_offset_delta,
                offset,
                append_time,
                header.max_timestamp,
            )
        if base_offset < 0:
            base_offset = offset
    return AppendResult(base_offset=base_offset, log_append_time_ms=append_time, log_start_offset=log.log_start_offset)


def _before_append(exc: rec.RecordsError) -> bool:
    """Whether ProduceRequest.validateRecords (KafkaApis, before the append) raised ``exc``: its
    messages are the ones that open with the request's version."""
    return str(exc).startswith("Produce requests with version")


def _verify_transaction(partition: Partition, header: rec.BatchHeader, verify_txn: TxnVerifier | None) -> ErrorCode:
    """UnifiedLog.maybeStartTransactionVerification: a transaction's first batch in the
    partition is checked with its coordinator (an older epoch is refused here already)."""
    pid = header.producer_id
    open_txn = pid in partition.log.open_txns
    if not header.is_transactional:
        return ErrorCode.NONE
    stored = partition.producers.entries.get(pid)
    if stored is not None and stored.epoch > header.producer_epoch:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if open_txn and stored is not None and stored.epoch == header.producer_epoch:
        return ErrorCode.NONE  # the transaction already wrote here: no need to ask its coordinator
    return verify_txn(pid, header.producer_epoch) if verify_txn is not None else ErrorCode.NONE

"""Produce (key 0): validate each partition's batch, check producer sequences, append."""

from __future__ import annotations

from ..protocol import records as rec
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .common import current_leader, led_partition, node_endpoints, topic_name_by_id
from .context import NO_RESPONSE, CloseInstead, RequestContext

# records.py exception -> the error Kafka answers with
_RECORD_ERRORS = [
    (rec.UnsupportedCompressionTypeError, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
    (rec.RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
    (rec.InvalidTimestampError, ErrorCode.INVALID_TIMESTAMP),
    (rec.InvalidRecordError, ErrorCode.INVALID_RECORD),
    (rec.CorruptRecordsError, ErrorCode.CORRUPT_MESSAGE),
    (rec.RecordsError, ErrorCode.CORRUPT_MESSAGE),
]


def handle(ctx: RequestContext, request: Message):
    v = ctx.api_version
    responses = []
    leaders: set[int] = set()
    for topic_data in request.topic_data:
        name = topic_data.name if v < 13 else topic_name_by_id(ctx.cluster, topic_data.topic_id)
        parts = []
        for pdata in topic_data.partition_data:
            result = _append(ctx, request, name, pdata.index, pdata.records)
            if result["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER and result["current_leader"]["leader_id"] >= 0:
                leaders.add(result["current_leader"]["leader_id"])
            parts.append(result)
        topic = {"partition_responses": parts}
        topic.update({"name": topic_data.name} if v < 13 else {"topic_id": topic_data.topic_id})
        responses.append(topic)
    if request.acks == 0:
        failed = [(t["name"] if v < 13 else t["topic_id"], r["index"], r["error_code"])
                  for t in responses for r in t["partition_responses"] if r["error_code"]]
        if failed:
            return CloseInstead(f"acks=0 produce failed: {failed[:3]}")
        return NO_RESPONSE
    return ctx.response(responses=responses, throttle_time_ms=0, node_endpoints=node_endpoints(ctx.cluster, leaders))


def _append(ctx: RequestContext, request: Message, topic: str | None, index: int, data: bytes | None) -> dict:
    def answer(error: ErrorCode, message: str | None = None, **extra) -> dict:
        return {"index": index, "error_code": error, "base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1,
                "error_message": message, "current_leader": {"leader_id": -1, "leader_epoch": -1}, **extra}

    if topic is None:
        return answer(ErrorCode.UNKNOWN_TOPIC_ID if ctx.api_version >= 13 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    partition, error = led_partition(ctx, topic, index)
    if error:
        return answer(error, current_leader=current_leader(partition) if error == ErrorCode.NOT_LEADER_OR_FOLLOWER else current_leader(None))
    if ctx.api_version < 3:
        # 4.x advertises Produce from v0 for old librdkafka but refuses v0-2 (KAFKA-18659).
        return answer(ErrorCode.UNSUPPORTED_VERSION)
    if request.acks not in (-1, 0, 1):
        return answer(ErrorCode.INVALID_REQUIRED_ACKS)
    config = ctx.cluster.topics[topic].config
    log_append_time = config.get("message.timestamp.type") == "LogAppendTime"
    try:
        rec.validate_produce_records(
            data or b"", produce_version=ctx.api_version, compacted="compact" in config.get("cleanup.policy"),
            max_message_size=config.get_int("max.message.bytes"), topic_partition=f"{topic}-{index}",
        )
    except rec.RecordsError as exc:
        code = next(code for kind, code in _RECORD_ERRORS if isinstance(exc, kind))
        record_errors = [{"batch_index": i, "batch_index_error_message": m} for i, m in getattr(exc, "record_errors", None) or []]
        if not record_errors and exc.record_index is not None:
            record_errors = [{"batch_index": exc.record_index, "batch_index_error_message": str(exc)}]
        ctx.note("produce_rejected", topic=topic, partition=index, error=code.name, reason=str(exc))
        return answer(code, str(exc), record_errors=record_errors)
    headers = [h for h in rec.iter_batch_headers(data or b"") if not h.truncated]
    log = partition.log
    base_offset = append_time = -1
    for header in headers:
        batch = data[header.position:header.end]
        if header.has_producer_id:
            if request.transactional_id is None and header.is_transactional:
                return answer(ErrorCode.INVALID_RECORD, "Transactional records need a transactional id")
            check = partition.producers.check(header.producer_id, header.producer_epoch, header.base_sequence,
                                              header.last_offset_delta, state_may_be_lost=log.log_start_offset > 0)
            if check.duplicate_of is not None:
                return answer(ErrorCode.NONE, base_offset=check.duplicate_of.base_offset,
                              log_append_time_ms=check.duplicate_of.log_append_time, log_start_offset=log.log_start_offset)
            if check.error:
                return answer(check.error)
        offset, append_time = log.append(batch, header, leader_epoch=partition.leader_epoch, now_ms=ctx.now_ms,
                                         log_append_time=log_append_time)
        if header.has_producer_id:
            partition.producers.record(header.producer_id, header.producer_epoch, header.base_sequence,
                                       header.last_offset_delta, offset, append_time)
        if base_offset < 0:
            base_offset = offset
    return answer(ErrorCode.NONE, base_offset=base_offset, log_append_time_ms=append_time,
                  log_start_offset=log.log_start_offset)

"""Produce (key 0): leadership and request checks here; validation, sequences and the append
are the core's (``ClusterState.append``). With an authorizer, KafkaApis' checks come first:
transactional batches need WRITE on the transactional id (else every partition
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), each topic WRITE, before its existence (else
TOPIC_AUTHORIZATION_FAILED on its partitions); an acks=0 request refused closes the connection."""

from __future__ import annotations

import io

from ..core.log.appends import Checked
from ..core.quotas import PRODUCER_BYTE_RATE
from ..core.security.acls import Operation, ResourceType
from ..protocol import records as rec
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message, response_type
from ..protocol.produce_peek import partition_entries
from ..protocol.records.layout import ATTRIBUTES_OFFSET, MAGIC_OFFSET
from .authz_topics import TopicCheck
from .common import current_leader, led_partition, node_endpoints, topic_name_by_id
from .context import NO_RESPONSE, STEP, CloseInstead, Job, RequestContext, in_steps
from .registry import api

_TRANSACTIONAL_BIT = 0x10  # of a v2 batch's attributes (their low byte)


def _struct_of(cls: type[Message], field: str) -> type[Message]:
    """The class of a struct field's elements (these are structs in every version)."""
    struct = cls._by_attr[field].struct
    assert struct is not None
    return struct


# the answer's classes: ProduceResponse, TopicProduceResponse, PartitionProduceResponse, LeaderIdAndEpoch
_RESPONSE = response_type(ApiKey.PRODUCE).cls
_TOPIC = _struct_of(_RESPONSE, "responses")
_PARTITION = _struct_of(_TOPIC, "partition_responses")
_LEADER = _struct_of(_PARTITION, "current_leader")
# A Produce up to this large with at most this many partition entries is large for its
# records alone. It is decoded on the loop: about 0.45 ms for the entries and 0.3 ms to copy
# 4 MB of records, less than the hand-off costs a client (librdkafka's 1 MB requests, embedded:
# about 10% of its produce rate). Counting stops at the bound: at most 0.5 ms for one with more.
ON_LOOP_BYTES = 4 * 1024 * 1024
ON_LOOP_ENTRIES = 1000


def handle(ctx: RequestContext, request: Message):
    size = sum(len(t.partition_data) for t in request.topic_data)
    return in_steps(_handle(ctx, request), size)


def _handle(ctx: RequestContext, request: Message):
    """Yields after every ``STEP`` partitions (the server lets other connections run)."""
    v = ctx.api_version
    done = 0
    responses = []
    leaders: set[int] = set()
    # With an authorizer (asked once per request: nothing more to pay without one), WRITE on
    # each topic, checked before the topic's existence as KafkaApis does (an unknown topic id
    # is answered before, having no name to check)
    may_write = TopicCheck(ctx, Operation.WRITE) if ctx.cluster.authorizer.enabled else None
    # Request-wide refusals, before any partition: transactional batches without a transactional
    # id or without WRITE on it (KafkaApis' first check), or of more than one producer
    producers: set[tuple[int, int]] = set()
    yield from _transactional_producers(request, producers)
    refused = ErrorCode.NONE
    if producers and (
        request.transactional_id is None
        or (
            may_write is not None
            and not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
        )
    ):
        refused = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif len(producers) > 1:
        refused = ErrorCode.INVALID_PRODUCER_ID_MAPPING
    for topic_data in request.topic_data:
        name = topic_data.name if v < 13 else topic_name_by_id(ctx.cluster, topic_data.topic_id)
        denied = may_write is not None and name is not None and not may_write(name)
        parts = []
        for pdata in topic_data.partition_data:
            done += 1
            if done % STEP == 0:
                yield
            if refused:
                parts.append(_error(pdata.index, refused))
                continue
            if denied:
                parts.append(_error(pdata.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            try:
                result = _append(ctx, request, name, pdata.index, pdata.records)
            except rec.OverBudget:  # too costly to check on the loop: on a worker thread, then again
                checked = yield _check(ctx, name, pdata.index, pdata.records)
                result = _append(ctx, request, name, pdata.index, pdata.records, checked)
            if result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and result.current_leader.leader_id >= 0:
                leaders.add(result.current_leader.leader_id)
            parts.append(result)
        if v < 13:
            responses.append(_TOPIC(name=topic_data.name, partition_responses=parts))
        else:
            responses.append(_TOPIC(topic_id=topic_data.topic_id, partition_responses=parts))
    if request.acks == 0:
        failed = [
            (t.name if v < 13 else t.topic_id, r.index, r.error_code)
            for t in responses
            for r in t.partition_responses
            if r.error_code
        ]
        if failed:
            return CloseInstead(f"acks=0 produce failed: {failed[:3]}")
        return NO_RESPONSE
    return _RESPONSE(
        responses=responses, throttle_time_ms=0, node_endpoints=node_endpoints(ctx.cluster, leaders, ctx.listener)
    )


def _transactional_producers(request: Message, found: set[tuple[int, int]]):
    """Adds (producer id, epoch) of every transactional batch in the request to ``found``,
    yielding after every ``STEP`` partitions."""
    seen = 0
    for topic_data in request.topic_data:
        for pdata in topic_data.partition_data:
            seen += 1
            if seen % STEP == 0:
                yield
            data = pdata.records or b""
            if _plain_v2_batch(data):
                continue  # one whole batch, not transactional: nothing to read (nearly every partition)
            try:
                headers = list(rec.iter_batch_headers(data))
            except rec.RecordsError:
                continue  # validation answers it per partition
            found.update((h.producer_id, h.producer_epoch) for h in headers if h.is_transactional)


def _plain_v2_batch(data: bytes) -> bool:
    """Whether ``data`` is exactly one whole v2 batch without the transactional bit."""
    n = len(data)
    return (
        n >= rec.RECORD_BATCH_OVERHEAD
        and data[MAGIC_OFFSET] == 2
        and int.from_bytes(data[8:12], "big", signed=True) + rec.LOG_OVERHEAD == n
        and not data[ATTRIBUTES_OFFSET + 1] & _TRANSACTIONAL_BIT
    )


def _error(index: int, error: ErrorCode, message: str | None = None, **extra) -> Message:
    """One partition's answer, typed at once (dicts cost a coercion per level when the
    response is built)."""
    values = {
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "error_message": message,
        **extra,
    }
    if "current_leader" not in values:
        values["current_leader"] = _LEADER(leader_id=-1, leader_epoch=-1)
    return _PARTITION(index=index, error_code=error, **values)


def _check(ctx: RequestContext, topic: str | None, index: int, data: bytes | None) -> Job:
    """The job that validates records :func:`_append` found too costly to check on the loop."""
    assert topic is not None  # OverBudget comes from the append, after every other check
    partition = ctx.cluster.topics[topic].partitions[index]
    return ctx.cluster.produce_check(partition, data, produce_version=ctx.api_version, now_ms=ctx.now_ms)


def _append(
    ctx: RequestContext,
    request: Message,
    topic: str | None,
    index: int,
    data: bytes | None,
    checked: Checked | None = None,
) -> Message:
    """One partition's answer. Its checks run again after a job (``checked`` set): while the
    records were checked elsewhere the topic may have gone or its leader moved."""
    if topic is None:
        unknown = ErrorCode.UNKNOWN_TOPIC_ID if ctx.api_version >= 13 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return _error(index, unknown)
    partition, error = led_partition(ctx, topic, index)
    if error:
        leader = partition if error == ErrorCode.NOT_LEADER_OR_FOLLOWER else None
        return _error(index, error, current_leader=current_leader(leader))
    assert partition is not None  # led_partition: no error, so a partition
    if ctx.api_version < 3:
        # 4.x advertises Produce from v0 for old librdkafka but refuses v0-2 (KAFKA-18659).
        return _error(index, ErrorCode.UNSUPPORTED_VERSION)
    if request.acks not in (-1, 0, 1):
        return _error(index, ErrorCode.INVALID_REQUIRED_ACKS)
    if ctx.cluster.topics[topic].internal:
        # ReplicaManager.appendToLocalLog: clients may not append to an internal topic
        return _error(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    result = ctx.cluster.append(
        partition,
        data,
        produce_version=ctx.api_version,
        transactional_id=request.transactional_id,
        now_ms=ctx.now_ms,
        checked=checked,
    )
    if result.appended:
        ctx.data_changed(topic, index)  # wakes only the fetches parked on this partition
    if result.error:
        return _error(
            index,
            result.error,
            result.message,
            record_errors=[{"batch_index": i, "batch_index_error_message": m} for i, m in result.record_errors],
            log_start_offset=result.log_start_offset,
        )
    return _PARTITION(  # typed directly: the answer nearly every partition gets
        index=index,
        error_code=ErrorCode.NONE,
        base_offset=result.base_offset,
        log_append_time_ms=result.log_append_time_ms,
        log_start_offset=result.log_start_offset,
        error_message=None,
        current_leader=_LEADER(leader_id=-1, leader_epoch=-1),
    )


def _unacknowledged(request: Message) -> bool:
    """acks=0: the client reads no answer, so none is sent (a failed one closes the connection)."""
    return request.acks == 0


def _cheap_to_decode(stream: io.BytesIO, version: int, size: int) -> bool:
    """Whether a large Produce has few partitions: large for its records alone."""
    return size <= ON_LOOP_BYTES and partition_entries(stream, version, ON_LOOP_ENTRIES) <= ON_LOOP_ENTRIES


# advertised from v0 as 4.x does for old librdkafka; v0-2 are refused per partition
API = api(
    ApiKey.PRODUCE,
    (0, 13),
    handle,
    unanswered=_unacknowledged,
    decode_on_loop=_cheap_to_decode,
    byte_quota=PRODUCER_BYTE_RATE,
)

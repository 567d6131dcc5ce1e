"""Fetch (key 1): slices of stored batches, long-polling until ``min_bytes`` or ``max_wait_ms``.

Fetch sessions (KIP-227) are declined: every answer carries session id 0, which tells the
client to keep sending full fetch requests; an incremental request naming a session gets
FETCH_SESSION_ID_NOT_FOUND, as from a broker that evicted it.

With an authorizer, a consumer needs READ on each topic, checked before its existence (else
TOPIC_AUTHORIZATION_FAILED on its partitions), a follower (replica id >= 0) CLUSTER_ACTION on
the cluster (else every partition TOPIC_AUTHORIZATION_FAILED); decided once per request.
"""

from __future__ import annotations

from typing import Any

from ..core.quotas import CONSUMER_BYTE_RATE
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import TopicCheck
from .common import current_leader, led_partition, node_endpoints, topic_name_by_id
from .context import RequestContext, Wait
from .registry import api

READ_COMMITTED = 1


def handle(ctx: RequestContext, request: Message):
    # Epoch 0 (a new session) and -1 (closing one) are full fetches, answered in full without a
    # session; only an incremental fetch (epoch > 0) needs the session it names.
    if ctx.api_version >= 7 and request.session_id != 0 and request.session_epoch > 0:
        return ctx.response(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[])
    denied = _denied(ctx, request) if ctx.cluster.authorizer.enabled else False
    response, size, errors = _build(ctx, request, denied)
    wanted = _partitions(ctx, request)
    # ReplicaManager.fetchMessages answers at once a fetch with nothing to read (a consumer's
    # closing fetch names no partition): it does not wait max_wait_ms for data it never reads
    if size >= request.min_bytes or request.max_wait_ms <= 0 or errors or not wanted:
        return response
    deadline = ctx.now_ms + request.max_wait_ms

    def poll(now_ms: int, final: bool) -> Message | None:
        ctx.now_ms = now_ms
        again, size, errors = _build(ctx, request, denied)
        return again if final or errors or size >= request.min_bytes else None

    return Wait(deadline, poll, wanted)


def _denied(ctx: RequestContext, request: Message) -> bool | frozenset[str]:
    """What the request may not read (an authorizer configured), decided once as KafkaApis does
    before reading: True, every partition, for a follower (a replica id >= 0) without
    CLUSTER_ACTION on the cluster; else the topics without READ (a consumer's; a follower with
    CLUSTER_ACTION reads every topic)."""
    may_read = TopicCheck(ctx, Operation.READ)
    replica = request.replica_id if ctx.api_version < 15 else request.replica_state.replica_id
    if replica >= 0:
        return not ctx.allowed(Operation.CLUSTER_ACTION, ResourceType.CLUSTER)
    names = (
        (t.topic for t in request.topics)
        if ctx.api_version < 13
        else (topic_name_by_id(ctx.cluster, t.topic_id) for t in request.topics)
    )
    return frozenset(name for name in names if name is not None and not may_read(name))


def _partitions(ctx: RequestContext, request: Message) -> frozenset[tuple[str, int]]:
    """What the fetch reads, so that a produce elsewhere does not wake it."""
    keys: set[tuple[Any, int]] = set()  # an unknown topic id's None: no append wakes it
    for fetch_topic in request.topics:
        name = fetch_topic.topic if ctx.api_version < 13 else topic_name_by_id(ctx.cluster, fetch_topic.topic_id)
        keys.update((name, fp.partition) for fp in fetch_topic.partitions)
    return frozenset(keys)


def _build(ctx: RequestContext, request: Message, denied: bool | frozenset[str] = False) -> tuple[Message, int, bool]:
    """The answer as the log stands, its records' size, and whether a partition has an error;
    ``denied`` says what may not be read (:func:`_denied`)."""
    v = ctx.api_version
    budget = request.max_bytes if v >= 3 else 2**31 - 1
    total = 0
    any_error = False
    leaders: set[int] = set()
    topics = []
    for fetch_topic in request.topics:
        name = fetch_topic.topic if v < 13 else topic_name_by_id(ctx.cluster, fetch_topic.topic_id)
        parts = []
        for fp in fetch_topic.partitions:
            out = {
                "partition_index": fp.partition,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "preferred_read_replica": -1,
                "records": b"",
                "aborted_transactions": [] if request.isolation_level == READ_COMMITTED else None,
            }
            if denied is True or (denied and name in denied):
                # refused before reading, as an unknown topic id is: the aborted list's default, []
                out["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                out["aborted_transactions"] = []
                parts.append(out)
                any_error = True
                continue
            if name is None:
                out["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID
                # an error found before reading carries the message's default, an empty list (Kafka 4.4)
                out["aborted_transactions"] = []
                parts.append(out)
                any_error = True
                continue
            partition, error = led_partition(ctx, name, fp.partition, fp.current_leader_epoch)
            if error:
                out["error_code"] = error
                # an unknown partition is refused before reading (the message's default, []); a
                # wrong leader or leader epoch is a read error, whose aborted list is null (Kafka 4.4)
                out["aborted_transactions"] = [] if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else None
                if error == ErrorCode.NOT_LEADER_OR_FOLLOWER and partition is not None:
                    out["current_leader"] = current_leader(partition)
                    leaders.add(partition.leader)
                parts.append(out)
                any_error = True
                continue
            assert partition is not None  # led_partition: no error, so a partition
            log = partition.log
            if fp.fetch_offset < log.log_start_offset or fp.fetch_offset > log.log_end_offset:
                # a read error: ReplicaManager answers it with every offset unknown (-1)
                out["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                out["aborted_transactions"] = None  # a read error keeps the read's null (Kafka 4.4)
                any_error = True
            else:
                out.update(
                    high_watermark=log.high_watermark,
                    last_stable_offset=log.last_stable_offset,
                    log_start_offset=log.log_start_offset,
                )
                upper = log.last_stable_offset if request.isolation_level == READ_COMMITTED else log.high_watermark
                limit = min(fp.partition_max_bytes, max(budget - total, 0))
                data = (
                    log.read(fp.fetch_offset, limit, upper_bound=upper, min_one=total == 0)
                    if limit > 0 or total == 0
                    else b""
                )
                out["records"] = data
                total += len(data)
                if request.isolation_level == READ_COMMITTED and data:
                    out["aborted_transactions"] = [
                        {"producer_id": a.producer_id, "first_offset": a.first_offset}
                        for a in log.aborted_between(fp.fetch_offset, upper)
                    ]
            parts.append(out)
        topic = {"partitions": parts}
        topic.update({"topic": fetch_topic.topic} if v < 13 else {"topic_id": fetch_topic.topic_id})
        topics.append(topic)
    response = ctx.response(
        error_code=ErrorCode.NONE,
        session_id=0,
        responses=topics,
        throttle_time_ms=0,
        node_endpoints=node_endpoints(ctx.cluster, leaders, ctx.listener),
    )
    return response, total, any_error


API = api(ApiKey.FETCH, (4, 18), handle, byte_quota=CONSUMER_BYTE_RATE)

"""ShareAcknowledge (key 79): a share group member's acknowledgements sent alone (KIP-932):
ACCEPT, RELEASE, REJECT, GAP and (v2) RENEW of acquired records. It needs the share session
a ShareFetch opened; epoch -1 closes that session and releases the member's other records.

With an authorizer (``handleShareAcknowledgeRequest``): READ on the group after the group id
check and before the member id's (GROUP_AUTHORIZATION_FAILED, the whole answer); READ on each
topic after the batches' validation and before the partition's existence (TOPIC_AUTHORIZATION_
FAILED per partition)."""

from __future__ import annotations

from typing import Any

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import allowed_names, denied
from .common import current_leader, node_endpoints, topic_name_by_id
from .context import RequestContext
from .registry import api
from .share_common import member_id_valid, share_enabled


def handle(ctx: RequestContext, request: Message) -> Message:
    # imported at the first ShareAcknowledge: a cluster without share groups never needs them
    from ..core.groups.share.records import AckBatch, validate_batches
    from ..core.groups.share.sessions import CLOSE_EPOCH

    cluster = ctx.cluster
    v = ctx.api_version
    if not share_enabled(cluster):
        return top_error(ctx, ErrorCode.UNSUPPORTED_VERSION)
    if request.group_id is None:
        return top_error(ctx, ErrorCode.INVALID_REQUEST)
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return top_error(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not member_id_valid(request.member_id):
        return top_error(ctx, ErrorCode.INVALID_REQUEST)
    shares = cluster.groups.shares
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    error, session = shares.sessions.for_acknowledge(ctx.broker_id, group_id, member_id, epoch)
    if error or session is None:
        return top_error(ctx, error)
    renew = v >= 2 and request.is_renew_ack
    max_type = 4 if v >= 2 else 3
    topics: list[dict[str, Any]] = []
    leaders: set[int] = set()
    readable = allowed_names(
        ctx, Operation.READ, ResourceType.TOPIC, (topic_name_by_id(cluster, t.topic_id) for t in request.topics)
    )
    for t in request.topics:
        name = topic_name_by_id(cluster, t.topic_id)
        parts = []
        for p in t.partitions:
            batches = [
                AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in p.acknowledgement_batches
            ]
            code, message, leader = ErrorCode.NONE, None, {"leader_id": 0, "leader_epoch": 0}
            partition = cluster.partition(name, p.partition_index) if name is not None else None
            invalid = validate_batches(batches, max_type, renew) if name is not None else None
            if name is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID
            elif invalid:
                code = ErrorCode.INVALID_REQUEST  # Kafka sends no message with it
            elif name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not batches:
                continue  # nothing to acknowledge: Kafka leaves the partition out of the answer
            elif partition.leader != ctx.broker_id:
                code, leader = ErrorCode.NOT_LEADER_OR_FOLLOWER, current_leader(partition)
                leaders.add(partition.leader)
            else:
                code, message = shares.acknowledge(
                    group_id, member_id, ctx.client_id, name, p.partition_index, batches, ctx.now_ms, loaded_only=True
                )
                ctx.data_changed(name, p.partition_index)
            parts.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": code,
                    "error_message": message,
                    "current_leader": leader,
                }
            )
        if parts:
            topics.append({"topic_id": t.topic_id, "partitions": parts})
    if epoch == CLOSE_EPOCH:
        shares.sessions.close(ctx.broker_id, session)
        for topic, index in shares.release_session(session, ctx.now_ms):
            ctx.data_changed(topic, index)
    for topic, index in shares.take_dead_letter_writes():  # dead letters wake their readers
        ctx.data_changed(topic, index)
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        acquisition_lock_timeout_ms=cluster.group_configs.get_int(group_id, "share.record.lock.duration.ms"),
        responses=topics,
        node_endpoints=node_endpoints(cluster, leaders, ctx.listener),
    )


def top_error(ctx: RequestContext, code: ErrorCode) -> Message:
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=None,
        acquisition_lock_timeout_ms=0,
        responses=[],
        node_endpoints=[],
    )


API = api(ApiKey.SHARE_ACKNOWLEDGE, (1, 2), handle)

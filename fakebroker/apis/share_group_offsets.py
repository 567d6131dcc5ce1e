"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92):
share groups' start offsets and lag for admins (core/groups/share/admin.py)."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api
from .share_common import INVALID_GROUP_ID_MESSAGE, UNKNOWN_SERVER_ERROR_MESSAGE, share_enabled


def describe(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    groups = []
    for g in request.groups:
        entry = {"group_id": g.group_id, "topics": [], "error_code": ErrorCode.NONE, "error_message": None}
        error = ErrorCode.UNSUPPORTED_VERSION if not share_enabled(cluster) else ErrorCode.NONE
        if not error and not g.group_id:  # Kafka fails on it inside the group coordinator
            groups.append(
                {**entry, "error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": UNKNOWN_SERVER_ERROR_MESSAGE}
            )
            continue
        error = error or cluster.groups.coordinator_error(g.group_id, ctx.broker_id)
        if error:
            groups.append({**entry, "error_code": error})
            continue
        wanted = None if g.topics is None else [(t.topic_name, list(t.partitions)) for t in g.topics]
        topics = cluster.groups.share_offsets.describe(g.group_id, wanted)
        entry["topics"] = [
            {
                "topic_name": t.name,
                "topic_id": t.topic_id,
                "partitions": [
                    {
                        "partition_index": p.partition,
                        "start_offset": p.start_offset,
                        "leader_epoch": p.leader_epoch,
                        "lag": p.lag,
                        "error_code": p.error,
                        "error_message": p.message,
                    }
                    for p in t.partitions
                ],
            }
            for t in topics
        ]
        groups.append(entry)
    return ctx.response(throttle_time_ms=0, groups=groups)


def alter(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    error: ErrorCode = ErrorCode.UNSUPPORTED_VERSION if not share_enabled(cluster) else ErrorCode.NONE
    if not error and request.group_id:
        error = cluster.groups.coordinator_error(request.group_id, ctx.broker_id)
    if error:
        return ctx.response(throttle_time_ms=0, error_code=error, error_message=None, responses=[])
    wanted = [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions]) for t in request.topics]
    code, message, topics = cluster.groups.share_offsets.alter(
        request.group_id, wanted, cluster.groups.is_other_than_share
    )
    if code == ErrorCode.INVALID_GROUP_ID:
        message = INVALID_GROUP_ID_MESSAGE
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        responses=[
            {
                "topic_name": t.name,
                "topic_id": t.topic_id,
                "partitions": [
                    {"partition_index": p.partition, "error_code": p.error, "error_message": p.message}
                    for p in t.partitions
                ],
            }
            for t in topics
        ],
    )


def delete(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    error: ErrorCode = ErrorCode.UNSUPPORTED_VERSION if not share_enabled(cluster) else ErrorCode.NONE
    if not error and not request.group_id:
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.INVALID_GROUP_ID,
            error_message=INVALID_GROUP_ID_MESSAGE,
            responses=[],
        )
    if not error:
        error = cluster.groups.coordinator_error(request.group_id, ctx.broker_id)
    if error:
        return ctx.response(throttle_time_ms=0, error_code=error, error_message=None, responses=[])
    code, message, topics = cluster.groups.share_offsets.delete(
        request.group_id, [t.topic_name for t in request.topics], cluster.groups.is_other_than_share
    )
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        responses=[
            {"topic_name": name, "topic_id": topic_id, "error_code": e, "error_message": m}
            for name, topic_id, e, m in topics
        ],
    )


DESCRIBE = api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, (0, 1), describe)
ALTER = api(ApiKey.ALTER_SHARE_GROUP_OFFSETS, (0, 0), alter)
DELETE = api(ApiKey.DELETE_SHARE_GROUP_OFFSETS, (0, 0), delete)

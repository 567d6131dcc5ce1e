"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92):
share groups' start offsets and lag for admins (core/groups/share/admin.py).

With an authorizer, after the feature gate: Describe needs DESCRIBE on each group
(GROUP_AUTHORIZATION_FAILED for it) and DESCRIBE on each topic (named ones refused come last,
every partition start offset -1 with TOPIC_AUTHORIZATION_FAILED; an all-topics describe leaves
them out); Alter needs READ on the group (the whole answer) and READ per topic (its partitions
TOPIC_AUTHORIZATION_FAILED, before the topic's existence); Delete, past the empty group id,
DELETE on the group and READ per topic (that topic TOPIC_AUTHORIZATION_FAILED, listed first;
when no topic is left the coordinator is not asked)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import MESSAGES, denied, split
from .context import RequestContext
from .registry import api
from .share_common import INVALID_GROUP_ID_MESSAGE, UNKNOWN_SERVER_ERROR_MESSAGE, share_enabled

if TYPE_CHECKING:
    from ..core.groups.share.admin import TopicOffsets


def describe(ctx: RequestContext, request: Message) -> Message:
    # the share core is imported at the first request: a cluster without share groups never needs it
    from ..core.groups.share.admin import ZERO_UUID

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
        if not error and denied(ctx, Operation.DESCRIBE, ResourceType.GROUP, g.group_id):
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        error = error or cluster.groups.coordinator_error(g.group_id, ctx.broker_id)
        if error:
            groups.append({**entry, "error_code": error})
            continue
        wanted = None if g.topics is None else [(t.topic_name, list(t.partitions)) for t in g.topics]
        wanted, refused = split(ctx, Operation.DESCRIBE, ResourceType.TOPIC, wanted or [], lambda t: t[0])
        topics = cluster.groups.share_offsets.describe(g.group_id, None if g.topics is None else wanted)
        if g.topics is None:  # every initialized partition: those of undescribable topics left out
            topics, _ = split(ctx, Operation.DESCRIBE, ResourceType.TOPIC, topics, lambda t: t.name)
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
        code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        entry["topics"] += [
            {
                "topic_name": name,
                "topic_id": ZERO_UUID,
                "partitions": [
                    {"partition_index": p, "start_offset": -1, "error_code": code, "error_message": MESSAGES[code]}
                    for p in partitions
                ],
            }
            for name, partitions in refused
        ]
        groups.append(entry)
    return ctx.response(throttle_time_ms=0, groups=groups)


def alter(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    error: ErrorCode = ErrorCode.UNSUPPORTED_VERSION if not share_enabled(cluster) else ErrorCode.NONE
    if not error and denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not error and request.group_id:
        error = cluster.groups.coordinator_error(request.group_id, ctx.broker_id)
    if error:
        return ctx.response(throttle_time_ms=0, error_code=error, error_message=None, responses=[])
    wanted = [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions]) for t in request.topics]
    readable, refused = split(ctx, Operation.READ, ResourceType.TOPIC, wanted, lambda t: t[0])
    code, message, topics = cluster.groups.share_offsets.alter(
        request.group_id, readable, cluster.groups.is_other_than_share
    )
    if not code:
        topics = _refused_topics(ctx, refused) + topics
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
    from ..core.groups.share.admin import ZERO_UUID

    cluster = ctx.cluster
    error: ErrorCode = ErrorCode.UNSUPPORTED_VERSION if not share_enabled(cluster) else ErrorCode.NONE
    if not error and not request.group_id:
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.INVALID_GROUP_ID,
            error_message=INVALID_GROUP_ID_MESSAGE,
            responses=[],
        )
    if not error and denied(ctx, Operation.DELETE, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not error:
        error = cluster.groups.coordinator_error(request.group_id, ctx.broker_id)
    if error:
        return ctx.response(throttle_time_ms=0, error_code=error, error_message=None, responses=[])
    names, refused = split(ctx, Operation.READ, ResourceType.TOPIC, [t.topic_name for t in request.topics], str)
    failed = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    code, message = ErrorCode.NONE, None
    topics: list[tuple[str, uuid.UUID, ErrorCode, str | None]] = []
    if names or not refused:
        code, message, topics = cluster.groups.share_offsets.delete(
            request.group_id, names, cluster.groups.is_other_than_share
        )
    if not code:
        topics = [(name, ZERO_UUID, failed, MESSAGES[failed]) for name in refused] + topics
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        responses=[
            {"topic_name": name, "topic_id": topic_id, "error_code": e, "error_message": m}
            for name, topic_id, e, m in topics
        ],
    )


def _refused_topics(ctx: RequestContext, refused: list[tuple[str, list[tuple[int, int]]]]) -> list[TopicOffsets]:
    """AlterShareGroupOffsets' entries for topics the principal may not READ (their id if known)."""
    from ..core.groups.share.admin import ZERO_UUID, PartitionOffset, TopicOffsets

    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    known = ctx.cluster.topics
    return [
        TopicOffsets(
            name,
            known[name].topic_id if name in known else ZERO_UUID,
            tuple(PartitionOffset(p, error=code, message=MESSAGES[code]) for p, _ in partitions),
        )
        for name, partitions in refused
    ]


DESCRIBE = api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, (0, 1), describe)
ALTER = api(ApiKey.ALTER_SHARE_GROUP_OFFSETS, (0, 0), alter)
DELETE = api(ApiKey.DELETE_SHARE_GROUP_OFFSETS, (0, 0), delete)

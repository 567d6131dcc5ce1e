"""OffsetCommit (key 8): group and member checks, then one stored offset per partition."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .common import checked_partitions, coordinator_error
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    cluster = ctx.cluster
    checked = checked_partitions(cluster, request.topics, by_id=v >= 10)
    group_error = ErrorCode.NONE
    if any(e == ErrorCode.NONE for *_, e in checked):
        if request.group_id is None:
            group_error = ErrorCode.INVALID_GROUP_ID
        else:
            group_error = coordinator_error(ctx, request.group_id) or cluster.offsets.validate_commit(
                ctx.now_ms,
                group_id=request.group_id,
                member_id=request.member_id if v >= 1 else "",
                group_instance_id=request.group_instance_id,
                generation_id=request.generation_id_or_member_epoch if v >= 1 else -1,
                version=v,
            )
    by_topic: dict[int, dict] = {}
    for t, name, p, error in checked:
        if not error:
            error = (
                group_error
                or cluster.offsets.validate_partition_commit(
                    request.group_id,
                    request.member_id if v >= 1 else "",
                    request.generation_id_or_member_epoch if v >= 1 else -1,
                    name,
                    p.partition_index,
                )
                or cluster.offsets.commit(
                    ctx.now_ms,
                    request.group_id,
                    name,
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata,
                    request.retention_time_ms if 2 <= v <= 4 else -1,
                )
            )
        entry = by_topic.setdefault(id(t), {"name": t.name, "topic_id": t.topic_id, "partitions": []})
        entry["partitions"].append({"partition_index": p.partition_index, "error_code": error})
    return ctx.response(topics=list(by_topic.values()), throttle_time_ms=0)


# v10 names topics by id
API = api(8, (0, 10), handle)

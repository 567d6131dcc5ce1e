"""OffsetCommit (key 8): group and member checks, then one stored offset per partition. With an
authorizer: READ on the group first (GROUP_AUTHORIZATION_FAILED on every partition named), then
READ on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions, before their existence)."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.groups.requests import CommitRequest
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import denied, refuse_checked
from .common import checked_partitions, offsets_to_commit
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    checked = checked_partitions(ctx.cluster, request.topics, by_id=v >= 10)
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        checked = [(t, name, p, ErrorCode.GROUP_AUTHORIZATION_FAILED) for t, name, p, _ in checked]
    else:
        checked = refuse_checked(ctx, Operation.READ, checked)
    wanted = offsets_to_commit(checked)
    errors: Iterator[ErrorCode] = iter(())
    if wanted:  # unknown topics and partitions are answered without asking the group
        commit = CommitRequest(
            group_id=request.group_id,
            member_id=request.member_id if v >= 1 else "",
            group_instance_id=request.group_instance_id,
            generation_id=request.generation_id_or_member_epoch if v >= 1 else -1,
            version=v,
        )
        retention_ms = request.retention_time_ms if 2 <= v <= 4 else -1
        errors = iter(ctx.cluster.groups.commit(ctx.now_ms, ctx.broker_id, commit, wanted, retention_ms))
    by_topic: dict[int, dict] = {}
    for t, _, p, error in checked:
        entry = by_topic.setdefault(id(t), {"name": t.name, "topic_id": t.topic_id, "partitions": []})
        entry["partitions"].append({"partition_index": p.partition_index, "error_code": error or next(errors)})
    return ctx.response(topics=list(by_topic.values()), throttle_time_ms=0)


# v10 names topics by id
API = api(ApiKey.OFFSET_COMMIT, (0, 10), handle)

"""ShareGroupDescribe (key 77): share groups with their epochs, members and assignments. With an
authorizer, as ConsumerGroupDescribe: DESCRIBE per group (refused ones first), authorized
operations from the authorizer, a group assigning a topic the principal may not DESCRIBE
answered TOPIC_AUTHORIZATION_FAILED."""

from __future__ import annotations

from typing import Any

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from . import authorized_operations as ops
from .authz import operations, split
from .consumer_group_describe import _partitions, group_error, hide_undescribable
from .context import RequestContext
from .registry import api
from .share_common import share_enabled


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    out: list[dict] = []
    groups = request.group_ids
    if share_enabled(cluster):  # else UNSUPPORTED_VERSION for every group, first
        groups, refused = split(ctx, Operation.DESCRIBE, ResourceType.GROUP, groups, lambda g: g)
        out = [group_error(g or "", ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in refused]
    for group_id in groups:
        entry: dict[str, Any] = {
            "group_id": group_id or "",
            "group_state": "",
            "group_epoch": 0,
            "assignment_epoch": 0,
            "assignor_name": "",
            "members": [],
            "authorized_operations": ops.OMITTED,
            "error_message": None,
        }
        if not share_enabled(cluster):
            out.append({**entry, "error_code": ErrorCode.UNSUPPORTED_VERSION})
            continue
        error, message, group = cluster.groups.share_describe(ctx.broker_id, group_id)
        if error or group is None:
            out.append({**entry, "error_code": error, "error_message": message})
            continue
        members = [
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_names),
                "assignment": {"topic_partitions": _partitions(cluster, m.assigned)},
            }
            for m in group.members.values()
        ]
        out.append(
            {
                **entry,
                "error_code": ErrorCode.NONE,
                "group_state": group.state.value,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": "simple",
                "members": members,
                "authorized_operations": operations(ctx, ResourceType.GROUP, group_id)
                if request.include_authorized_operations
                else ops.OMITTED,
            }
        )
    return ctx.response(groups=hide_undescribable(ctx, out, ("assignment",)), throttle_time_ms=0)


API = api(ApiKey.SHARE_GROUP_DESCRIBE, (1, 1), handle)

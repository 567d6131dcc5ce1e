"""LeaveGroup (key 13): one member (v0-2) or a batch with instance ids (v3+). With an authorizer,
READ on the group first: GROUP_AUTHORIZATION_FAILED, no members."""

from __future__ import annotations

from ..core.groups.requests import LeaveRequest
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import denied
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[], throttle_time_ms=0)
    members: list[tuple[str, str | None]] = (
        [(request.member_id, None)] if v < 3 else [(m.member_id, m.group_instance_id) for m in request.members]
    )
    result = ctx.cluster.groups.leave(ctx.now_ms, ctx.broker_id, LeaveRequest(request.group_id, members))
    top, errors = result.error, result.members
    if v < 3:
        # v0-2 fold the member's error into the one error field.
        return ctx.response(error_code=top or next((e for e in errors if e), ErrorCode.NONE), throttle_time_ms=0)
    entries = [
        {"member_id": mid, "group_instance_id": iid, "error_code": err} for (mid, iid), err in zip(members, errors)
    ]
    return ctx.response(error_code=top, members=entries if not top else [], throttle_time_ms=0)


API = api(ApiKey.LEAVE_GROUP, (0, 5), handle)

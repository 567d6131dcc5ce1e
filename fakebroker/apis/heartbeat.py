"""Heartbeat (key 12): REBALANCE_IN_PROGRESS is how members learn they must rejoin. With an
authorizer, READ on the group first (GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from ..core.groups.requests import HeartbeatRequest
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import denied
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0)
    error = ctx.cluster.groups.heartbeat(
        ctx.now_ms,
        ctx.broker_id,
        HeartbeatRequest(request.group_id, request.member_id, request.group_instance_id, request.generation_id),
    )
    return ctx.response(error_code=error, throttle_time_ms=0)


API = api(ApiKey.HEARTBEAT, (0, 4), handle)

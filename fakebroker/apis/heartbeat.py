"""Heartbeat (key 12): REBALANCE_IN_PROGRESS is how members learn they must rejoin."""

from __future__ import annotations

from ..core.groups.requests import HeartbeatRequest
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    error = ctx.cluster.groups.heartbeat(
        ctx.now_ms,
        ctx.broker_id,
        HeartbeatRequest(request.group_id, request.member_id, request.group_instance_id, request.generation_id),
    )
    return ctx.response(error_code=error, throttle_time_ms=0)


API = api(ApiKey.HEARTBEAT, (0, 4), handle)

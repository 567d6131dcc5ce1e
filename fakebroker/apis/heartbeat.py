"""Heartbeat (key 12): REBALANCE_IN_PROGRESS is how members learn they must rejoin."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .common import coordinator_error
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    if request.group_id:
        error = coordinator_error(ctx, request.group_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ctx.response(error_code=ErrorCode.NONE, throttle_time_ms=0)  # Kafka answers NONE while loading
        if error:
            return ctx.response(error_code=error, throttle_time_ms=0)
    consumer_group = ctx.cluster.offsets.consumer_group(request.group_id)
    if consumer_group is not None:  # a classic member in a KIP-848 group
        error = ctx.cluster.consumer_groups.classic_heartbeat(
            ctx.now_ms,
            consumer_group,
            member_id=request.member_id,
            instance_id=request.group_instance_id,
            generation_id=request.generation_id,
        )
        return ctx.response(error_code=error, throttle_time_ms=0)
    error = ctx.cluster.groups.heartbeat(
        ctx.now_ms,
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        generation_id=request.generation_id,
    )
    return ctx.response(error_code=error, throttle_time_ms=0)


API = api(12, (0, 4), handle)

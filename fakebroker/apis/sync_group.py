"""SyncGroup (key 14)."""

from __future__ import annotations

from ..core.groups.results import SyncResult, sync_error
from ..core.timers import Pending
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .common import coordinator_error
from .context import Parked, RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message):
    v = ctx.api_version
    if not (v >= 5 and (request.protocol_type is None or request.protocol_name is None)) and request.group_id:
        error = coordinator_error(ctx, request.group_id)
        if error:
            return respond(ctx, sync_error(error))
    consumer_group = ctx.cluster.offsets.consumer_group(request.group_id)
    if consumer_group is not None:  # a classic member in a KIP-848 group gets the server's assignment
        return respond(
            ctx,
            ctx.cluster.consumer_groups.classic_sync(
                ctx.now_ms,
                consumer_group,
                member_id=request.member_id,
                instance_id=request.group_instance_id,
                generation_id=request.generation_id,
                protocol_type=request.protocol_type if v >= 5 else None,
                protocol_name=request.protocol_name if v >= 5 else None,
            ),
        )
    result = ctx.cluster.groups.sync(
        ctx.now_ms,
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        generation_id=request.generation_id,
        protocol_type=request.protocol_type if v >= 5 else None,
        protocol_name=request.protocol_name if v >= 5 else None,
        assignments={a.member_id: a.assignment for a in request.assignments},
        version=v,
    )
    if isinstance(result, Pending):
        return Parked(result, lambda value: respond(ctx, value))
    return respond(ctx, result)


def respond(ctx: RequestContext, result: SyncResult) -> Message:
    if result.error:
        return ctx.response(
            error_code=result.error, protocol_type=None, protocol_name=None, assignment=b"", throttle_time_ms=0
        )
    return ctx.response(
        error_code=ErrorCode.NONE,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
        throttle_time_ms=0,
    )


API = api(14, (0, 5), handle)

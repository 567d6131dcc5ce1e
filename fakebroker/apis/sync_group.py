"""SyncGroup (key 14). With an authorizer, READ on the group, checked after v5+'s mandatory
protocol type and name (their absence is INCONSISTENT_GROUP_PROTOCOL whoever asks, which the
group service answers): GROUP_AUTHORIZATION_FAILED."""

from __future__ import annotations

from ..core.groups.requests import SyncRequest
from ..core.groups.results import SyncResult
from ..core.security.acls import Operation, ResourceType
from ..core.timers import Pending
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import denied
from .context import Parked, RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message):
    v = ctx.api_version
    shaped = v < 5 or (request.protocol_type is not None and request.protocol_name is not None)
    if shaped and denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return respond(ctx, SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    result = ctx.cluster.groups.sync(
        ctx.now_ms,
        ctx.broker_id,
        SyncRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            generation_id=request.generation_id,
            protocol_type=request.protocol_type if v >= 5 else None,
            protocol_name=request.protocol_name if v >= 5 else None,
            assignments={a.member_id: a.assignment for a in request.assignments},
            version=v,
        ),
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


API = api(ApiKey.SYNC_GROUP, (0, 5), handle)

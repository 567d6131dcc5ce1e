"""JoinGroup (key 11): every group rule is in core/groups/ (the group service decides which
coordinator answers). With an authorizer, READ on the group first: GROUP_AUTHORIZATION_FAILED,
member id "" (Kafka's ``getErrorResponse``)."""

from __future__ import annotations

from ..core.groups.requests import JoinRequest
from ..core.groups.results import JoinResult
from ..core.security.acls import Operation, ResourceType
from ..core.timers import Pending
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import denied
from .context import Parked, RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message):
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return respond(ctx, JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    result = ctx.cluster.groups.join(
        ctx.now_ms,
        ctx.broker_id,
        JoinRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            client_id=ctx.client_id or "",
            client_host=f"/{ctx.client_host}",
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=[(p.name, p.metadata) for p in request.protocols],
            version=ctx.api_version,
        ),
    )
    if isinstance(result, Pending):
        return Parked(result, lambda value: respond(ctx, value))
    return respond(ctx, result)


def respond(ctx: RequestContext, result: JoinResult) -> Message:
    v = ctx.api_version
    if result.error:
        # v7+ errors carry null protocol fields, v0-6 an empty protocol name.
        return ctx.response(
            error_code=result.error,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if v >= 7 else "",
            leader="",
            member_id=result.member_id,
            members=[],
            throttle_time_ms=0,
        )
    members = [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
        for m in result.members
    ]
    return ctx.response(
        error_code=ErrorCode.NONE,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        leader=result.leader,
        member_id=result.member_id,
        members=members,
        skip_assignment=result.skip_assignment,
        throttle_time_ms=0,
    )


API = api(ApiKey.JOIN_GROUP, (0, 9), handle)

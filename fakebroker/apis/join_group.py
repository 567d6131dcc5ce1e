"""JoinGroup (key 11): checks here, every group rule in core/groups/coordinator.py."""

from __future__ import annotations

from ..core.groups.results import JoinResult, join_error
from ..core.timers import Pending
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .common import coordinator_error
from .context import Parked, RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message):
    coordinator = ctx.cluster.groups
    cfg = ctx.cluster.config
    low, high = cfg.get_int("group.min.session.timeout.ms"), cfg.get_int("group.max.session.timeout.ms")
    # 4.x checks the session timeout before coordinator placement; the group id first.
    if request.group_id:
        if low <= request.session_timeout_ms <= high:
            error = coordinator_error(ctx, request.group_id)
            if error:
                return respond(ctx, join_error(error))
    consumer_group = ctx.cluster.offsets.consumer_group(request.group_id)
    if consumer_group is not None:
        if consumer_group.members and low <= request.session_timeout_ms <= high:
            # a classic member in a KIP-848 group: the server assigns, the answer comes at once
            return respond(
                ctx,
                ctx.cluster.consumer_groups.classic_join(
                    ctx.now_ms,
                    consumer_group,
                    member_id=request.member_id,
                    instance_id=request.group_instance_id,
                    client_id=ctx.client_id or "",
                    client_host=f"/{ctx.client_host}",
                    session_timeout_ms=request.session_timeout_ms,
                    rebalance_timeout_ms=request.rebalance_timeout_ms
                    if ctx.api_version >= 1
                    else request.session_timeout_ms,
                    protocol_type=request.protocol_type,
                    protocols=[(p.name, p.metadata) for p in request.protocols],
                    version=ctx.api_version,
                ),
            )
        if not consumer_group.members:
            ctx.cluster.consumer_groups.delete(request.group_id, ctx.now_ms)  # an empty group of the other type goes
    result = coordinator.join(
        ctx.now_ms,
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        client_id=ctx.client_id,
        client_host=f"/{ctx.client_host}",
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=[(p.name, p.metadata) for p in request.protocols],
        version=ctx.api_version,
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


API = api(11, (0, 9), handle)

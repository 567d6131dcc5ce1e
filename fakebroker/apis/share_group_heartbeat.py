"""ShareGroupHeartbeat (key 76): share groups' membership and assignment (KIP-932); every rule
is in core/groups/ (the group service, then share/coordinator.py). Here: the feature gate,
the member id check, topic names <-> ids, and with an authorizer Kafka's checks in its order:
the feature gate, READ on the group (GROUP_AUTHORIZATION_FAILED), the member id, DESCRIBE on every
subscribed topic (any refused: TOPIC_AUTHORIZATION_FAILED), all without a message."""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import any_denied, denied
from .common import heartbeat_assignment, heartbeat_error
from .context import RequestContext
from .registry import api
from .share_common import member_id_valid, share_enabled


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    if not share_enabled(cluster):
        return heartbeat_error(ctx, ErrorCode.UNSUPPORTED_VERSION)
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return heartbeat_error(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not member_id_valid(request.member_id):
        return heartbeat_error(ctx, ErrorCode.INVALID_REQUEST)
    if any_denied(ctx, Operation.DESCRIBE, ResourceType.TOPIC, request.subscribed_topic_names or ()):
        return heartbeat_error(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    # imported at the first heartbeat that reaches the coordinator: a cluster without share groups never needs it
    from ..core.groups.share.coordinator import ShareHeartbeatRequest

    result = cluster.groups.share_heartbeat(
        ctx.now_ms,
        ctx.broker_id,
        ShareHeartbeatRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            rack_id=request.rack_id,
            subscribed_names=request.subscribed_topic_names,
            client_id=ctx.client_id or "",
            client_host=f"/{ctx.client_host}",
        ),
    )
    if result.error:
        return heartbeat_error(ctx, result.error, result.message)
    cluster.share_state_topic()  # the share coordinator's topic exists once a share group does
    assignment = heartbeat_assignment(cluster, result.assignment, empty_topics=False)
    return ctx.response(
        error_code=ErrorCode.NONE,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment,
        throttle_time_ms=0,
    )


API = api(ApiKey.SHARE_GROUP_HEARTBEAT, (1, 1), handle)

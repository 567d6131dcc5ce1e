"""ConsumerGroupHeartbeat (key 68): KIP-848 consumer groups; every rule is in core/groups/
(the group service, then consumer/coordinator.py). Here: topic ids <-> names, and, with an
authorizer, Kafka's checks before the coordinator's: READ on the group (GROUP_AUTHORIZATION_
FAILED), then DESCRIBE on every name in ``SubscribedTopicNames`` (any refused: TOPIC_AUTHORIZATION_
FAILED for the whole request), both without a message. (Kafka answers UNSUPPORTED_VERSION first
when the consumer protocol is off; here the group service answers that, so after these checks.)
A regex subscription resolves to the topics the member's principal may DESCRIBE (the coordinator
asks the authorizer at each resolution, so a grant shows at the member's next heartbeat); Kafka
filters a group's regexes by the principal of the member whose heartbeat started the refresh,
which is the same when a group's members share a principal."""

from __future__ import annotations

from ..core.groups.requests import ConsumerHeartbeatRequest
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import any_denied, denied
from .common import heartbeat_assignment, heartbeat_error, topic_name_by_id
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return heartbeat_error(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if any_denied(ctx, Operation.DESCRIBE, ResourceType.TOPIC, request.subscribed_topic_names or ()):
        return heartbeat_error(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    owned: dict[str, set[int]] | None = None
    if request.topic_partitions is not None:
        owned = {}
        for tp in request.topic_partitions:
            name = topic_name_by_id(cluster, tp.topic_id)
            if name is not None:
                owned.setdefault(name, set()).update(tp.partitions)
    version = ctx.api_version
    result = cluster.groups.consumer_heartbeat(
        ctx.now_ms,
        ctx.broker_id,
        ConsumerHeartbeatRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id,
            rack_id=request.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_names=request.subscribed_topic_names,
            subscribed_regex=request.subscribed_topic_regex if version >= 1 else None,
            server_assignor=request.server_assignor,
            owned=owned,
            client_id=ctx.client_id or "",
            client_host=f"/{ctx.client_host}",
            version=version,
            principal=ctx.principal,
        ),
    )
    if result.error:
        return heartbeat_error(ctx, result.error, result.message)
    assignment = heartbeat_assignment(cluster, result.assignment)
    return ctx.response(
        error_code=ErrorCode.NONE,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment,
        throttle_time_ms=0,
    )


API = api(ApiKey.CONSUMER_GROUP_HEARTBEAT, (0, 1), handle)

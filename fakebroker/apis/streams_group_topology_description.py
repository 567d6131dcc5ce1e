"""StreamsGroupTopologyDescriptionUpdate (key 93, v0, KIP-1331): a Streams client pushes its
full topology description for a broker-side ``StreamsGroupTopologyDescriptionPlugin``. Kafka
ships no plugin and configures none by default; without one its heartbeat never asks for the
push (TopologyDescriptionRequired stays false), and a push that comes anyway is answered, after
the gate and READ on the group, UNSUPPORTED_VERSION with the text below. fakebroker has no
plugin either, so that is its answer."""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import denied
from .context import RequestContext
from .registry import api
from .streams_group_heartbeat import streams_enabled

NO_PLUGIN = "The broker has no streams group topology description plugin configured."


def handle(ctx: RequestContext, request: Message) -> Message:
    if not streams_enabled(ctx):
        return _answer(ctx, ErrorCode.UNSUPPORTED_VERSION, None)
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return _answer(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    return _answer(ctx, ErrorCode.UNSUPPORTED_VERSION, NO_PLUGIN)


def _answer(ctx: RequestContext, code: ErrorCode, message: str | None) -> Message:
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message)


API = api(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, (0, 0), handle)

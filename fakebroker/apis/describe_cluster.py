"""DescribeCluster (key 60)."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .context import RequestContext
from .registry import api

BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    if ctx.api_version >= 1 and request.endpoint_type not in (BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT):
        return ctx.response(
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message="Unsupported endpoint type",
            endpoint_type=request.endpoint_type,
            cluster_id=cluster.cluster_id,
        )
    brokers = [
        {"broker_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack, "is_fenced": False}
        for b in cluster.alive_brokers()
    ]
    return ctx.response(
        error_code=ErrorCode.NONE,
        endpoint_type=request.endpoint_type if ctx.api_version >= 1 else 1,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        brokers=brokers,
    )


API = api(60, (0, 2), handle)

"""DescribeCluster (key 60), as a broker's listener answers it (AuthHelper.computeDescribeClusterResponse)."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import cluster_operations
from .context import RequestContext
from .metadata import AUTHORIZED_OPERATIONS_OMITTED
from .registry import api

BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    v = ctx.api_version
    wanted = request.endpoint_type if v >= 1 else BROKERS_ENDPOINT
    # the answer names the listener's own endpoint type (a broker's), whatever was asked
    if wanted not in (BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT):
        return ctx.response(
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {wanted}",
            endpoint_type=BROKERS_ENDPOINT,
        )
    if wanted == CONTROLLERS_ENDPOINT:
        return ctx.response(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
            "CONTROLLER",
            endpoint_type=BROKERS_ENDPOINT,
        )
    brokers = [
        {"broker_id": b.node_id, "host": host, "port": port, "rack": b.rack, "is_fenced": False}
        for b in cluster.alive_brokers()
        for host, port in [b.endpoint(ctx.listener)]
    ]
    # when asked: every cluster operation without an authorizer; with one, those the principal
    # may do, or 0 without DESCRIBE on the cluster (the request itself needs no permission)
    asked = request.include_cluster_authorized_operations
    ops = cluster_operations(ctx) if asked else AUTHORIZED_OPERATIONS_OMITTED
    return ctx.response(
        error_code=ErrorCode.NONE,
        endpoint_type=BROKERS_ENDPOINT,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        brokers=brokers,
        cluster_authorized_operations=ops,
    )


API = api(ApiKey.DESCRIBE_CLUSTER, (0, 2), handle)

"""ListConfigResources (key 74; ListClientMetricsResources before Kafka 4.1): the resources
that configs can be described for (the admin client's ``listConfigResources`` and, at v0,
``listClientMetricsResources``).

v0 knows client-metrics resources only; v1 takes resource types (none: all it supports) and
answers groups with configs, client-metrics resources, broker loggers, brokers and topics, in
Kafka's order. fakebroker has no group configs and no client-metrics subscriptions, so those
two types are always empty, as on a fresh Kafka.
"""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.allowed(Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):  # KafkaApis' first check
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return ctx.response(throttle_time_ms=0, error_code=denied, config_resources=[])
    supported = [CLIENT_METRICS] if ctx.api_version == 0 else [TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP]
    wanted = list(request.resource_types) if ctx.api_version >= 1 else []
    if not wanted:
        wanted = supported
    if any(t not in supported for t in wanted):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    cluster = ctx.cluster
    found: list[tuple[str, int]] = []
    brokers = [str(b.node_id) for b in cluster.alive_brokers()]
    if BROKER_LOGGER in wanted:
        found += [(b, BROKER_LOGGER) for b in brokers]
    if BROKER in wanted:
        found += [(b, BROKER) for b in brokers]
    if TOPIC in wanted:
        found += [(name, TOPIC) for name in sorted(cluster.topics)]
    resources = [{"resource_name": name, "resource_type": kind} for name, kind in found]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, config_resources=resources)


API = api(ApiKey.LIST_CONFIG_RESOURCES, (0, 1), handle)

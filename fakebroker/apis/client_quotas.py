"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49): the quotas of users, client
ids and IPs (``kafka-client-quotas``, the admin client's ``describeClientQuotas`` and
``alterClientQuotas``). The core (``core/quotas.py``) keeps and validates them and turns the
byte rates into throttle times (applied by the server's pipeline)."""

from __future__ import annotations

from ..core.quotas import Alteration, Entity, entity_of, java_map_order
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import CLUSTER_DENIED
from .context import RequestContext
from .registry import api


def _entity_data(entity: Entity) -> list[dict]:
    names = dict(entity)
    return [{"entity_type": t, "entity_name": names[t]} for t in java_map_order(list(names))]


def describe_client_quotas(ctx: RequestContext, request: Message) -> Message:
    if not ctx.allowed(Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):  # KafkaApis' check
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return ctx.response(throttle_time_ms=0, error_code=denied, error_message=None, entries=None)
    components = [(c.entity_type, c.match_type, c.match) for c in request.components]
    code, message, found = ctx.cluster.quotas.describe(components, request.strict)
    if code:
        return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, entries=None)
    entries = [
        {"entity": _entity_data(entity), "values": [{"key": k, "value": v} for k, v in values.items()]}
        for entity, values in found or []
    ]
    # Kafka answers a success with an empty message, not null
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", entries=entries)


def alter_client_quotas(ctx: RequestContext, request: Message) -> Message:
    if not ctx.allowed(Operation.ALTER_CONFIGS, ResourceType.CLUSTER):
        # the controller's first check: every entry refused, with the error's own text
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        entries = [
            {
                "error_code": denied,
                "error_message": CLUSTER_DENIED,
                "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity],
            }
            for entry in request.entries
        ]
        return ctx.response(throttle_time_ms=0, entries=entries)
    alterations = [
        Alteration(
            entity_of([(e.entity_type, e.entity_name) for e in entry.entity]),
            [(op.key, op.value, op.remove) for op in entry.ops],
        )
        for entry in request.entries
    ]
    results = ctx.cluster.quotas.alter(alterations, request.validate_only)
    entries = [
        {"error_code": code, "error_message": message, "entity": _entity_data(entity)}
        for entity, (code, message) in results.items()
    ]
    return ctx.response(throttle_time_ms=0, entries=entries)


APIS = (
    api(ApiKey.DESCRIBE_CLIENT_QUOTAS, (0, 1), describe_client_quotas),
    api(ApiKey.ALTER_CLIENT_QUOTAS, (0, 1), alter_client_quotas),
)

"""UpdateFeatures (key 57): finalize feature levels (``kafka-features upgrade/downgrade``, the
admin client's ``updateFeatures``), checked as Kafka's controller checks them; the levels and
epoch are what ApiVersions then reports (``core/features.py``)."""

from __future__ import annotations

from ..core.features import UPGRADE
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import cluster_denied
from .context import RequestContext
from .registry import api

FAILED_ALL = "The update failed for all features since the following feature had an error: "


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    if not ctx.allowed(Operation.ALTER, ResourceType.CLUSTER):  # the controller's first check
        denied, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, cluster_denied(ctx, Operation.ALTER)
        return ctx.response(throttle_time_ms=0, error_code=denied, error_message=message, results=[])
    features = ctx.cluster.features
    levels: dict[str, int] = {}
    for update in request.feature_updates:
        # v0's allow_downgrade is not taken as a downgrade type: Kafka 4.4 answers a v0
        # downgrade as an upgrade, whatever the flag says
        upgrade_type = update.upgrade_type if v >= 1 else UPGRADE
        level = update.max_version_level
        reason = features.check_update(update.feature, level, upgrade_type, ctx.cluster.controller_id)
        if reason is not None:
            return ctx.response(
                throttle_time_ms=0,
                error_code=ErrorCode.INVALID_UPDATE_VERSION,
                error_message=FAILED_ALL + reason,
                results=[],
            )
        levels[update.feature] = update.max_version_level
    validate_only = request.validate_only if v >= 1 else False
    if not validate_only:
        changed = {name: level for name, level in levels.items() if features.finalized.get(name, 0) != level}
        features.update(changed)
    # v0-1 answer each feature; Kafka 4.4 fills their message with "NONE"
    results = [{"feature": name, "error_code": ErrorCode.NONE, "error_message": "NONE"} for name in levels]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=results)


API = api(ApiKey.UPDATE_FEATURES, (0, 2), handle)

"""ApiVersions (key 18): what this broker speaks, with KIP-511's answer to versions it does not."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .context import RequestContext
from .registry import REGISTRY, api

API_KEY = 18


def advertised() -> list[dict[str, int]]:
    return [
        {"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version}
        for a in sorted(REGISTRY.values(), key=lambda a: a.key)
    ]


def handle(ctx: RequestContext, request: Message) -> Message:
    features = ctx.cluster.features
    supported = [
        {"name": name, "min_version": lo, "max_version": hi}
        for name, (lo, hi) in sorted(features.supported.items())
        # before v4, features whose minimum is 0 are left out (old clients took 0 for "none")
        if lo > 0 or ctx.api_version >= 4
    ]
    finalized = [
        {"name": name, "max_version_level": level, "min_version_level": level}
        for name, level in sorted(features.finalized.items())
        if level > 0
    ]
    return ctx.response(
        error_code=ErrorCode.NONE,
        api_keys=advertised(),
        throttle_time_ms=0,
        supported_features=supported,
        finalized_features_epoch=features.epoch,
        finalized_features=finalized,
    )


def unsupported_version_response() -> dict:
    """KIP-511: a version above ours is answered at v0 with UNSUPPORTED_VERSION and our range
    of ApiVersions alone, so the client can retry with a version we know."""
    own = REGISTRY[API_KEY]
    return {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": API_KEY, "min_version": own.min_version, "max_version": own.max_version}],
    }


API = api(18, (0, 4), handle)

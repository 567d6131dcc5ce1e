"""ApiVersions (key 18): what this broker speaks, with KIP-511's answer to versions it does not."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .context import RequestContext

API_KEY = 18


def advertised() -> list[dict[str, int]]:
    from . import SUPPORTED  # the registry imports this module

    return [{"api_key": key, "min_version": low, "max_version": high} for key, (low, high) in sorted(SUPPORTED.items())]


def handle(ctx: RequestContext, request: Message) -> Message:
    return ctx.response(error_code=ErrorCode.NONE, api_keys=advertised(), throttle_time_ms=0,
                        finalized_features_epoch=-1)


def unsupported_version_response() -> dict:
    """KIP-511: a version above ours is answered at v0 with UNSUPPORTED_VERSION and our range
    of ApiVersions alone, so the client can retry with a version we know."""
    from . import SUPPORTED

    low, high = SUPPORTED[API_KEY]
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": [{"api_key": API_KEY, "min_version": low, "max_version": high}]}

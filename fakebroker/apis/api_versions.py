"""ApiVersions (key 18): what this broker speaks (the window of the Kafka release the cluster
poses as), with KIP-511's answer to versions it does not, and KIP-1242's check that a client
reached the cluster and broker it meant to (v5)."""

from __future__ import annotations

import functools
import re

from ..core.cluster_state import ClusterState
from ..core.releases import DEFAULT_RELEASE
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message, response_type
from ..protocol.primitives import EncodedOnce
from .context import RequestContext
from .registry import api, served

# Kafka's rule for client_software_name and _version (KIP-511): INVALID_REQUEST otherwise
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def advertised(kafka_version: str = DEFAULT_RELEASE) -> list[dict[str, int]]:
    return [{"api_key": key, "min_version": lo, "max_version": hi} for key, (lo, hi) in served(kafka_version).items()]


@functools.cache
def _advertised_entries(kafka_version: str) -> EncodedOnce:
    """The api_keys entries of a release, typed once and encoded once per version: every
    connection starts with an ApiVersions, and its 70-odd entries cost more than the rest of
    the answer (84 us of 90 encoding them each time)."""
    return EncodedOnce(response_type(ApiKey.API_VERSIONS).new(api_keys=advertised(kafka_version)).api_keys)


def _refusal(request: Message, version: int) -> ErrorCode | None:
    """The error Kafka answers instead of its version list, checked in Kafka's order."""
    if version >= 5 and (request.cluster_id is None) != (request.node_id == -1):
        return ErrorCode.INVALID_REQUEST  # cluster id and node id come together or not at all
    if version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name) and _SOFTWARE.fullmatch(request.client_software_version)
    ):
        return ErrorCode.INVALID_REQUEST
    return None


def handle(ctx: RequestContext, request: Message) -> Message:
    refusal = _refusal(request, ctx.api_version)
    if refusal is None and ctx.api_version >= 5 and request.cluster_id is not None:
        if request.cluster_id != ctx.cluster.cluster_id or request.node_id != ctx.broker_id:
            refusal = ErrorCode.REBOOTSTRAP_REQUIRED  # KIP-1242: not the cluster or broker it meant
    if refusal is not None:
        return ctx.response(error_code=refusal, api_keys=[], throttle_time_ms=0)
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
    response = ctx.response(
        error_code=ErrorCode.NONE,
        throttle_time_ms=0,
        supported_features=supported,
        finalized_features_epoch=features.epoch,
        finalized_features=finalized,
    )
    response.api_keys = _advertised_entries(ctx.cluster.kafka_version)  # shared (a typed field would be a copy)
    return response


def unsupported_version_response(kafka_version: str = DEFAULT_RELEASE) -> dict:
    """KIP-511: a version above ours is answered at v0 with UNSUPPORTED_VERSION and our range
    of ApiVersions alone, so the client can retry with a version we know."""
    low, high = served(kafka_version)[ApiKey.API_VERSIONS]
    return {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": int(ApiKey.API_VERSIONS), "min_version": low, "max_version": high}],
    }


def answer_depends_on(state: ClusterState) -> tuple[str, str, int, int]:
    """What a good answer depends on besides the request and the broker: the release posed as,
    the cluster's id (v5's check) and its features (each change moves their epoch)."""
    return state.kafka_version, state.cluster_id, id(state.features), state.features.epoch


API = api(
    ApiKey.API_VERSIONS,
    (0, 5),
    handle,
    too_new=unsupported_version_response,
    same_answer=answer_depends_on,  # every connection opens with one, most of them the same bytes
)

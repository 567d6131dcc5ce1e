"""DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31): Kafka without an
authorizer, which is what fakebroker is, answers them SECURITY_DISABLED (AclApis), so admin
tools get an answer instead of a closed connection."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api

NO_AUTHORIZER = "No Authorizer is configured on the broker"  # AclApis's DescribeAcls message
NO_AUTHORIZER_SHORT = "No Authorizer is configured."  # its Create/DeleteAcls message


def describe_acls(ctx: RequestContext, request: Message) -> Message:
    return ctx.response(
        error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER, resources=[], throttle_time_ms=0
    )


def create_acls(ctx: RequestContext, request: Message) -> Message:
    results = [
        {"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER_SHORT} for _ in request.creations
    ]
    return ctx.response(results=results, throttle_time_ms=0)


def delete_acls(ctx: RequestContext, request: Message) -> Message:
    results = [
        {"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER_SHORT, "matching_acls": []}
        for _ in request.filters
    ]
    return ctx.response(filter_results=results, throttle_time_ms=0)


# Kafka 4.0 removed v0 of each (KIP-896)
APIS = (
    api(ApiKey.DESCRIBE_ACLS, (1, 3), describe_acls),
    api(ApiKey.CREATE_ACLS, (1, 3), create_acls),
    api(ApiKey.DELETE_ACLS, (1, 3), delete_acls),
)

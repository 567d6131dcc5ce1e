"""DescribeUserScramCredentials (key 50): fakebroker has no SASL/SCRAM, so no user has
credentials; answered as a Kafka broker with none answers (``kafka-configs --describe
--entity-type users``, the admin client's ``describeUserScramCredentials``)."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    names = [u.name for u in request.users or []]
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            code = ErrorCode.DUPLICATE_RESOURCE
            message = f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
        else:
            code = ErrorCode.RESOURCE_NOT_FOUND
            message = f"Attempt to describe a user credential that does not exist: {name}"
        results.append({"user": name, "error_code": code, "error_message": message, "credential_infos": []})
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", results=results)


API = api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, (0, 0), handle)

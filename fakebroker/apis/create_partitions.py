"""CreatePartitions (key 37). With an authorizer, ALTER on each topic (ControllerApis): a topic
refused is answered TOPIC_AUTHORIZATION_FAILED after the duplicates, before the others."""

from __future__ import annotations

from ..core.cluster_state import TopicError
from ..core.security.acls import Operation
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import topic_check
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    results = []
    names = [t.name for t in request.topics]
    duplicated = {n for n in names if names.count(n) > 1}
    for name in dict.fromkeys(n for n in names if n in duplicated):  # Kafka answers a repeated name once
        results.append(
            {"name": name, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Duplicate topic in request."}
        )
    may_alter = topic_check(ctx, Operation.ALTER)
    refused = set()
    if may_alter is not None:
        for name in dict.fromkeys(n for n in names if n not in duplicated and not may_alter(n)):
            refused.add(name)
            results.append({"name": name, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": None})
    for t in request.topics:
        if t.name in duplicated or t.name in refused:
            continue
        out = {"name": t.name, "error_code": ErrorCode.NONE, "error_message": None}
        try:
            assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
            ctx.cluster.create_partitions(t.name, t.count, assignments, validate_only=request.validate_only)
            if not request.validate_only:
                ctx.data_changed()
        except TopicError as exc:
            out.update(error_code=exc.code, error_message=exc.message)
        results.append(out)
    return ctx.response(results=results, throttle_time_ms=0)


API = api(ApiKey.CREATE_PARTITIONS, (0, 3), handle)

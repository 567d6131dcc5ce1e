"""CreatePartitions (key 37)."""

from __future__ import annotations

from ..core.cluster_state import TopicError
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    results = []
    for t in request.topics:
        out = {"name": t.name, "error_code": ErrorCode.NONE, "error_message": None}
        try:
            assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments else None
            ctx.cluster.create_partitions(t.name, t.count, assignments, validate_only=request.validate_only)
            if not request.validate_only:
                ctx.data_changed()
        except TopicError as exc:
            out.update(error_code=exc.code, error_message=exc.message)
        results.append(out)
    return ctx.response(results=results, throttle_time_ms=0)


API = api(37, (0, 3), handle)

"""DeleteTopics (key 20): by name (v0-5) or by name or id (v6+).

With an authorizer, as Kafka's ControllerApis checks: DELETE on the cluster allows every topic;
else DESCRIBE and DELETE on each. A topic named that the principal may not describe is
TOPIC_AUTHORIZATION_FAILED whether or not it exists; one it may describe but not delete, once
it is known to exist. A topic asked by id that it may not delete is TOPIC_AUTHORIZATION_FAILED,
its name given only if it may describe it."""

from __future__ import annotations

from ..core.cluster_state import TopicError
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from ..protocol.primitives import ZERO_UUID
from .authz_topics import TOPIC_DENIED, topic_check
from .context import STEP, RequestContext, in_steps
from .registry import api


def handle(ctx: RequestContext, request: Message):
    size = len(request.topic_names if ctx.api_version < 6 else request.topics)
    return in_steps(_handle(ctx, request), size)


def _handle(ctx: RequestContext, request: Message):
    """Yields after every ``STEP`` topics (the server lets other connections run)."""
    if ctx.api_version < 6:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    else:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    results = []
    may_describe = may_delete = None  # None: every topic (no authorizer, or DELETE on the cluster)
    # DELETE on the cluster is asked quietly (``logIfDenied=false``); Kafka then asks DESCRIBE and
    # DELETE on every topic named (each denial recorded), whichever decides its answer
    if ctx.cluster.authorizer.enabled and not ctx.allowed(Operation.DELETE, ResourceType.CLUSTER, quiet=True):
        may_describe, may_delete = topic_check(ctx, Operation.DESCRIBE), topic_check(ctx, Operation.DELETE)
    denied = {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": TOPIC_DENIED}
    for done, (name, topic_id) in enumerate(wanted, 1):
        if done % STEP == 0:
            yield
        out = {"name": name, "topic_id": topic_id, "error_code": ErrorCode.NONE, "error_message": None}
        if name is None and topic_id == ZERO_UUID:
            out.update(error_code=ErrorCode.INVALID_REQUEST, error_message="Neither topic name nor id were specified.")
            results.append(ctx.item("responses", out))
            continue
        if name is None:
            topic = ctx.cluster.topics_by_id.get(topic_id)
            if topic is None:
                out.update(
                    error_code=ErrorCode.UNKNOWN_TOPIC_ID, error_message="This server does not host this topic ID."
                )
                results.append(ctx.item("responses", out))
                continue
            if may_delete is not None and may_describe is not None:
                describable, deletable = may_describe(topic.name), may_delete(topic.name)
                if not deletable:
                    # an id is no secret, but its name is only for whom may describe the topic
                    out.update(denied, name=topic.name if describable else None)
                    results.append(ctx.item("responses", out))
                    continue
            name = out["name"] = topic.name
        elif topic_id != ZERO_UUID:
            out.update(
                error_code=ErrorCode.INVALID_REQUEST, error_message="You may not specify both topic name and topic id."
            )
            results.append(ctx.item("responses", out))
            continue
        elif may_describe is not None and may_delete is not None:
            # DESCRIBE before the topic's existence, DELETE after it (both asked)
            describable, deletable = may_describe(name), may_delete(name)
            if not describable or (name in ctx.cluster.topics and not deletable):
                out.update(denied)
                results.append(ctx.item("responses", out))
                continue
        try:
            topic = ctx.cluster.delete_topic(name)
            out["topic_id"] = topic.topic_id
            ctx.data_changed()
        except TopicError as exc:
            out.update(error_code=exc.code, error_message=exc.message)
        results.append(ctx.item("responses", out))
    return ctx.response(responses=results, throttle_time_ms=0)


API = api(ApiKey.DELETE_TOPICS, (0, 6), handle)

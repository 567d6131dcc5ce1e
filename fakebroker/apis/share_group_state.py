"""The share coordinator's APIs (keys 83-87): Initialize, Read, Write, Delete and ReadSummary of
share-group state. Kafka's brokers call them on each other (CLUSTER_ACTION); here the data path
uses the store directly, and these answer whoever asks, from the same store
(core/groups/share/state.py), on the broker that leads the key's ``__share_group_state``
partition (NOT_COORDINATOR elsewhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.groups.placement import SHARE_STATE_TOPIC, partition_for, share_state_key
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api
from .share_common import share_enabled

PartitionAnswer = Callable[[Any, tuple], dict[str, Any]]


def _each(ctx: RequestContext, request: Message, answer: PartitionAnswer, blank: dict[str, Any]) -> Message:
    """Run ``answer`` for every partition that passes the share coordinator's common checks."""
    cluster = ctx.cluster
    topic = cluster.topics.get(SHARE_STATE_TOPIC)
    results = []
    for t in request.topics:
        parts = []
        known = cluster.topics_by_id.get(t.topic_id)
        for p in t.partitions:
            out = {"partition": p.partition, "error_code": ErrorCode.NONE, "error_message": None, **blank}
            key = (request.group_id, t.topic_id, p.partition)
            epochs = [getattr(p, a) for a in ("state_epoch", "leader_epoch") if hasattr(p, a)]
            if not share_enabled(cluster):
                out["error_code"] = ErrorCode.UNSUPPORTED_VERSION
            elif not request.group_id or p.partition < 0 or any(e < -1 for e in epochs):
                out["error_code"] = ErrorCode.INVALID_REQUEST
            elif (
                topic is None
                or topic.partitions[partition_for(share_state_key(*key), len(topic.partitions))].leader != ctx.broker_id
            ):
                out["error_code"] = ErrorCode.NOT_COORDINATOR
            elif known is None or not 0 <= p.partition < len(known.partitions):
                out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                out.update(answer(p, key))
            parts.append(out)
        results.append({"topic_id": t.topic_id, "partitions": parts})
    return ctx.response(results=results)


def _code(error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"error_code": error, "error_message": message}


def initialize(ctx: RequestContext, request: Message) -> Message:
    store = ctx.cluster.groups.share_states
    return _each(
        ctx, request, lambda p, key: _code(*store.initialize(key, p.start_offset, p.state_epoch, ctx.now_ms)), {}
    )


def read(ctx: RequestContext, request: Message) -> Message:
    store = ctx.cluster.groups.share_states

    def answer(p: Any, key: tuple) -> dict[str, Any]:
        error, message, state = store.read(key, p.leader_epoch)
        if error or state is None:
            return _code(error, message)
        return {
            "state_epoch": state.state_epoch,
            "start_offset": state.start_offset,
            "state_batches": [
                {"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
                for f, last, s, c in state.batches
            ],
        }

    return _each(ctx, request, answer, {"state_epoch": 0, "start_offset": -1, "state_batches": []})


def write(ctx: RequestContext, request: Message) -> Message:
    store = ctx.cluster.groups.share_states
    v1 = ctx.api_version >= 1

    def answer(p: Any, key: tuple) -> dict[str, Any]:
        batches = [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches]
        complete = p.delivery_complete_count if v1 else -1
        return _code(*store.write(key, p.leader_epoch, p.state_epoch, p.start_offset, batches, complete, ctx.now_ms))

    return _each(ctx, request, answer, {})


def delete(ctx: RequestContext, request: Message) -> Message:
    store = ctx.cluster.groups.share_states

    def answer(p: Any, key: tuple) -> dict[str, Any]:
        store.delete(key)
        return {}

    return _each(ctx, request, answer, {})


def read_summary(ctx: RequestContext, request: Message) -> Message:
    store = ctx.cluster.groups.share_states

    def answer(p: Any, key: tuple) -> dict[str, Any]:
        state = store.summary(key)
        if state is None:  # never initialized: Kafka answers -1s, not an error
            return {}
        return {
            "state_epoch": state.state_epoch,
            "leader_epoch": max(state.leader_epoch, 0),
            "start_offset": state.start_offset,
            "delivery_complete_count": state.delivery_complete_count,
        }

    blank = {"state_epoch": 0, "leader_epoch": 0, "start_offset": -1, "delivery_complete_count": -1}
    return _each(ctx, request, answer, blank)


INITIALIZE = api(ApiKey.INITIALIZE_SHARE_GROUP_STATE, (0, 0), initialize)
READ = api(ApiKey.READ_SHARE_GROUP_STATE, (0, 0), read)
WRITE = api(ApiKey.WRITE_SHARE_GROUP_STATE, (0, 1), write)
DELETE = api(ApiKey.DELETE_SHARE_GROUP_STATE, (0, 0), delete)
READ_SUMMARY = api(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, (0, 1), read_summary)

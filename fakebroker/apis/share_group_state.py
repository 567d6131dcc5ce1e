"""The share coordinator's APIs (keys 83-87): Initialize, Read, Write, Delete and ReadSummary of
share-group state. Kafka's brokers call them on each other (CLUSTER_ACTION); here the data path
uses the store directly, and these answer whoever asks, from the same store
(core/groups/share/state.py), on the broker that leads the key's ``__share_group_state``
partition (NOT_COORDINATOR elsewhere).

The checks run in Kafka's order (ShareCoordinatorShard ``maybeGet*Error``): an empty group id
gets no results at all; then, per partition, a negative partition, negative epochs, an
uninitialized key (Read and Write), the epoch fences, and last the topic's metadata (Read and
Write check it only for initialized keys). Error entries carry Kafka's messages and the
response's field defaults (start offset 0).

With an authorizer, they need CLUSTER_ACTION on the cluster, checked first (Kafka's
``authorizeClusterOperation``): every partition CLUSTER_AUTHORIZATION_FAILED with Kafka's
default text (``getErrorResponse``), whatever else is wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.groups.placement import SHARE_STATE_TOPIC, partition_for, share_state_key
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import MESSAGES, denied
from .context import RequestContext
from .registry import api
from .share_common import UNKNOWN_TOPIC_OR_PARTITION_MESSAGE, share_enabled

if TYPE_CHECKING:
    from ..core.groups.share.state import ShareState

NEGATIVE_PARTITION = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."


class Refused(Exception):
    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code = code
        self.message = message


PartitionAnswer = Callable[[Any, tuple, bool], dict[str, Any]]


def _each(ctx: RequestContext, request: Message, answer: PartitionAnswer, error_blank: dict[str, Any]) -> Message:
    """Run ``answer(partition, key, topic known)`` for every partition past the common checks;
    it raises :class:`Refused` for an error entry."""
    cluster = ctx.cluster
    refused = denied(ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER)
    if not refused and share_enabled(cluster) and not request.group_id:
        return ctx.response(results=[])
    topic = cluster.topics.get(SHARE_STATE_TOPIC)
    results = []
    for t in request.topics:
        parts = []
        known = cluster.topics_by_id.get(t.topic_id)
        for p in t.partitions:
            out = {"partition": p.partition, "error_code": ErrorCode.NONE, "error_message": None}
            key = (request.group_id, t.topic_id, p.partition)
            try:
                if refused:
                    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    raise Refused(code, MESSAGES[code])
                if not share_enabled(cluster):
                    raise Refused(ErrorCode.UNSUPPORTED_VERSION, None)
                if (
                    topic is None
                    or topic.partitions[partition_for(share_state_key(*key), len(topic.partitions))].leader
                    != ctx.broker_id
                ):
                    raise Refused(ErrorCode.NOT_COORDINATOR, None)
                if p.partition < 0:
                    raise Refused(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
                out.update(answer(p, key, known is not None and p.partition < len(known.partitions)))
            except Refused as exc:
                out.update(error_blank, error_code=exc.code, error_message=exc.message)
            parts.append(out)
        results.append({"topic_id": t.topic_id, "partitions": parts})
    return ctx.response(results=results)


def _topic(known: bool) -> None:
    if not known:
        raise Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)


def _initialized(stored: ShareState | None, message: str) -> ShareState:
    if stored is None:
        raise Refused(ErrorCode.INVALID_REQUEST, message)
    return stored


def _code(error: ErrorCode, message: str | None) -> dict[str, Any]:
    if error:
        raise Refused(error, message)
    return {}


def initialize(ctx: RequestContext, request: Message) -> Message:
    # the share core's messages are read at the first request: a cluster without share groups never needs it
    from ..core.groups.share.state import FENCED_STATE_EPOCH_MESSAGE

    store = ctx.cluster.groups.share_states

    def answer(p: Any, key: tuple, known: bool) -> dict[str, Any]:
        if p.state_epoch < 0:
            raise Refused(ErrorCode.INVALID_REQUEST, NEGATIVE_STATE_EPOCH)
        stored = store.summary(key)
        if stored is not None and stored.state_epoch > p.state_epoch:
            raise Refused(ErrorCode.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MESSAGE)
        _topic(known)
        return _code(*store.initialize(key, p.start_offset, p.state_epoch, ctx.now_ms))

    return _each(ctx, request, answer, {})


def read(ctx: RequestContext, request: Message) -> Message:
    from ..core.groups.share.state import FENCED_LEADER_EPOCH_MESSAGE, READ_UNINITIALIZED

    store = ctx.cluster.groups.share_states

    def answer(p: Any, key: tuple, known: bool) -> dict[str, Any]:
        if p.leader_epoch < 0:
            raise Refused(ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH)
        stored = _initialized(store.summary(key), READ_UNINITIALIZED)
        if stored.leader_epoch > p.leader_epoch:
            raise Refused(ErrorCode.FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH_MESSAGE)
        _topic(known)
        error, message, state = store.read(key, p.leader_epoch)
        if error or state is None:
            raise Refused(error, message)
        return {
            "state_epoch": state.state_epoch,
            "start_offset": state.start_offset,
            "state_batches": [
                {"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
                for f, last, s, c in state.batches
            ],
        }

    return _each(ctx, request, answer, {"state_epoch": 0, "start_offset": 0, "state_batches": []})


def write(ctx: RequestContext, request: Message) -> Message:
    from ..core.groups.share.state import FENCED_LEADER_EPOCH_MESSAGE, FENCED_STATE_EPOCH_MESSAGE, WRITE_UNINITIALIZED

    store = ctx.cluster.groups.share_states
    v1 = ctx.api_version >= 1

    def answer(p: Any, key: tuple, known: bool) -> dict[str, Any]:
        if p.leader_epoch < 0:
            raise Refused(ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH)
        if p.state_epoch < 0:
            raise Refused(ErrorCode.INVALID_REQUEST, NEGATIVE_STATE_EPOCH)
        stored = _initialized(store.summary(key), WRITE_UNINITIALIZED)
        if stored.leader_epoch > p.leader_epoch:
            raise Refused(ErrorCode.FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH_MESSAGE)
        if stored.state_epoch > p.state_epoch:
            raise Refused(ErrorCode.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MESSAGE)
        _topic(known)
        batches = [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches]
        complete = p.delivery_complete_count if v1 else -1
        return _code(*store.write(key, p.leader_epoch, p.state_epoch, p.start_offset, batches, complete, ctx.now_ms))

    return _each(ctx, request, answer, {})


def delete(ctx: RequestContext, request: Message) -> Message:
    store = ctx.cluster.groups.share_states

    def answer(p: Any, key: tuple, known: bool) -> dict[str, Any]:
        _topic(known)
        store.delete(key)
        return {}

    return _each(ctx, request, answer, {})


def read_summary(ctx: RequestContext, request: Message) -> Message:
    store = ctx.cluster.groups.share_states

    def answer(p: Any, key: tuple, known: bool) -> dict[str, Any]:
        _topic(known)
        state = store.summary(key)
        if state is None:  # never initialized: Kafka answers -1s, not an error
            return {"state_epoch": 0, "leader_epoch": 0, "start_offset": -1, "delivery_complete_count": -1}
        return {
            "state_epoch": state.state_epoch,
            "leader_epoch": max(state.leader_epoch, 0),
            "start_offset": state.start_offset,
            "delivery_complete_count": state.delivery_complete_count,
        }

    blank = {"state_epoch": 0, "leader_epoch": 0, "start_offset": 0, "delivery_complete_count": -1}
    return _each(ctx, request, answer, blank)


INITIALIZE = api(ApiKey.INITIALIZE_SHARE_GROUP_STATE, (0, 0), initialize)
READ = api(ApiKey.READ_SHARE_GROUP_STATE, (0, 0), read)
WRITE = api(ApiKey.WRITE_SHARE_GROUP_STATE, (0, 1), write)
DELETE = api(ApiKey.DELETE_SHARE_GROUP_STATE, (0, 0), delete)
READ_SUMMARY = api(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, (0, 1), read_summary)

"""TxnOffsetCommit (key 28): offsets committed in a producer's transaction (KIP-98), checked
against the group as the producer last saw it (KIP-447: a zombie whose generation or member
is gone is refused), pending until the transaction's marker. v5 (transaction version 2)
adds the group's offsets partition to the transaction itself; older versions need
AddOffsetsToTxn first and are verified against it.

With an authorizer, KafkaApis' checks come first: WRITE on the transactional id, then READ on
the group (each failing every partition), then READ on each topic (after an unknown topic id,
before the topic's existence: TOPIC_AUTHORIZATION_FAILED on its partitions)."""

from __future__ import annotations

from collections.abc import Iterator

from ..core import events as ev
from ..core.groups.placement import OFFSETS_TOPIC
from ..core.groups.requests import CommitRequest
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import topic_check
from .common import checked_partitions, offsets_to_commit
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    may_read = topic_check(ctx, Operation.READ)
    if may_read is not None:
        if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return _refused(ctx, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
            return _refused(ctx, request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    checked = checked_partitions(ctx.cluster, request.topics, by_id=v >= 6)  # v6: topics by id (KIP-1319)
    if may_read is not None:
        denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        checked = [
            (t, name, p, denied if name is not None and not may_read(name) else error) for t, name, p, error in checked
        ]
    wanted = offsets_to_commit(checked, leader_epochs=v >= 2)
    errors: Iterator[ErrorCode] = iter(())
    if wanted:  # unknown topics and partitions are answered without asking the group
        commit = CommitRequest(
            group_id=request.group_id,
            member_id=request.member_id if v >= 3 else "",
            group_instance_id=request.group_instance_id if v >= 3 else None,
            generation_id=request.generation_id_or_member_epoch if v >= 3 else -1,
            version=v,
            transactional=True,
            precise_errors=v >= 6,
        )
        errors = iter(
            ctx.cluster.groups.commit_in_txn(
                ctx.now_ms, ctx.broker_id, commit, request.producer_id, wanted, lambda: _verify(ctx, request)
            )
        )
    out: dict[int, dict] = {}
    committed: dict[str, int] = {}
    for t, name, p, error in checked:
        if not error:
            error = next(errors)
            if not error:
                committed[f"{name}-{p.partition_index}"] = p.committed_offset
        entry = out.setdefault(id(t), {"name": t.name, "topic_id": t.topic_id, "partitions": []})
        entry["partitions"].append({"partition_index": p.partition_index, "error_code": error})
    if committed:
        ctx.cluster.transactions.events.append(  # placed on the id's coordinator
            ev.TxnOffsetsAdded(transactional_id=request.transactional_id, group=request.group_id, offsets=committed),
            ctx.now_ms,
        )
    return ctx.response(topics=list(out.values()), throttle_time_ms=0)


def _refused(ctx: RequestContext, request: Message, error: ErrorCode) -> Message:
    """Every partition of the request with ``error`` (TxnOffsetCommitRequest.getErrorResponse)."""
    topics = [
        {
            "name": t.name,
            "topic_id": t.topic_id,
            "partitions": [{"partition_index": p.partition_index, "error_code": error} for p in t.partitions],
        }
        for t in request.topics
    ]
    return ctx.response(topics=topics, throttle_time_ms=0)


def _verify(ctx: RequestContext, request: Message) -> ErrorCode:
    """A transactional id, and a transaction that holds the group's offsets partition (v5 adds
    it), as the partition's leader asks the transaction coordinator (KIP-890)."""
    if not request.transactional_id:
        return ErrorCode.INVALID_REQUEST
    cluster = ctx.cluster
    v = ctx.api_version
    tp = (OFFSETS_TOPIC, cluster.groups.partition_of(request.group_id))
    error = cluster.ask_txn_coordinator(
        request.transactional_id, request.producer_id, request.producer_epoch, tp, ctx.now_ms, adds=v >= 5
    )
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error == ErrorCode.TRANSACTION_ABORTABLE and v <= 3:
        return ErrorCode.INVALID_TXN_STATE
    return error


API = api(ApiKey.TXN_OFFSET_COMMIT, (0, 6), handle)

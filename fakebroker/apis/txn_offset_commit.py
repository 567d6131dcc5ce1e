"""TxnOffsetCommit (key 28): offsets committed in a producer's transaction (KIP-98), checked
against the group as the producer last saw it (KIP-447: a zombie whose generation or member
is gone is refused), pending until the transaction's marker. v5 (transaction version 2)
adds the group's offsets partition to the transaction itself; older versions need
AddOffsetsToTxn first and are verified against it."""

from __future__ import annotations

from ..core import events as ev
from ..core.groups.placement import OFFSETS_TOPIC
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .common import checked_partitions, coordinator_error
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    v = ctx.api_version
    checked = checked_partitions(cluster, request.topics, by_id=v >= 6)  # v6: topics by id (KIP-1319)
    group_error = ErrorCode.NONE
    if any(not e for *_, e in checked):
        group_error = _group_error(ctx, request) or _stale_partition(ctx, request, checked)
    out: dict[int, dict] = {}
    committed: dict[str, int] = {}
    for t, name, p, error in checked:
        if not error:
            error = group_error or cluster.offsets.commit_in_txn(
                ctx.now_ms,
                request.group_id,
                request.producer_id,
                name,
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch if v >= 2 else -1,
                p.committed_metadata,
            )
            if not error:
                committed[f"{name}-{p.partition_index}"] = p.committed_offset
        entry = out.setdefault(id(t), {"name": t.name, "topic_id": t.topic_id, "partitions": []})
        entry["partitions"].append({"partition_index": p.partition_index, "error_code": error})
    if committed:
        cluster.events.append(
            ev.TxnOffsetsAdded(transactional_id=request.transactional_id, group=request.group_id, offsets=committed),
            ctx.now_ms,
        )
    return ctx.response(topics=list(out.values()), throttle_time_ms=0)


def _group_error(ctx: RequestContext, request: Message) -> ErrorCode:
    cluster = ctx.cluster
    v = ctx.api_version
    group_id, tid = request.group_id, request.transactional_id
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID
    error = coordinator_error(ctx, group_id)
    if error:
        return error
    if not tid:
        return ErrorCode.INVALID_REQUEST
    error = _verify(ctx, request)
    if error:
        return error
    return cluster.offsets.validate_txn_commit(
        ctx.now_ms,
        group_id=group_id,
        member_id=request.member_id if v >= 3 else "",
        group_instance_id=request.group_instance_id if v >= 3 else None,
        generation_id=request.generation_id_or_member_epoch if v >= 3 else -1,
        precise_errors=v >= 6,
    )


def _stale_partition(ctx: RequestContext, request: Message, checked: list) -> ErrorCode:
    """A KIP-848 member's older epoch passes for partitions it has held since then; one it has
    not fails the whole request (Kafka throws from its per-partition validator)."""
    v = ctx.api_version
    if v < 3:
        return ErrorCode.NONE
    for _, name, p, error in checked:
        if not error:
            stale = ctx.cluster.offsets.validate_partition_commit(
                request.group_id, request.member_id, request.generation_id_or_member_epoch, name, p.partition_index
            )
            if stale:  # before v6 STALE_MEMBER_EPOCH is answered ILLEGAL_GENERATION
                return stale if v >= 6 else ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE


def _verify(ctx: RequestContext, request: Message) -> ErrorCode:
    """The transaction must hold the group's offsets partition (v5 adds it), as the partition's
    leader asks the transaction coordinator (KIP-890)."""
    cluster = ctx.cluster
    v = ctx.api_version
    tp = (OFFSETS_TOPIC, cluster.group_partition(request.group_id))
    error = cluster.ask_txn_coordinator(
        request.transactional_id, request.producer_id, request.producer_epoch, tp, ctx.now_ms, adds=v >= 5
    )
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error == ErrorCode.TRANSACTION_ABORTABLE and v <= 3:
        return ErrorCode.INVALID_TXN_STATE
    return error


API = api(28, (0, 6), handle)

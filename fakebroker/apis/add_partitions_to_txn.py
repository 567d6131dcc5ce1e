"""AddPartitionsToTxn (key 24): a producer adds partitions to its transaction (v0-3, clients),
or a partition leader verifies or adds them (v4+, batched by transactional id, KIP-890).

A partition that does not exist (or an internal topic's, which no client may write) fails
the lot: nothing is added, the failed ones carry their error and the others
OPERATION_NOT_ATTEMPTED. Otherwise the coordinator answers one error for all of them.
"""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    if v < 4:
        results = _one(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            request.v3_and_below_topics,
            verify_only=False,
        )
        return ctx.response(results_by_topic_v3_and_below=results, throttle_time_ms=0)
    if any(t.transactional_id is None for t in request.transactions):
        return ctx.response(error_code=ErrorCode.INVALID_REQUEST, results_by_transaction=[], throttle_time_ms=0)
    by_txn = [
        {
            "transactional_id": t.transactional_id,
            "topic_results": _one(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only),
        }
        for t in request.transactions
    ]
    return ctx.response(error_code=ErrorCode.NONE, results_by_transaction=by_txn, throttle_time_ms=0)


def _one(ctx: RequestContext, tid: str | None, pid: int, epoch: int, topics, verify_only: bool) -> list[dict]:
    cluster = ctx.cluster
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    errors: dict[tuple[str, int], ErrorCode] = {}
    for name, index in wanted:
        topic = cluster.topics.get(name)
        if topic is not None and topic.internal and ctx.api_version < 4:
            errors[(name, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif cluster.partition(name, index) is None:
            errors[(name, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not tid:
        result = dict.fromkeys(wanted, ErrorCode.INVALID_REQUEST)
    elif errors:
        result = {tp: errors.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    else:
        error = cluster.transactions.placement.error_for(tid, ctx.broker_id)
        if error:
            result = dict.fromkeys(wanted, error)
        elif verify_only:
            result = cluster.transactions.verify_partitions(tid, pid, epoch, wanted)
        else:
            # v4+ (a partition leader adding for a Produce v12+) is transaction version 2
            version = 2 if ctx.api_version >= 4 else 1
            one = cluster.transactions.add_partitions(tid, pid, epoch, wanted, ctx.now_ms, version=version)
            result = dict.fromkeys(wanted, one)
    if ctx.api_version < 2:
        result = {
            tp: ErrorCode.INVALID_PRODUCER_EPOCH if e == ErrorCode.PRODUCER_FENCED else e for tp, e in result.items()
        }
    out: dict[str, dict] = {}
    for (name, index), error in result.items():
        entry = out.setdefault(name, {"name": name, "results_by_partition": []})
        entry["results_by_partition"].append({"partition_index": index, "partition_error_code": error})
    return list(out.values())


API = api(ApiKey.ADD_PARTITIONS_TO_TXN, (0, 5), handle)

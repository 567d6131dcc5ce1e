"""AddPartitionsToTxn (key 24): a producer adds partitions to its transaction (v0-3, clients),
or a partition leader verifies or adds them (v4+, batched by transactional id, KIP-890).

A partition that does not exist (or an internal topic's, which no client may write) fails
the lot: nothing is added, the failed ones carry their error and the others
OPERATION_NOT_ATTEMPTED. Otherwise the coordinator answers one error for all of them.

With an authorizer, as KafkaApis checks: a client's request (v0-3) needs WRITE on the
transactional id (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and WRITE on each
topic (else TOPIC_AUTHORIZATION_FAILED, failing the lot as above); a broker's (v4+) needs
CLUSTER_ACTION on the cluster (else CLUSTER_AUTHORIZATION_FAILED for the whole request).
"""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import INTERNAL_TOPICS, TopicCheck, topic_check
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    may_write = topic_check(ctx, Operation.WRITE)
    if v < 4:
        tid = request.v3_and_below_transactional_id
        if may_write is not None and not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
            denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
            results = _by_topic(dict.fromkeys(wanted, denied))
        else:
            results = _one(
                ctx,
                tid,
                request.v3_and_below_producer_id,
                request.v3_and_below_producer_epoch,
                request.v3_and_below_topics,
                verify_only=False,
                may_write=may_write,
            )
        return ctx.response(results_by_topic_v3_and_below=results, throttle_time_ms=0)
    if may_write is not None and not ctx.allowed(Operation.CLUSTER_ACTION, ResourceType.CLUSTER):
        # only brokers send v4+ (AuthHelper.authorizeClusterOperation, before anything else)
        return ctx.response(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=[], throttle_time_ms=0
        )
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


def _one(
    ctx: RequestContext,
    tid: str | None,
    pid: int,
    epoch: int,
    topics,
    verify_only: bool,
    may_write: TopicCheck | None = None,
) -> list[dict]:
    """One transaction's answer; ``may_write``: WRITE on a topic (a client's request, with an
    authorizer), asked before the partition's existence."""
    cluster = ctx.cluster
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    errors: dict[tuple[str, int], ErrorCode] = {}
    client = ctx.api_version < 4
    for name, index in wanted:
        topic = cluster.topics.get(name)
        if client and (name in INTERNAL_TOPICS or (topic is not None and topic.internal)):
            # KafkaApis leaves internal topics out of the topics it authorizes: never allowed
            errors[(name, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif client and may_write is not None and not may_write(name):
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
    return _by_topic(result)


def _by_topic(result: dict[tuple[str, int], ErrorCode]) -> list[dict]:
    """Each partition's error, grouped by topic as the answer's topic results."""
    out: dict[str, dict] = {}
    for (name, index), error in result.items():
        entry = out.setdefault(name, {"name": name, "results_by_partition": []})
        entry["results_by_partition"].append({"partition_index": index, "partition_error_code": error})
    return list(out.values())


API = api(ApiKey.ADD_PARTITIONS_TO_TXN, (0, 5), handle)

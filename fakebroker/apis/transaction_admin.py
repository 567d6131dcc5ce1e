"""DescribeTransactions (key 65), ListTransactions (key 66) and DescribeProducers (key 61):
what the admin client's ``describeTransactions``, ``listTransactions`` and
``describeProducers`` read. Each broker answers for the transactional ids it coordinates
and the partitions it leads, as Kafka's do."""

from __future__ import annotations

from ..core.cluster_state import topic_name_error
from ..core.security.acls import Operation, ResourceType
from ..core.transactions.model import STATE_NAMES, TxnState
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import TOPIC_DENIED, topic_check
from .common import led_partition
from .context import RequestContext
from .registry import api

UNKNOWN_PARTITION = "This server does not host this topic-partition."  # Kafka's message with the error


def describe_transactions(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    states = []
    # With an authorizer: DESCRIBE on each transactional id, before anything else about it, and
    # of its partitions only those of topics the principal may describe
    may_describe = topic_check(ctx, Operation.DESCRIBE)
    for tid in request.transactional_ids:
        base = {"transactional_id": tid, "transaction_state": "", "transaction_timeout_ms": 0}
        # an id with an error keeps the message's defaults (0), as Kafka answers it
        base.update(transaction_start_time_ms=0, producer_id=0, producer_epoch=0, topics=[])
        if may_describe is not None and not ctx.allowed(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            states.append({**base, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
            continue
        error = cluster.transactions.placement.error_for(tid, ctx.broker_id) if tid else ErrorCode.INVALID_REQUEST
        txn = cluster.transactions.txns.get(tid) if not error else None
        if not error and txn is None:
            error = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        if error or txn is None:
            states.append({**base, "error_code": error})
            continue
        topics: dict[str, list[int]] = {}
        for name, index in sorted(txn.partitions):
            if may_describe is None or may_describe(name):
                topics.setdefault(name, []).append(index)
        states.append(
            {
                **base,
                "error_code": ErrorCode.NONE,
                "transaction_state": STATE_NAMES[txn.state],
                "transaction_timeout_ms": txn.timeout_ms,
                "transaction_start_time_ms": txn.start_ms,
                "producer_id": txn.producer_id,
                "producer_epoch": txn.producer_epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            }
        )
    return ctx.response(transaction_states=states, throttle_time_ms=0)


def list_transactions(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    v = ctx.api_version
    names = {name: state for state, name in STATE_NAMES.items()}
    unknown = [s for s in request.state_filters if s not in names]
    wanted_states = {names[s] for s in request.state_filters if s in names}
    wanted_pids = set(request.producer_id_filters)
    duration = request.duration_filter if v >= 1 else -1
    pattern = request.transactional_id_pattern if v >= 2 else None
    if pattern:
        import re2  # only here: importing it costs every start 3 ms

        try:
            matcher = re2.compile(pattern)
        except re2.error:
            return ctx.response(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION, throttle_time_ms=0)
    placement = cluster.transactions.placement
    if placement.loading_until_ms and placement.is_loading(
        {p.index for p in placement.topic().partitions if p.leader == ctx.broker_id}
    ):
        return ctx.response(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, throttle_time_ms=0)
    out = []
    if request.state_filters and not wanted_states:
        return ctx.response(error_code=ErrorCode.NONE, unknown_state_filters=unknown, transaction_states=[])
    checked = cluster.authorizer.enabled  # with an authorizer, only the ids the principal may describe
    for tid, txn in sorted(cluster.transactions.txns.items()):
        if placement.coordinator_of(tid) != ctx.broker_id or txn.state == TxnState.DEAD:
            continue
        if checked and not ctx.allowed(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            continue
        if wanted_states and txn.state not in wanted_states:
            continue
        if wanted_pids and txn.producer_id not in wanted_pids:
            continue
        if duration >= 0 and ctx.now_ms - txn.start_ms <= duration:  # Kafka applies it to any state
            continue
        if pattern and not matcher.fullmatch(tid):
            continue
        out.append(
            {"transactional_id": tid, "producer_id": txn.producer_id, "transaction_state": STATE_NAMES[txn.state]}
        )
    return ctx.response(
        error_code=ErrorCode.NONE, unknown_state_filters=unknown, transaction_states=out, throttle_time_ms=0
    )


def describe_producers(ctx: RequestContext, request: Message) -> Message:
    topics = []
    # With an authorizer, READ on each topic (a legal name's), before its existence
    may_read = topic_check(ctx, Operation.READ)
    for t in request.topics:
        if may_read is not None and not topic_name_error(t.name) and not may_read(t.name):
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            parts = [
                {"partition_index": i, "error_code": denied, "error_message": TOPIC_DENIED, "active_producers": []}
                for i in t.partition_indexes
            ]
            topics.append({"name": t.name, "partitions": parts})
            continue
        parts = []
        for index in t.partition_indexes:
            partition, error = led_partition(ctx, t.name, index)
            active = []
            if not error and partition is not None:
                for pid, entry in sorted(partition.producers.entries.items()):
                    active.append(
                        {
                            "producer_id": pid,
                            "producer_epoch": entry.epoch,
                            "last_sequence": entry.last_seq if entry.last_seq is not None else -1,
                            "last_timestamp": entry.last_timestamp,
                            "coordinator_epoch": entry.coordinator_epoch,
                            "current_txn_start_offset": partition.log.open_txns.get(pid, -1),
                        }
                    )
            # Kafka names the reason for an unknown topic, not for a missing partition of a known one
            message = UNKNOWN_PARTITION if t.name not in ctx.cluster.topics else None
            parts.append(
                {"partition_index": index, "error_code": error, "error_message": message, "active_producers": active}
            )
        topics.append({"name": t.name, "partitions": parts})
    return ctx.response(topics=topics, throttle_time_ms=0)


APIS = (
    api(ApiKey.DESCRIBE_PRODUCERS, (0, 0), describe_producers),
    api(ApiKey.DESCRIBE_TRANSACTIONS, (0, 0), describe_transactions),
    api(ApiKey.LIST_TRANSACTIONS, (0, 2), list_transactions),
)

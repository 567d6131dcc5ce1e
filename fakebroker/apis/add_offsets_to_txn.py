"""AddOffsetsToTxn (key 25): the group's ``__consumer_offsets`` partition joins the transaction,
so the offsets the producer then commits (TxnOffsetCommit) become visible with it. The group
itself is not checked here, only (with an authorizer) READ on it, after WRITE on the
transactional id."""

from __future__ import annotations

from ..core.groups.placement import OFFSETS_TOPIC
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    tid = request.transactional_id
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):  # KafkaApis' checks, first
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif not tid:
        error = ErrorCode.INVALID_REQUEST
    else:
        error = cluster.transactions.placement.error_for(tid, ctx.broker_id)
    if not error:
        offsets_partition = (OFFSETS_TOPIC, cluster.groups.partition_of(request.group_id or ""))
        error = cluster.transactions.add_partitions(
            tid, request.producer_id, request.producer_epoch, [offsets_partition], ctx.now_ms
        )
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return ctx.response(error_code=error, throttle_time_ms=0)


API = api(ApiKey.ADD_OFFSETS_TO_TXN, (0, 4), handle)

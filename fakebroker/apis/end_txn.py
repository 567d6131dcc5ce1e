"""EndTxn (key 26): commit or abort. v5 is transaction version 2 (KIP-890): the epoch is bumped
at every end and the answer carries the id and epoch the producer goes on with."""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    tid = request.transactional_id
    pid = epoch = -1
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):  # KafkaApis' first check
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not tid:
        error = ErrorCode.INVALID_REQUEST
    else:
        error = cluster.transactions.placement.error_for(tid, ctx.broker_id)
    if not error:
        result = cluster.transactions.end_txn(
            tid,
            request.producer_id,
            request.producer_epoch,
            request.committed,
            ctx.now_ms,
            version=2 if ctx.api_version >= 5 else 1,
        )
        error, pid, epoch = result.error, result.producer_id, result.producer_epoch
        ctx.data_changed()  # markers move last stable offsets: read_committed fetches may complete
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    if error:
        pid = epoch = -1
    return ctx.response(error_code=error, throttle_time_ms=0, producer_id=pid, producer_epoch=epoch)


API = api(ApiKey.END_TXN, (0, 5), handle)

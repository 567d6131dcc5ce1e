"""InitProducerId (key 22): producer ids and epochs for idempotent and transactional producers.

Checks in Kafka's order (KafkaApis then TransactionCoordinator): with an authorizer, WRITE on
the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), or for an idempotent producer
IDEMPOTENT_WRITE on the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED); then the
id/epoch pair, the transactional id, the timeout (before the coordinator: an invalid timeout wins over
NOT_COORDINATOR), then the coordinator and its state.
"""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    def answer(error: ErrorCode, pid: int = -1, epoch: int = -1) -> Message:
        if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 4:
            error = ErrorCode.INVALID_PRODUCER_EPOCH  # PRODUCER_FENCED is new in v4
        return ctx.response(error_code=error, producer_id=pid, producer_epoch=epoch, throttle_time_ms=0)

    v = ctx.api_version
    tid = request.transactional_id
    cluster = ctx.cluster
    if cluster.authorizer.enabled:
        if tid is not None:
            # (v6's Enable2Pc would need TWO_PHASE_COMMIT too; v6 is not served)
            if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
                return answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif not ctx.allowed(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, quiet=True) and not ctx.allowed_any(
            Operation.WRITE, ResourceType.TOPIC
        ):
            # neither is recorded: KafkaApis asks IDEMPOTENT_WRITE with ``logIfDenied=false``, and
            # authorizeByResourceType's own check is quiet too
            return answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    pid, epoch = (request.producer_id, request.producer_epoch) if v >= 3 else (-1, -1)
    if (pid == -1) != (epoch == -1):
        return answer(ErrorCode.INVALID_REQUEST)
    if tid is None:
        return answer(*cluster.init_producer_id(None, now_ms=ctx.now_ms))
    if not tid:
        return answer(ErrorCode.INVALID_REQUEST)
    if v >= 6 and request.keep_prepared_txn:
        return answer(ErrorCode.UNSUPPORTED_VERSION)  # two-phase commit (KIP-939) is not implemented in 4.x either
    if not cluster.transactions.valid_timeout(request.transaction_timeout_ms):
        return answer(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    error = cluster.transactions.placement.error_for(tid, ctx.broker_id)
    if error:
        return answer(error)
    result = cluster.init_producer_id(tid, pid, epoch, timeout_ms=request.transaction_timeout_ms, now_ms=ctx.now_ms)
    ctx.data_changed()  # fencing an open transaction writes its abort markers
    return answer(*result)


# v6 is unstable in 4.3.1 and not advertised by Kafka either
API = api(ApiKey.INIT_PRODUCER_ID, (0, 5), handle)

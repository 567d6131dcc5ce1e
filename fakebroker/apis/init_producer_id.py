"""InitProducerId (key 22): producer ids and epochs for idempotent (and transactional) producers."""

from __future__ import annotations

from ..protocol.messages import Message
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    error, pid, epoch = ctx.cluster.init_producer_id(
        request.transactional_id, request.producer_id, request.producer_epoch
    )
    return ctx.response(error_code=error, producer_id=pid, producer_epoch=epoch, throttle_time_ms=0)


# v6 is unstable in 4.3.1 and not advertised by Kafka either
API = api(22, (0, 5), handle)

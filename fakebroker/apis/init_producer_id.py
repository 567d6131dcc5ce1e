"""InitProducerId (key 22): producer ids and epochs for idempotent (and transactional) producers."""

from __future__ import annotations

from ..protocol.messages import Message
from .context import RequestContext


def handle(ctx: RequestContext, request: Message) -> Message:
    error, pid, epoch = ctx.cluster.producer_ids.init(request.transactional_id, request.producer_id, request.producer_epoch)
    if not error:
        ctx.note("producer_id", producer_id=pid, epoch=epoch, transactional_id=request.transactional_id)
    return ctx.response(error_code=error, producer_id=pid, producer_epoch=epoch, throttle_time_ms=0)

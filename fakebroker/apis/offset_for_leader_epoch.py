"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, used by consumers to
detect log truncation after a leader change."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .common import led_partition
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            out = {"partition": p.partition, "error_code": ErrorCode.NONE, "leader_epoch": -1, "end_offset": -1}
            partition, error = led_partition(ctx, t.topic, p.partition, p.current_leader_epoch)
            if error:
                out["error_code"] = error
            else:
                # Nothing is ever truncated here, so any epoch up to the current one ends at
                # the log end: the largest epoch <= the requested one is the requested one.
                epoch = min(p.leader_epoch, partition.leader_epoch)
                end = partition.log.log_end_offset if epoch >= 0 else -1
                out.update(leader_epoch=epoch, end_offset=end)
            parts.append(out)
        topics.append({"topic": t.topic, "partitions": parts})
    return ctx.response(topics=topics, throttle_time_ms=0)


API = api(23, (0, 4), handle)

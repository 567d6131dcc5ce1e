"""DeleteRecords (key 21): move a partition's log start offset forward."""

from __future__ import annotations

from ..core.security.acls import Operation
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import topic_check
from .common import led_partition
from .context import RequestContext
from .registry import api

HIGH_WATERMARK = -1


def handle(ctx: RequestContext, request: Message) -> Message:
    topics = []
    may_delete = topic_check(ctx, Operation.DELETE)  # with an authorizer, DELETE on each topic, before its existence
    for t in request.topics:
        denied = may_delete is not None and not may_delete(t.name)
        parts = []
        for p in t.partitions:
            out = {"partition_index": p.partition_index, "low_watermark": -1, "error_code": ErrorCode.NONE}
            if denied:
                out["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                parts.append(out)
                continue
            partition, error = led_partition(ctx, t.name, p.partition_index)
            if error:
                out["error_code"] = error
            else:
                assert partition is not None  # led_partition: no error, so a partition
                log = partition.log
                offset = log.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if offset < 0 or offset > log.high_watermark:
                    out["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                else:
                    ctx.cluster.delete_records(partition, offset)
                    ctx.data_changed()
                    out["low_watermark"] = log.log_start_offset
            parts.append(out)
        topics.append({"name": t.name, "partitions": parts})
    return ctx.response(topics=topics, throttle_time_ms=0)


API = api(ApiKey.DELETE_RECORDS, (0, 2), handle)

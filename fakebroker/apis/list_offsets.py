"""ListOffsets (key 2): earliest, latest, by timestamp, max timestamp, and v0's offset lists."""

from __future__ import annotations

from ..core.security.acls import Operation
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import topic_check
from .common import led_partition
from .context import RequestContext
from .registry import api

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
# ReplicaManager.timestampMinSupportedVersion: a special timestamp below its version, or a negative
# one not listed, is UNSUPPORTED_VERSION (Kafka lists 1 for these two: v0 is 3.9's, served here)
MIN_VERSION = {
    EARLIEST: 0,
    LATEST: 0,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
    EARLIEST_PENDING_UPLOAD: 11,
}
READ_COMMITTED = 1


def handle(ctx: RequestContext, request: Message) -> Message:
    topics = []
    # DESCRIBE on each topic (with an authorizer), before its existence; KafkaApis answers the
    # topics it may not describe after the others, every offset and timestamp -1
    may_describe = topic_check(ctx, Operation.DESCRIBE)
    refused = []
    for topic in request.topics:
        if may_describe is not None and not may_describe(topic.name):
            refused.append({"name": topic.name, "partitions": [_denied(p) for p in topic.partitions]})
            continue
        parts = []
        for p in topic.partitions:
            parts.append(_one(ctx, request, topic.name, p))
        topics.append({"name": topic.name, "partitions": parts})
    return ctx.response(topics=topics + refused, throttle_time_ms=0)


def _denied(p: Message) -> dict:
    """KafkaApis' ``buildErrorResponse`` for a partition of a topic the principal may not describe."""
    return {
        "partition_index": p.partition_index,
        "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": -1,
        "old_style_offsets": [],
    }


def _one(ctx: RequestContext, request: Message, name: str, p: Message) -> dict:
    out = {
        "partition_index": p.partition_index,
        "error_code": ErrorCode.NONE,
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": -1,
        "old_style_offsets": [],
    }
    partition, error = led_partition(ctx, name, p.partition_index, p.current_leader_epoch)
    if error:
        out["error_code"] = error
        return out
    assert partition is not None  # led_partition: no error, so a partition
    log = partition.log
    ts = p.timestamp
    if ts < 0 and ctx.api_version < MIN_VERSION.get(ts, 1 << 15):
        out["error_code"] = ErrorCode.UNSUPPORTED_VERSION
        return out
    latest = log.last_stable_offset if request.isolation_level == READ_COMMITTED else log.high_watermark
    if ts == LATEST:
        offset, found_ts = latest, -1
    elif ts in (EARLIEST, EARLIEST_LOCAL):
        offset, found_ts = log.log_start_offset, -1
    elif ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        # no remote storage: UnifiedLog answers offset -1 with leader epoch -1
        out.update(offset=-1, timestamp=-1, leader_epoch=-1)
        return out
    elif ts == MAX_TIMESTAMP:
        offset, found_ts = log.max_timestamp_offset()
    else:
        offset, found_ts = log.offset_for_timestamp(ts)
        if offset >= latest:
            offset, found_ts = -1, -1
    if ctx.api_version == 0:
        out["old_style_offsets"] = [offset] if offset >= 0 else []
    out.update(offset=offset, timestamp=found_ts, leader_epoch=partition.leader_epoch if offset >= 0 else -1)
    return out


API = api(ApiKey.LIST_OFFSETS, (0, 11), handle)

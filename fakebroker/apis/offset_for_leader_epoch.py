"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, used by consumers to
detect log truncation after a leader change."""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import topic_check
from .common import led_partition
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    topics = []
    # With an authorizer: CLUSTER_ACTION on the cluster (a follower's) allows every topic, else
    # DESCRIBE on each (KIP-320's consumers); the topics refused are answered after the others
    may_describe = topic_check(ctx, Operation.DESCRIBE)
    if may_describe is not None and ctx.allowed(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, quiet=True):
        may_describe = None
    refused = []
    for t in request.topics:
        if may_describe is not None and not may_describe(t.topic):
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            parts = [
                {"partition": p.partition, "error_code": denied, "leader_epoch": -1, "end_offset": -1}
                for p in t.partitions
            ]
            refused.append({"topic": t.topic, "partitions": parts})
            continue
        parts = []
        for p in t.partitions:
            out = {"partition": p.partition, "error_code": ErrorCode.NONE, "leader_epoch": -1, "end_offset": -1}
            partition, error = led_partition(ctx, t.topic, p.partition, p.current_leader_epoch)
            if error:
                out["error_code"] = error
            else:
                assert partition is not None  # led_partition: no error, so a partition
                # Nothing is ever truncated here, so any epoch up to the current one ends at
                # the log end. An epoch past the current one is unknown: LeaderEpochFileCache
                # finds no higher entry and answers UNDEFINED (-1, -1), as for -1.
                if 0 <= p.leader_epoch <= partition.leader_epoch:
                    out.update(leader_epoch=p.leader_epoch, end_offset=partition.log.log_end_offset)
            parts.append(out)
        topics.append({"topic": t.topic, "partitions": parts})
    return ctx.response(topics=topics + refused, throttle_time_ms=0)


API = api(ApiKey.OFFSET_FOR_LEADER_EPOCH, (0, 4), handle)

"""DescribeLogDirs (key 35): the log directory of the broker asked and the partitions it holds,
as Kafka's ``ReplicaManager.describeLogDirs`` answers on a broker without an authorizer.

Each fakebroker broker has one log directory, ``/tmp/kafka-logs-<node id>`` (Kafka's default
``log.dirs`` is ``/tmp/kafka-logs``; the node id keeps the brokers of one cluster apart). It
holds every partition the broker replicates; a partition's size is the bytes of its batches, as
Kafka's log size is the bytes of its segments (batches DeleteRecords removed still count until
retention deletes: Kafka keeps them in its active segment). Offset lag is 0 (nothing is
behind: no replication, no future logs) and ``is_future_key`` false. The volume (v4+) is a plausible one:
``TOTAL_BYTES`` (1 TiB), of which everything not held by the directory's partitions is usable.
The directory is never cordoned (v5). A null topic list asks for every partition; named
partitions this broker does not hold are left out, and topics without a partition too.
"""

from __future__ import annotations

from ..core.cluster_state import Partition
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api

TOTAL_BYTES = 1 << 40


def log_dir(broker_id: int) -> str:
    return f"/tmp/kafka-logs-{broker_id}"


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER):  # KafkaApis: no directory, the error (v3+)
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    held = [p for p in cluster.all_partitions() if ctx.broker_id in p.replicas]
    if request.topics is None:
        chosen = held
    else:
        wanted = {(t.topic, i) for t in request.topics for i in t.partitions}
        chosen = [p for p in held if (p.topic, p.index) in wanted]
    by_topic: dict[str, list[Partition]] = {}
    for p in chosen:
        by_topic.setdefault(p.topic, []).append(p)
    topics = [
        {
            "name": name,
            "partitions": [
                {
                    "partition_index": p.index,
                    "partition_size": cluster.log_size(p),
                    "offset_lag": 0,
                    "is_future_key": False,
                }
                for p in partitions
            ],
        }
        for name, partitions in by_topic.items()
    ]
    used = sum(cluster.log_size(p) for p in held)
    result = {
        "error_code": ErrorCode.NONE,
        "log_dir": log_dir(ctx.broker_id),
        "topics": topics,
        "total_bytes": TOTAL_BYTES,
        "usable_bytes": TOTAL_BYTES - used,
        "is_cordoned": False,
    }
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, results=[result])


API = api(ApiKey.DESCRIBE_LOG_DIRS, (0, 5), handle)  # v0 for Kafka 3.9; 4.x serves 1-5 (its window)

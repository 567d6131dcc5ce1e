"""DescribeQuorum (key 55): the KRaft metadata quorum (``kafka-metadata-quorum describe``, the
admin client's ``describeMetadataQuorum``).

fakebroker has no metadata log: it answers as a Kafka cluster whose controller is also a
broker (``process.roles=broker,controller``) would. The one voter, and leader, is the
cluster's controller (``controller_id``); every other live broker is an observer. Leader
epoch 1; the high watermark and every replica's log end offset are the feature epoch (a
number that grows with metadata changes, as the metadata log's offset does); fetch and
caught-up times are now. Messages are "" where there is no error, as Kafka sends them.
v2's node list names the voter with a ``CONTROLLER`` listener at
that broker's address (fakebroker has no separate controller listener).
"""

from __future__ import annotations

import uuid

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import CLUSTER_DENIED
from .context import RequestContext
from .registry import api

METADATA_TOPIC, METADATA_PARTITION = "__cluster_metadata", 0
UNKNOWN = "This server does not host this topic-partition."


def _directory_id(node_id: int) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_OID, f"fakebroker-metadata-dir-{node_id}")


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    topics = request.topics
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER):
        # the controller's authorizeClusterOperation: the top-level error, with the error's own text
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return ctx.response(error_code=denied, error_message=CLUSTER_DENIED, topics=[], nodes=[])
    valid = (
        len(topics) == 1
        and topics[0].topic_name == METADATA_TOPIC
        and len(topics[0].partitions) == 1
        and topics[0].partitions[0].partition_index == METADATA_PARTITION
    )
    if not valid:
        return ctx.response(
            error_code=ErrorCode.NONE,
            error_message="",
            topics=[
                {
                    "topic_name": t.topic_name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            "error_message": UNKNOWN,
                            "leader_id": 0,
                            "leader_epoch": 0,
                            "high_watermark": 0,
                            "current_voters": [],
                            "observers": [],
                        }
                        for p in t.partitions
                    ],
                }
                for t in topics
            ],
            nodes=[],
        )
    offset = cluster.features.epoch + len(cluster.topics)
    controller = cluster.controller_id

    def replica(node_id: int) -> dict:
        return {
            "replica_id": node_id,
            "replica_directory_id": _directory_id(node_id),
            "log_end_offset": offset,
            "last_fetch_timestamp": ctx.now_ms,
            "last_caught_up_timestamp": ctx.now_ms,
        }

    brokers = {b.node_id: b for b in cluster.alive_brokers()}
    voter = brokers.get(controller)
    nodes = []
    if voter is not None:
        listener = {"name": "CONTROLLER", "host": voter.host, "port": voter.port}
        nodes.append({"node_id": controller, "listeners": [listener]})
    partition = {
        "partition_index": METADATA_PARTITION,
        "error_code": ErrorCode.NONE,
        "error_message": "",
        "leader_id": controller,
        "leader_epoch": 1,
        "high_watermark": offset,
        "current_voters": [replica(controller)],
        "observers": [replica(n) for n in sorted(brokers) if n != controller],
    }
    return ctx.response(
        error_code=ErrorCode.NONE,
        error_message="",
        topics=[{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        nodes=nodes,
    )


API = api(ApiKey.DESCRIBE_QUORUM, (0, 2), handle)

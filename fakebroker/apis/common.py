"""Checks several handlers share, in the order Kafka applies them."""

from __future__ import annotations

from typing import Any

from ..core.cluster_state import ClusterState, Partition
from ..core.groups.service import OffsetToCommit
from ..core.topics.model import BrokerInfo
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .context import RequestContext


def led_partition(
    ctx: RequestContext, topic: str, index: int, current_leader_epoch: int = -1
) -> tuple[Partition | None, ErrorCode]:
    """The partition if this broker leads it, else Kafka's error for asking the wrong broker."""
    partition = ctx.cluster.partition(topic, index)
    if partition is None:
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if partition.leader != ctx.broker_id:
        return partition, ErrorCode.NOT_LEADER_OR_FOLLOWER
    if current_leader_epoch != -1:
        if current_leader_epoch > partition.leader_epoch:
            return partition, ErrorCode.UNKNOWN_LEADER_EPOCH
        if current_leader_epoch < partition.leader_epoch:
            return partition, ErrorCode.FENCED_LEADER_EPOCH
    return partition, ErrorCode.NONE


def topic_name_by_id(cluster: ClusterState, topic_id) -> str | None:
    topic = cluster.topics_by_id.get(topic_id)
    return topic.name if topic else None


def checked_partitions(cluster: ClusterState, topics, by_id: bool) -> list[tuple[Any, str | None, Any, ErrorCode]]:
    """(topic entry, its name, partition entry, error) for each partition an OffsetCommit-like
    request names, by topic name or (``by_id``) by topic id: unknown topics and partitions are
    answered before the coordinator is asked."""
    checked = []
    for t in topics:
        name = topic_name_by_id(cluster, t.topic_id) if by_id else t.name
        for p in t.partitions:
            if name is None:
                error = ErrorCode.UNKNOWN_TOPIC_ID
            elif cluster.partition(name, p.partition_index) is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = ErrorCode.NONE
            checked.append((t, name, p, error))
    return checked


def offsets_to_commit(
    checked: list[tuple[Any, str | None, Any, ErrorCode]], *, leader_epochs: bool = True
) -> list[OffsetToCommit]:
    """The offsets an OffsetCommit-like request commits, for the partitions that passed the topic
    checks (:func:`checked_partitions`), in order; ``leader_epochs`` False for versions without them."""
    return [
        OffsetToCommit(
            name or "",
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch if leader_epochs else -1,
            p.committed_metadata,
        )
        for _, name, p, error in checked
        if not error
    ]


def current_leader(partition: Partition | None) -> dict[str, int]:
    """The ``CurrentLeader`` tagged struct that newer Produce/Fetch errors carry."""
    if partition is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": partition.leader, "leader_epoch": partition.leader_epoch}


def node_endpoints(cluster: ClusterState, node_ids: set[int], listener: str = "") -> list[dict]:
    """``NodeEndpoints`` for the leaders named in NOT_LEADER_OR_FOLLOWER answers (KIP-951), at
    the addresses of the client's ``listener``."""
    if not node_ids:  # nearly every answer: no need to list the brokers
        return []
    return [broker_endpoint(b, listener) for b in cluster.alive_brokers() if b.node_id in node_ids]


def broker_endpoint(broker: BrokerInfo, listener: str = "") -> dict:
    """A broker as Metadata names it to a client of ``listener``: node id, host, port, rack."""
    host, port = broker.endpoint(listener)
    return {"node_id": broker.node_id, "host": host, "port": port, "rack": broker.rack}


def heartbeat_assignment(
    cluster: ClusterState, assignment: dict[str, set[int]] | None, *, empty_topics: bool = True
) -> dict | None:
    """A consumer or share group heartbeat's ``Assignment``: topic ids and partitions (None:
    unchanged since the member was last told; a topic deleted meanwhile is left out, and one
    without partitions unless ``empty_topics``)."""
    if assignment is None:
        return None
    topics = cluster.topics
    return {
        "topic_partitions": [
            {"topic_id": topics[name].topic_id, "partitions": sorted(parts)}
            for name, parts in sorted(assignment.items())
            if name in topics and (parts or empty_topics)
        ]
    }


def heartbeat_error(ctx: RequestContext, code: ErrorCode, message: str | None = None) -> Message:
    """A consumer or share group heartbeat's error answer."""
    return ctx.response(
        error_code=code,
        error_message=message,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
        throttle_time_ms=0,
    )

"""The cluster's metadata: brokers, topics, partitions and their leaders. Pure state, no I/O."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from ..protocol.error_codes import ErrorCode
from .configs import BrokerConfig, TopicConfig
from .groups.coordinator import GroupCoordinator
from .groups.offsets import OffsetStore
from .groups.placement import OFFSETS_TOPIC, partition_for
from .log import PartitionLog
from .producers import PartitionProducers, ProducerIds

MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


def topic_name_error(name: str) -> str | None:
    """Kafka's ``Topic.validate``: why a topic name is illegal, or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters, topic name: {name}"
    if not _LEGAL_TOPIC.match(name):
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


@dataclass
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    alive: bool = True


@dataclass
class Partition:
    topic: str
    index: int
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    log: PartitionLog = field(default_factory=PartitionLog)
    producers: PartitionProducers = field(default_factory=PartitionProducers)

    @property
    def isr(self) -> list[int]:
        return list(self.replicas)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    config: TopicConfig
    internal: bool = False


class TopicError(Exception):
    """A topic operation Kafka would refuse: carries the error code and message to answer with."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class ClusterState:
    """Brokers and topics of one fake cluster."""

    def __init__(self, cluster_id: str, broker_config: BrokerConfig | None = None):
        self.cluster_id = cluster_id
        self.brokers: dict[int, BrokerInfo] = {}
        self.controller_id = 0
        self.config = broker_config or BrokerConfig()
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.producer_ids = ProducerIds()
        self._next_start = 0  # where the next topic's leaders start, so leadership spreads
        self.groups = GroupCoordinator(self.config)
        self.offsets = OffsetStore(self.groups)
        self.loading_until_ms: dict[int, int] = {}  # offsets partition -> end of its (re)load

    # -- brokers ---------------------------------------------------------------------------
    def add_broker(self, node_id: int, host: str, port: int, rack: str | None = None) -> BrokerInfo:
        info = self.brokers[node_id] = BrokerInfo(node_id, host, port, rack)
        return info

    def alive_brokers(self) -> list[BrokerInfo]:
        return [b for b in sorted(self.brokers.values(), key=lambda b: b.node_id) if b.alive]

    # -- topics ----------------------------------------------------------------------------
    def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     configs: dict[str, str] | None = None, assignments: dict[int, list[int]] | None = None,
                     *, validate_only: bool = False) -> Topic:
        """Create a topic as CreateTopics would, or raise TopicError with Kafka's error."""
        reason = topic_name_error(name)
        if reason:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        if name in self.topics:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        brokers = [b.node_id for b in self.alive_brokers()]
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise TopicError(ErrorCode.INVALID_REQUEST,
                                 "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
            parts = sorted(assignments)
            if parts != list(range(len(parts))):
                raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions should be a consecutive 0-based integer sequence")
            for replicas in assignments.values():
                if not replicas or any(r not in self.brokers for r in replicas):
                    raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Replica assignment {replicas} names an unknown broker")
            layout = [list(assignments[p]) for p in parts]
        else:
            if num_partitions == -1:
                num_partitions = self.config.get_int("num.partitions")
            if replication_factor == -1:
                replication_factor = self.config.get_int("default.replication.factor")
            if num_partitions <= 0:
                raise TopicError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
            if replication_factor <= 0:
                raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
            if replication_factor > len(brokers):
                raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
                                 f"{replication_factor} cannot be reached because only {len(brokers)} broker(s) are registered.")
            layout = self._spread(num_partitions, replication_factor, brokers)
        config = TopicConfig(self.config, configs)
        topic = Topic(name, uuid.uuid4(), [Partition(name, i, r, r[0]) for i, r in enumerate(layout)], config)
        if not validate_only:
            self.topics[name] = topic
            self.topics_by_id[topic.topic_id] = topic
        return topic

    def _spread(self, count: int, replication: int, brokers: list[int], first_partition: int = 0) -> list[list[int]]:
        """Round-robin replica placement, each topic starting one broker further along (Kafka
        starts at a random broker; a rotating start keeps tests deterministic)."""
        start = self._next_start
        self._next_start += 1
        n = len(brokers)
        return [[brokers[(start + p + r) % n] for r in range(replication)] for p in range(first_partition, first_partition + count)]

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        self.topics_by_id.pop(topic.topic_id, None)
        return topic

    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None = None, *, validate_only: bool = False) -> None:
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        current = len(topic.partitions)
        if count < current:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {current} partitions, which is higher than the requested {count}.")
        if count == current:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        replication = len(topic.partitions[0].replicas)
        if assignments:
            if len(assignments) != count - current:
                raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Increasing the number of partitions by {count - current} but {len(assignments)} assignments provided.")
            layout = [list(a) for a in assignments]
        else:
            layout = self._spread(count - current, replication, [b.node_id for b in self.alive_brokers()], current)
        if not validate_only:
            topic.partitions.extend(Partition(name, current + i, r, r[0]) for i, r in enumerate(layout))

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    def elect_leader(self, partition: Partition, leader: int | None = None) -> None:
        """Move leadership (to ``leader`` or the first live replica) and bump the leader epoch."""
        alive = {b.node_id for b in self.alive_brokers()}
        if leader is None:
            candidates = [r for r in partition.replicas if r in alive]
            leader = candidates[0] if candidates else -1
        if leader != partition.leader:
            partition.leader = leader
            partition.leader_epoch += 1

    def apply_retention(self, now_ms: int) -> int:
        """Apply every deleting topic's retention.ms / retention.bytes; returns batches dropped."""
        dropped = 0
        for topic in self.topics.values():
            if "delete" not in topic.config.get("cleanup.policy"):
                continue
            ms, size = topic.config.get_int("retention.ms"), topic.config.get_int("retention.bytes")
            for p in topic.partitions:
                dropped += p.log.apply_retention(now_ms, ms, size)
        return dropped

    # -- group coordinator placement ---------------------------------------------------------
    def offsets_topic(self) -> Topic:
        """``__consumer_offsets``, created on first use as Kafka does (internal, not listed by
        default), with ``offsets.topic.num.partitions`` partitions."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            n = self.config.get_int("offsets.topic.num.partitions")
            rf = min(self.config.get_int("offsets.topic.replication.factor"), len(self.alive_brokers()))
            topic = self.create_topic(OFFSETS_TOPIC, n, rf, {"cleanup.policy": "compact"})
            topic.internal = True
        return topic

    def group_partition(self, group_id: str) -> int:
        return partition_for(group_id, len(self.offsets_topic().partitions))

    def coordinator_of(self, group_id: str) -> int:
        """Broker id coordinating a group (the leader of its offsets partition), -1 if none is alive."""
        partition = self.offsets_topic().partitions[self.group_partition(group_id)]
        alive = {b.node_id for b in self.alive_brokers()}
        return partition.leader if partition.leader in alive else -1

    def groups_of_partition(self, partition: int) -> list[str]:
        n = len(self.offsets_topic().partitions)
        names = set(self.groups.groups) | set(self.groups.snapshots)
        return sorted(g for g in names if partition_for(g, n) == partition)

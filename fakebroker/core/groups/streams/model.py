"""A streams group (KIP-1071) and its members: the data, and the state that follows from it.

A *task* is (subtopology id, partition). A member holds tasks in three roles (active,
standby, warm-up); like a KIP-848 consumer group, the group epoch moves on every change of
membership, topology metadata or assignment configs, the server computes a target
assignment, and each member reconciles to it: tasks to revoke first, then tasks to add once
their previous owner released them (Kafka's ``StreamsGroup``, ``StreamsGroupMember``,
``TasksTuple``).
"""

from __future__ import annotations

import enum
from dataclasses import field

from ....lazy_dataclasses import dataclass
from .topology import ConfiguredTopology, Topology

Task = tuple[str, int]  # (subtopology id, partition)

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True)
class Tasks:
    """Tasks in their three roles (Kafka's ``TasksTuple``)."""

    active: frozenset[Task] = frozenset()
    standby: frozenset[Task] = frozenset()
    warmup: frozenset[Task] = frozenset()

    def all(self) -> frozenset[Task]:
        return self.active | self.standby | self.warmup

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def union(self, other: Tasks) -> Tasks:
        return Tasks(self.active | other.active, self.standby | other.standby, self.warmup | other.warmup)


EMPTY = Tasks()


class GroupState(enum.Enum):
    """StreamsGroup's states, as ListGroups and describe spell them."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.Enum):
    """CurrentAssignmentBuilder's member states."""

    STABLE = "STABLE"
    UNREVOKED_TASKS = "UNREVOKED_TASKS"
    UNRELEASED_TASKS = "UNRELEASED_TASKS"


@dataclass
class StreamsMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    member_epoch: int = 0
    previous_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Tasks = EMPTY
    revoking: Tasks = EMPTY  # tasks pending revocation (the member has not confirmed yet)
    active_epochs: dict[Task, int] = field(default_factory=dict)  # active task -> epoch it was granted at
    task_offsets: dict[Task, int] = field(default_factory=dict)
    task_end_offsets: dict[Task, int] = field(default_factory=dict)

    def relevant(self, static: bool) -> tuple[object, ...]:
        """What bumps the group epoch when it changes (``hasEpochRelevantMemberConfigChanged``
        for a static member; any field for a dynamic one)."""
        base: tuple[object, ...] = (self.topology_epoch, self.rack_id, tuple(sorted(self.client_tags.items())))
        base += (self.process_id,)
        if static:
            return base
        return base + (
            self.instance_id,
            self.rebalance_timeout_ms,
            self.client_id,
            self.client_host,
            self.user_endpoint,
        )


@dataclass
class StreamsGroup:
    group_id: str
    group_epoch: int = 1  # TargetAssignmentMetadata.INITIAL: a new group's first joiner bumps to 2
    assignment_epoch: int = 1
    assignment_timestamp_ms: int = 0
    members: dict[str, StreamsMember] = field(default_factory=dict)
    target: dict[str, Tasks] = field(default_factory=dict)  # member id -> target assignment
    topology: Topology | None = None
    configured: ConfiguredTopology | None = None
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    assignment_configs: tuple[object, ...] | None = None  # (num standby replicas, rack tags) last used
    endpoint_epoch: int = 0  # in memory only, as in Kafka
    # StreamsGroupDescribe reads Kafka's group at its last committed offset. Kafka sets the
    # configured topology outside its records: on a new group's transient object (lost when the
    # records create the real one), else on the group, seen by a describe only from the next
    # event that writes records. ``memory_configured`` is Kafka's in-memory value (None after
    # the creating join), ``described_configured`` the one a describe shows.
    memory_configured: ConfiguredTopology | None = None
    described_configured: ConfiguredTopology | None = None
    shutdown_requested_by: str | None = None
    dead: bool = False

    @property
    def state(self) -> GroupState:
        if self.dead:
            return GroupState.DEAD
        if not self.members:
            return GroupState.EMPTY
        if self.configured is None or not self.configured.ready:
            return GroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state != MemberState.STABLE:
                return GroupState.RECONCILING
        return GroupState.STABLE

    def static_member(self, instance_id: str) -> StreamsMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def source_topics(self) -> set[str]:
        """Topics the group reads: its source and repartition-source topics (``isSubscribedToTopic``)."""
        if self.topology is None:
            return set()
        out: set[str] = set()
        for sub in self.topology.subtopologies:
            out.update(sub.source_topics)
            out.update(t.name for t in sub.repartition_source_topics)
        return out

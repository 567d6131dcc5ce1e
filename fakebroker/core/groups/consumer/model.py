"""A KIP-848 consumer group and its members: the data, and how the group's state follows from it.

Epochs replace generations: the group epoch moves whenever membership or subscriptions (or
the subscribed topics' metadata) change; the target assignment is computed for one group
epoch (the assignment epoch); each member reconciles towards it and carries the epoch it has
reached. The state is derived, as Kafka's ``ConsumerGroup.maybeUpdateGroupState`` does.
"""

from __future__ import annotations

import enum
from dataclasses import field

from ....lazy_dataclasses import dataclass

# topic name -> partitions
Assignment = dict[str, set[int]]

LEAVE_EPOCH = -1  # a member leaving the group
STATIC_LEAVE_EPOCH = -2  # a static member that will come back with the same instance id


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"  # the group epoch is ahead of the target assignment's
    RECONCILING = "Reconciling"  # some member has not reached the target yet
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.Enum):
    STABLE = "stable"  # at the target epoch with everything it may have
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # must give partitions up before it gets new ones
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # waits for partitions others still own
    UNKNOWN = "unknown"


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_names: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)  # what the member may consume now
    revoking: Assignment = field(default_factory=dict)  # what it must give up first
    assignment_epochs: dict[tuple[str, int], int] = field(default_factory=dict)  # when each partition was assigned
    last_sent: Assignment | None = None  # the assignment the member was last told of
    # A classic member (JoinGroup/SyncGroup/Heartbeat) in a consumer group: its protocols, in its
    # order of preference, and its own session timeout; None for a consumer-protocol member.
    classic_protocols: list[tuple[str, bytes]] | None = None
    session_timeout_ms: int | None = None
    classic_version: int = 0  # the consumer-protocol version its subscription used
    principal: str | None = None  # of its last heartbeat: its regex matches the topics it may describe

    @property
    def is_classic(self) -> bool:
        return self.classic_protocols is not None

    def owns(self) -> set[tuple[str, int]]:
        """Partitions this member holds: assigned, or still to be revoked."""
        return {(t, p) for a in (self.assigned, self.revoking) for t, ps in a.items() for p in ps}


@dataclass
class ConsumerGroup:
    group_id: str
    # a new group starts at epoch 1 (Kafka 4.3+, KAFKA-20268), so its first member gets epoch 2
    group_epoch: int = 1
    assignment_epoch: int = 1
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target assignment
    subscription_hash: int = 0  # of the subscribed topics' names, ids and partition counts
    dead: bool = False
    created_ms: int = 0

    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def owner_of(self, topic: str, partition: int) -> str | None:
        """The member that holds a partition (assigned or pending revocation), if any."""
        for member in self.members.values():
            if partition in member.assigned.get(topic, ()) or partition in member.revoking.get(topic, ()):
                return member.member_id
        return None

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_names}

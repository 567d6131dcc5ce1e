"""A share group (KIP-932) and its members: the data, and the state that follows from it.

Like a KIP-848 consumer group, the group epoch moves on every change of membership or
subscriptions and the server computes the assignment; unlike one, there is no revocation:
a member jumps to the target at once, and a partition may be assigned to several members
(records, not partitions, are what members own: see ``partition.py``).
"""

from __future__ import annotations

import enum
from dataclasses import field

from ....lazy_dataclasses import dataclass

# topic name -> partitions
Assignment = dict[str, set[int]]

LEAVE_EPOCH = -1


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_epoch: int = -1
    assigned: Assignment = field(default_factory=dict)


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 1  # a new group starts at 1: its first member gets epoch 2 (ModernGroup)
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target assignment
    subscription_hash: int = 0
    last_assignment_ms: int | None = None  # when the target assignment was last computed
    # share partitions whose state the share coordinator holds (ShareGroupStatePartitionMetadata)
    initialized: dict[str, set[int]] = field(default_factory=dict)
    initializing: dict[str, set[int]] = field(default_factory=dict)  # assignable from the next heartbeat
    dead: bool = False
    created_ms: int = 0

    @property
    def state(self) -> ShareGroupState:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_names}

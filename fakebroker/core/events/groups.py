"""Event kinds of groups, their members and their offsets."""

from __future__ import annotations

from dataclasses import field

from .base import Event, _kind


@_kind
class GroupEvent(Event):
    """An event of one group: the log places it on the group's coordinator."""

    group: str


@_kind
class MemberEvent(GroupEvent):
    """An event of one member: the log names the member's client when it is known."""

    member: str


@_kind
class GroupCreated(GroupEvent):
    simple: bool | None = None


@_kind
class GroupDeleted(GroupEvent):
    pass


@_kind
class GroupForgotten(GroupEvent):
    """The group was dropped without a trace (the pytest plugin cleaning up after a test)."""


@_kind
class GroupStateChanged(GroupEvent):
    old: str
    new: str
    generation: int


@_kind
class GroupUnloaded(GroupEvent):
    pass


@_kind
class GroupLoaded(GroupEvent):
    state: str
    generation: int


@_kind
class RebalanceStarted(GroupEvent):
    reason: str
    generation: int


@_kind
class GenerationStarted(GroupEvent):
    generation: int
    members: int
    protocol: str | None = None
    leader: str | None = None


@_kind
class LeaderAssigned(GroupEvent):
    leader: str
    generation: int
    members: int


@_kind
class OffsetCommitted(GroupEvent):
    topic: str
    partition: int
    offset: int


@_kind
class OffsetDeleted(GroupEvent):
    """OffsetDelete removed a group's committed offset of a partition."""

    topic: str
    partition: int


@_kind
class GroupConverted(GroupEvent):
    """A group changed protocol online (``group.consumer.migration.policy``): to "consumer"
    when a KIP-848 member joined a classic group, to "classic" when only classic members remain."""

    to: str
    generation: int


@_kind
class GroupEpochBumped(GroupEvent):
    """A consumer group (KIP-848) moved to a new group epoch: its target assignment follows."""

    epoch: int
    reason: str


@_kind
class TargetAssignmentComputed(GroupEvent):
    """The server-side assignor's target for a consumer group's epoch (member id -> partitions)."""

    epoch: int
    assignment: dict[str, dict[str, list[int]]]


@_kind
class MemberIdRequired(MemberEvent):
    client_id: str | None = None


@_kind
class MemberJoined(MemberEvent):
    instance: str | None = field(default=None, metadata={"shown": True})  # shown even when None
    client_id: str | None = None


@_kind
class MemberFenced(MemberEvent):
    instance: str | None = field(default=None, metadata={"shown": True})  # shown even when None
    replaced_by: str
    client_id: str | None = None


@_kind
class StaticMemberRejoined(MemberEvent):
    instance: str | None = field(default=None, metadata={"shown": True})  # shown even when None
    client_id: str | None = None


@_kind
class MemberRemoved(MemberEvent):
    reason: str
    client_id: str | None = None


@_kind
class MemberExpired(MemberEvent):
    pending: bool | None = None
    new: bool | None = None
    session_timeout_ms: int | None = None
    client_id: str | None = None


@_kind
class MemberLeft(MemberEvent):
    instance: str | None = field(default=None, metadata={"shown": True})  # shown even when None
    client_id: str | None = None


@_kind
class MemberReconciled(MemberEvent):
    """A consumer or streams group member's epoch, state or partitions moved towards its target.
    A streams group member's ``assignment`` and ``revoking`` are its active tasks (subtopology
    id -> partitions); its standby and warm-up tasks are in ``standby`` and ``warmup``."""

    epoch: int
    state: str
    assignment: dict[str, list[int]]
    revoking: dict[str, list[int]] | None = None
    client_id: str | None = None
    standby: dict[str, list[int]] | None = None
    warmup: dict[str, list[int]] | None = None


@_kind
class AssignmentDelivered(MemberEvent):
    generation: int
    assignment: dict[str, list[int]] | None = None
    client_id: str | None = None

"""Read-only snapshots of the cluster's groups, taken on the cluster's own loop.

Assignments are decoded with the consumer protocol when the group speaks it
(``protocol_type == "consumer"``), so tests can compare them with plain dicts.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from ..core.cluster_state import ClusterState
from ..lazy_dataclasses import dataclass
from ..protocol.data import assignment_dict, decode_subscription

if TYPE_CHECKING:
    from ..core.groups.streams.model import Task


@dataclass(frozen=True)
class MemberView:
    member_id: str
    client_id: str
    group_instance_id: str | None
    client_host: str
    assignment: dict[str, list[int]] | None  # None when the group is not a consumer group
    raw_assignment: bytes = field(repr=False, default=b"")
    # KIP-848 consumer groups only: the member's epoch, its target and what it must still revoke
    member_epoch: int | None = None
    target: dict[str, list[int]] | None = None
    revoking: dict[str, list[int]] | None = None
    # the member's rack: from its subscription (consumer protocol v3, KIP-881) or its heartbeat
    rack: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "member_id": self.member_id,
            "client_id": self.client_id,
            "group_instance_id": self.group_instance_id,
            "client_host": self.client_host,
            "assignment": self.assignment,
        }
        if self.member_epoch is not None:
            out.update(member_epoch=self.member_epoch, target=self.target, revoking=self.revoking)
        if self.rack is not None:
            out["rack"] = self.rack
        return out


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str  # Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    members: tuple[MemberView, ...]
    coordinator: int
    group_type: str = "classic"  # or "consumer" (KIP-848), "share" (KIP-932), "streams" (KIP-1071):
    # then generation is the group epoch
    assignment_epoch: int | None = None  # consumer groups: the epoch of the target assignment

    @property
    def assignment(self) -> dict[str, dict[str, list[int]]]:
        """client id -> {topic: partitions} (member id where two members share a client id)."""
        counts: dict[str, int] = {}
        for m in self.members:
            counts[m.client_id] = counts.get(m.client_id, 0) + 1
        return {(m.client_id if counts[m.client_id] == 1 else m.member_id): m.assignment or {} for m in self.members}

    def owners(self) -> dict[tuple[str, int], str]:
        """(topic, partition) -> member id that owns it in this generation."""
        return {(t, p): m.member_id for m in self.members for t, ps in (m.assignment or {}).items() for p in ps}

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "state": self.state,
            "generation": self.generation,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol,
            "leader": self.leader,
            "coordinator": self.coordinator,
            "group_type": self.group_type,
            **({"assignment_epoch": self.assignment_epoch} if self.assignment_epoch is not None else {}),
            "members": [m.to_dict() for m in self.members],
        }


def _decode(protocol_type: str | None, raw: bytes) -> dict[str, list[int]] | None:
    if protocol_type != "consumer":
        return None
    if not raw:
        return {}
    try:
        return assignment_dict(raw)
    except Exception:  # a member sent something that is not the consumer protocol
        return None


def _rack(protocol_type: str | None, subscription: bytes | None) -> str | None:
    if protocol_type != "consumer" or not subscription:
        return None
    try:
        return decode_subscription(subscription).rack_id or None  # librdkafka sends "" for no rack
    except Exception:  # not the consumer protocol, or a version without racks
        return None


def group_view(state: ClusterState, group_id: str) -> GroupView | None:
    """The group as the coordinator sees it now; None if the coordinator does not know it."""
    group = state.groups.classic.groups.get(group_id)
    if group is None:
        return consumer_group_view(state, group_id)
    members = tuple(
        MemberView(
            m.member_id,
            m.client_id,
            m.group_instance_id,
            m.client_host,
            _decode(group.protocol_type, m.assignment),
            bytes(m.assignment),
            rack=_rack(group.protocol_type, m.metadata(group.protocol_name) if group.protocol_name else None),
        )
        for m in group.members.values()
    )
    return GroupView(
        group.group_id,
        group.state.value,
        group.generation_id,
        group.protocol_type,
        group.protocol_name,
        group.leader_id,
        members,
        state.groups.coordinator_of(group_id),
    )


def _plain(assignment: dict[str, set[int]]) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(assignment.items()) if ps}


def consumer_group_view(state: ClusterState, group_id: str) -> GroupView | None:
    group = state.groups.consumer.groups.get(group_id)
    if group is None:
        return share_group_as_group_view(state, group_id)
    members = tuple(
        MemberView(
            m.member_id,
            m.client_id,
            m.instance_id,
            m.client_host,
            _plain(m.assigned),
            member_epoch=m.member_epoch,
            target=_plain(group.target.get(m.member_id, {})),
            revoking=_plain(m.revoking),
            rack=m.rack_id,
        )
        for m in group.members.values()
    )
    assignor = next((m.server_assignor for m in group.members.values() if m.server_assignor), None)
    return GroupView(
        group.group_id,
        group.state.value,
        group.group_epoch,
        "consumer",
        assignor or state.groups.consumer.assignors()[0],
        None,
        members,
        state.groups.coordinator_of(group_id),
        "consumer",
        group.assignment_epoch,
    )


def share_group_as_group_view(state: ClusterState, group_id: str) -> GroupView | None:
    """A share group (KIP-932) as a :class:`GroupView` (``group_type`` "share", ``generation`` the
    group epoch), so what reads any group's state and members reads it too; its records are in
    :func:`~fakebroker.cluster.shares.share_group_view`."""
    group = state.groups.share.groups.get(group_id) if state.groups.made("share") else None
    if group is None:
        return streams_group_as_group_view(state, group_id)
    members = tuple(
        MemberView(
            m.member_id,
            m.client_id,
            None,
            m.client_host,
            _plain(m.assigned),
            member_epoch=m.member_epoch,
            target=_plain(group.target.get(m.member_id, {})),
            revoking={},
            rack=m.rack_id,
        )
        for m in group.members.values()
    )
    return GroupView(
        group.group_id,
        group.state.value,
        group.group_epoch,
        "share",
        "simple",
        None,
        members,
        state.groups.coordinator_of(group_id),
        "share",
        group.assignment_epoch,
    )


def committed_offsets(state: ClusterState, group_id: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset of a group."""
    return {(t, p): c.offset for t, p, c in state.groups.offsets.fetch(group_id, None) if c is not None}


@dataclass(frozen=True)
class BrokerView:
    node_id: int
    host: str
    port: int
    alive: bool
    rack: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.node_id, "host": self.host, "port": self.port, "alive": self.alive, "rack": self.rack}


@dataclass(frozen=True)
class PartitionView:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    log_start_offset: int
    high_watermark: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "replicas": list(self.replicas),
            "log_start_offset": self.log_start_offset,
            "high_watermark": self.high_watermark,
        }


@dataclass(frozen=True)
class TopicView:
    name: str
    topic_id: str
    internal: bool
    config: dict[str, str]
    partitions: tuple[PartitionView, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topic_id": self.topic_id,
            "internal": self.internal,
            "config": dict(self.config),
            "partitions": [p.to_dict() for p in self.partitions],
        }


def broker_views(state: ClusterState) -> list[BrokerView]:
    return [BrokerView(b.node_id, b.host, b.port, b.alive, b.rack) for _, b in sorted(state.brokers.items())]


def topic_view(state: ClusterState, name: str) -> TopicView | None:
    topic = state.topics.get(name)
    if topic is None:
        return None
    return TopicView(
        topic.name,
        str(topic.topic_id),
        topic.internal,
        dict(topic.config.overrides),
        tuple(
            PartitionView(
                p.index, p.leader, p.leader_epoch, tuple(p.replicas), p.log.log_start_offset, p.log.high_watermark
            )
            for p in topic.partitions
        ),
    )


def streams_group_as_group_view(state: ClusterState, group_id: str) -> GroupView | None:
    """A streams group as a :class:`GroupView` (``group_type`` "streams", ``generation`` the group
    epoch; a member's ``assignment`` is its active tasks as subtopology id -> partitions), so
    what reads any group's state and members reads it too; the rest is in
    :func:`~fakebroker.cluster.streams.streams_group_view`."""
    group = state.groups.streams.groups.get(group_id) if state.groups.made("streams") else None
    if group is None:
        return None
    from .streams import subtopology_order  # the streams views, only for a streams group

    def plain(tasks: frozenset[Task]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for sub, p in sorted(tasks, key=lambda t: (subtopology_order(t[0]), t[1])):
            out.setdefault(sub, []).append(p)
        return out

    members = tuple(
        MemberView(
            m.member_id,
            m.client_id,
            m.instance_id,
            m.client_host,
            plain(m.assigned.active),
            member_epoch=m.member_epoch,
            target=plain(group.target[m.member_id].active) if m.member_id in group.target else {},
            revoking=plain(m.revoking.active),
            rack=m.rack_id,
        )
        for m in group.members.values()
    )
    return GroupView(
        group.group_id,
        group.state.value,
        group.group_epoch,
        "streams",
        "sticky",
        None,
        members,
        state.groups.coordinator_of(group_id),
        "streams",
        group.assignment_epoch,
    )

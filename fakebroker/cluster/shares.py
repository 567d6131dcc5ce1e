"""Read-only snapshots of share groups (KIP-932), taken on the cluster's own loop.

A share group's members own records, not partitions: the view holds the group (state, group
epoch, assignment epoch, members with their assignments) and, per share partition, the
records in flight between the share-partition start offset (below it every record was
acknowledged or archived) and the end (the first offset never delivered), each run of them
with its state, delivery count and, while acquired, its owner::

    view = cluster.share_group("workers")
    sp = view.partition("jobs", 0)
    sp.start_offset, sp.state_of(3), sp.delivery_count(3)   # 3, "acquired", 2
"""

from __future__ import annotations

import uuid
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.share.model import ShareGroup
from ..core.groups.share.partition import SharePartition
from ..core.groups.share.records import RecordState
from ..lazy_dataclasses import dataclass

# the record states' names in a view: Kafka's RecordState names, in lower case
STATES = tuple(s.name.lower() for s in RecordState)


@dataclass(frozen=True)
class InFlightView:
    """Offsets ``first``..``last`` in one state (``available``, ``acquired``, ``acknowledged``,
    ``archiving`` or ``archived``), delivered ``delivery_count`` times; ``member`` (and its
    ``client_id``) owns them while they are acquired."""

    first: int
    last: int
    state: str
    delivery_count: int
    member: str | None = None
    client_id: str | None = None

    @property
    def records(self) -> int:
        return self.last - self.first + 1

    def __contains__(self, offset: object) -> bool:
        return isinstance(offset, int) and self.first <= offset <= self.last

    def to_dict(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "last": self.last,
            "state": self.state,
            "delivery_count": self.delivery_count,
            "member": self.member,
            "client_id": self.client_id,
        }


@dataclass(frozen=True)
class SharePartitionView:
    """One share partition: ``start_offset`` (the SPSO: every record below it is done),
    ``end_offset`` (the first offset never delivered) and the runs of records in flight
    between them. ``loaded`` is False for a partition no leader has loaded since its state was
    last written (its runs are then the persisted ones: nothing is acquired, and a start offset
    of -1 is resolved by ``share.auto.offset.reset`` at the first fetch)."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    in_flight: tuple[InFlightView, ...]
    loaded: bool = True

    def record(self, offset: int) -> InFlightView | None:
        """The run holding ``offset`` (None below the start offset or past the end)."""
        return next((r for r in self.in_flight if offset in r), None)

    def state_of(self, offset: int) -> str:
        """``offset``'s state; ``done`` below the start offset (acknowledged or archived, and
        forgotten), ``new`` from the end offset on (never delivered)."""
        if offset < self.start_offset:
            return "done"
        run = self.record(offset)
        return run.state if run is not None else "new"

    def delivery_count(self, offset: int) -> int:
        """How often ``offset`` was delivered (0 when never, or unknown below the start offset)."""
        run = self.record(offset)
        return run.delivery_count if run is not None else 0

    def offsets(self, state: str) -> list[int]:
        """Every offset in flight in ``state`` (e.g. ``"archived"``), in order."""
        _check_state(state)
        return [o for r in self.in_flight if r.state == state for o in range(r.first, r.last + 1)]

    def count(self, state: str) -> int:
        """How many records are in flight in ``state``."""
        _check_state(state)
        return sum(r.records for r in self.in_flight if r.state == state)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "loaded": self.loaded,
            "in_flight": [r.to_dict() for r in self.in_flight],
        }


def _check_state(state: str) -> None:
    if state not in STATES:
        raise ValueError(f"unknown record state {state!r}; the states are {', '.join(STATES)}")


@dataclass(frozen=True)
class ShareMemberView:
    member_id: str
    client_id: str
    client_host: str
    rack: str | None
    member_epoch: int
    subscribed: tuple[str, ...]
    assignment: dict[str, list[int]]  # what it was last told to read
    acquired: int = 0  # records it holds now, over every share partition

    def to_dict(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "rack": self.rack,
            "member_epoch": self.member_epoch,
            "subscribed": list(self.subscribed),
            "assignment": self.assignment,
            "acquired": self.acquired,
        }


@dataclass(frozen=True)
class ShareGroupView:
    """A share group now: ``state`` is Kafka's name (``Empty``, ``Stable``, ``Dead``); the group
    epoch moves with each change of membership or subscriptions, the assignment epoch when the
    target assignment follows it; ``delivery_count_limit`` and ``record_lock_duration_ms`` are
    the group's settings in force."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    coordinator: int
    members: tuple[ShareMemberView, ...]
    partitions: tuple[SharePartitionView, ...]
    delivery_count_limit: int
    record_lock_duration_ms: int

    @property
    def assignment(self) -> dict[str, dict[str, list[int]]]:
        """client id -> {topic: partitions} (member id where two members share a client id)."""
        counts: dict[str, int] = {}
        for m in self.members:
            counts[m.client_id] = counts.get(m.client_id, 0) + 1
        return {(m.client_id if counts[m.client_id] == 1 else m.member_id): m.assignment for m in self.members}

    @property
    def settled(self) -> bool:
        """Every member reached the current target assignment (its epoch is the group's)."""
        return self.assignment_epoch == self.group_epoch and all(
            m.member_epoch == self.assignment_epoch for m in self.members
        )

    def partition(self, topic: str, partition: int) -> SharePartitionView | None:
        return next((p for p in self.partitions if p.topic == topic and p.partition == partition), None)

    def to_dict(self) -> dict[str, Any]:
        """The control endpoint's form; ``generation`` is the group epoch, as in a consumer group's."""
        return {
            "group_id": self.group_id,
            "group_type": "share",
            "state": self.state,
            "generation": self.group_epoch,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "coordinator": self.coordinator,
            "delivery_count_limit": self.delivery_count_limit,
            "record_lock_duration_ms": self.record_lock_duration_ms,
            "members": [m.to_dict() for m in self.members],
            "partitions": [p.to_dict() for p in self.partitions],
        }


def _plain(assignment: dict[str, set[int]]) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(assignment.items()) if ps}


def share_group_view(state: ClusterState, group_id: str) -> ShareGroupView | None:
    """The share group as its coordinator and the share partitions' leaders hold it; None if
    no share group has that id."""
    group = state.groups.share.groups.get(group_id)
    if group is None:
        return None
    clients = {m.member_id: m.client_id or None for m in group.members.values()}
    partitions = _partitions(state, group, clients)
    held: dict[str, int] = {}
    for p in partitions:
        for r in p.in_flight:
            if r.state == "acquired" and r.member is not None:
                held[r.member] = held.get(r.member, 0) + r.records
    members = tuple(
        ShareMemberView(
            m.member_id,
            m.client_id,
            m.client_host,
            m.rack_id,
            m.member_epoch,
            m.subscribed_names,
            _plain(m.assigned),
            held.get(m.member_id, 0),
        )
        for m in group.members.values()
    )
    configs = state.group_configs
    return ShareGroupView(
        group.group_id,
        group.state.value,
        group.group_epoch,
        group.assignment_epoch,
        state.groups.coordinator_of(group_id),
        members,
        partitions,
        configs.get_int(group_id, "share.delivery.count.limit"),
        configs.get_int(group_id, "share.record.lock.duration.ms"),
    )


def _partitions(
    state: ClusterState, group: ShareGroup, clients: dict[str, str | None]
) -> tuple[SharePartitionView, ...]:
    """The loaded share partitions from memory, the others from the share coordinator's store."""
    gid = group.group_id
    out: dict[tuple[str, int], SharePartitionView] = {}
    for (g, topic, index), sp in state.groups.shares.partitions.items():
        if g != gid:
            continue
        runs = tuple(
            InFlightView(
                r.first,
                r.last,
                r.state.name.lower(),
                r.count,
                r.member or None,
                clients.get(r.member) if r.member else None,
            )
            for r in sp.records()
        )
        out[(topic, index)] = SharePartitionView(topic, index, sp.start, sp.end, runs)
    names: dict[uuid.UUID, str] = {t.topic_id: t.name for t in state.topics.values()}
    for (g, topic_id, index), stored in state.groups.share_states.states.items():
        name = names.get(topic_id)
        if g != gid or name is None or (name, index) in out:
            continue
        if stored.start_offset < 0:  # initialized, never read: the start offset is still to resolve
            out[(name, index)] = SharePartitionView(name, index, -1, -1, (), loaded=False)
            continue
        # as a leader would load it: the start offset past what the last write finished
        sp = SharePartition(gid, name, index, stored.start_offset)
        sp.load(stored.start_offset, stored.batches)
        runs = tuple(InFlightView(r.first, r.last, r.state.name.lower(), r.count) for r in sp.records())
        out[(name, index)] = SharePartitionView(name, index, sp.start, sp.end, runs, loaded=False)
    return tuple(out[k] for k in sorted(out))

"""Read-only snapshots of streams groups (KIP-1071), taken on the cluster's own loop.

A streams group's members hold *tasks* — a subtopology's share of the work on one partition,
spelled as Kafka Streams spells a ``TaskId``: ``"1_3"`` is subtopology 1, partition 3 — in
three roles: active, standby (a warm copy of an active task's state on another process) and
warm-up. The view holds the group (state, epochs, topology, the status Kafka tells members
while it cannot assign) and each member with its process, endpoint, and tasks held, aimed
for and being revoked::

    view = cluster.streams_group("wordcount")
    view.state, view.settled                     # "Stable", True
    view.owner("1_0").user_endpoint              # "localhost:7101"
    view.by_process()["3f2a..."].standby         # ("1_1", "1_3")
"""

from __future__ import annotations

from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.streams.model import StreamsGroup, StreamsMember, Task, Tasks
from ..lazy_dataclasses import dataclass


def task_name(task: Task) -> str:
    """(subtopology, partition) as Kafka Streams' ``TaskId.toString``: ``"1_3"``."""
    return f"{task[0]}_{task[1]}"


def _names(tasks: frozenset[Task]) -> tuple[str, ...]:
    return tuple(task_name(t) for t in sorted(tasks, key=lambda t: (subtopology_order(t[0]), t[1])))


def subtopology_order(subtopology: str) -> tuple[int, int | str]:
    """Kafka Streams' subtopology ids are numbers: "2" before "10"; others after, by name."""
    return (0, int(subtopology)) if subtopology.isdigit() else (1, subtopology)


@dataclass(frozen=True)
class TasksView:
    """Tasks in their three roles, each a sorted tuple of task names (``"0_1"``)."""

    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()
    warmup: tuple[str, ...] = ()

    @classmethod
    def of(cls, tasks: Tasks) -> TasksView:
        return cls(_names(tasks.active), _names(tasks.standby), _names(tasks.warmup))

    def __bool__(self) -> bool:
        return bool(self.active or self.standby or self.warmup)

    def to_dict(self) -> dict[str, list[str]]:
        return {"active": list(self.active), "standby": list(self.standby), "warmup": list(self.warmup)}


@dataclass(frozen=True)
class StreamsMemberView:
    """One member: a stream thread of a Kafka Streams instance (``process_id`` is the instance's;
    ``user_endpoint`` its ``application.server``, ``"host:port"``). ``tasks`` are those it holds
    now, ``target`` those the assignor gave it, ``revoking`` those it must still give up; its
    ``state`` is Kafka's reconciliation state (``STABLE``, ``UNREVOKED_TASKS``,
    ``UNRELEASED_TASKS``)."""

    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None
    rack: str | None
    process_id: str
    user_endpoint: str | None
    client_tags: dict[str, str]
    member_epoch: int
    state: str
    tasks: TasksView
    target: TasksView
    revoking: TasksView
    topology_epoch: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "instance_id": self.instance_id,
            "rack": self.rack,
            "process_id": self.process_id,
            "user_endpoint": self.user_endpoint,
            "client_tags": dict(self.client_tags),
            "member_epoch": self.member_epoch,
            "state": self.state,
            "topology_epoch": self.topology_epoch,
            "tasks": self.tasks.to_dict(),
            "target": self.target.to_dict(),
            "revoking": self.revoking.to_dict(),
        }


@dataclass(frozen=True)
class SubtopologyView:
    """One subtopology as the group holds it: the topics it reads (sources and repartition
    sources), writes to repartition, and its state changelogs; ``tasks`` is how many tasks it
    has (0 until the group's topology is configured)."""

    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    changelog_topics: tuple[str, ...]
    tasks: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "subtopology_id": self.subtopology_id,
            "source_topics": list(self.source_topics),
            "repartition_source_topics": list(self.repartition_source_topics),
            "repartition_sink_topics": list(self.repartition_sink_topics),
            "changelog_topics": list(self.changelog_topics),
            "tasks": self.tasks,
        }


@dataclass(frozen=True)
class StreamsGroupView:
    """A streams group now: ``state`` is Kafka's name (``Empty``, ``NotReady``, ``Assigning``,
    ``Reconciling``, ``Stable``, ``Dead``); ``status`` is what keeps a NotReady group from
    assigning (``("MISSING_SOURCE_TOPICS", "Source topics words are missing.")``), None when
    it can; ``num_standby_replicas`` is the group's setting in force."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    topology_epoch: int | None
    coordinator: int
    members: tuple[StreamsMemberView, ...]
    subtopologies: tuple[SubtopologyView, ...] = ()
    status: tuple[str, str] | None = None
    num_standby_replicas: int = 0

    @property
    def settled(self) -> bool:
        """Every member reached the current target assignment: at its epoch, nothing to revoke or wait for."""
        return self.assignment_epoch == self.group_epoch and all(
            m.member_epoch == self.assignment_epoch and m.state == "STABLE" for m in self.members
        )

    def member(self, member_id: str) -> StreamsMemberView | None:
        return next((m for m in self.members if m.member_id == member_id), None)

    def owner(self, task: str) -> StreamsMemberView | None:
        """The member holding ``task`` (``"1_0"``) as an active task, None when nobody does."""
        return next((m for m in self.members if task in m.tasks.active), None)

    def standby_holders(self, task: str) -> tuple[StreamsMemberView, ...]:
        """The members holding ``task`` as a standby."""
        return tuple(m for m in self.members if task in m.tasks.standby)

    def by_process(self) -> dict[str, TasksView]:
        """process id -> the tasks its members (stream threads) hold, merged."""
        merged: dict[str, tuple[set[str], set[str], set[str]]] = {}
        for m in self.members:
            a, s, w = merged.setdefault(m.process_id, (set(), set(), set()))
            a.update(m.tasks.active)
            s.update(m.tasks.standby)
            w.update(m.tasks.warmup)

        def ordered(names: set[str]) -> tuple[str, ...]:
            tasks = {(n.rsplit("_", 1)[0], int(n.rsplit("_", 1)[1])) for n in names}
            return _names(frozenset(tasks))

        return {p: TasksView(ordered(a), ordered(s), ordered(w)) for p, (a, s, w) in sorted(merged.items())}

    def to_dict(self) -> dict[str, Any]:
        """The control endpoint's form; ``generation`` is the group epoch, as in a consumer group's."""
        return {
            "group_id": self.group_id,
            "group_type": "streams",
            "state": self.state,
            "generation": self.group_epoch,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "topology_epoch": self.topology_epoch,
            "coordinator": self.coordinator,
            "status": list(self.status) if self.status is not None else None,
            "num_standby_replicas": self.num_standby_replicas,
            "subtopologies": [s.to_dict() for s in self.subtopologies],
            "members": [m.to_dict() for m in self.members],
        }


def _member(group: StreamsGroup, m: StreamsMember) -> StreamsMemberView:
    endpoint = f"{m.user_endpoint[0]}:{m.user_endpoint[1]}" if m.user_endpoint is not None else None
    target = group.target.get(m.member_id)
    return StreamsMemberView(
        m.member_id,
        m.client_id,
        m.client_host,
        m.instance_id,
        m.rack_id,
        m.process_id,
        endpoint,
        dict(m.client_tags),
        m.member_epoch,
        m.state.value,
        TasksView.of(m.assigned),
        TasksView.of(target) if target is not None else TasksView(),
        TasksView.of(m.revoking),
        m.topology_epoch,
    )


def streams_group_view(state: ClusterState, group_id: str) -> StreamsGroupView | None:
    """The streams group as its coordinator holds it; None if no streams group has that id."""
    group = state.groups.streams.groups.get(group_id)
    if group is None:
        return None
    configured = group.configured
    subtopologies: tuple[SubtopologyView, ...] = ()
    if group.topology is not None:
        counts = configured.tasks if configured is not None else {}
        subtopologies = tuple(
            SubtopologyView(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(t.name for t in s.repartition_source_topics),
                tuple(s.repartition_sink_topics),
                tuple(t.name for t in s.state_changelog_topics),
                counts.get(s.subtopology_id, 0),
            )
            for s in sorted(group.topology.subtopologies, key=lambda s: subtopology_order(s.subtopology_id))
        )
    status = None
    if configured is not None and configured.status is not None:
        code, detail = configured.status
        status = (code.name, detail)
    return StreamsGroupView(
        group.group_id,
        group.state.value,
        group.group_epoch,
        group.assignment_epoch,
        group.topology.epoch if group.topology is not None else None,
        state.groups.coordinator_of(group_id),
        tuple(_member(group, m) for m in group.members.values()),
        subtopologies,
        status,
        state.group_configs.get_int(group_id, "streams.num.standby.replicas"),
    )

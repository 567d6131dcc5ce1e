"""Streams groups (KIP-1071) as a data directory keeps them: what Kafka writes to
``__consumer_offsets`` for one (STREAMS-GROUPS.md §8: the group's metadata with its epoch and
metadata hash, validated topology epoch and last assignment configs; the topology; each member's
metadata; the target assignment with its epoch and timestamp; each member's current assignment
with its epochs, state, tasks pending revocation and the epoch each active task was granted at),
so a Kafka Streams member that outlives a restart heartbeats on at its epoch with its tasks
instead of being fenced.

One JSON object per group, in the snapshot's ``streams_groups`` and in journal lines
``["stgroup", group, entry|null]``, written once per settled request or timer that changed the
group (``Journal``). A restart loads them as a coordinator move does (``StreamsCoordinator.load``):
every member's session starts again (and an UNREVOKED_TASKS member's rebalance timeout), and one
that does not come back is fenced after its session timeout, as after a Kafka restart. What Kafka
keeps in memory only is not kept either (§4.5): the configured topology (configured again at
load), task offsets, the endpoint epoch (0 again: members get the endpoints once more), the
initial-delay timer, and a member's shutdown request.

The metadata hash: Kafka keeps an xxh3 of the required topics' metadata; this broker's hash is
Python's of (topic, partition count) pairs, which differs from one process to the next, so the
entry keeps what it hashes, ``metadata``: the partition count of each topic the topology requires
(-1: missing), or null when the topics changed since the group last looked at them. A restart
configures the topology from these counts and hashes them again, so a topic change the group had
not seen yet still bumps its epoch at its next heartbeat, as on Kafka (from null: configured from
the topics as they are, with a hash that is not theirs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.streams.coordinator import StreamsCoordinator, plain
from ..core.groups.streams.model import MemberState, StreamsGroup, StreamsMember, Task, Tasks
from ..core.groups.streams.topology import (
    CopartitionGroup,
    InvalidTopology,
    Subtopology,
    TopicInfo,
    Topology,
    configure,
)
from .rows import first_problem, is_count

_TEXT = ("member_id", "client_id", "client_host", "process_id", "state")
_OPTIONAL_TEXT = ("instance_id", "rack_id")
_INTS = ("member_epoch", "previous_epoch", "rebalance_timeout_ms", "topology_epoch")
_STATES = {s.value for s in MemberState}
_ROLES = ("active", "standby", "warmup")


# -- writing ----------------------------------------------------------------------------------------
def group_entry(state: ClusterState, group_id: str) -> dict[str, Any] | None:
    """One streams group as kept (None: there is none, or it is Dead)."""
    coordinator = state.groups.streams
    group = coordinator.groups.get(group_id)
    if group is None or group.dead:
        return None
    return {
        "group_epoch": group.group_epoch,
        "metadata": _metadata(coordinator, group),
        "validated_topology_epoch": group.validated_topology_epoch,
        "assignment_configs": None if group.assignment_configs is None else list(group.assignment_configs),
        "topology": None if group.topology is None else _topology_entry(group.topology),
        "assignment_epoch": group.assignment_epoch,
        "assignment_timestamp_ms": group.assignment_timestamp_ms,
        "target": {m: _tasks_entry(t) for m, t in sorted(group.target.items())},
        "members": [_member_entry(m) for m in group.members.values()],
    }


def _metadata(coordinator: StreamsCoordinator, group: StreamsGroup) -> dict[str, int] | None:
    """The partition counts the group's metadata hash was computed from: the topics as they are,
    or as they were before the API layer created the internal topics the group asked for (None:
    a topic changed since the group last looked, its next heartbeat sees it)."""
    if group.topology is None or group.configured is None:
        return None
    current = {name: count for name, (_, count) in coordinator.topics().items()}
    created = {t.name for t in group.configured.to_create}
    before = {name: count for name, count in current.items() if name not in created}
    for counts in (current, before):
        if coordinator._metadata_hash(group.topology, counts) == group.metadata_hash:
            return {t: counts.get(t, -1) for t in sorted(group.topology.required_topics())}
    return None


def _tasks_entry(tasks: Tasks) -> dict[str, dict[str, list[int]]]:
    return {"active": plain(tasks.active), "standby": plain(tasks.standby), "warmup": plain(tasks.warmup)}


def _topic_info_entry(info: TopicInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "partitions": info.partitions,
        "replication_factor": info.replication_factor,
        "configs": [[k, v] for k, v in info.configs],  # in the member's order: topologies compare it
    }


def _topology_entry(topology: Topology) -> dict[str, Any]:
    return {
        "epoch": topology.epoch,
        "subtopologies": [
            {
                "subtopology_id": s.subtopology_id,
                "source_topics": list(s.source_topics),
                "repartition_sink_topics": list(s.repartition_sink_topics),
                "state_changelog_topics": [_topic_info_entry(i) for i in s.state_changelog_topics],
                "repartition_source_topics": [_topic_info_entry(i) for i in s.repartition_source_topics],
                "copartition_groups": [
                    [list(g.source_topics), list(g.repartition_source_topics)] for g in s.copartition_groups
                ],
            }
            for s in topology.subtopologies
        ],
    }


def _member_entry(m: StreamsMember) -> dict[str, Any]:
    return {
        # the member's metadata
        "member_id": m.member_id,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "topology_epoch": m.topology_epoch,
        "process_id": m.process_id,
        "user_endpoint": None if m.user_endpoint is None else list(m.user_endpoint),
        "client_tags": dict(sorted(m.client_tags.items())),
        # its current assignment
        "member_epoch": m.member_epoch,
        "previous_epoch": m.previous_epoch,
        "state": m.state.value,
        "assigned": _tasks_entry(m.assigned),
        "revoking": _tasks_entry(m.revoking),
        "active_epochs": [[s, p, e] for (s, p), e in sorted(m.active_epochs.items())],
    }


def group_entries(state: ClusterState) -> dict[str, dict[str, Any]]:
    return {gid: entry for gid in sorted(state.groups.streams.groups) if (entry := group_entry(state, gid)) is not None}


# -- reading ----------------------------------------------------------------------------------------
def restore(state: ClusterState, entries: dict[str, Any], now_ms: int) -> None:
    """Load the kept groups as a coordinator that takes them over does (after the topics)."""
    coordinator = state.groups.streams
    for gid, e in entries.items():
        configs = e["assignment_configs"]
        group = StreamsGroup(
            gid,
            group_epoch=e["group_epoch"],
            assignment_epoch=e["assignment_epoch"],
            assignment_timestamp_ms=e["assignment_timestamp_ms"],
            target={m: _tasks(t) for m, t in e["target"].items()},
            topology=None if e["topology"] is None else _topology(e["topology"]),
            validated_topology_epoch=e["validated_topology_epoch"],
            assignment_configs=None if configs is None else tuple(configs),
        )
        for m in e["members"]:
            endpoint = m["user_endpoint"]
            member = StreamsMember(
                m["member_id"],
                instance_id=m["instance_id"],
                rack_id=m["rack_id"],
                client_id=m["client_id"],
                client_host=m["client_host"],
                rebalance_timeout_ms=m["rebalance_timeout_ms"],
                topology_epoch=m["topology_epoch"],
                process_id=m["process_id"],
                user_endpoint=None if endpoint is None else (endpoint[0], endpoint[1]),
                client_tags=dict(m["client_tags"]),
                member_epoch=m["member_epoch"],
                previous_epoch=m["previous_epoch"],
                state=MemberState(m["state"]),
                assigned=_tasks(m["assigned"]),
                revoking=_tasks(m["revoking"]),
                active_epochs={(s, p): epoch for s, p, epoch in m["active_epochs"]},
            )
            group.members[member.member_id] = member
        _configure(coordinator, group, e["metadata"])
        coordinator.groups[gid] = group
    if entries:
        coordinator.load(sorted(entries), now_ms)


def _configure(coordinator: StreamsCoordinator, group: StreamsGroup, metadata: dict[str, int] | None) -> None:
    """The configured topology and the metadata hash, in this process's hashes: from the counts
    kept, so a topic that changed after them still reconfigures the group at its next heartbeat."""
    if group.topology is None:
        return
    if metadata is None:  # the group had not looked at the topics' latest change
        existing = {name: count for name, (_, count) in coordinator.topics().items()}
    else:
        existing = {t: count for t, count in metadata.items() if count >= 0}
    try:
        group.configured = configure(group.topology, existing)
    except InvalidTopology:
        return  # NotReady until its next heartbeat, which answers 130 as it would have
    group.metadata_hash = coordinator._metadata_hash(group.topology, existing)
    if metadata is None:
        group.metadata_hash += 1  # not the topics' hash: the next heartbeat reconfigures and bumps


def _tasks(entry: dict[str, dict[str, list[int]]]) -> Tasks:
    def role(name: str) -> frozenset[Task]:
        return frozenset((s, p) for s, ps in entry[name].items() for p in ps)

    return Tasks(role("active"), role("standby"), role("warmup"))


def _topic_info(e: dict[str, Any]) -> TopicInfo:
    return TopicInfo(e["name"], e["partitions"], e["replication_factor"], tuple((k, v) for k, v in e["configs"]))


def _topology(e: dict[str, Any]) -> Topology:
    return Topology(
        e["epoch"],
        tuple(
            Subtopology(
                s["subtopology_id"],
                tuple(s["source_topics"]),
                tuple(s["repartition_sink_topics"]),
                tuple(_topic_info(i) for i in s["state_changelog_topics"]),
                tuple(_topic_info(i) for i in s["repartition_source_topics"]),
                tuple(CopartitionGroup(tuple(src), tuple(rep)) for src, rep in s["copartition_groups"]),
            )
            for s in e["subtopologies"]
        ),
    )


# -- what makes an entry unusable -------------------------------------------------------------------
def problem(entries: Any) -> str | None:
    """What is wrong with the snapshot's ``streams_groups`` (None: usable)."""
    return first_problem(entries, entry_problem)


def entry_problem(e: Any) -> str | None:
    if not isinstance(e, dict):
        return "not an object"
    if not all(is_count(e.get(k)) for k in ("group_epoch", "assignment_epoch", "assignment_timestamp_ms")):
        return "group_epoch, assignment_epoch or assignment_timestamp_ms is missing or not a number"
    if not _is_int(e.get("validated_topology_epoch")):
        return "validated_topology_epoch is not a number"
    metadata = e.get("metadata", 0)
    if not (metadata is None or _strings_to(metadata, lambda n: is_count(n, -1))):
        return "metadata is not an object of partition counts or null"
    configs = e.get("assignment_configs", 0)
    if not (
        configs is None
        or (isinstance(configs, list) and len(configs) == 2 and is_count(configs[0]) and isinstance(configs[1], str))
    ):
        return "assignment_configs is not [standby replicas, rack tags] or null"
    topology = e.get("topology", 0)
    if topology is not None:
        found = _topology_problem(topology)
        if found:
            return found
    target = e.get("target")
    if not isinstance(target, dict) or not all(_tasks_ok(t) for t in target.values()):
        return "target is not an object of tasks"
    members = e.get("members")
    if not isinstance(members, list):
        return "members is not a list"
    for m in members:
        found = _member_problem(m)
        if found:
            return found
    return None


def _topology_problem(t: Any) -> str | None:
    if not isinstance(t, dict) or not _is_int(t.get("epoch")) or not isinstance(t.get("subtopologies"), list):
        return "topology is not an object with an epoch and subtopologies"
    for s in t["subtopologies"]:
        if not isinstance(s, dict) or not isinstance(s.get("subtopology_id"), str):
            return "a subtopology is not an object with an id"
        if not all(_strings(s.get(k)) for k in ("source_topics", "repartition_sink_topics")):
            return "a subtopology's source or repartition sink topics are not a list of strings"
        infos = [s.get("state_changelog_topics"), s.get("repartition_source_topics")]
        if not all(isinstance(i, list) and all(_topic_info_ok(x) for x in i) for i in infos):
            return "a subtopology's changelog or repartition source topics are not a list of topic infos"
        groups = s.get("copartition_groups")
        if not isinstance(groups, list) or not all(
            isinstance(g, list) and len(g) == 2 and all(_ints(x) for x in g) for g in groups
        ):
            return "a subtopology's copartition groups are not [source indices, repartition indices] lists"
    return None


def _topic_info_ok(i: Any) -> bool:
    return (
        isinstance(i, dict)
        and isinstance(i.get("name"), str)
        and _is_int(i.get("partitions"))
        and _is_int(i.get("replication_factor"))
        and isinstance(i.get("configs"), list)
        and all(isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c) for c in i["configs"])
    )


def _member_problem(m: Any) -> str | None:
    if not isinstance(m, dict):
        return "a member is not an object"
    if not all(isinstance(m.get(k), str) for k in _TEXT) or m["state"] not in _STATES:
        return "a member's ids, client, process or state is not a string it can be"
    if not all(m.get(k) is None or isinstance(m.get(k), str) for k in _OPTIONAL_TEXT):
        return "a member's instance or rack is not a string or null"
    if not all(_is_int(m.get(k)) for k in _INTS):
        return "a member's epochs, timeout or topology epoch are not numbers"
    endpoint = m.get("user_endpoint", 0)
    if not (
        endpoint is None
        or (
            isinstance(endpoint, list) and len(endpoint) == 2 and isinstance(endpoint[0], str) and is_count(endpoint[1])
        )
    ):
        return "a member's endpoint is not [host, port] or null"
    if not _strings_to(m.get("client_tags"), lambda v: isinstance(v, str)):
        return "a member's client tags are not an object of strings"
    if not (_tasks_ok(m.get("assigned")) and _tasks_ok(m.get("revoking"))):
        return "a member's tasks are not active, standby and warmup objects of partition lists"
    epochs = m.get("active_epochs")
    if not isinstance(epochs, list) or not all(
        isinstance(x, list) and len(x) == 3 and isinstance(x[0], str) and is_count(x[1]) and _is_int(x[2])
        for x in epochs
    ):
        return "a member's active task epochs are not [subtopology, partition, epoch] lists"
    return None


def _tasks_ok(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == set(_ROLES)
        and all(_strings_to(value[r], lambda ps: isinstance(ps, list) and all(is_count(p) for p in ps)) for r in _ROLES)
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(_is_int(x) for x in value)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _strings_to(value: Any, ok: Callable[[Any], bool]) -> bool:
    """Whether ``value`` is an object whose values all pass ``ok``."""
    return isinstance(value, dict) and all(isinstance(k, str) and ok(v) for k, v in value.items())

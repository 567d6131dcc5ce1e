"""KIP-848 consumer groups as a data directory keeps them: what Kafka writes to
``__consumer_offsets`` for one (the group's epoch, each member's subscription and epoch with its
current assignment and what it still has to revoke, the target assignment and its epoch), so a
consumer that outlives a restart heartbeats on at its epoch instead of being fenced.

One JSON object per group, in the snapshot's ``consumer_groups`` and in journal lines
``["kgroup", group, entry|null]``, written once per settled request or timer that changed the
group (``Journal``). A restart loads them as a coordinator move does (``ConsumerCoordinator.load``):
every member's session starts again, and one that does not come back is fenced after its
session timeout, as after a Kafka restart. Classic members in a consumer group keep their
protocols (base64) and session timeout.
"""

from __future__ import annotations

import base64
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.consumer.model import ConsumerGroup, ConsumerMember, MemberState
from .rows import assignment_sets, first_problem, is_count, plain_assignment

_TEXT = ("member_id", "client_id", "client_host", "state")
_OPTIONAL_TEXT = ("instance_id", "rack_id", "subscribed_regex", "server_assignor")
_INTS = ("member_epoch", "previous_epoch", "rebalance_timeout_ms", "classic_version")
_STATES = {s.value for s in MemberState}


def group_entry(state: ClusterState, group_id: str) -> dict[str, Any] | None:
    """One consumer group as kept (None: there is none, or it is Dead)."""
    group = state.groups.consumer.groups.get(group_id)
    if group is None or group.dead:
        return None
    return {
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "created_ms": group.created_ms,
        "target": {m: plain_assignment(a) for m, a in sorted(group.target.items())},
        "members": [_member_entry(m) for m in group.members.values()],
    }


def _member_entry(m: ConsumerMember) -> dict[str, Any]:
    return {
        "member_id": m.member_id,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "subscribed_names": list(m.subscribed_names),
        "subscribed_regex": m.subscribed_regex,
        "server_assignor": m.server_assignor,
        "member_epoch": m.member_epoch,
        "previous_epoch": m.previous_epoch,
        "state": m.state.value,
        "assigned": plain_assignment(m.assigned),
        "revoking": plain_assignment(m.revoking),
        "assignment_epochs": [[t, p, e] for (t, p), e in sorted(m.assignment_epochs.items())],
        "classic_protocols": None
        if m.classic_protocols is None
        else [[name, base64.b64encode(data).decode()] for name, data in m.classic_protocols],
        "session_timeout_ms": m.session_timeout_ms,
        "classic_version": m.classic_version,
    }


def group_entries(state: ClusterState) -> dict[str, dict[str, Any]]:
    return {
        gid: entry for gid in sorted(state.groups.consumer.groups) if (entry := group_entry(state, gid)) is not None
    }


def restore(state: ClusterState, entries: dict[str, Any], now_ms: int) -> None:
    """Load the kept groups as a coordinator that takes them over does."""
    coordinator = state.groups.consumer
    for gid, e in entries.items():
        group = ConsumerGroup(
            gid,
            group_epoch=e["group_epoch"],
            assignment_epoch=e["assignment_epoch"],
            created_ms=e["created_ms"],
            target={m: assignment_sets(a) for m, a in e["target"].items()},
        )
        for m in e["members"]:
            protocols = m["classic_protocols"]
            member = ConsumerMember(
                m["member_id"],
                m["instance_id"],
                m["rack_id"],
                m["client_id"],
                m["client_host"],
                m["rebalance_timeout_ms"],
                tuple(m["subscribed_names"]),
                m["subscribed_regex"],
                m["server_assignor"],
                m["member_epoch"],
                m["previous_epoch"],
                MemberState(m["state"]),
                assignment_sets(m["assigned"]),
                assignment_sets(m["revoking"]),
                {(t, p): epoch for t, p, epoch in m["assignment_epochs"]},
                None,  # what it was last told: the next heartbeat tells it its assignment again
                None if protocols is None else [(name, base64.b64decode(data)) for name, data in protocols],
                m["session_timeout_ms"],
                m["classic_version"],
            )
            group.members[member.member_id] = member
            if member.instance_id is not None:
                group.static_members[member.instance_id] = member.member_id
        # what the subscribed topics looked like, in this process's hashes (the topics are back)
        group.subscription_hash = coordinator.subscription_hash_of(group)
        coordinator.groups[gid] = group
    if entries:
        coordinator.load(sorted(entries), now_ms)


def problem(entries: Any) -> str | None:
    """What is wrong with the snapshot's ``consumer_groups`` (None: usable)."""
    return first_problem(entries, entry_problem)


def entry_problem(e: Any) -> str | None:
    if not isinstance(e, dict):
        return "not an object"
    if not all(is_count(e.get(k)) for k in ("group_epoch", "assignment_epoch", "created_ms")):
        return "group_epoch, assignment_epoch or created_ms is missing or not a number"
    target = e.get("target")
    if not isinstance(target, dict) or not all(_assignment(a) for a in target.values()):
        return "target is not an object of assignments"
    members = e.get("members")
    if not isinstance(members, list):
        return "members is not a list"
    for m in members:
        found = _member_problem(m)
        if found:
            return found
    return None


def _member_problem(m: Any) -> str | None:
    if not isinstance(m, dict):
        return "a member is not an object"
    if not all(isinstance(m.get(k), str) for k in _TEXT) or m["state"] not in _STATES:
        return "a member's ids, client or state is not a string it can be"
    if not all(m.get(k) is None or isinstance(m.get(k), str) for k in _OPTIONAL_TEXT):
        return "a member's instance, rack, regex or assignor is not a string or null"
    if not all(is_count(m.get(k), -2) for k in _INTS):
        return "a member's epochs, timeout or version are not numbers"
    if not (m.get("session_timeout_ms") is None or is_count(m.get("session_timeout_ms"))):
        return "a member's session timeout is not a number or null"
    names = m.get("subscribed_names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return "a member's subscribed names are not a list of strings"
    if not (_assignment(m.get("assigned")) and _assignment(m.get("revoking"))):
        return "a member's assignment is not an object of partition lists"
    epochs = m.get("assignment_epochs")
    if not isinstance(epochs, list) or not all(
        isinstance(x, list) and len(x) == 3 and isinstance(x[0], str) and is_count(x[1]) and is_count(x[2], -2)
        for x in epochs
    ):
        return "a member's assignment epochs are not [topic, partition, epoch] lists"
    protocols = m.get("classic_protocols")
    if protocols is not None:
        if not isinstance(protocols, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in protocols
        ):
            return "a member's classic protocols are not a list of [name, base64]"
        try:
            for _, data in protocols:
                base64.b64decode(data, validate=True)
        except ValueError:
            return "a member's classic protocol metadata is not base64"
    return None


def _assignment(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(t, str) and isinstance(ps, list) and all(is_count(p) for p in ps) for t, ps in value.items()
    )

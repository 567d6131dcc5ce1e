"""Classic consumer groups as a data directory keeps them: the group record Kafka writes to
``__consumer_offsets`` (generation, protocol type and name, leader, and each member with its
instance id, client, timeouts, protocol metadata and assignment), which the group coordinator
already keeps per group for its coordinator moves (``GroupCoordinator.snapshots``, written when
a group becomes Stable with its assignment, or Empty).

One JSON object per group, in the snapshot's ``groups`` and in journal lines
``["cgroup", group, entry|null]``, written whenever the coordinator's record of the group is a
new one. A restart loads them as a coordinator move does (``GroupCoordinator.load``): a group
with members is Stable at its generation, each member's session starts again, so a consumer
that outlives the restart heartbeats on without rejoining, and one that does not come back is
expired after its session timeout, as after a Kafka restart.
"""

from __future__ import annotations

import base64
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.classic.coordinator import GroupSnapshot
from .rows import first_problem, is_count

_MEMBER_TEXT = ("member_id", "client_id", "client_host", "protocol_type")
_MEMBER_INTS = ("rebalance_timeout_ms", "session_timeout_ms")


def group_entry(state: ClusterState, group_id: str) -> dict[str, Any] | None:
    """One group's record as kept (None: the coordinator keeps none)."""
    record = state.groups.classic.snapshots.get(group_id)
    if record is None:
        return None
    return {
        "protocol_type": record.protocol_type,
        "generation": record.generation_id,
        "protocol_name": record.protocol_name,
        "leader": record.leader_id,
        "state_ms": record.state_timestamp_ms,
        "members": [
            {
                **{k: m[k] for k in (*_MEMBER_TEXT, *_MEMBER_INTS, "group_instance_id")},
                "protocols": [[name, _text(data)] for name, data in m["protocols"]],
                "assignment": _text(m["assignment"]),
            }
            for m in record.members
        ],
    }


def group_entries(state: ClusterState) -> dict[str, dict[str, Any]]:
    return {
        gid: entry for gid in sorted(state.groups.classic.snapshots) if (entry := group_entry(state, gid)) is not None
    }


def restore(state: ClusterState, entries: dict[str, Any], now_ms: int) -> None:
    """Load the kept groups as a coordinator that takes them over does."""
    coordinator = state.groups.classic
    for gid, e in entries.items():
        members = [
            {
                **{k: m[k] for k in (*_MEMBER_TEXT, *_MEMBER_INTS, "group_instance_id")},
                "protocols": [(name, base64.b64decode(data)) for name, data in m["protocols"]],
                "assignment": base64.b64decode(m["assignment"]),
            }
            for m in e["members"]
        ]
        coordinator.snapshots[gid] = GroupSnapshot(
            gid, e["protocol_type"], e["generation"], e["protocol_name"], e["leader"], e["state_ms"], members
        )
    if entries:
        coordinator.load(sorted(entries), now_ms)


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode()


def problem(entries: Any) -> str | None:
    """What is wrong with the snapshot's ``groups`` (None: usable)."""
    return first_problem(entries, entry_problem)


def entry_problem(e: Any) -> str | None:
    if not isinstance(e, dict):
        return "not an object"
    if not is_count(e.get("generation")) or not is_count(e.get("state_ms"), -1):
        return "generation or state_ms is missing or not a number"
    if not all(_optional_text(e.get(k)) for k in ("protocol_type", "protocol_name", "leader")):
        return "protocol_type, protocol_name or leader is not a string or null"
    members = e.get("members")
    if not isinstance(members, list):
        return "members is not a list"
    for m in members:
        if not isinstance(m, dict):
            return "a member is not an object"
        if not all(isinstance(m.get(k), str) for k in _MEMBER_TEXT) or not _optional_text(m.get("group_instance_id")):
            return "a member's ids, client or protocol type is not a string"
        if not all(is_count(m.get(k)) for k in _MEMBER_INTS):
            return "a member's timeouts are not numbers"
        protocols = m.get("protocols")
        if not isinstance(protocols, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in protocols
        ):
            return "a member's protocols are not a list of [name, base64]"
        if not isinstance(m.get("assignment"), str):
            return "a member's assignment is not base64 text"
        try:
            for data in [m["assignment"], *(p[1] for p in protocols)]:
                base64.b64decode(data, validate=True)
        except ValueError:
            return "a member's protocol metadata or assignment is not base64"
    return None


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)

"""Share groups (KIP-932) as a data directory keeps them: the group coordinator's records of a
share group (its epochs, target assignment, members with their subscriptions, epochs and
assignments, the share partitions it initialized) and the share coordinator's state of each
share partition (``__share_group_state``: start offset, delivered ranges with their states and
delivery counts), so a share group's acknowledged progress survives a restart as on Kafka.

In the snapshot: ``share_groups`` (group -> entry) and ``share_states`` (a list of [group,
topic id, partition, entry]); in journal lines ``["sgroup", group, entry|null]`` and
``["sstate", group, topic id, partition, entry|null]``. Acquisitions are never kept (Kafka does
not persist them): records a member held come back available with the delivery count they had.
A restart loads the groups as a coordinator move does: every member's session starts again.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.share.model import ShareGroup, ShareMember
from ..core.groups.share.state import ShareState, StateKey
from .rows import assignment_sets, first_problem, is_count, plain_assignment


# -- the group coordinator's records ----------------------------------------------------------------
def group_entry(state: ClusterState, group_id: str) -> dict[str, Any] | None:
    """One share group as kept (None: there is none)."""
    group = state.groups.share.groups.get(group_id)
    if group is None or group.dead:
        return None
    initialized = {t: sorted(ps | group.initializing.get(t, set())) for t, ps in group.initialized.items()}
    return {
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "created_ms": group.created_ms,
        "target": {m: plain_assignment(a) for m, a in sorted(group.target.items())},
        "initialized": {t: ps for t, ps in sorted(initialized.items()) if ps},
        "members": [
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_names": list(m.subscribed_names),
                "member_epoch": m.member_epoch,
                "previous_epoch": m.previous_epoch,
                "assigned": plain_assignment(m.assigned),
            }
            for m in group.members.values()
        ],
    }


def group_entries(state: ClusterState) -> dict[str, dict[str, Any]]:
    return {gid: e for gid in sorted(state.groups.share.groups) if (e := group_entry(state, gid)) is not None}


def restore_groups(state: ClusterState, entries: dict[str, Any], now_ms: int) -> None:
    coordinator = state.groups.share
    for gid, e in entries.items():
        group = ShareGroup(
            gid,
            group_epoch=e["group_epoch"],
            assignment_epoch=e["assignment_epoch"],
            created_ms=e["created_ms"],
            target={m: assignment_sets(a) for m, a in e["target"].items()},
            initialized=assignment_sets(e["initialized"]),
        )
        for m in e["members"]:
            member = ShareMember(
                m["member_id"],
                m["rack_id"],
                m["client_id"],
                m["client_host"],
                tuple(m["subscribed_names"]),
                m["member_epoch"],
                m["previous_epoch"],
                assignment_sets(m["assigned"]),
            )
            group.members[member.member_id] = member
        group.subscription_hash = coordinator.metadata_hash(group)  # the topics are back, same ids
        coordinator.groups[gid] = group
    if entries:
        coordinator.load(sorted(entries), now_ms)


# -- the share coordinator's state ------------------------------------------------------------------
def state_entry(stored: ShareState | None) -> dict[str, Any] | None:
    if stored is None:
        return None
    return {
        "state_epoch": stored.state_epoch,
        "leader_epoch": stored.leader_epoch,
        "start_offset": stored.start_offset,
        "delivery_complete_count": stored.delivery_complete_count,
        "batches": [list(b) for b in stored.batches],
    }


def state_entries(state: ClusterState) -> list[list[Any]]:
    return [
        [group, topic_id.hex, partition, state_entry(stored)]
        for (group, topic_id, partition), stored in sorted(state.groups.share_states.states.items(), key=str)
    ]


def state_line(key: StateKey, stored: ShareState | None) -> list[Any]:
    group, topic_id, partition = key
    return ["sstate", group, topic_id.hex, partition, state_entry(stored)]


def restore_states(state: ClusterState, rows: list[list[Any]]) -> None:
    store = state.groups.share_states
    for group, topic_hex, partition, e in rows:
        # a leader epoch of the process before: the restarted leaders read it as theirs
        store.states[(group, uuid.UUID(hex=topic_hex), partition)] = ShareState(
            e["state_epoch"],
            -1,
            e["start_offset"],
            e["delivery_complete_count"],
            tuple((b[0], b[1], b[2], b[3]) for b in e["batches"]),  # [first, last, state, count]
        )


# -- what makes them unusable -----------------------------------------------------------------------
def groups_problem(entries: Any) -> str | None:
    return first_problem(entries, _group_problem)


def _assignment(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(t, str) and isinstance(ps, list) and all(is_count(p) for p in ps) for t, ps in value.items()
    )


def _group_problem(e: Any) -> str | None:
    if not isinstance(e, dict):
        return "not an object"
    if not all(is_count(e.get(k)) for k in ("group_epoch", "assignment_epoch", "created_ms")):
        return "group_epoch, assignment_epoch or created_ms is missing or not a number"
    target = e.get("target")
    if not isinstance(target, dict) or not all(_assignment(a) for a in target.values()):
        return "target is not an object of assignments"
    if not _assignment(e.get("initialized")):
        return "initialized is not an object of partition lists"
    members = e.get("members")
    if not isinstance(members, list):
        return "members is not a list"
    for m in members:
        if not isinstance(m, dict) or not all(
            isinstance(m.get(k), str) for k in ("member_id", "client_id", "client_host")
        ):
            return "a member's id or client is not a string"
        if not (m.get("rack_id") is None or isinstance(m.get("rack_id"), str)):
            return "a member's rack is not a string or null"
        names = m.get("subscribed_names")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return "a member's subscribed names are not a list of strings"
        if not (is_count(m.get("member_epoch"), -1) and is_count(m.get("previous_epoch"), -1)):
            return "a member's epochs are not numbers"
        if not _assignment(m.get("assigned")):
            return "a member's assignment is not an object of partition lists"
    return None


def states_problem(rows: Any) -> str | None:
    if not isinstance(rows, list):
        return "is not a list"
    for row in rows:
        if not isinstance(row, list) or len(row) != 4:
            return "holds a row that is not [group, topic id, partition, state]"
        found = line_problem(row[0], row[1], row[2], row[3])
        if found:
            return found
    return None


def line_problem(group: Any, topic_hex: Any, partition: Any, e: Any) -> str | None:
    """What is wrong with one kept share-partition state (None: usable; ``e`` None: deleted)."""
    if not isinstance(group, str) or not is_count(partition):
        return "a share state's group or partition is not a string and a number"
    try:
        uuid.UUID(hex=topic_hex)
    except (TypeError, ValueError, AttributeError):
        return f"share state of {group!r}: {topic_hex!r} is not a topic id"
    if e is None:
        return None
    if not isinstance(e, dict) or not all(
        is_count(e.get(k), -1) for k in ("state_epoch", "leader_epoch", "start_offset", "delivery_complete_count")
    ):
        return f"share state of {group!r}: its epochs and offsets are not numbers"
    batches = e.get("batches")
    if not isinstance(batches, list) or not all(
        isinstance(b, list) and len(b) == 4 and all(is_count(x) for x in b) for b in batches
    ):
        return f"share state of {group!r}: batches are not [first, last, state, count] lists"
    return None

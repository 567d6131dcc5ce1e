"""Probes of the classic group coordinator: the error paths for an unknown group or member, and
one member's dance (join, sync, heartbeat, commit, fetch, leave)."""

from __future__ import annotations

from .probing import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    Target,
    offset_fetch,
    probe,
)

PROTOCOLS = [{"name": "range", "metadata": b"\x00\x01"}]


def join(s: Target, label: str | None, ver: int, group: str, member: str, **kw):
    body = {
        "group_id": group,
        "session_timeout_ms": 30000,
        "rebalance_timeout_ms": 30000,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": PROTOCOLS,
        "reason": None,
    }
    return s.req(label, JOIN_GROUP, ver, body, **kw)


def offset_commit(s: Target, label: str, ver: int, group: str, topic: str, gen: int, member: str, **kw):
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": gen,
        "member_id": member,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 3,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "m",
                    }
                ],
            }
        ],
    }
    return s.req(label, OFFSET_COMMIT, ver, body, **kw)


@probe
def probe_group_unknown(s: Target) -> None:
    """Every classic-group API for a group nobody joined and a member nobody knows."""
    group, topic = s.name("g"), s.name("t")
    s.find_coordinator(group, 0)
    s.create_topic(topic)
    for ver in (1, 5):
        s.req(
            f"SyncGroup v{ver} unknown group",
            SYNC_GROUP,
            ver,
            {
                "group_id": group,
                "generation_id": 1,
                "member_id": "m1",
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": [],
            },
            expect={"error_code": "UNKNOWN_MEMBER_ID"},
        )
    for ver in (1, 4):
        s.req(
            f"Heartbeat v{ver} unknown group",
            HEARTBEAT,
            ver,
            {"group_id": group, "generation_id": 1, "member_id": "m1", "group_instance_id": None},
            expect={"error_code": "UNKNOWN_MEMBER_ID"},
        )
    s.req("LeaveGroup v1 unknown group", LEAVE_GROUP, 1, {"group_id": group, "member_id": "m1"})
    s.req(
        "LeaveGroup v5 unknown group",
        LEAVE_GROUP,
        5,
        {"group_id": group, "members": [{"member_id": "m1", "group_instance_id": None, "reason": None}]},
    )
    join(s, "JoinGroup v9 unknown member id", 9, group, "m-unknown", expect={"error_code": "UNKNOWN_MEMBER_ID"})
    s.req(
        "DescribeGroups v5 unknown group",
        DESCRIBE_GROUPS,
        5,
        {"groups": [group], "include_authorized_operations": False},
    )
    offset_commit(s, "OffsetCommit v8 unknown group, generation 5", 8, group, topic, 5, "m1")
    offset_fetch(s, "OffsetFetch v8 unknown group", 8, group, topic)
    offset_commit(s, "OffsetCommit v8 unknown group, generation -1 (simple commit)", 8, group, topic, -1, "")
    offset_fetch(s, "OffsetFetch v8 after a simple commit", 8, group, topic)
    offset_fetch(s, "OffsetFetch v9 after a simple commit", 9, group, topic)
    join(s, "JoinGroup v9 unknown member id, group with offsets", 9, group, "m-unknown")


@probe
def probe_group_dance(s: Target) -> None:
    """One member: MEMBER_ID_REQUIRED, join, sync, heartbeat, commit, fetch, leave, heartbeat."""
    group, topic = s.name("g"), s.name("t")
    s.find_coordinator(group, 0)
    s.create_topic(topic)
    r = join(s, "JoinGroup v9 empty member id", 9, group, "", expect={"error_code": "MEMBER_ID_REQUIRED"})
    member = r["member_id"]
    r = join(s, "JoinGroup v9 with the given member id", 9, group, member, expect={"error_code": "NONE"})
    gen = r["generation_id"]
    sync = {
        "group_id": group,
        "generation_id": gen,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": b"\x00\x01\x02"}],
    }
    s.req("SyncGroup v5 leader", SYNC_GROUP, 5, sync, expect={"error_code": "NONE"})
    s.req("SyncGroup v5 wrong generation", SYNC_GROUP, 5, {**sync, "generation_id": gen + 1})
    s.req("SyncGroup v5 wrong protocol name", SYNC_GROUP, 5, {**sync, "protocol_name": "roundrobin"})
    hb = {"group_id": group, "generation_id": gen, "member_id": member, "group_instance_id": None}
    s.req("Heartbeat v4", HEARTBEAT, 4, hb, expect={"error_code": "NONE"})
    s.req("Heartbeat v4 wrong generation", HEARTBEAT, 4, {**hb, "generation_id": gen + 1})
    s.req("Heartbeat v4 unknown member", HEARTBEAT, 4, {**hb, "member_id": "m-unknown"})
    s.req("DescribeGroups v5 stable", DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
    offset_commit(
        s, "OffsetCommit v8 member", 8, group, topic, gen, member, expect={"topics.0.partitions.0.error_code": "NONE"}
    )
    offset_commit(s, "OffsetCommit v8 wrong generation", 8, group, topic, gen + 1, member)
    offset_commit(s, "OffsetCommit v8 unknown member", 8, group, topic, gen, "m-unknown")
    offset_commit(s, "OffsetCommit v8 generation -1 on an active group", 8, group, topic, -1, "")
    offset_fetch(s, "OffsetFetch v8", 8, group, topic)
    for ver in (2, 3):
        s.req(f"DeleteGroups v{ver} a group with a member", DELETE_GROUPS, ver, {"groups_names": [group]})
    s.req(
        "LeaveGroup v5",
        LEAVE_GROUP,
        5,
        {"group_id": group, "members": [{"member_id": member, "group_instance_id": None, "reason": "done"}]},
    )
    s.req("Heartbeat v4 after leaving", HEARTBEAT, 4, hb, expect={"error_code": "UNKNOWN_MEMBER_ID"})
    s.req(
        "DeleteGroups v3 the empty group and an unknown one",
        DELETE_GROUPS,
        3,
        {"groups_names": [group, s.name("g-unknown")]},
        expect={"results.0.error_code": "NONE", "results.1.error_code": "GROUP_ID_NOT_FOUND"},  # sorted by id
    )
    s.req(
        "DescribeGroups v5 after leaving",
        DESCRIBE_GROUPS,
        5,
        {"groups": [group], "include_authorized_operations": False},
    )

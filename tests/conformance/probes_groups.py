"""Probes of the classic group coordinator: the error paths for an unknown group or member, and
one member's dance (join, sync, heartbeat, commit, fetch, leave)."""

from __future__ import annotations

import time

from tests.raw_client import RawClient

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
    return s.req(label, JOIN_GROUP, ver, join_body(group, member), **kw)


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


class SecondClient:
    """Another connection to the same broker, for a member whose request parks (a JoinGroup that
    waits for the rebalance, a follower's SyncGroup that waits for the leader) while the probe
    goes on over the first connection."""

    def __init__(self, s: Target):
        self.s = s
        self.client = RawClient(s.port, client_id="conformance-b", timeout=15)

    def send(self, api: int, ver: int, body: dict) -> None:
        self.client.send(api, ver, body)

    def receive(self, label: str, api: int, ver: int, expect: dict | None = None) -> dict:
        answer = self.client.receive(api, ver).to_dict()
        self.s.record(label, self.s.norm(answer), api, ver, expect)
        return answer

    def close(self) -> None:
        self.client.close()


def join_body(group: str, member: str) -> dict:
    return {
        "group_id": group,
        "session_timeout_ms": 30000,
        "rebalance_timeout_ms": 30000,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": PROTOCOLS,
        "reason": None,
    }


def sync_body(group: str, gen: int, member: str, assignments: list[dict]) -> dict:
    return {
        "group_id": group,
        "generation_id": gen,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": assignments,
    }


@probe
def probe_group_states(s: Target) -> None:
    """Two members through every classic group state: what Heartbeat, OffsetCommit, SyncGroup,
    DescribeGroups and OffsetFetch answer in CompletingRebalance, Stable, PreparingRebalance
    (a second member's JoinGroup parked on another connection), after a leave, and in Empty;
    a follower's SyncGroup parked until the leader's."""
    group, topic = s.name("g"), s.name("t")
    s.find_coordinator(group, 0)
    s.create_topic(topic)
    other = SecondClient(s)
    try:
        m1 = join(s, None, 9, group, "")["member_id"]
        gen = join(s, "JoinGroup v9 first member", 9, group, m1, expect={"error_code": "NONE"})["generation_id"]

        def describe(label: str) -> None:
            s.req(label, DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})

        def heartbeat(label: str, member: str, generation: int, **kw) -> None:
            body = {"group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": None}
            s.req(label, HEARTBEAT, 4, body, **kw)

        describe("DescribeGroups v5 CompletingRebalance")
        heartbeat("Heartbeat v4 CompletingRebalance", m1, gen)
        offset_commit(s, "OffsetCommit v8 CompletingRebalance", 8, group, topic, gen, m1)
        s.req(
            "SyncGroup v5 leader",
            SYNC_GROUP,
            5,
            sync_body(group, gen, m1, [{"member_id": m1, "assignment": b"\x00\x01"}]),
            expect={"error_code": "NONE"},
        )
        describe("DescribeGroups v5 Stable, one member")

        # a second member: its JoinGroup parks until the first rejoins
        other.send(JOIN_GROUP, 9, join_body(group, ""))
        m2 = other.receive("JoinGroup v9 second member, no id", JOIN_GROUP, 9)["member_id"]
        other.send(JOIN_GROUP, 9, join_body(group, m2))
        for _ in range(100):  # the other connection's JoinGroup reaches the coordinator
            answer = s.req(None, DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
            if answer["groups"][0]["group_state"] != "Stable":
                break
            time.sleep(0.02)
        describe("DescribeGroups v5 PreparingRebalance")
        heartbeat("Heartbeat v4 PreparingRebalance", m1, gen, expect={"error_code": "REBALANCE_IN_PROGRESS"})
        offset_commit(s, "OffsetCommit v8 PreparingRebalance", 8, group, topic, gen, m1)
        s.req("SyncGroup v5 PreparingRebalance", SYNC_GROUP, 5, sync_body(group, gen, m1, []))
        rejoined = join(s, "JoinGroup v9 first member rejoins", 9, group, m1, expect={"error_code": "NONE"})
        second = other.receive("JoinGroup v9 second member completes", JOIN_GROUP, 9, expect={"error_code": "NONE"})
        gen2 = rejoined["generation_id"]
        s.record("both answers name one generation", second["generation_id"] == gen2)
        leader = rejoined["leader"]
        s.record("the leader is the first member", leader == m1)
        heartbeat("Heartbeat v4 CompletingRebalance, old generation", m1, gen)
        heartbeat("Heartbeat v4 CompletingRebalance, new generation", m1, gen2)

        # the follower's SyncGroup parks until the leader's
        other.send(SYNC_GROUP, 5, sync_body(group, gen2, m2, []))
        assignments = [{"member_id": m1, "assignment": b"\x00\x01"}, {"member_id": m2, "assignment": b"\x00\x02"}]
        s.req("SyncGroup v5 leader, two members", SYNC_GROUP, 5, sync_body(group, gen2, m1, assignments))
        other.receive("SyncGroup v5 follower after the leader", SYNC_GROUP, 5, expect={"error_code": "NONE"})
        describe("DescribeGroups v5 Stable, two members")
        offset_commit(s, "OffsetCommit v8 Stable, old generation", 8, group, topic, gen, m1)
        offset_commit(s, "OffsetCommit v8 Stable", 8, group, topic, gen2, m1)

        # the second member leaves: the first must rejoin
        other.send(LEAVE_GROUP, 5, {"group_id": group, "members": [{"member_id": m2, "group_instance_id": None}]})
        other.receive("LeaveGroup v5 second member", LEAVE_GROUP, 5)
        heartbeat("Heartbeat v4 after a leave", m1, gen2, expect={"error_code": "REBALANCE_IN_PROGRESS"})
        describe("DescribeGroups v5 after a leave")
        gen3 = join(s, "JoinGroup v9 rejoin alone", 9, group, m1, expect={"error_code": "NONE"})["generation_id"]
        s.req("SyncGroup v5 alone", SYNC_GROUP, 5, sync_body(group, gen3, m1, []))

        # the last member leaves: Empty
        s.req(
            "LeaveGroup v5 last member",
            LEAVE_GROUP,
            5,
            {"group_id": group, "members": [{"member_id": m1, "group_instance_id": None}]},
        )
        describe("DescribeGroups v5 Empty")
        offset_commit(s, "OffsetCommit v8 Empty, generation -1", 8, group, topic, -1, "")
        offset_commit(s, "OffsetCommit v8 Empty, old member", 8, group, topic, gen3, m1)
        offset_fetch(s, "OffsetFetch v8 Empty", 8, group, topic)
    finally:
        other.close()

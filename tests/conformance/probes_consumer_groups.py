"""Probes of KIP-848 consumer groups: ConsumerGroupHeartbeat v0-v1 through a member's life and
its error paths, ConsumerGroupDescribe, and OffsetCommit/OffsetFetch with member epochs."""

from __future__ import annotations

import time
import uuid

from fakebroker.core.groups.placement import partition_for

from .kafka_broker import PARTITIONS as OFFSETS_PARTITIONS
from .probing import OFFSET_COMMIT, Target, offset_fetch, probe

CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE, LIST_GROUPS, OFFSET_DELETE = 68, 69, 16, 47


def heartbeat(s: Target, label: str | None, ver: int, group: str, member: str, epoch: int, **fields):
    expect = fields.pop("expect", None)
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": None,
        **fields,
    }
    return s.req(label, CONSUMER_GROUP_HEARTBEAT, ver, body, expect=expect)


def owned(answer: dict) -> list[dict]:
    assignment = answer.get("assignment") or {"topic_partitions": []}
    return [{"topic_id": t["topic_id"], "partitions": sorted(t["partitions"])} for t in assignment["topic_partitions"]]


def commit(s: Target, label: str, group: str, topic: str, epoch: int, member: str, **kw):
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": epoch,
        "member_id": member,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}]}
        ],
    }
    return s.req(label, OFFSET_COMMIT, 9, body, **kw)


def wait_until_the_shard_sees(s: Target, group: str, join: dict) -> None:
    """Kafka's group coordinator learns of a new topic from its own copy of the metadata image,
    a moment after the broker answers for the topic: a group joining before then gets no
    assignment and a later epoch bump. A throwaway group of the same ``__consumer_offsets``
    partition (the same coordinator shard, whose events run in order) joins until it is
    assigned the topic, then leaves; fakebroker assigns it at once."""
    shard = partition_for(group, OFFSETS_PARTITIONS)
    other = next(f"{group}-{i}" for i in range(10_000) if partition_for(f"{group}-{i}", OFFSETS_PARTITIONS) == shard)
    member = str(uuid.uuid4())
    r = heartbeat(s, None, 1, other, member, 0, **join)
    for _ in range(100):
        if owned(r) or r["error_code"]:
            break
        time.sleep(0.05)
        r = heartbeat(s, None, 1, other, member, r["member_epoch"], topic_partitions=[])
    heartbeat(s, None, 1, other, member, -1)


@probe
def probe_consumer_group_life(s: Target) -> None:
    """One member joins (v1: its own member id), heartbeats with its assignment, commits with
    its epoch and a stale one, is described, and leaves; a v0 member gets an id from the broker."""
    group, topic = s.name("cg"), s.name("t")
    s.find_coordinator(group, 0)
    s.create_topic(topic, 2)
    member = str(uuid.uuid4())
    join = {"rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic], "topic_partitions": []}
    wait_until_the_shard_sees(s, group, join)
    r = heartbeat(s, "ConsumerGroupHeartbeat v1 join", 1, group, member, 0, **join, expect={"error_code": "NONE"})
    epoch = r["member_epoch"]
    for _ in range(20):  # the assignment may come with the join or a heartbeat later
        if owned(r):
            break
        r = heartbeat(s, None, 1, group, member, epoch, topic_partitions=[])
        epoch = r["member_epoch"]
    s.record("the member owns both partitions", [len(t["partitions"]) for t in owned(r)] == [2])
    heartbeat(
        s,
        "ConsumerGroupHeartbeat v1 steady",
        1,
        group,
        member,
        epoch,
        topic_partitions=owned(r),
        expect={"error_code": "NONE"},
    )
    heartbeat(s, "ConsumerGroupHeartbeat v1 a future epoch", 1, group, member, epoch + 5)
    heartbeat(s, "ConsumerGroupHeartbeat v1 an unknown member", 1, group, str(uuid.uuid4()), 3)
    heartbeat(s, "ConsumerGroupHeartbeat v1 join without a rebalance timeout", 1, group, str(uuid.uuid4()), 0,
              subscribed_topic_names=[topic], topic_partitions=[])  # fmt: skip
    heartbeat(s, "ConsumerGroupHeartbeat v1 join without a subscription", 1, group, str(uuid.uuid4()), 0,
              rebalance_timeout_ms=30000, topic_partitions=[])  # fmt: skip
    heartbeat(s, "ConsumerGroupHeartbeat v1 empty member id", 1, group, "", 0, **join)
    heartbeat(s, "ConsumerGroupHeartbeat v1 an unknown assignor", 1, group, str(uuid.uuid4()), 0, **join,
              server_assignor="nosuch")  # fmt: skip
    heartbeat(s, "ConsumerGroupHeartbeat v1 empty group id", 1, "", member, 0, **join)
    commit(s, "OffsetCommit v9 with the member epoch", group, topic, epoch, member)
    commit(s, "OffsetCommit v9 with a newer epoch", group, topic, epoch + 1, member)
    commit(s, "OffsetCommit v9 an unknown member", group, topic, epoch, "nobody")
    offset_fetch(s, "OffsetFetch v8 the member's commit", 8, group, topic)
    for ver in (0, 1):
        s.req(
            f"ConsumerGroupDescribe v{ver}",
            CONSUMER_GROUP_DESCRIBE,
            ver,
            {"group_ids": [group, s.name("cg-unknown")], "include_authorized_operations": False},
        )
    for ver, body in ((5, {"states_filter": [], "types_filter": ["consumer"]}), (4, {"states_filter": ["Stable"]})):
        s.req(f"ListGroups v{ver} {body}", LIST_GROUPS, ver, body)
    heartbeat(s, "ConsumerGroupHeartbeat v1 leave", 1, group, member, -1, expect={"error_code": "NONE"})
    s.req(
        "ConsumerGroupDescribe v1 after the leave",
        CONSUMER_GROUP_DESCRIBE,
        1,
        {"group_ids": [group], "include_authorized_operations": False},
    )
    r = heartbeat(s, None, 0, group, "", 0, **join)
    s.record(
        "ConsumerGroupHeartbeat v0 join: the broker names the member",
        {"error_code": r["error_code"], "member_id_given": bool(r["member_id"]), "epoch": r["member_epoch"] > 0},
    )
    left = heartbeat(s, None, 0, group, r["member_id"], -1)
    s.record("ConsumerGroupHeartbeat v0 leave", {"error_code": left["error_code"], "epoch": left["member_epoch"]})
    s.req(
        "OffsetDelete v0 a partition of the empty group",
        OFFSET_DELETE,
        0,
        {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}]},
    )

"""Group API answers on the wire, checked with exact requests from a raw client."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.core.groups.placement import partition_for
from fakebroker.protocol import data
from fakebroker.protocol.error_codes import ErrorCode as E

from ..raw_client import RawClient

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC = 8, 9, 10, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE, METADATA = 15, 16, 42, 47, 3
GROUP = "billing"


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={"orders": 3}).run_in_thread() as c:
        yield c


def coordinator_client(cluster: FakeCluster) -> RawClient:
    return RawClient(cluster.servers[cluster.coordinator(GROUP)].port)


def test_find_coordinator_places_groups_as_kafka_does(cluster):
    with RawClient(cluster.servers[0].port) as client:
        one = client.request(FIND_COORDINATOR, 2, {"key": GROUP, "key_type": 0})
        batched = client.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [GROUP, "other"]})
    leader = cluster.state.topics["__consumer_offsets"].partitions[partition_for(GROUP, 50)].leader
    assert (one.error_code, one.node_id, one.error_message) == (0, leader, "NONE")
    assert [c.key for c in batched.coordinators] == [GROUP, "other"]
    assert batched.coordinators[0].node_id == leader and batched.coordinators[0].port == cluster.servers[leader].port
    assert len(cluster.state.topics["__consumer_offsets"].partitions) == 50


def test_other_brokers_answer_not_coordinator(cluster):
    other = next(s for s in cluster.servers if s.node_id != cluster.coordinator(GROUP))
    with RawClient(other.port) as client:
        body = client.request(HEARTBEAT, 3, {"group_id": GROUP, "generation_id": 1, "member_id": "m"})
    assert body.error_code == E.NOT_COORDINATOR


def test_join_sync_commit_fetch_by_topic_id_and_admin(cluster):
    topic_id = cluster.state.topics["orders"].topic_id
    sub = data.encode_subscription(["orders"])
    with coordinator_client(cluster) as client:
        join = {
            "group_id": GROUP,
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": sub}],
        }
        first = client.request(JOIN, 4, join)
        assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
        joined = client.request(JOIN, 9, {**join, "member_id": first.member_id})
        assert (joined.error_code, joined.generation_id, joined.protocol_type, joined.leader) == (
            0,
            1,
            "consumer",
            first.member_id,
        )
        assignment = data.encode_assignment({"orders": [0, 1, 2]})
        synced = client.request(
            SYNC,
            5,
            {
                "group_id": GROUP,
                "generation_id": 1,
                "member_id": first.member_id,
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": [{"member_id": first.member_id, "assignment": assignment}],
            },
        )
        assert synced.error_code == 0 and synced.assignment == assignment and synced.protocol_name == "range"

        committed = client.request(
            OFFSET_COMMIT,
            10,
            {
                "group_id": GROUP,
                "generation_id_or_member_epoch": 1,
                "member_id": first.member_id,
                "topics": [
                    {
                        "topic_id": topic_id,
                        "partitions": [{"partition_index": 1, "committed_offset": 42, "committed_metadata": "m"}],
                    }
                ],
            },
        )
        assert committed.topics[0].topic_id == topic_id and committed.topics[0].partitions[0].error_code == 0
        stale = client.request(
            OFFSET_COMMIT,
            8,
            {
                "group_id": GROUP,
                "generation_id_or_member_epoch": 0,
                "member_id": first.member_id,
                "topics": [{"name": "orders", "partitions": [{"partition_index": 1, "committed_offset": 7}]}],
            },
        )
        assert stale.topics[0].partitions[0].error_code == E.ILLEGAL_GENERATION

        fetched = client.request(
            OFFSET_FETCH,
            10,
            {"groups": [{"group_id": GROUP, "topics": [{"topic_id": topic_id, "partition_indexes": [1, 2]}]}]},
        )
        parts = fetched.groups[0].topics[0].partitions
        assert [(p.partition_index, p.committed_offset, p.metadata) for p in parts] == [(1, 42, "m"), (2, -1, "")]
        every = client.request(OFFSET_FETCH, 10, {"groups": [{"group_id": GROUP, "topics": None}]})
        assert [(t.topic_id, [p.committed_offset for p in t.partitions]) for t in every.groups[0].topics] == [
            (topic_id, [42])
        ]
        here = next(
            f"never-seen-{i}"
            for i in range(1000)
            if cluster.coordinator(f"never-seen-{i}") == cluster.coordinator(GROUP)
        )
        elsewhere = next(
            f"never-seen-{i}"
            for i in range(1000)
            if cluster.coordinator(f"never-seen-{i}") != cluster.coordinator(GROUP)
        )
        batched = client.request(
            OFFSET_FETCH,
            8,
            {
                "groups": [
                    {"group_id": GROUP, "topics": None},
                    {"group_id": here, "topics": None},
                    {"group_id": elsewhere, "topics": None},
                ]
            },
        )
        # A group nobody knows is no error; one coordinated elsewhere is NOT_COORDINATOR, per group.
        assert [(g.group_id, g.error_code) for g in batched.groups] == [
            (GROUP, 0),
            (here, 0),
            (elsewhere, E.NOT_COORDINATOR),
        ]
        assert batched.groups[0].topics[0].partitions[0].committed_offset == 42 and batched.groups[1].topics == []

        subscribed = client.request(
            OFFSET_DELETE,
            0,
            {"group_id": GROUP, "topics": [{"name": "orders", "partitions": [{"partition_index": 1}]}]},
        )
        assert subscribed.topics[0].partitions[0].error_code == E.GROUP_SUBSCRIBED_TO_TOPIC

        described = client.request(DESCRIBE_GROUPS, 6, {"groups": [GROUP, here], "include_authorized_operations": True})
        ours, missing = described.groups
        assert (ours.group_state, ours.protocol_data, ours.members[0].client_host) == ("Stable", "range", "/127.0.0.1")
        assert ours.members[0].member_assignment == assignment and ours.authorized_operations == 3400
        assert (missing.error_code, missing.group_state) == (E.GROUP_ID_NOT_FOUND, "Dead")
        listed = client.request(LIST_GROUPS, 5, {"states_filter": ["stable"], "types_filter": []})
        assert [(g.group_id, g.group_state, g.group_type) for g in listed.groups] == [(GROUP, "Stable", "classic")]
        assert client.request(DELETE_GROUPS, 2, {"groups_names": [GROUP]}).results[0].error_code == E.NON_EMPTY_GROUP

        left = client.request(LEAVE, 5, {"group_id": GROUP, "members": [{"member_id": first.member_id}]})
        assert left.members[0].error_code == 0
        assert client.request(DELETE_GROUPS, 2, {"groups_names": [GROUP]}).results[0].error_code == 0
        gone = client.request(OFFSET_FETCH, 7, {"group_id": GROUP, "topics": None})
        assert gone.topics == []

"""Fault rules on the share APIs (KIP-932): they are named as Kafka names them, and a request's
view names the share group it is for (``group_id`` of ShareGroupHeartbeat, ShareFetch and
ShareAcknowledge, ``group_ids`` of ShareGroupDescribe, ``groups`` of DescribeShareGroupOffsets)
and its topic-partitions (by topic id, or by ``topic_name`` in the offsets APIs), so a rule
can hit one share group, or one partition of it."""

from __future__ import annotations

import uuid

import pytest

from fakebroker.faults import Faults, Leaf, api_key_of, view_of
from fakebroker.faults.responses import error_response, replace_errors
from fakebroker.protocol.messages import request_type, response_type

JOBS = uuid.uuid4()
SHARE_APIS = {
    "ShareGroupHeartbeat": 76,
    "ShareGroupDescribe": 77,
    "ShareFetch": 78,
    "ShareAcknowledge": 79,
    "DescribeShareGroupOffsets": 90,
    "AlterShareGroupOffsets": 91,
    "DeleteShareGroupOffsets": 92,
}


def names(topic_id: uuid.UUID) -> str | None:
    return "jobs" if topic_id == JOBS else None


def share_fetch(group: str = "workers") -> object:
    return request_type(78).new(
        group_id=group,
        member_id="m",
        share_session_epoch=1,
        topics=[
            {
                "topic_id": JOBS,
                "partitions": [
                    {
                        "partition_index": 0,
                        "acknowledgement_batches": [{"first_offset": 0, "last_offset": 3, "acknowledge_types": [1]}],
                    },
                    {"partition_index": 1},
                ],
            }
        ],
        forgotten_topics_data=[],
    )


def test_the_share_apis_are_known_by_their_names():
    assert {name: api_key_of(name) for name in SHARE_APIS} == SHARE_APIS
    assert api_key_of("ShareFetchRequest") == 78


@pytest.mark.parametrize(
    ("api", "request_fields", "groups", "leaves"),
    [
        (76, {"group_id": "workers", "member_id": "m", "member_epoch": 0, "subscribed_topic_names": ["jobs"]},
         {"workers"}, []),
        (77, {"group_ids": ["workers", "other"]}, {"workers", "other"}, []),
        (79, {"group_id": "workers", "member_id": "m", "share_session_epoch": 1,
              "topics": [{"topic_id": JOBS, "partitions": [{"partition_index": 2}]}]},
         {"workers"}, [Leaf("workers", "jobs", 2)]),
        (90, {"groups": [{"group_id": "workers", "topics": [{"topic_name": "jobs", "partitions": [0, 1]}]}]},
         {"workers"}, [Leaf("workers", "jobs", 0), Leaf("workers", "jobs", 1)]),
        (91, {"group_id": "workers",
              "topics": [{"topic_name": "jobs", "partitions": [{"partition_index": 1, "start_offset": 5}]}]},
         {"workers"}, [Leaf("workers", "jobs", 1)]),
        (92, {"group_id": "workers", "topics": [{"topic_name": "jobs"}]}, {"workers"}, [Leaf("workers", "jobs", None)]),
    ],
)  # fmt: skip
def test_a_share_request_names_its_group_and_partitions(api, request_fields, groups, leaves):
    view = view_of(api, request_type(api).new(**request_fields), names)
    assert view.groups == groups
    assert view.leaves == leaves


def test_a_rule_hits_one_share_group_and_one_partition_of_it():
    faults = Faults()
    rule = faults.add(api="ShareFetch", group="workers", partition=1, error="NOT_LEADER_OR_FOLLOWER")
    hit = view_of(78, share_fetch(), names)
    assert hit.leaves == [Leaf("workers", "jobs", 0), Leaf("workers", "jobs", 1)]
    assert faults.fire(0, 78, 1, "c", hit) == [rule]
    assert faults.fire(0, 78, 1, "c", view_of(78, share_fetch("elsewhere"), names)) == []
    assert faults.fire(0, 79, 1, "c", hit) == []  # another API
    # the answer names the hit partition only
    response = error_response(78, share_fetch(), 0)
    assert replace_errors(response, 6, rule.hits_leaf, names) == 1
    errors = {p.partition_index: p.error_code for t in response.responses for p in t.partitions}
    assert errors == {0: 0, 1: 6}
    assert response_type(78).encode(response, 1)

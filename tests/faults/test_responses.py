"""Error answers built from requests, for every API and version the broker serves."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakebroker.apis import SUPPORTED
from fakebroker.faults import view_of
from fakebroker.faults.responses import error_response, merge, replace_errors, split
from fakebroker.protocol.messages import request_type, response_type

from ..protocol.strategies import message_strategy

CASES = [(key, v) for key, (lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)]
# APIs whose answers carry one item per topic-partition (or group) the request names
MIRRORED = {0, 1, 2, 8, 9, 15, 21, 23, 42}
CODE = 7  # REQUEST_TIMED_OUT


def names(topic_id: uuid.UUID) -> str:
    return f"id:{topic_id}"


def leaves(api_key, msg):
    return sorted(view_of(api_key, msg, names).leaves, key=repr)


@pytest.mark.parametrize(("api_key", "version"), CASES, ids=[f"{k}-v{v}" for k, v in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_error_response_encodes_and_names_what_the_request_named(api_key, version, data):
    request = data.draw(message_strategy(request_type(api_key), version))
    response = error_response(api_key, request, CODE)
    rt = response_type(api_key)
    assert rt.decode(rt.encode(response, version), version) is not None
    if api_key in MIRRORED:
        asked = {(leaf.topic, leaf.partition) for leaf in leaves(api_key, request)}
        answered = {(leaf.topic, leaf.partition) for leaf in leaves(api_key, response)}
        assert asked <= answered | {(None, None)}


def test_produce_split_fails_only_the_hit_partition():
    request = request_type(0).new(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            {"name": "orders", "partition_data": [{"index": 0}, {"index": 1}]},
            {"name": "audit", "partition_data": [{"index": 0}]},
        ],
    )
    hit, rest = split(request, lambda leaf: leaf.topic == "orders" and leaf.partition == 1, names)
    assert [(t.name, [p.index for p in t.partition_data]) for t in hit.topic_data] == [("orders", [1])]
    assert [(t.name, [p.index for p in t.partition_data]) for t in rest.topic_data] == [("orders", [0]), ("audit", [0])]
    handled = response_type(0).new(
        responses=[
            {"name": "orders", "partition_responses": [{"index": 0, "base_offset": 5}]},
            {"name": "audit", "partition_responses": [{"index": 0, "base_offset": 9}]},
        ]
    )
    merged = merge(handled, error_response(0, hit, 6, top_level=False))
    got = {(t.name, p.index): (p.error_code, p.base_offset) for t in merged.responses for p in t.partition_responses}
    assert got == {("orders", 0): (0, 5), ("orders", 1): (6, -1), ("audit", 0): (0, 9)}
    assert len(merged.responses) == 2


def test_fetch_by_topic_id_and_group_batches():
    tid = uuid.uuid4()
    fetch = request_type(1).new(topics=[{"topic_id": tid, "partitions": [{"partition": 3}]}])
    answer = error_response(1, fetch, 6)
    assert answer.error_code == 6 and answer.responses[0].topic_id == tid
    assert (answer.responses[0].partitions[0].partition_index, answer.responses[0].partitions[0].high_watermark) == (
        3,
        -1,
    )
    batched = request_type(9).new(
        groups=[{"group_id": "a", "topics": [{"name": "t", "partition_indexes": [0]}]}, {"group_id": "b"}]
    )
    answer = error_response(9, batched, 16)
    assert [(g.group_id, g.error_code) for g in answer.groups] == [("a", 16), ("b", 16)]
    assert answer.groups[0].topics[0].partitions[0].committed_offset == -1


def test_replace_errors_top_level_and_filtered():
    response = response_type(0).new(responses=[{"name": "orders", "partition_responses": [{"index": 0}, {"index": 1}]}])
    assert replace_errors(response, 6, lambda leaf: leaf.partition == 1, names) == 1
    assert [p.error_code for p in response.responses[0].partition_responses] == [0, 6]
    heartbeat = response_type(12).new()
    assert replace_errors(heartbeat, 27, None, names) == 1 and heartbeat.error_code == 27

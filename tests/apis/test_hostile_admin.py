"""Issue 16: a few bytes must not make the broker allocate without bound.

CreateTopics and CreatePartitions refuse more than 10,000 partitions per request
(POLICY_VIOLATION, as Kafka's controller), validate_only included; a Metadata request that
would auto-create 50,000 topics is refused by the same cap (nothing is created); a Produce of
50,000 one-record entries costs time and memory in proportion to its size.
"""

from __future__ import annotations

import time
import tracemalloc

from fakebroker.protocol import records
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import request_type

from .support import call, cluster

CREATE_TOPICS, CREATE_PARTITIONS, METADATA, PRODUCE = 19, 37, 3, 0
MIB = 1 << 20


def bounded(fn, *, seconds=1.0, mib=16):
    """Run ``fn``; assert it took under ``seconds`` and allocated under ``mib`` MiB at peak."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - started
    assert elapsed < seconds, f"{elapsed:.2f} s"
    assert peak < mib * MIB, f"peak {peak / MIB:.1f} MiB"
    return result


def request_size(api_key, version, **fields) -> int:
    kind = request_type(api_key)
    return len(kind.encode(kind.new(**fields), version))


def test_create_topics_of_2_pow_31_partitions_is_refused_fast_even_validate_only():
    state = cluster(1)
    for validate_only in (True, False):
        fields = dict(
            topics=[{"name": "t", "num_partitions": 2**31 - 1, "replication_factor": 1}],
            timeout_ms=30_000,
            validate_only=validate_only,
        )
        assert request_size(CREATE_TOPICS, 1, **fields) < 41  # the request was 41 bytes with its header
        response, _ = bounded(lambda f=fields: call(state, CREATE_TOPICS, 1, **f))
        (result,) = response.topics
        assert result.error_code == E.POLICY_VIOLATION
        assert result.error_message == "Excessively large number of partitions per request."
    assert "t" not in state.topics


def test_create_partitions_to_2_pow_31_minus_1_is_refused_fast():
    state = cluster(1)
    state.create_topic("t", 1)
    fields = dict(topics=[{"name": "t", "count": 2**31 - 1, "assignments": None}], timeout_ms=30_000)
    assert request_size(CREATE_PARTITIONS, 0, validate_only=False, **fields) < 31
    for validate_only in (False, True):
        response, _ = bounded(lambda v=validate_only: call(state, CREATE_PARTITIONS, 0, validate_only=v, **fields))
        assert response.results[0].error_code == E.POLICY_VIOLATION
    assert len(state.topics["t"].partitions) == 1


def test_create_partitions_with_an_empty_or_unknown_replica_list_is_refused():
    state = cluster(2)
    state.create_topic("t", 1, 2)
    for assignments in ([{"broker_ids": []}], [{"broker_ids": [0, 9]}]):
        response, _ = call(
            state,
            CREATE_PARTITIONS,
            3,
            timeout_ms=30_000,
            validate_only=False,
            topics=[{"name": "t", "count": 2, "assignments": assignments}],
        )
        assert response.results[0].error_code in (E.INVALID_REPLICA_ASSIGNMENT, E.INVALID_REQUEST)
        assert response.results[0].error_message
    assert len(state.topics["t"].partitions) == 1


def test_metadata_auto_creating_50000_topics_creates_none_within_the_cap():
    state = cluster(1)
    before = set(state.topics)
    names = [{"name": f"t{i}", "topic_id": None} for i in range(50_000)]
    response, _ = bounded(
        lambda: call(state, METADATA, 9, topics=names, allow_auto_topic_creation=True), seconds=10, mib=256
    )
    assert {t.error_code for t in response.topics} == {E.UNKNOWN_TOPIC_OR_PARTITION}
    assert set(state.topics) == before  # the controller refused the whole batch
    # a request within the cap still auto-creates
    call(state, METADATA, 9, topics=[{"name": "few", "topic_id": None}], allow_auto_topic_creation=True)
    assert "few" in state.topics


def test_a_produce_of_50000_one_record_entries_is_answered_in_proportion():
    state = cluster(1)
    state.create_topic("t", 1)
    one = records.build_batch([(None, b"v", [], 1_000)])
    data = [{"index": i, "records": one} for i in range(50_000)]
    response, _ = bounded(
        lambda: call(
            state,
            PRODUCE,
            9,
            acks=-1,
            timeout_ms=30_000,
            transactional_id=None,
            topic_data=[{"name": "t", "partition_data": data}],
        ),
        seconds=20,
        mib=512,
    )
    answers = response.responses[0].partition_responses
    assert len(answers) == 50_000
    assert answers[0].error_code == 0
    assert {a.error_code for a in answers[1:]} == {E.UNKNOWN_TOPIC_OR_PARTITION}

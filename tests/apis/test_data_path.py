"""The data path as Kafka 4.4 answers it (issue 15; each case also has a conformance probe in
``tests/conformance/probes_data.py``): fetch byte budgets ending in a partial batch, produce
errors and the log start offset they carry, idempotent sequences of an unknown producer,
Metadata auto-creation and authorized operations, DescribeCluster, ListOffsets' special
timestamps, OffsetForLeaderEpoch past the current epoch."""

from __future__ import annotations

import pytest

from fakebroker.apis.metadata import CLUSTER_OPERATIONS, TOPIC_OPERATIONS
from fakebroker.protocol import records
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import batch, call, cluster

PRODUCE, FETCH, LIST_OFFSETS, METADATA, DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CLUSTER = (
    0,
    1,
    2,
    3,
    21,
    23,
    60,
)
INT_MIN = -(2**31)


def produce(state, topic, data: bytes, *, partition=0, version=9, acks=-1):
    response, _ = call(
        state,
        PRODUCE,
        version,
        acks=acks,
        timeout_ms=30_000,
        transactional_id=None,
        topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": data}]}],
    )
    return response.responses[0].partition_responses[0]


def fetch(state, parts: list[tuple[str, int, int, int]], *, max_bytes=1 << 20, version=12):
    """Fetch of (topic, partition, offset, partition_max_bytes) in order: each partition's records."""
    topics: list[dict] = []
    for topic, partition, offset, pmax in parts:
        if not topics or topics[-1]["topic"] != topic:
            topics.append({"topic": topic, "partitions": []})
        topics[-1]["partitions"].append(
            {"partition": partition, "fetch_offset": offset, "partition_max_bytes": pmax, "log_start_offset": -1}
        )
    response, _ = call(
        state,
        FETCH,
        version,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=topics,
        forgotten_topics_data=[],
        rack_id="",
    )
    return [p.records or b"" for t in response.responses for p in t.partitions]


def stored(state, topic, partition=0) -> list[bytes]:
    return [b.data for b in state.partition(topic, partition).log.batches]


@pytest.fixture
def two_partitions():
    state = cluster(1)
    state.create_topic("t", 2, 1)
    for i in range(3):
        for p in (0, 1):
            assert (
                produce(state, "t", batch(*[f"{p}-{i}-{j}".encode() * 3 for j in range(4)]), partition=p).error_code
                == 0
            )
    return state


# -- fetch byte budgets ---------------------------------------------------------------------------
def test_fetch_fills_the_partition_budget_and_ends_with_a_partial_batch(two_partitions):
    a, b, c = stored(two_partitions, "t")
    assert fetch(two_partitions, [("t", 0, 0, len(a) + 20)]) == [a + b[:20]]
    assert fetch(two_partitions, [("t", 0, 0, len(a) + len(b))]) == [a + b]
    assert fetch(two_partitions, [("t", 0, 4, len(b) + len(c) + 50)]) == [b + c]  # never past the high watermark
    # KIP-74: the first batch whole, even over the budget
    assert fetch(two_partitions, [("t", 0, 0, 1)]) == [a]
    assert fetch(two_partitions, [("t", 0, 0, 0)]) == [a]


def test_a_partial_batch_decodes_to_the_whole_batches_before_it(two_partitions):
    a, b, _ = stored(two_partitions, "t")
    [blob] = fetch(two_partitions, [("t", 0, 0, len(a) + len(b) // 2)])
    headers = list(records.iter_batch_headers(blob))
    assert [h.truncated for h in headers] == [False, True]
    assert [x.base_offset for x in records.read_batches(blob)] == [0]


def test_the_request_budget_is_shared_in_request_order(two_partitions):
    a0, b0, _ = stored(two_partitions, "t", 0)
    a1, _, _ = stored(two_partitions, "t", 1)
    # the first partition may take the whole budget; the next gets what is left, cut likewise
    assert fetch(two_partitions, [("t", 0, 0, 1 << 20), ("t", 1, 0, 1 << 20)], max_bytes=len(a0) + 30) == [
        a0 + b0[:30],
        b"",
    ]
    assert fetch(two_partitions, [("t", 0, 0, len(a0)), ("t", 1, 0, 1 << 20)], max_bytes=len(a0) + len(a1) + 9) == [
        a0,
        a1 + stored(two_partitions, "t", 1)[1][:9],
    ]
    # max_bytes below the first batch: that batch whole (KIP-74), then nothing for the rest
    assert fetch(two_partitions, [("t", 0, 0, 1 << 20), ("t", 1, 0, 1 << 20)], max_bytes=1) == [a0, b""]
    # an empty first partition does not end the first-batch exemption
    assert fetch(two_partitions, [("t", 0, 12, 1 << 20), ("t", 1, 0, 10)], max_bytes=30) == [b"", a1]


# -- produce errors ---------------------------------------------------------------------------------
def moved_log_start(state, topic="t"):
    call(
        state,
        DELETE_RECORDS,
        2,
        topics=[{"name": topic, "partitions": [{"partition_index": 0, "offset": 1}]}],
        timeout_ms=1000,
    )
    assert state.partition(topic, 0).log.log_start_offset == 1


def test_a_record_level_rejection_carries_the_log_start_offset_and_its_message(two_partitions):
    moved_log_start(two_partitions)
    future = batch(b"late", timestamp=10**13)
    answer = produce(two_partitions, "t", future)
    assert (answer.error_code, answer.log_start_offset) == (E.INVALID_TIMESTAMP, 1)
    assert answer.error_message and answer.record_errors[0].batch_index == 0


def test_a_corrupt_or_too_large_batch_carries_neither(two_partitions):
    moved_log_start(two_partitions)
    corrupt = bytearray(batch(b"x"))
    corrupt[-1] ^= 0xFF
    answer = produce(two_partitions, "t", bytes(corrupt))
    assert (answer.error_code, answer.log_start_offset, answer.error_message) == (E.CORRUPT_MESSAGE, -1, None)
    two_partitions.topics["t"].config.overrides["max.message.bytes"] = "100"
    answer = produce(two_partitions, "t", batch(b"x" * 300))
    assert (answer.error_code, answer.log_start_offset, answer.error_message) == (E.MESSAGE_TOO_LARGE, -1, None)


def test_other_append_failures_carry_the_log_start_offset_without_a_message(two_partitions):
    moved_log_start(two_partitions)
    answer = produce(two_partitions, "t", batch(b"x", control=True))
    assert (answer.error_code, answer.log_start_offset, answer.error_message) == (E.INVALID_RECORD, 1, None)
    # refused before the append (ProduceRequest.validateRecords): no log start offset
    answer = produce(two_partitions, "t", batch(b"x") + batch(b"y"))
    assert (answer.error_code, answer.log_start_offset, answer.error_message) == (E.INVALID_RECORD, -1, None)


def test_clients_may_not_append_to_an_internal_topic():
    state = cluster(1)
    state.offsets_topic()
    answer = produce(state, "__consumer_offsets", batch(b"x"))
    assert (answer.error_code, answer.log_start_offset) == (E.INVALID_TOPIC_EXCEPTION, -1)
    assert stored(state, "__consumer_offsets") == []


# -- idempotent sequences ---------------------------------------------------------------------------
def idem(*values: bytes, seq: int, pid=4242, epoch=0) -> bytes:
    return batch(*values, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_an_unknown_producer_may_start_at_any_sequence_and_is_tracked_from_there(two_partitions):
    first = produce(two_partitions, "t", idem(b"a", seq=5))
    assert (first.error_code, first.base_offset) == (E.NONE, 12)
    assert produce(two_partitions, "t", idem(b"b", seq=7)).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(two_partitions, "t", idem(b"c", seq=6)).error_code == E.NONE


def test_a_duplicate_is_answered_with_the_batch_timestamp(two_partitions):
    produce(two_partitions, "t", idem(b"a", seq=0))
    again = produce(two_partitions, "t", idem(b"a", seq=0))
    assert (again.error_code, again.base_offset, again.log_append_time_ms) == (E.NONE, 12, 1_000)


# -- metadata ---------------------------------------------------------------------------------------
def metadata(state, *names, version=12, auto=True, topic_ops=False, cluster_ops=False):
    return call(
        state,
        METADATA,
        version,
        topics=[{"name": n} for n in names],
        allow_auto_topic_creation=auto,
        include_topic_authorized_operations=topic_ops,
        include_cluster_authorized_operations=cluster_ops,
    )[0]


@pytest.mark.parametrize("version", [1, 4, 9, 12, 13])
def test_auto_creation_answers_unknown_first_and_describes_the_topic_next(version):
    state = cluster(1)
    [first] = metadata(state, "fresh", version=version).topics
    assert (first.error_code, first.partitions) == (E.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert "fresh" in state.topics
    [later] = metadata(state, "fresh", version=version, auto=False).topics
    assert (later.error_code, len(later.partitions)) == (E.NONE, 1)


def test_an_auto_creation_kafka_would_refuse_later_answers_unknown_every_time():
    state = cluster(1)
    state.create_topic("a.b", 1, 1)
    for _ in range(2):
        [answer] = metadata(state, "a_b").topics  # collides with a.b
        assert answer.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert "a_b" not in state.topics


def test_authorized_operations_are_the_full_sets_when_asked():
    state = cluster(1)
    state.create_topic("t", 1, 1)
    assert (TOPIC_OPERATIONS, CLUSTER_OPERATIONS) == (3576, 8096)  # Kafka 4.4 without an authorizer
    response = metadata(state, "t", "nope", version=10, auto=False, topic_ops=True, cluster_ops=True)
    assert [t.topic_authorized_operations for t in response.topics] == [3576, 3576]
    assert response.cluster_authorized_operations == 8096
    response = metadata(state, "t", version=12, auto=False)
    assert (response.topics[0].topic_authorized_operations, response.cluster_authorized_operations) == (
        INT_MIN,
        INT_MIN,
    )
    # v11+ no longer has the cluster's
    assert metadata(state, "t", version=11, cluster_ops=True).cluster_authorized_operations == INT_MIN


def test_describe_cluster_operations_and_endpoint_types():
    state = cluster(1)

    def describe(version, ops=False, endpoint=1):
        return call(
            state,
            DESCRIBE_CLUSTER,
            version,
            include_cluster_authorized_operations=ops,
            endpoint_type=endpoint,
            include_fenced_brokers=False,
        )[0]

    assert describe(0, ops=True).cluster_authorized_operations == 8096
    assert describe(2).cluster_authorized_operations == INT_MIN
    mismatched = describe(1, endpoint=2)
    assert (mismatched.error_code, mismatched.endpoint_type) == (E.MISMATCHED_ENDPOINT_TYPE, 1)
    unknown = describe(1, endpoint=7)
    assert (unknown.error_code, unknown.endpoint_type) == (E.UNSUPPORTED_ENDPOINT_TYPE, 1)


# -- offsets ----------------------------------------------------------------------------------------
def list_offset(state, ts, version):
    response, _ = call(
        state,
        LIST_OFFSETS,
        version,
        replica_id=-1,
        isolation_level=0,
        topics=[{"name": "t", "partitions": [{"partition_index": 0, "timestamp": ts}]}],
    )
    p = response.topics[0].partitions[0]
    return p.error_code, p.offset, p.leader_epoch


@pytest.mark.parametrize(
    ("ts", "version", "answer"),
    [
        (-4, 7, (E.UNSUPPORTED_VERSION, -1, -1)),
        (-4, 8, (E.NONE, 0, 0)),
        (-5, 8, (E.UNSUPPORTED_VERSION, -1, -1)),
        (-5, 9, (E.NONE, -1, -1)),  # nothing is tiered
        (-6, 10, (E.UNSUPPORTED_VERSION, -1, -1)),
        (-6, 11, (E.NONE, -1, -1)),
        (-7, 11, (E.UNSUPPORTED_VERSION, -1, -1)),
        (-3, 6, (E.UNSUPPORTED_VERSION, -1, -1)),
    ],
)
def test_list_offsets_special_timestamps_by_version(two_partitions, ts, version, answer):
    assert list_offset(two_partitions, ts, version) == answer


@pytest.mark.parametrize(("epoch", "answer"), [(-1, (-1, -1)), (0, (0, 12)), (1, (-1, -1)), (7, (-1, -1))])
def test_offset_for_leader_epoch_past_the_current_one_is_undefined(two_partitions, epoch, answer):
    response, _ = call(
        two_partitions,
        OFFSET_FOR_LEADER_EPOCH,
        4,
        replica_id=-1,
        topics=[{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}]}],
    )
    p = response.topics[0].partitions[0]
    assert (p.leader_epoch, p.end_offset) == answer


# -- FindCoordinator on a fresh cluster ---------------------------------------------------------------
FIND_COORDINATOR = 10


def find(state, key_type, *keys, version=4):
    if version >= 4:
        response, _ = call(state, FIND_COORDINATOR, version, key_type=key_type, coordinator_keys=list(keys))
        return [c.error_code for c in response.coordinators]
    response, _ = call(state, FIND_COORDINATOR, version, key_type=key_type, key=keys[0])
    return [response.error_code]


def test_a_fresh_cluster_finds_coordinators_at_once_by_default():
    state = cluster(1)
    assert find(state, 0, "g") == [E.NONE]
    assert find(state, 1, "t", version=3) == [E.NONE]


@pytest.mark.parametrize("version", [3, 4])
def test_with_the_setting_the_request_that_creates_an_internal_topic_is_coordinator_not_available(version):
    state = cluster(1, {"fakebroker.coordinator.first.find.unavailable": True})
    keys = ("g1", "g2") if version >= 4 else ("g1",)
    assert find(state, 0, *keys, version=version) == [E.COORDINATOR_NOT_AVAILABLE] * len(keys)
    assert "__consumer_offsets" in state.topics  # created by that request, found by the next
    assert find(state, 0, *keys, version=version) == [E.NONE] * len(keys)
    # each internal topic on its own first use
    assert find(state, 1, "t", version=version) == [E.COORDINATOR_NOT_AVAILABLE]
    assert find(state, 1, "t", version=version) == [E.NONE]


@pytest.mark.parametrize(
    ("epoch", "error", "aborted"),
    [(5, E.UNKNOWN_LEADER_EPOCH, None), (0, E.NONE, [])],
)
def test_a_read_error_keeps_a_null_aborted_list(two_partitions, epoch, error, aborted):
    response, _ = call(
        two_partitions,
        FETCH,
        12,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": "t",
                "partitions": [
                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100, "current_leader_epoch": epoch}
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    p = response.responses[0].partitions[0]
    assert (p.error_code, p.aborted_transactions) == (error, aborted)

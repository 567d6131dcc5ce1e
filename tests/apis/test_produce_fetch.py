"""Produce (0) and Fetch (1) handlers, called directly: offsets, leadership errors, acks=0,
idempotent retries, what a fetch returns and when it waits."""

from __future__ import annotations

import uuid

import pytest

from fakebroker.apis.context import NO_RESPONSE, CloseInstead, Wait
from fakebroker.protocol import records
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import FIRST_PORT, HOST, batch, call, cluster, kinds_after

PRODUCE, FETCH = 0, 1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
NO_LEADER = {"leader_id": -1, "leader_epoch": -1}


def produce(state, topic, parts: dict[int, bytes], *, version=9, acks=-1, broker=0, now_ms=0, topic_id=None):
    """One Produce of ``parts`` ({partition: records}) to ``topic`` (by id from v13)."""
    data = [{"index": index, "records": data} for index, data in parts.items()]
    named = {"name": topic} if version < 13 else {"topic_id": topic_id or state.topics[topic].topic_id}
    return call(
        state,
        PRODUCE,
        version,
        broker=broker,
        now_ms=now_ms,
        acks=acks,
        timeout_ms=30_000,
        transactional_id=None,
        topic_data=[{**named, "partition_data": data}],
    )


def partition_answers(response) -> list[dict]:
    """Every partition answer of a Produce response, as dicts, in order."""
    return [p.to_dict() for t in response.responses for p in t.partition_responses]


def fetch(
    state,
    topic,
    offset=0,
    *,
    partition=0,
    version=12,
    broker=0,
    now_ms=0,
    min_bytes=0,
    max_wait_ms=0,
    isolation_level=READ_UNCOMMITTED,
    current_leader_epoch=-1,
    session_id=0,
    session_epoch=-1,
):
    wanted = {
        "partition": partition,
        "fetch_offset": offset,
        "partition_max_bytes": 1 << 20,
        "log_start_offset": -1,
        "current_leader_epoch": current_leader_epoch,
    }
    named = {"topic": topic} if version < 13 else {"topic_id": state.topics[topic].topic_id}
    return call(
        state,
        FETCH,
        version,
        broker=broker,
        now_ms=now_ms,
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        isolation_level=isolation_level,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=[{**named, "partitions": [wanted]}],
        forgotten_topics_data=[],
        rack_id="",
    )


def only_partition(response):
    [topic] = response.responses
    [partition] = topic.partitions
    return partition


def as_stored(sent: bytes, base_offset: int, leader_epoch: int) -> bytes:
    """A produced batch as the leader stores it: base offset and partition leader epoch
    rewritten (neither is under the CRC), every other byte as the client sent it."""
    return base_offset.to_bytes(8, "big") + sent[8:12] + leader_epoch.to_bytes(4, "big", signed=True) + sent[16:]


def leader_of(state, topic, index=0) -> int:
    return state.partition(topic, index).leader


# -- Produce ---------------------------------------------------------------------------------


def test_produce_appends_and_answers_the_base_offset_of_each_partition():
    state = cluster(1)
    state.create_topic("t", 2)
    first, ctx = produce(state, "t", {0: batch(b"a", b"b"), 1: batch(b"c")})
    assert partition_answers(first) == [
        {
            "index": 0,
            "error_code": E.NONE,
            "base_offset": 0,
            "log_append_time_ms": -1,
            "log_start_offset": 0,
            "record_errors": [],
            "error_message": None,
            "current_leader": NO_LEADER,
        },
        {
            "index": 1,
            "error_code": E.NONE,
            "base_offset": 0,
            "log_append_time_ms": -1,
            "log_start_offset": 0,
            "record_errors": [],
            "error_message": None,
            "current_leader": NO_LEADER,
        },
    ]
    assert [t.name for t in first.responses] == ["t"] and first.node_endpoints == [] and first.throttle_time_ms == 0
    assert ctx.effects.partitions == {("t", 0), ("t", 1)}  # wakes only the fetches of these

    second, ctx = produce(state, "t", {0: batch(b"d", b"e", b"f")})
    assert [(p["error_code"], p["base_offset"]) for p in partition_answers(second)] == [(E.NONE, 2)]
    assert ctx.effects.partitions == {("t", 0)}  # wakes only the fetches of these
    log = state.partition("t", 0).log
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 5, 5)
    assert [(b.base_offset, b.last_offset) for b in log.batches] == [(0, 1), (2, 4)]


def test_log_append_time_topics_answer_the_broker_time():
    state = cluster(1)
    state.create_topic("t", 1, configs={"message.timestamp.type": "LogAppendTime"})
    response, _ = produce(state, "t", {0: batch(b"a")}, now_ms=123_456)
    [answer] = partition_answers(response)
    assert (answer["error_code"], answer["base_offset"], answer["log_append_time_ms"]) == (E.NONE, 0, 123_456)


def test_produce_v13_names_topics_by_id():
    state = cluster(1)
    state.create_topic("t", 1)
    topic_id = state.topics["t"].topic_id
    response, ctx = produce(state, "t", {0: batch(b"a")}, version=13)
    assert [(t.topic_id, t.name) for t in response.responses] == [(topic_id, "")]
    assert [(p["error_code"], p["base_offset"]) for p in partition_answers(response)] == [(E.NONE, 0)]

    unknown = uuid.UUID(int=42)
    response, ctx = produce(state, "t", {0: batch(b"b")}, version=13, topic_id=unknown)
    assert [t.topic_id for t in response.responses] == [unknown]
    assert [p["error_code"] for p in partition_answers(response)] == [E.UNKNOWN_TOPIC_ID]
    assert not ctx.effects.any_data and state.partition("t", 0).log.log_end_offset == 1


def test_the_wrong_broker_answers_not_leader_with_the_current_leader_and_its_endpoint():
    state = cluster(2)
    state.create_topic("t", 1, 2)
    partition = state.partition("t", 0)
    other = 1 - partition.leader
    state.move_leader(partition, other, 0)  # leader epoch 0 -> 1
    wrong = 1 - other
    response, ctx = produce(state, "t", {0: batch(b"a")}, version=10, broker=wrong)
    assert partition_answers(response) == [
        {
            "index": 0,
            "error_code": E.NOT_LEADER_OR_FOLLOWER,
            "base_offset": -1,
            "log_append_time_ms": -1,
            "log_start_offset": -1,
            "record_errors": [],
            "error_message": None,
            "current_leader": {"leader_id": other, "leader_epoch": 1},
        },
    ]
    assert [e.to_dict() for e in response.node_endpoints] == [
        {"node_id": other, "host": HOST, "port": FIRST_PORT + other, "rack": None}
    ]
    assert not ctx.effects.any_data and partition.log.log_end_offset == 0


def test_unknown_topics_and_partitions_are_unknown_topic_or_partition():
    state = cluster(1)
    state.create_topic("t", 1)
    mark = len(state.events)
    response, ctx = call(
        state,
        PRODUCE,
        10,
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            {"name": "nope", "partition_data": [{"index": 0, "records": batch(b"a")}]},
            {"name": "t", "partition_data": [{"index": 1, "records": batch(b"b")}]},
        ],
    )
    assert [(p["error_code"], p["current_leader"]) for p in partition_answers(response)] == [
        (E.UNKNOWN_TOPIC_OR_PARTITION, NO_LEADER),
        (E.UNKNOWN_TOPIC_OR_PARTITION, NO_LEADER),
    ]
    assert response.node_endpoints == []
    assert not ctx.effects.any_data
    assert "nope" not in state.topics and kinds_after(state, mark) == []  # Produce never auto-creates


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_are_advertised_but_refused_per_partition(version):
    state = cluster(1)
    state.create_topic("t", 2)
    old = records.build_message_set([(None, b"a")], magic=0 if version < 2 else 1)
    response, ctx = produce(state, "t", {0: old, 1: old}, version=version)
    assert [(p["index"], p["error_code"], p["base_offset"]) for p in partition_answers(response)] == [
        (0, E.UNSUPPORTED_VERSION, -1),
        (1, E.UNSUPPORTED_VERSION, -1),
    ]
    assert not ctx.effects.any_data
    assert [state.partition("t", i).log.log_end_offset for i in (0, 1)] == [0, 0]


def test_acks_other_than_minus_one_zero_or_one_are_invalid_required_acks():
    state = cluster(1)
    state.create_topic("t", 1)
    response, ctx = produce(state, "t", {0: batch(b"a")}, acks=2)
    assert [p["error_code"] for p in partition_answers(response)] == [E.INVALID_REQUIRED_ACKS]
    assert not ctx.effects.any_data and state.partition("t", 0).log.log_end_offset == 0


def test_acks_0_appends_and_sends_no_response():
    state = cluster(1)
    state.create_topic("t", 1)
    result, ctx = produce(state, "t", {0: batch(b"a", b"b")}, acks=0)
    assert result is NO_RESPONSE
    assert ctx.effects.any_data and state.partition("t", 0).log.log_end_offset == 2


def test_acks_0_closes_the_connection_when_a_partition_fails_and_still_appends_the_rest():
    state = cluster(2)
    state.create_topic("t", 2)
    led = next(p.index for p in state.topics["t"].partitions if p.leader == 0)
    other = 1 - led
    result, ctx = produce(state, "t", {led: batch(b"a"), other: batch(b"b")}, acks=0)
    assert isinstance(result, CloseInstead)
    assert "NOT_LEADER_OR_FOLLOWER" in result.reason
    assert state.partition("t", led).log.log_end_offset == 1 and state.partition("t", other).log.log_end_offset == 0
    assert ctx.effects.partitions == {("t", 0)}  # wakes only the fetches of these


def test_a_corrupt_batch_is_refused_appends_nothing_and_records_why():
    state = cluster(1)
    state.create_topic("t", 1)
    good = batch(b"a")
    corrupt = good[:-1] + bytes([good[-1] ^ 0xFF])  # the CRC no longer matches
    mark = len(state.events)
    response, ctx = produce(state, "t", {0: corrupt})
    assert [p["error_code"] for p in partition_answers(response)] == [E.CORRUPT_MESSAGE]
    assert not ctx.effects.any_data and state.partition("t", 0).log.log_end_offset == 0
    [event] = state.events[mark:]
    assert (event.kind, event.topic, event.partition, event.error) == ("produce_rejected", "t", 0, "CORRUPT_MESSAGE")


def idempotent(*values: bytes, sequence: int) -> bytes:
    return batch(*values, producer_id=1000, producer_epoch=0, base_sequence=sequence)


def test_an_idempotent_retry_is_acknowledged_with_the_first_offset_and_appends_nothing():
    state = cluster(1)
    state.create_topic("t", 1)
    first = idempotent(b"a", b"b", sequence=0)
    produce(state, "t", {0: first})
    produce(state, "t", {0: idempotent(b"c", sequence=2)})
    log = state.partition("t", 0).log
    stored = [b.data for b in log.batches]

    retry, _ = produce(state, "t", {0: first})
    assert [(p["error_code"], p["base_offset"], p["log_start_offset"]) for p in partition_answers(retry)] == [
        (E.NONE, 0, 0)
    ]
    assert log.log_end_offset == 3 and [b.data for b in log.batches] == stored


def test_an_idempotent_retry_does_not_report_changed_data():
    state = cluster(1)
    state.create_topic("t", 1)
    first = idempotent(b"a", sequence=0)
    produce(state, "t", {0: first})
    _, ctx = produce(state, "t", {0: first})
    assert not ctx.effects.any_data


def test_an_idempotent_sequence_gap_is_out_of_order_and_appends_nothing():
    state = cluster(1)
    state.create_topic("t", 1)
    produce(state, "t", {0: idempotent(b"a", sequence=0)})
    response, ctx = produce(state, "t", {0: idempotent(b"b", sequence=5)})
    assert [p["error_code"] for p in partition_answers(response)] == [E.OUT_OF_ORDER_SEQUENCE_NUMBER]
    assert not ctx.effects.any_data and state.partition("t", 0).log.log_end_offset == 1


# -- Fetch -------------------------------------------------------------------------------------


EXPECTED_OK = {
    "partition_index": 0,
    "error_code": E.NONE,
    "high_watermark": 0,
    "last_stable_offset": 0,
    "log_start_offset": 0,
    "preferred_read_replica": -1,
    "aborted_transactions": None,
}


def test_fetch_returns_the_stored_batches_byte_for_byte():
    state = cluster(1)
    state.create_topic("t", 1)
    first, second = batch(b"a", b"b"), batch(b"c")
    produce(state, "t", {0: first})
    produce(state, "t", {0: second})
    stored = as_stored(first, 0, 0) + as_stored(second, 2, 0)

    response, ctx = fetch(state, "t", 0)
    assert (response.error_code, response.session_id, response.throttle_time_ms) == (E.NONE, 0, 0)
    answer = only_partition(response).to_dict()
    assert {k: answer[k] for k in EXPECTED_OK} == EXPECTED_OK | {"high_watermark": 3, "last_stable_offset": 3}
    assert answer["records"] == stored
    assert not ctx.effects.any_data
    # A fetch from inside a batch starts at the batch that holds the offset, as Kafka's does.
    assert only_partition(fetch(state, "t", 1)[0]).records == stored
    assert only_partition(fetch(state, "t", 2)[0]).records == as_stored(second, 2, 0)
    # At the log end there is nothing yet, and no error.
    at_end = only_partition(fetch(state, "t", 3)[0])
    assert (at_end.error_code, at_end.records, at_end.high_watermark) == (E.NONE, b"", 3)


def test_read_committed_fetches_carry_an_aborted_transactions_list():
    state = cluster(1)
    state.create_topic("t", 1)
    produce(state, "t", {0: batch(b"a")})
    partition = only_partition(fetch(state, "t", 0, isolation_level=READ_COMMITTED)[0])
    assert (partition.error_code, partition.aborted_transactions, partition.last_stable_offset) == (E.NONE, [], 1)


def test_fetch_v13_names_topics_by_id():
    state = cluster(1)
    state.create_topic("t", 1)
    produce(state, "t", {0: batch(b"a")})
    response, _ = fetch(state, "t", 0, version=13)
    [topic] = response.responses
    assert topic.topic_id == state.topics["t"].topic_id
    assert only_partition(response).records == as_stored(batch(b"a"), 0, 0)


@pytest.mark.parametrize("offset", [5, -1])
def test_an_offset_outside_the_log_is_offset_out_of_range_at_once(offset):
    state = cluster(1)
    state.create_topic("t", 1)
    produce(state, "t", {0: batch(b"a", b"b")})
    result, _ = fetch(state, "t", offset, min_bytes=1, max_wait_ms=500)
    assert not isinstance(result, Wait)  # an error is answered without waiting
    partition = only_partition(result)
    assert (partition.error_code, partition.records) == (E.OFFSET_OUT_OF_RANGE, b"")


def test_an_offset_below_the_log_start_is_offset_out_of_range():
    state = cluster(1)
    state.create_topic("t", 1)
    produce(state, "t", {0: batch(b"a")})
    produce(state, "t", {0: batch(b"b")})
    state.delete_records(state.partition("t", 0), 1)
    assert only_partition(fetch(state, "t", 0)[0]).error_code == E.OFFSET_OUT_OF_RANGE
    assert only_partition(fetch(state, "t", 1)[0]).records == as_stored(batch(b"b"), 1, 0)


def test_offset_out_of_range_carries_unknown_offsets_as_kafka_does():
    state = cluster(1)
    state.create_topic("t", 1)
    produce(state, "t", {0: batch(b"a", b"b")})
    partition = only_partition(fetch(state, "t", 5)[0])
    assert partition.error_code == E.OFFSET_OUT_OF_RANGE
    assert (partition.high_watermark, partition.last_stable_offset, partition.log_start_offset) == (-1, -1, -1)
    assert partition.aborted_transactions is None  # a read error: null, as Kafka 4.4 answers (differential)


def test_fetch_on_the_wrong_broker_names_the_leader():
    state = cluster(2)
    state.create_topic("t", 1, 2)
    leader = leader_of(state, "t")
    response, _ = fetch(state, "t", 0, version=16, broker=1 - leader, min_bytes=1, max_wait_ms=500)
    partition = only_partition(response)
    assert (partition.error_code, partition.high_watermark, partition.records) == (E.NOT_LEADER_OR_FOLLOWER, -1, b"")
    assert partition.current_leader.to_dict() == {"leader_id": leader, "leader_epoch": 0}
    assert [e.to_dict() for e in response.node_endpoints] == [
        {"node_id": leader, "host": HOST, "port": FIRST_PORT + leader, "rack": None}
    ]


@pytest.mark.parametrize(("epoch", "error"), [(0, E.NONE), (1, E.UNKNOWN_LEADER_EPOCH), (-1, E.NONE)])
def test_fetch_checks_the_current_leader_epoch(epoch, error):
    state = cluster(1)
    state.create_topic("t", 1)
    assert only_partition(fetch(state, "t", 0, current_leader_epoch=epoch)[0]).error_code == error


def test_an_older_leader_epoch_is_fenced():
    state = cluster(2)
    state.create_topic("t", 1, 2)
    partition = state.partition("t", 0)
    state.move_leader(partition, 1 - partition.leader, 0)
    result = only_partition(fetch(state, "t", 0, broker=partition.leader, current_leader_epoch=0)[0])
    assert result.error_code == E.FENCED_LEADER_EPOCH


def test_unknown_partitions_are_unknown_topic_or_partition():
    state = cluster(1)
    state.create_topic("t", 1)
    assert only_partition(fetch(state, "t", 0, partition=3)[0]).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert only_partition(fetch(state, "nope", 0)[0]).error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_with_no_data_and_min_bytes_the_fetch_waits_until_data_arrives():
    state = cluster(1)
    state.create_topic("t", 1)
    wait, _ = fetch(state, "t", 0, now_ms=1_000, min_bytes=1, max_wait_ms=500)
    assert isinstance(wait, Wait) and wait.deadline_ms == 1_500
    assert wait.poll(1_100, False) is None
    assert wait.poll(1_200, False) is None
    produce(state, "t", {0: batch(b"a")})
    answer = wait.poll(1_300, False)
    assert answer is not None
    assert (only_partition(answer).records, only_partition(answer).high_watermark) == (as_stored(batch(b"a"), 0, 0), 1)


def test_a_waiting_fetch_is_answered_empty_at_its_deadline():
    state = cluster(1)
    state.create_topic("t", 1)
    wait, _ = fetch(state, "t", 0, now_ms=1_000, min_bytes=1, max_wait_ms=500)
    assert wait.poll(1_499, False) is None
    answer = wait.poll(1_500, True)
    assert (answer.error_code, only_partition(answer).error_code, only_partition(answer).records) == (
        E.NONE,
        E.NONE,
        b"",
    )


def test_a_waiting_fetch_answers_at_once_when_its_partition_goes_away():
    state = cluster(1)
    state.create_topic("t", 1)
    wait, _ = fetch(state, "t", 0, min_bytes=1, max_wait_ms=500)
    state.delete_topic("t")
    assert only_partition(wait.poll(10, False)).error_code == E.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize(("min_bytes", "max_wait_ms"), [(0, 500), (1, 0)])
def test_no_wait_without_min_bytes_or_max_wait(min_bytes, max_wait_ms):
    state = cluster(1)
    state.create_topic("t", 1)
    result, _ = fetch(state, "t", 0, min_bytes=min_bytes, max_wait_ms=max_wait_ms)
    assert not isinstance(result, Wait) and only_partition(result).records == b""


@pytest.mark.parametrize("version", [4, 12, 13, 17])
def test_a_fetch_naming_no_partition_is_answered_at_once(version):
    """As ReplicaManager.fetchMessages answers a fetch with nothing to read (``fetchInfos``
    empty), whatever its min_bytes and max_wait_ms: a Java consumer's closing fetch names none."""
    state = cluster(1)
    state.create_topic("t", 1)
    body = {"replica_id": -1} if version < 15 else {}
    result, _ = call(state, FETCH, version, max_wait_ms=500, min_bytes=1, topics=[], **body)
    assert not isinstance(result, Wait) and result.error_code == E.NONE and result.responses == []


def test_an_incremental_fetch_naming_a_session_gets_fetch_session_id_not_found():
    state = cluster(1)
    state.create_topic("t", 1)
    produce(state, "t", {0: batch(b"a")})
    response, _ = fetch(state, "t", 0, session_id=42, session_epoch=1, min_bytes=1, max_wait_ms=500)
    assert not isinstance(response, Wait)
    assert (response.error_code, response.session_id, response.responses) == (E.FETCH_SESSION_ID_NOT_FOUND, 0, [])


@pytest.mark.parametrize("epoch", [-1, 0])
def test_a_full_fetch_carrying_a_session_id_is_answered_in_full(epoch):
    state = cluster(1)
    state.create_topic("t", 1)
    produce(state, "t", {0: batch(b"a")})
    response, _ = fetch(state, "t", 0, session_id=42, session_epoch=epoch)
    assert (response.error_code, response.session_id) == (E.NONE, 0)
    assert only_partition(response).records == as_stored(batch(b"a"), 0, 0)


def test_a_record_more_than_an_hour_ahead_is_an_invalid_timestamp():
    # Kafka 4: message.timestamp.after.max.ms is 1 h (LogValidator.validateTimestamp)
    state = cluster(1)
    state.create_topic("t", 1, 1)
    now = 1_700_000_000_000
    ahead = records.build_batch([(None, b"soon", [], now + 3_599_000), (None, b"late", [], now + 2 * 3_600_000)])
    [answer] = produce(state, "t", {0: ahead}, now_ms=now)[0].responses[0].partition_responses
    assert answer.error_code == E.INVALID_TIMESTAMP
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
        (
            1,
            f"Timestamp {now + 7_200_000} of message with offset 1 is out of range. The timestamp should be within "
            f"[{now - 2**63 + 1}, {now + 3_600_000}]",
        )
    ]
    assert state.partition("t", 0).log.log_end_offset == 0
    within = records.build_batch([(None, b"soon", [], now + 3_599_000)])
    assert produce(state, "t", {0: within}, now_ms=now)[0].responses[0].partition_responses[0].error_code == E.NONE
    # a topic's own setting; LogAppendTime topics are not checked
    state.create_topic("wide", 1, 1, {"message.timestamp.after.max.ms": str(3 * 3_600_000)})
    assert produce(state, "wide", {0: ahead}, now_ms=now)[0].responses[0].partition_responses[0].error_code == E.NONE
    state.create_topic("appended", 1, 1, {"message.timestamp.type": "LogAppendTime"})
    assert (
        produce(state, "appended", {0: ahead}, now_ms=now)[0].responses[0].partition_responses[0].error_code == E.NONE
    )

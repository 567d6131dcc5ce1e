"""Issue 33: a compressed batch of millions of tiny records of mixed layouts is within every
limit, so it is accepted as Kafka accepts it, but it is checked on a worker thread: the
handler yields the check as a job instead of walking the records on the event loop."""

from __future__ import annotations

import time

import pytest

from fakebroker.apis import dispatch
from fakebroker.apis.context import RequestContext, Steps
from fakebroker.core.log.appends import LOOP_BUDGET
from fakebroker.protocol import compression as c
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import request_type

from .record_bombs import batch_of, mixed_records, record_bomb
from .support import cluster
from .test_produce_fetch import partition_answers, produce

PRODUCE = 0
COUNT = 50_000


def test_within_the_budget_nothing_changes():
    small = record_bomb(LOOP_BUDGET.records)
    assert rec.checked_produce_headers(small, produce_version=9, budget=LOOP_BUDGET)[0].records_count == 2048


def test_past_the_budget_the_check_stops_within_a_few_ms_without_a_verdict():
    for count, bomb in [
        (COUNT, record_bomb(COUNT)),  # decompresses to less than the budget's bytes
        (20 * COUNT, record_bomb(20 * COUNT)),  # to more
        (COUNT, batch_of(mixed_records(COUNT), COUNT, codec=0)),  # not compressed
    ]:
        started = time.perf_counter()
        with pytest.raises(rec.OverBudget):
            rec.checked_produce_headers(bomb, produce_version=9, budget=LOOP_BUDGET)
        assert time.perf_counter() - started < 0.05  # about 3 ms here, against seconds for the whole walk
        assert rec.checked_produce_headers(bomb, produce_version=9)[0].records_count == count


def _dispatch(state, records: bytes) -> tuple[object, RequestContext]:
    kind = request_type(PRODUCE)
    fields = {
        "acks": -1,
        "timeout_ms": 30_000,
        "transactional_id": None,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    }
    request = kind.decode(kind.encode(kind.new(**fields), 9), 9)
    ctx = RequestContext(state, 0, PRODUCE, 9, correlation_id=1, client_id="bomber", now_ms=0)
    return dispatch(ctx, request), ctx


def test_a_record_bomb_is_a_job_and_is_appended_whole():
    state = cluster()
    state.create_topic("t", 1)
    result, _ = _dispatch(state, record_bomb(COUNT))
    assert isinstance(result, Steps) and result.job is not None  # the server runs it off the loop
    assert state.topics["t"].partitions[0].log.log_end_offset == 0  # nothing appended before the check
    answer = partition_answers(result.finish())
    assert answer[0]["error_code"] == E.NONE and answer[0]["base_offset"] == 0
    assert state.topics["t"].partitions[0].log.log_end_offset == COUNT


def test_a_bad_record_found_off_the_loop_gets_the_same_answer_as_on_it():
    state = cluster()
    state.create_topic("t", 1)
    broken = batch_of(mixed_records(COUNT, last=b"\x0a\x00\x00\x00\x01\x01\x00"), COUNT)  # length 5, 6 read
    with pytest.raises(rec.InvalidRecordError) as on_loop:
        rec.checked_produce_headers(broken, produce_version=9, topic_partition="t-0")
    assert "Invalid record size" in str(on_loop.value)
    result, _ = _dispatch(state, broken)
    assert isinstance(result, Steps) and result.job is not None
    answer = partition_answers(result.finish())[0]
    assert answer["error_code"] == E.INVALID_RECORD
    assert state.topics["t"].partitions[0].log.log_end_offset == 0
    events = [e for e in state.events if type(e).__name__ == "ProduceRejected"]
    assert events[-1].reason == str(on_loop.value)
    good = partition_answers(produce(state, "t", {0: rec.build_batch([(None, b"after")])})[0])[0]
    assert (good["error_code"], good["base_offset"]) == (E.NONE, 0)


def test_a_topic_deleted_while_its_records_are_checked_is_answered_unknown():
    state = cluster()
    state.create_topic("t", 1)
    result, _ = _dispatch(state, record_bomb(COUNT, codec=c.LZ4))
    assert isinstance(result, Steps) and result.job is not None
    state.delete_topic("t")  # what another connection may do meanwhile
    answer = partition_answers(result.finish())
    assert answer[0]["error_code"] == E.UNKNOWN_TOPIC_OR_PARTITION

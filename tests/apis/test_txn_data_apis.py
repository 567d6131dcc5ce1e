"""Transactional data through the handlers: Produce (0) of transactional batches (KIP-890
verification and implicit adds), read_committed Fetch (1) and ListOffsets (2) bounded by the
last stable offset, and OffsetFetch (9) require_stable."""

from __future__ import annotations

import pytest

from fakebroker.protocol.error_codes import ErrorCode as E

from .support import batch, call
from .txn_calls import (
    LIST_OFFSETS,
    PRODUCE,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    TID,
    add_partitions,
    begin,
    end,
    fetch,
    produce_txn,
    txn_cluster,
    values,
)

# -- Produce -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "error"),
    [(3, E.INVALID_TXN_STATE), (9, E.INVALID_TXN_STATE), (10, E.INVALID_TXN_STATE), (11, E.TRANSACTION_ABORTABLE)],
)
def test_produce_of_a_transactional_batch_to_a_partition_not_added(version, error):
    state = txn_cluster()
    pid, epoch = begin(state)
    answer = produce_txn(state, pid, epoch, version=version)
    assert answer.error_code == error
    # Kafka 4.4 names the reason with INVALID_TXN_STATE (probed side by side)
    assert answer.error_message == ("Partition was not added to the transaction" if version <= 10 else None)
    assert state.partition("t", 0).log.log_end_offset == 0


def test_transactional_batches_without_a_transactional_id_fail_every_partition():
    # KafkaApis: transactional records need a transactional id the client may write as
    state = txn_cluster()
    pid, epoch = begin(state)
    plain = batch(b"p")
    txnal = batch(b"v", producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    response, _ = call(
        state,
        PRODUCE,
        9,
        acks=-1,
        timeout_ms=30_000,
        transactional_id=None,
        topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": plain}, {"index": 1, "records": txnal}]}],
    )
    answers = response.responses[0].partition_responses
    assert [a.error_code for a in answers] == [E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED] * 2
    assert state.partition("t", 0).log.log_end_offset == 0


def test_transactional_batches_of_two_producers_in_one_request_fail_every_partition():
    # ReplicaManager: one request's transactional batches must all be of one producer id and epoch
    state = txn_cluster()
    pid, epoch = begin(state)
    other, other_epoch = begin(state, "tx2")
    mine = batch(b"v", producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    theirs = batch(b"w", producer_id=other, producer_epoch=other_epoch, base_sequence=0, transactional=True)
    response, _ = call(
        state,
        PRODUCE,
        9,
        acks=-1,
        timeout_ms=30_000,
        transactional_id=TID,
        topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": mine}, {"index": 1, "records": theirs}]}],
    )
    answers = response.responses[0].partition_responses
    assert [a.error_code for a in answers] == [E.INVALID_PRODUCER_ID_MAPPING] * 2
    assert state.partition("t", 0).log.log_end_offset == state.partition("t", 1).log.log_end_offset == 0


def test_a_plain_batch_of_a_producer_in_a_transaction_is_checked_for_its_sequence_first():
    # ProducerAppendInfo checks the sequence before the open transaction (Kafka 4.4: OUT_OF_ORDER_SEQUENCE_NUMBER)
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}
    assert produce_txn(state, pid, epoch, b"a", b"b").error_code == E.NONE
    plain_at_0 = produce_txn_plain(state, pid, epoch, seq=0)
    assert (plain_at_0.error_code, plain_at_0.log_start_offset) == (E.OUT_OF_ORDER_SEQUENCE_NUMBER, 0)
    plain_next = produce_txn_plain(state, pid, epoch, seq=2)
    assert (plain_next.error_code, plain_next.log_start_offset) == (E.INVALID_TXN_STATE, 0)


def produce_txn_plain(state, pid, epoch, *, seq):
    data = batch(b"plain", producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    response, _ = call(
        state,
        PRODUCE,
        9,
        acks=-1,
        timeout_ms=30_000,
        transactional_id=TID,
        topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": data}]}],
    )
    return response.responses[0].partition_responses[0]


@pytest.mark.parametrize("version", [12, 13])
def test_produce_v12_adds_the_partition_implicitly(version):
    state = txn_cluster()
    pid, epoch = begin(state)
    data = batch(b"v", producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    named = {"name": "t"} if version < 13 else {"topic_id": state.topics["t"].topic_id}
    response, _ = call(
        state,
        PRODUCE,
        version,
        broker=state.partition("t", 0).leader,
        acks=-1,
        timeout_ms=30_000,
        transactional_id=TID,
        topic_data=[{**named, "partition_data": [{"index": 0, "records": data}]}],
    )
    assert response.responses[0].partition_responses[0].error_code == E.NONE
    txn = state.transactions.txns[TID]
    assert (txn.state.value, txn.partitions, txn.version) == ("Ongoing", {("t", 0)}, 2)


def test_produce_of_a_fenced_epoch_is_invalid_producer_epoch():
    state = txn_cluster()
    pid, epoch = begin(state)
    begin(state)
    assert produce_txn(state, pid, epoch, version=12).error_code == E.INVALID_PRODUCER_EPOCH
    assert produce_txn(state, pid, epoch, version=9).error_code == E.INVALID_PRODUCER_EPOCH


# -- read_committed Fetch and ListOffsets --------------------------------------------------------------


def open_and_aborted(state):
    """t-0: an aborted transaction (0-1, marker 2), a committed one (3, marker 4), an open one (5-6)."""
    offsets = []
    for tid, outcome in [("ab", False), ("ok", True), ("open", None)]:
        pid, epoch = begin(state, tid)
        assert add_partitions(state, pid, epoch, {"t": [0]}, tid=tid) == {("t", 0): E.NONE}
        n = 1 if tid == "ok" else 2
        answer = produce_txn(state, pid, epoch, *[f"{tid}{i}".encode() for i in range(n)], tid=tid)
        assert answer.error_code == E.NONE
        offsets.append(answer.base_offset)
        if outcome is not None:
            assert end(state, pid, epoch, outcome, tid=tid).error_code == E.NONE
    return state.transactions.txns["ab"].producer_id, offsets


def test_read_committed_fetch_stops_at_the_last_stable_offset_with_the_aborted_transactions():
    state = txn_cluster()
    aborted_pid, offsets = open_and_aborted(state)
    assert offsets == [0, 3, 5]
    answer = fetch(state, isolation=READ_COMMITTED)
    assert (answer.high_watermark, answer.last_stable_offset) == (7, 5)
    assert values(answer.records) == [b"ab0", b"ab1", b"ok0"]  # the reader drops ab* with the index
    assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == [(aborted_pid, 0)]
    uncommitted = fetch(state, isolation=READ_UNCOMMITTED)
    assert uncommitted.aborted_transactions is None
    assert (uncommitted.high_watermark, uncommitted.last_stable_offset) == (7, 5)
    assert values(uncommitted.records) == [b"ab0", b"ab1", b"ok0", b"open0", b"open1"]
    # from past the aborted transaction's marker it is not listed
    assert fetch(state, offset=3, isolation=READ_COMMITTED).aborted_transactions == []


def test_list_offsets_latest_is_the_lso_for_read_committed():
    state = txn_cluster()
    open_and_aborted(state)

    def latest(isolation):
        response, _ = call(
            state,
            LIST_OFFSETS,
            7,
            broker=state.partition("t", 0).leader,
            replica_id=-1,
            isolation_level=isolation,
            topics=[{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}],
        )
        return response.topics[0].partitions[0].offset

    assert (latest(READ_COMMITTED), latest(READ_UNCOMMITTED)) == (5, 7)

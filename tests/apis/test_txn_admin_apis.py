"""The transaction admin APIs through their handlers: DescribeTransactions (65),
ListTransactions (66) and DescribeProducers (61)."""

from __future__ import annotations

from fakebroker.protocol.error_codes import ErrorCode as E

from .support import call, cluster
from .txn_calls import (
    ADD_PARTITIONS,
    DESCRIBE_PRODUCERS,
    DESCRIBE_TRANSACTIONS,
    LIST_TRANSACTIONS,
    TID,
    add_partitions,
    begin,
    coordinator,
    end,
    produce_txn,
    txn_cluster,
)

# -- DescribeTransactions / ListTransactions / DescribeProducers ---------------------------------------


def describe(state, *tids, broker=None):
    response, _ = call(
        state,
        DESCRIBE_TRANSACTIONS,
        0,
        broker=coordinator(state) if broker is None else broker,
        transactional_ids=list(tids),
    )
    return {s.transactional_id: s for s in response.transaction_states}


def test_describe_transactions():
    state = txn_cluster()
    pid, epoch = begin(state, timeout_ms=30_000)
    assert add_partitions(state, pid, epoch, {"t": [1, 0]}) == {("t", 1): E.NONE, ("t", 0): E.NONE}
    states = describe(state, TID, "unknown")
    tx = states[TID]
    assert (tx.error_code, tx.transaction_state, tx.transaction_timeout_ms, tx.producer_id, tx.producer_epoch) == (
        E.NONE,
        "Ongoing",
        30_000,
        pid,
        epoch,
    )
    assert tx.transaction_start_time_ms == 0
    assert [(t.topic, sorted(t.partitions)) for t in tx.topics] == [("t", [0, 1])]
    unknown = states["unknown"]
    # Kafka 4.4 leaves the message's defaults (0) in an error's fields (probed side by side)
    assert (unknown.error_code, unknown.producer_id, unknown.producer_epoch, unknown.transaction_start_time_ms) == (
        E.TRANSACTIONAL_ID_NOT_FOUND,
        0,
        0,
        0,
    )


def test_an_empty_transaction_aborted_under_version_2_gets_a_start_time():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert end(state, pid, epoch, commit=False, version=5, now_ms=777).error_code == E.NONE
    tx = describe(state, TID)[TID]
    assert (tx.transaction_state, tx.transaction_start_time_ms, tx.producer_epoch) == ("CompleteAbort", 777, epoch + 1)


def test_describe_transactions_on_another_broker_is_not_coordinator():
    state = cluster(2)
    begin(state)
    states = describe(state, TID, broker=1 - coordinator(state))
    assert states[TID].error_code == E.NOT_COORDINATOR


def test_describe_transactions_of_an_empty_id_is_invalid_request():
    state = cluster(1)
    assert describe(state, "")[""].error_code == E.INVALID_REQUEST


def test_describe_transactions_keeps_the_start_time_of_a_completed_transaction():
    state = txn_cluster()
    pid, epoch = begin(state)
    response, _ = call(
        state,
        ADD_PARTITIONS,
        3,
        broker=coordinator(state),
        now_ms=1_234,
        v3_and_below_transactional_id=TID,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": "t", "partitions": [0]}],
    )
    assert end(state, pid, epoch, now_ms=2_000).error_code == E.NONE
    tx = describe(state, TID)[TID]
    assert (tx.transaction_state, tx.topics) == ("CompleteCommit", [])
    assert tx.transaction_start_time_ms == 1_234


def list_txns(state, *, version=2, states=(), pids=(), duration=-1, pattern=None, now_ms=0, broker=0):
    response, _ = call(
        state,
        LIST_TRANSACTIONS,
        version,
        broker=broker,
        now_ms=now_ms,
        state_filters=list(states),
        producer_id_filters=list(pids),
        duration_filter=duration,
        transactional_id_pattern=pattern,
    )
    return response


def listed(response) -> list[tuple[str, str]]:
    return sorted((s.transactional_id, s.transaction_state) for s in response.transaction_states)


def test_list_transactions_filters():
    state = txn_cluster()
    pid, epoch = begin(state, "tx-a")
    assert add_partitions(state, pid, epoch, {"t": [0]}, tid="tx-a") == {("t", 0): E.NONE}
    other_pid, _ = begin(state, "other")
    assert listed(list_txns(state)) == [("other", "Empty"), ("tx-a", "Ongoing")]
    assert listed(list_txns(state, states=["Ongoing"])) == [("tx-a", "Ongoing")]
    unknown = list_txns(state, states=["Ongoing", "Bogus"])
    assert (unknown.error_code, list(unknown.unknown_state_filters), listed(unknown)) == (
        E.NONE,
        ["Bogus"],
        [("tx-a", "Ongoing")],
    )
    only_unknown = list_txns(state, states=["Bogus"])
    assert (list(only_unknown.unknown_state_filters), listed(only_unknown)) == (["Bogus"], [])
    assert listed(list_txns(state, pids=[other_pid])) == [("other", "Empty")]
    assert listed(list_txns(state, pattern="tx-.*")) == [("tx-a", "Ongoing")]
    assert listed(list_txns(state, pattern="tx")) == []  # a full match, as Java's Pattern.matches
    assert list_txns(state, pattern="(").error_code == E.INVALID_REGULAR_EXPRESSION
    assert listed(list_txns(state, duration=1_000, now_ms=5_000, states=["Ongoing"])) == [("tx-a", "Ongoing")]
    assert listed(list_txns(state, duration=5_000, now_ms=4_000, states=["Ongoing"])) == []
    # v0 has no duration filter and no pattern
    assert listed(list_txns(state, version=0)) == [("other", "Empty"), ("tx-a", "Ongoing")]


def test_list_transactions_duration_filter_is_strictly_longer():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}  # started at 0
    assert listed(list_txns(state, duration=1_000, now_ms=1_000, states=["Ongoing"])) == []


def test_list_transactions_duration_filter_uses_the_start_timestamp_even_when_none():
    # TransactionStateManager.listTransactionStates: (now - txnStartTimestamp) <= duration excludes;
    # an Empty id has txnStartTimestamp -1, so it is listed once now + 1 > duration
    state = txn_cluster()
    begin(state)
    assert listed(list_txns(state, duration=1_000, now_ms=5_000)) == [(TID, "Empty")]


def test_list_transactions_lists_only_the_ids_this_broker_coordinates():
    state = cluster(3)
    tids = [f"id-{i}" for i in range(12)]
    for tid in tids:
        begin(state, tid)
    seen = []
    for broker in range(3):
        names = [s.transactional_id for s in list_txns(state, broker=broker).transaction_states]
        assert all(coordinator(state, n) == broker for n in names)
        seen += names
    assert sorted(seen) == sorted(tids)


def test_describe_producers_lists_the_open_transaction_start():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}
    assert produce_txn(state, pid, epoch, b"a", b"b").error_code == E.NONE
    assert produce_txn(state, pid, epoch, b"c", seq=2).error_code == E.NONE

    def producers():
        response, _ = call(
            state,
            DESCRIBE_PRODUCERS,
            0,
            broker=state.partition("t", 0).leader,
            topics=[{"name": "t", "partition_indexes": [0, 5]}],
        )
        return {p.partition_index: p for p in response.topics[0].partitions}

    parts = producers()
    assert parts[5].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    [active] = parts[0].active_producers
    assert (active.producer_id, active.producer_epoch, active.last_sequence, active.current_txn_start_offset) == (
        pid,
        epoch,
        2,
        0,
    )
    assert end(state, pid, epoch).error_code == E.NONE
    [active] = producers()[0].active_producers
    assert active.current_txn_start_offset == -1


def test_describe_producers_last_timestamp_is_the_last_batch_max_timestamp():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}
    assert produce_txn(state, pid, epoch, b"a").error_code == E.NONE  # support.batch: timestamp 1000
    response, _ = call(
        state,
        DESCRIBE_PRODUCERS,
        0,
        broker=state.partition("t", 0).leader,
        topics=[{"name": "t", "partition_indexes": [0]}],
    )
    [active] = response.topics[0].partitions[0].active_producers
    assert active.last_timestamp == 1_000

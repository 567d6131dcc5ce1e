"""The transaction APIs, called through their handlers: FindCoordinator (10) for transactional
ids, InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
WriteTxnMarkers (27), TxnOffsetCommit (28), transactional Produce (0), read_committed Fetch (1)
and ListOffsets (2), OffsetFetch (9) require_stable, DescribeProducers (61),
DescribeTransactions (65), ListTransactions (66) and ApiVersions (18) features. Expected answers
follow Kafka 4.1 (KafkaApis, TransactionCoordinator, ReplicaManager, OffsetMetadataManager)."""

from __future__ import annotations

import pytest

from fakebroker.core.groups.placement import OFFSETS_TOPIC, TRANSACTION_TOPIC, partition_for
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import batch, call, cluster

PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FETCH, FIND_COORDINATOR, API_VERSIONS = 0, 1, 2, 9, 10, 18
INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, WRITE_MARKERS, TXN_OFFSET_COMMIT = 22, 24, 25, 26, 27, 28
DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 65, 66
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
TID = "tx"


# -- helpers ------------------------------------------------------------------------------------------


def coordinator(state, tid=TID) -> int:
    return state.txn_coordinator_of(tid)


def init(state, tid=TID, *, version=5, timeout_ms=60_000, pid=-1, epoch=-1, broker=None, now_ms=0):
    response, _ = call(
        state,
        INIT_PRODUCER_ID,
        version,
        broker=coordinator(state, tid) if broker is None else broker,
        now_ms=now_ms,
        transactional_id=tid,
        transaction_timeout_ms=timeout_ms,
        producer_id=pid,
        producer_epoch=epoch,
    )
    return response


def begin(state, tid=TID, **kwargs) -> tuple[int, int]:
    response = init(state, tid, **kwargs)
    assert response.error_code == E.NONE
    return response.producer_id, response.producer_epoch


def add_partitions(state, pid, epoch, topics: dict[str, list[int]], *, tid=TID, version=3, broker=None):
    """AddPartitionsToTxn v0-3 (a client): {(topic, partition): error}."""
    response, _ = call(
        state,
        ADD_PARTITIONS,
        version,
        broker=coordinator(state, tid) if broker is None else broker,
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def add_offsets(state, pid, epoch, group="g", *, tid=TID, version=4, broker=None):
    response, _ = call(
        state,
        ADD_OFFSETS,
        version,
        broker=coordinator(state, tid) if broker is None else broker,
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        group_id=group,
    )
    return response.error_code


def end(state, pid, epoch, commit=True, *, tid=TID, version=4, broker=None, now_ms=0):
    response, _ = call(
        state,
        END_TXN,
        version,
        broker=coordinator(state, tid) if broker is None else broker,
        now_ms=now_ms,
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )
    return response


def produce_txn(state, pid, epoch, *values, topic="t", partition=0, seq=0, tid=TID, version=9, now_ms=0):
    data = batch(*(values or (b"v",)), producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)
    response, _ = call(
        state,
        PRODUCE,
        version,
        broker=state.partition(topic, partition).leader,
        now_ms=now_ms,
        acks=-1,
        timeout_ms=30_000,
        transactional_id=tid,
        topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": data}]}],
    )
    [answer] = response.responses[0].partition_responses
    return answer


def txn_offset_commit(
    state, pid, epoch, offsets: dict[tuple[str, int], int], *, group="g", tid=TID, version=3, generation=-1, member=""
):
    by_topic: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": "",
            }
        )
    response, _ = call(
        state,
        TXN_OFFSET_COMMIT,
        version,
        broker=state.coordinator_of(group),
        transactional_id=tid,
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=generation,
        member_id=member,
        group_instance_id=None,
        topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    )
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def fetch(state, topic="t", offset=0, *, partition=0, isolation=READ_COMMITTED, version=12):
    response, _ = call(
        state,
        FETCH,
        version,
        broker=state.partition(topic, partition).leader,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "fetch_offset": offset,
                        "partition_max_bytes": 1 << 20,
                        "log_start_offset": -1,
                        "current_leader_epoch": -1,
                    }
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    [answer] = response.responses[0].partitions
    return answer


def values(records: bytes) -> list[bytes]:
    return [r.value for b in rec.read_batches(records) if not b.is_control for r in b.records]


def txn_cluster(brokers=1, **config):
    state = cluster(brokers, config or None)
    state.create_topic("t", 2, 1)
    return state


# -- FindCoordinator -----------------------------------------------------------------------------------


def test_find_coordinator_for_a_transactional_id_names_its_transaction_state_leader():
    state = cluster(3)
    response, _ = call(state, FIND_COORDINATOR, 4, key_type=1, coordinator_keys=["tx-1", "tx-2"])
    topic = state.topics[TRANSACTION_TOPIC]
    assert topic.internal and len(topic.partitions) == 50
    expected = [(k, topic.partitions[partition_for(k, 50)].leader, E.NONE) for k in ("tx-1", "tx-2")]
    assert [(c.key, c.node_id, c.error_code) for c in response.coordinators] == expected


# -- InitProducerId ------------------------------------------------------------------------------------


def test_init_producer_id_invalid_timeout_wins_over_not_coordinator():
    state = cluster(2)
    wrong = 1 - coordinator(state)
    assert init(state, timeout_ms=0, broker=wrong).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert init(state, timeout_ms=900_001, broker=wrong).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert init(state, timeout_ms=900_000, broker=wrong).error_code == E.NOT_COORDINATOR
    assert init(state, timeout_ms=900_000).error_code == E.NONE


@pytest.mark.parametrize(("pid", "epoch"), [(-1, 0), (5, -1)])
def test_init_producer_id_with_exactly_one_of_id_and_epoch_is_invalid_request(pid, epoch):
    state = cluster(1)
    response = init(state, pid=pid, epoch=epoch)
    assert (response.error_code, response.producer_id, response.producer_epoch) == (E.INVALID_REQUEST, -1, -1)


@pytest.mark.parametrize(("version", "error"), [(3, E.INVALID_PRODUCER_EPOCH), (4, E.PRODUCER_FENCED)])
def test_init_producer_id_fenced_by_version(version, error):
    state = cluster(1)
    pid, epoch = begin(state)
    begin(state)  # epoch + 1
    assert init(state, version=version, pid=pid, epoch=epoch + 5).error_code == error


def test_init_producer_id_fences_an_open_transaction_then_answers_the_retry():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}
    assert produce_txn(state, pid, epoch).error_code == E.NONE
    first = init(state)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    again = init(state)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (E.NONE, pid, epoch + 2)
    assert produce_txn(state, pid, epoch, seq=1).error_code == E.INVALID_PRODUCER_EPOCH


# -- AddPartitionsToTxn --------------------------------------------------------------------------------


def test_add_partitions_with_an_unknown_partition_adds_nothing():
    state = txn_cluster()
    pid, epoch = begin(state)
    result = add_partitions(state, pid, epoch, {"t": [0, 1, 9], "nope": [0]})
    assert result == {
        ("t", 0): E.OPERATION_NOT_ATTEMPTED,
        ("t", 1): E.OPERATION_NOT_ATTEMPTED,
        ("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert state.transactions.txns[TID].partitions == set()


def test_add_partitions_of_an_internal_topic_is_topic_authorization_failed():
    state = txn_cluster()
    state.offsets_topic()
    pid, epoch = begin(state)
    result = add_partitions(state, pid, epoch, {"t": [0], OFFSETS_TOPIC: [0]})
    assert result == {("t", 0): E.OPERATION_NOT_ATTEMPTED, (OFFSETS_TOPIC, 0): E.TOPIC_AUTHORIZATION_FAILED}


@pytest.mark.parametrize(("version", "error"), [(1, E.INVALID_PRODUCER_EPOCH), (2, E.PRODUCER_FENCED)])
def test_add_partitions_one_error_for_the_lot(version, error):
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch + 1, {"t": [0, 1]}, version=version) == {
        ("t", 0): error,
        ("t", 1): error,
    }
    assert add_partitions(state, pid + 1, epoch, {"t": [0]}, version=version) == {
        ("t", 0): E.INVALID_PRODUCER_ID_MAPPING
    }
    assert add_partitions(state, pid, epoch, {"t": [0]}, tid="unknown", version=version) == {
        ("t", 0): E.INVALID_PRODUCER_ID_MAPPING
    }


def test_add_partitions_on_another_broker_is_not_coordinator():
    state = cluster(2)
    state.create_topic("t", 1, 1)
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch, {"t": [0]}, broker=1 - coordinator(state)) == {("t", 0): E.NOT_COORDINATOR}


def add_v4(state, transactions: list[dict], *, version=4):
    response, _ = call(
        state,
        ADD_PARTITIONS,
        version,
        broker=coordinator(state),
        transactions=[
            {
                "transactional_id": t["tid"],
                "producer_id": t["pid"],
                "producer_epoch": t["epoch"],
                "verify_only": t.get("verify_only", False),
                "topics": [{"name": n, "partitions": ps} for n, ps in t["topics"].items()],
            }
            for t in transactions
        ],
    )
    return response.error_code, {
        r.transactional_id: {
            (t.name, p.partition_index): p.partition_error_code for t in r.topic_results for p in t.results_by_partition
        }
        for r in response.results_by_transaction
    }


def test_add_partitions_v4_batches_transactions_and_verifies():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}
    other_pid, other_epoch = begin(state, "other") if coordinator(state, "other") == coordinator(state) else (-1, -1)
    transactions = [{"tid": TID, "pid": pid, "epoch": epoch, "verify_only": True, "topics": {"t": [0, 1]}}]
    if other_pid >= 0:
        transactions.append({"tid": "other", "pid": other_pid, "epoch": other_epoch, "topics": {"t": [1]}})
    error, results = add_v4(state, transactions)
    assert error == E.NONE
    assert results[TID] == {("t", 0): E.NONE, ("t", 1): E.TRANSACTION_ABORTABLE}
    assert state.transactions.txns[TID].partitions == {("t", 0)}  # verifying adds nothing
    if other_pid >= 0:
        assert results["other"] == {("t", 1): E.NONE}
        assert state.transactions.txns["other"].partitions == {("t", 1)}
        assert state.transactions.txns["other"].version == 2


def test_add_partitions_v4_verify_of_a_fenced_producer():
    state = txn_cluster()
    pid, epoch = begin(state)
    _, results = add_v4(
        state, [{"tid": TID, "pid": pid, "epoch": epoch + 1, "verify_only": True, "topics": {"t": [0]}}]
    )
    assert results[TID] == {("t", 0): E.PRODUCER_FENCED}


# -- AddOffsetsToTxn -----------------------------------------------------------------------------------


def test_add_offsets_adds_the_groups_offsets_partition():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_offsets(state, pid, epoch, "g") == E.NONE
    txn = state.transactions.txns[TID]
    assert txn.partitions == {(OFFSETS_TOPIC, state.group_partition("g"))}
    assert txn.state.value == "Ongoing"
    assert add_offsets(state, pid + 1, epoch, "g") == E.INVALID_PRODUCER_ID_MAPPING
    assert add_offsets(state, pid, epoch + 1, "g", version=2) == E.PRODUCER_FENCED
    assert add_offsets(state, pid, epoch + 1, "g", version=1) == E.INVALID_PRODUCER_EPOCH
    assert add_offsets(state, pid, epoch, "g", tid="nobody") == E.INVALID_PRODUCER_ID_MAPPING


# -- EndTxn --------------------------------------------------------------------------------------------


def test_end_txn_v5_answers_the_bumped_epoch_and_v4_does_not():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}
    v4 = end(state, pid, epoch, version=4)
    assert (v4.error_code, v4.producer_id, v4.producer_epoch) == (E.NONE, -1, -1)
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}
    v5 = end(state, pid, epoch, version=5)
    assert (v5.error_code, v5.producer_id, v5.producer_epoch) == (E.NONE, pid, epoch + 1)
    retry = end(state, pid, epoch, version=5)
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (E.NONE, pid, epoch + 1)
    fenced = end(state, pid, epoch + 7, version=5)
    assert (fenced.error_code, fenced.producer_id, fenced.producer_epoch) == (E.PRODUCER_FENCED, -1, -1)


@pytest.mark.parametrize(("version", "error"), [(1, E.INVALID_PRODUCER_EPOCH), (2, E.PRODUCER_FENCED)])
def test_end_txn_fenced_by_version(version, error):
    state = txn_cluster()
    pid, epoch = begin(state)
    assert end(state, pid, epoch + 1, version=version).error_code == error


def test_end_txn_of_an_empty_transaction_v4_is_invalid_txn_state_and_v5_abort_bumps():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert end(state, pid, epoch, True, version=4).error_code == E.INVALID_TXN_STATE
    assert end(state, pid, epoch, False, version=4).error_code == E.INVALID_TXN_STATE
    assert end(state, pid, epoch, True, version=5).error_code == E.INVALID_TXN_STATE
    bumped = end(state, pid, epoch, False, version=5)
    assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (E.NONE, pid, epoch + 1)


# -- TxnOffsetCommit -----------------------------------------------------------------------------------


def committed(state, group="g", partitions=(("t", 0),), *, require_stable=False, version=7):
    response, _ = call(
        state,
        OFFSET_FETCH,
        version,
        broker=state.coordinator_of(group),
        group_id=group,
        topics=[{"name": t, "partition_indexes": [p]} for t, p in partitions],
        require_stable=require_stable,
    )
    return [(p.committed_offset, p.error_code) for t in response.topics for p in t.partitions]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_txn_offset_commit_is_pending_until_the_commit(version):
    state = txn_cluster()
    pid, epoch = begin(state)
    if version < 5:
        assert add_offsets(state, pid, epoch) == E.NONE
    assert txn_offset_commit(state, pid, epoch, {("t", 0): 5}, version=version) == {("t", 0): E.NONE}
    if version == 5:  # the offsets partition joined the transaction implicitly
        assert (OFFSETS_TOPIC, state.group_partition("g")) in state.transactions.txns[TID].partitions
    assert committed(state) == [(-1, E.NONE)]
    assert committed(state, require_stable=True) == [(-1, E.UNSTABLE_OFFSET_COMMIT)]
    assert end(state, pid, epoch, version=5 if version == 5 else 4).error_code == E.NONE
    assert committed(state) == [(5, E.NONE)]
    assert committed(state, require_stable=True) == [(5, E.NONE)]


@pytest.mark.parametrize(
    ("version", "error"), [(0, E.INVALID_TXN_STATE), (3, E.INVALID_TXN_STATE), (4, E.TRANSACTION_ABORTABLE)]
)
def test_txn_offset_commit_without_add_offsets(version, error):
    state = txn_cluster()
    pid, epoch = begin(state)
    assert txn_offset_commit(state, pid, epoch, {("t", 0): 5}, version=version) == {("t", 0): error}
    assert committed(state, require_stable=True) == [(-1, E.NONE)]


def test_txn_offset_commit_producer_errors():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_offsets(state, pid, epoch) == E.NONE
    assert txn_offset_commit(state, pid, epoch + 1, {("t", 0): 5}) == {("t", 0): E.INVALID_PRODUCER_EPOCH}
    assert txn_offset_commit(state, pid + 1, epoch, {("t", 0): 5}) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
    # unknown partitions fail alone; the rest is committed
    assert txn_offset_commit(state, pid, epoch, {("t", 0): 5, ("t", 7): 1, ("x", 0): 1}) == {
        ("t", 0): E.NONE,
        ("t", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("x", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_txn_offset_commit_aborted_offsets_never_show():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert txn_offset_commit(state, pid, epoch, {("t", 0): 5}, version=5) == {("t", 0): E.NONE}
    assert end(state, pid, epoch, False, version=5).error_code == E.NONE
    assert committed(state, require_stable=True) == [(-1, E.NONE)]


def test_txn_offset_commit_with_a_generation_to_a_missing_group_is_illegal_generation():
    state = txn_cluster()
    pid, epoch = begin(state)
    assert add_offsets(state, pid, epoch) == E.NONE
    assert txn_offset_commit(state, pid, epoch, {("t", 0): 5}, generation=3, member="m") == {
        ("t", 0): E.ILLEGAL_GENERATION
    }


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


# -- ApiVersions features ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_features(version):
    state = cluster(1)
    response, _ = call(state, API_VERSIONS, version, client_software_name="t", client_software_version="1")
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    # as a Kafka 4.4.0 broker answers (probed side by side), without share/streams.version
    if version == 3:  # KAFKA-17492: a minimum of 0 is left out before v4
        assert supported == {"metadata.version": (7, 33)}
    else:
        assert supported == {
            "eligible.leader.replicas.version": (0, 1),
            "group.version": (0, 1),
            "kraft.version": (0, 1),
            "metadata.version": (7, 33),
            "transaction.version": (0, 2),
        }
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features}
    assert finalized == {
        "eligible.leader.replicas.version": (1, 1),
        "group.version": (1, 1),
        "kraft.version": (1, 1),
        "metadata.version": (33, 33),
        "transaction.version": (2, 2),
    }
    assert all(level > 0 for level, _ in finalized.values())
    assert response.finalized_features_epoch >= 0


def test_api_versions_leaves_a_level_0_feature_out_of_the_finalized_ones():
    state = cluster(1)
    state.features.set("transaction.version", 0)
    response, _ = call(state, API_VERSIONS, 4, client_software_name="t", client_software_version="1")
    assert "transaction.version" not in {f.name for f in response.finalized_features}


# -- WriteTxnMarkers -----------------------------------------------------------------------------------


def write_markers(state, pid, epoch, commit, partitions, *, coordinator_epoch=0, broker=0):
    response, _ = call(
        state,
        WRITE_MARKERS,
        1,
        broker=broker,
        markers=[
            {
                "producer_id": pid,
                "producer_epoch": epoch,
                "transaction_result": commit,
                "topics": [{"name": "t", "partition_indexes": partitions}],
                "coordinator_epoch": coordinator_epoch,
            }
        ],
    )
    return {p.partition_index: p.error_code for m in response.markers for t in m.topics for p in t.partitions}


def test_write_txn_markers_v1_writes_and_checks_the_epochs():
    state = txn_cluster()
    begin(state)
    pid, epoch = begin(state)  # epoch 1
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): E.NONE}
    assert produce_txn(state, pid, epoch, b"x").error_code == E.NONE
    log = state.partition("t", 0).log
    assert write_markers(state, pid, epoch, False, [0, 9], coordinator_epoch=3) == {
        0: E.NONE,
        9: E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert (log.last_stable_offset, [a.first_offset for a in log.aborted_txns]) == (2, [0])
    assert write_markers(state, pid, epoch - 1, False, [0], coordinator_epoch=3) == {0: E.INVALID_PRODUCER_EPOCH}
    assert write_markers(state, pid, epoch, True, [0], coordinator_epoch=2) == {0: E.TRANSACTION_COORDINATOR_FENCED}

"""The transaction coordinator's APIs through their handlers: FindCoordinator (10) for
transactional ids, InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn
(26), TxnOffsetCommit (28), WriteTxnMarkers (27) and ApiVersions (18) features. Expected
answers follow Kafka (KafkaApis, TransactionCoordinator, OffsetMetadataManager), checked
side by side against Kafka 4.4.0 where tests/conformance probes them."""

from __future__ import annotations

import pytest

from fakebroker.core.groups.placement import OFFSETS_TOPIC, TRANSACTION_TOPIC, partition_for
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import call, cluster
from .txn_calls import (
    ADD_PARTITIONS,
    API_VERSIONS,
    FIND_COORDINATOR,
    OFFSET_FETCH,
    TID,
    WRITE_MARKERS,
    add_offsets,
    add_partitions,
    begin,
    coordinator,
    end,
    init,
    produce_txn,
    txn_cluster,
    txn_offset_commit,
)

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
    assert txn.partitions == {(OFFSETS_TOPIC, state.groups.partition_of("g"))}
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
        broker=state.groups.coordinator_of(group),
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
        assert (OFFSETS_TOPIC, state.groups.partition_of("g")) in state.transactions.txns[TID].partitions
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


# -- ApiVersions features ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_features(version):
    state = cluster(1)
    response, _ = call(state, API_VERSIONS, version, client_software_name="t", client_software_version="1")
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    # as a Kafka 4.4.0 broker answers (probed side by side)
    if version == 3:  # KAFKA-17492: a minimum of 0 is left out before v4
        assert supported == {"metadata.version": (7, 33)}
    else:
        assert supported == {
            "eligible.leader.replicas.version": (0, 1),
            "group.version": (0, 1),
            "kraft.version": (0, 1),
            "metadata.version": (7, 33),
            "share.version": (0, 2),
            "streams.version": (0, 1),
            "transaction.version": (0, 2),
        }
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features}
    assert finalized == {
        "eligible.leader.replicas.version": (1, 1),
        "group.version": (1, 1),
        "kraft.version": (1, 1),
        "metadata.version": (33, 33),
        "share.version": (2, 2),
        "streams.version": (1, 1),
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

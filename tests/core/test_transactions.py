"""The transaction coordinator's state machine with explicit time: InitProducerId fencing,
AddPartitionsToTxn, EndTxn under transaction versions 1 and 2, markers owed to offline
partitions or delayed, the transaction timeout, transactional id expiry, forgetting ids.

Expected answers follow Kafka's ``TransactionCoordinator`` / ``TransactionMetadata`` (the
research notes cited per test, §n = section n)."""

from __future__ import annotations

import pytest

from fakebroker.core.transactions.model import IllegalTransition, TxnMetadata, TxnState
from fakebroker.protocol.error_codes import ErrorCode as E

from .txn_cluster import T0, T1, TID, Cluster, S

# -- the transition table ----------------------------------------------------------------------------


def test_transitions_outside_kafkas_table_are_refused():
    txn = TxnMetadata(TID, 1, 0, 1000)
    with pytest.raises(IllegalTransition):
        txn.transition(S.PREPARE_COMMIT, 0)  # only from Ongoing
    txn.transition(S.ONGOING, 5)
    txn.transition(S.PREPARE_COMMIT, 6)
    with pytest.raises(IllegalTransition):
        txn.transition(S.COMPLETE_ABORT, 7)  # only from PrepareAbort
    txn.transition(S.COMPLETE_COMMIT, 7)
    assert txn.last_update_ms == 7


# -- InitProducerId fences an open transaction (§1 step 8e) ------------------------------------------


def test_init_producer_id_on_an_ongoing_transaction_fences_and_aborts_it():
    c = Cluster()
    pid, epoch = c.ongoing(now=10)
    mark = len(c.state.events)
    assert c.init(now=20) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    txn = c.txn()
    # the abort markers carry the bumped epoch; the transaction is aborted (markers written at once here)
    assert txn.producer_epoch == epoch + 1
    assert txn.state == S.COMPLETE_ABORT
    assert c.markers() == [("ABORT", pid, epoch + 1)]
    assert "txn_fenced" in c.kinds(mark) and "txn_aborted" in c.kinds(mark)
    assert c.log().last_stable_offset == c.log().log_end_offset
    # the new instance retries and gets the next epoch
    assert c.init(now=30) == (E.NONE, pid, epoch + 2)
    # the old instance is fenced on the partition (stored epoch above its own)
    assert c.produce(pid, epoch, T0, now=40).error == E.INVALID_PRODUCER_EPOCH
    assert c.produce(pid, epoch, T1, now=40).error == E.INVALID_PRODUCER_EPOCH


def test_init_producer_id_while_completing_is_concurrent_transactions():
    c, pid, epoch, _ = offline_cluster()
    assert c.end(pid, epoch, True).error == E.NONE
    assert c.txn().state == S.PREPARE_COMMIT
    assert c.init() == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    assert c.txn().producer_epoch == epoch  # nothing bumped while completing
    # with an expected id and epoch, the producer checks come first (PRODUCER_FENCED)
    assert c.init(TID, pid + 1, epoch) == (E.PRODUCER_FENCED, -1, -1)


# -- AddPartitionsToTxn: checks in Kafka's order (§2) ------------------------------------------------


def test_add_partitions_to_an_unknown_transactional_id_is_invalid_producer_id_mapping():
    c = Cluster()
    assert c.add(1000, 0) == E.INVALID_PRODUCER_ID_MAPPING


def test_add_partitions_checks_the_producer_id_before_the_epoch():
    c = Cluster()
    _, pid, epoch = c.init()
    assert c.add(pid + 1, epoch + 5) == E.INVALID_PRODUCER_ID_MAPPING
    assert c.add(pid, epoch + 1) == E.PRODUCER_FENCED
    assert c.init()[0] == E.NONE  # epoch + 1 now current
    assert c.add(pid, epoch) == E.PRODUCER_FENCED  # strict equality: an older epoch is fenced too
    assert c.txn().state == S.EMPTY


def test_add_partitions_sets_the_start_time_once_and_is_a_no_op_when_already_added():
    c = Cluster()
    _, pid, epoch = c.init(now=0)
    assert c.add(pid, epoch, T0, now=100) == E.NONE
    txn = c.txn()
    assert (txn.state, txn.start_ms, txn.partitions) == (S.ONGOING, 100, {T0})
    mark = len(c.state.events)
    assert c.add(pid, epoch, T0, now=200) == E.NONE
    assert c.kinds(mark) == []  # nothing written
    assert txn.start_ms == 100
    assert c.add(pid, epoch, T0, T1, now=300) == E.NONE
    assert (txn.start_ms, txn.partitions) == (100, {T0, T1})
    assert c.kinds(mark) == ["txn_partitions_added"]


def test_add_partitions_while_completing_is_concurrent_transactions_after_the_producer_checks():
    c = Cluster(2)
    pid, epoch = c.ongoing(tp=T0)
    # the coordinator must stay up: move the data partition to the other broker and stop it
    coordinator = c.state.transactions.placement.coordinator_of(TID)
    other = 1 - coordinator
    c.state.move_leader(c.state.partition(*T0), other, 0)
    c.state.partition(*T0).replicas[:] = [other]
    c.state.broker_stopped(other, 0)
    assert c.end(pid, epoch, True).error == E.NONE
    assert c.txn().state == S.PREPARE_COMMIT
    assert c.add(pid + 1, epoch, T1) == E.INVALID_PRODUCER_ID_MAPPING
    assert c.add(pid, epoch + 1, T1) == E.PRODUCER_FENCED
    assert c.add(pid, epoch, T1) == E.CONCURRENT_TRANSACTIONS


# -- EndTxn, transaction version 1 (§4 TV1) -----------------------------------------------------------


def offline_cluster():
    """Two brokers; ``t-0`` led by the broker that does not coordinate TID, which is stopped, so
    markers for ``t-0`` wait (the transaction stays in Prepare*)."""
    c = Cluster(2)
    _, pid, epoch = c.init()
    coordinator = c.state.transactions.placement.coordinator_of(TID)
    other = 1 - coordinator
    partition = c.state.partition(*T0)
    c.state.move_leader(partition, other, 0)
    partition.replicas[:] = [other]
    assert c.add(pid, epoch, T0) == E.NONE
    assert c.produce(pid, epoch, T0).error == E.NONE
    c.state.broker_stopped(other, 0)
    assert partition.leader == -1
    return c, pid, epoch, other


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_v1_from_ongoing_completes_without_an_epoch_bump(commit):
    c = Cluster()
    pid, epoch = c.ongoing()
    assert c.end(pid, epoch, commit) == (E.NONE, -1, -1)
    txn = c.txn()
    assert txn.state == (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert txn.producer_epoch == epoch
    assert c.markers() == [("COMMIT" if commit else "ABORT", pid, epoch)]
    assert txn.partitions == set()
    # a retry of the same end is NONE, the other one INVALID_TXN_STATE
    assert c.end(pid, epoch, commit).error == E.NONE
    assert c.end(pid, epoch, not commit).error == E.INVALID_TXN_STATE
    # the next transaction goes on with the same epoch
    assert c.add(pid, epoch, T1) == E.NONE


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_v1_of_an_empty_transaction_is_invalid_txn_state(commit):
    c = Cluster()
    _, pid, epoch = c.init()
    assert c.end(pid, epoch, commit).error == E.INVALID_TXN_STATE
    assert c.txn().state == S.EMPTY


def test_end_txn_v1_producer_checks():
    c = Cluster()
    pid, epoch = c.ongoing()
    assert c.end(pid, epoch, True, tid="unknown").error == E.INVALID_PRODUCER_ID_MAPPING
    assert c.end(pid + 7, epoch, True).error == E.INVALID_PRODUCER_ID_MAPPING
    assert c.end(pid, epoch + 1, True).error == E.PRODUCER_FENCED
    assert c.end(pid, epoch - 1, True).error == E.PRODUCER_FENCED
    assert c.txn().state == S.ONGOING


@pytest.mark.parametrize(
    ("commit", "retry_commit", "error"),
    [
        (True, True, E.CONCURRENT_TRANSACTIONS),
        (True, False, E.INVALID_TXN_STATE),
        (False, False, E.CONCURRENT_TRANSACTIONS),
        (False, True, E.INVALID_TXN_STATE),
    ],
)
def test_end_txn_v1_while_markers_are_pending(commit, retry_commit, error):
    c, pid, epoch, _ = offline_cluster()
    assert c.end(pid, epoch, commit).error == E.NONE
    assert c.txn().state == (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert c.end(pid, epoch, retry_commit).error == error


# -- markers owed to an offline partition --------------------------------------------------------------


def test_markers_wait_for_a_leader_and_complete_when_the_broker_returns():
    c, pid, epoch, other = offline_cluster()
    assert c.end(pid, epoch, True).error == E.NONE
    txn = c.txn()
    assert txn.state == S.PREPARE_COMMIT
    assert txn.markers_pending == {T0}
    assert c.add(pid, epoch, T1) == E.CONCURRENT_TRANSACTIONS
    assert c.init() == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    c.state.broker_started(other, "127.0.0.1", 9092 + other, 50)
    assert c.state.partition(*T0).leader == other
    assert txn.state == S.COMPLETE_COMMIT
    assert txn.markers_pending == set()
    assert c.markers() == [("COMMIT", pid, epoch)]
    assert c.log().last_stable_offset == c.log().log_end_offset


def test_markers_complete_when_a_leader_is_moved_to_a_live_broker():
    c, pid, epoch, other = offline_cluster()
    assert c.end(pid, epoch, False).error == E.NONE
    assert c.txn().state == S.PREPARE_ABORT
    c.state.move_leader(c.state.partition(*T0), 1 - other, 60)
    assert c.txn().state == S.COMPLETE_ABORT
    assert c.markers() == [("ABORT", pid, epoch)]
    assert [a.producer_id for a in c.log().aborted_txns] == [pid]


# -- EndTxn, transaction version 2 (§4 TV2) -----------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_v2_bumps_the_epoch_at_every_end(commit):
    c = Cluster()
    pid, epoch = c.ongoing(version=2)
    assert c.end(pid, epoch, commit, version=2) == (E.NONE, pid, epoch + 1)
    txn = c.txn()
    assert (txn.state, txn.producer_epoch, txn.last_producer_epoch) == (
        S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT,
        epoch + 1,
        epoch,
    )
    assert c.markers() == [("COMMIT" if commit else "ABORT", pid, epoch + 1)]
    # a retry with the epoch it was sent with: NONE with the current id and epoch
    assert c.end(pid, epoch, commit, version=2) == (E.NONE, pid, epoch + 1)
    # the next transaction uses the bumped epoch; the old one is fenced
    assert c.add(pid, epoch, T1, version=2) == E.PRODUCER_FENCED
    assert c.add(pid, epoch + 1, T1, version=2) == E.NONE
    assert c.end(pid, epoch + 1, True, version=2) == (E.NONE, pid, epoch + 2)


def complete(c: Cluster, state: TxnState) -> tuple[int, int]:
    """TID in ``state`` (Empty, CompleteCommit, CompleteAbort) at an epoch >= 1: (pid, epoch)."""
    if state == S.EMPTY:
        c.init()
        _, pid, epoch = c.init()
        assert epoch == 1
        return pid, epoch
    pid, epoch = c.ongoing(version=2)
    result = c.end(pid, epoch, state == S.COMPLETE_COMMIT, version=2)
    assert c.txn().state == state
    return pid, result.producer_epoch


PF, ITS, EB, NONE = "PF", "ITS", "EB", "NONE"


@pytest.mark.parametrize(
    ("state", "commit", "retry", "outcome"),
    [
        (S.EMPTY, False, True, PF),
        (S.EMPTY, False, False, EB),
        (S.EMPTY, True, True, PF),
        (S.EMPTY, True, False, ITS),
        (S.COMPLETE_ABORT, False, True, NONE),
        (S.COMPLETE_ABORT, False, False, EB),
        (S.COMPLETE_ABORT, True, True, ITS),
        (S.COMPLETE_ABORT, True, False, ITS),
        (S.COMPLETE_COMMIT, False, True, ITS),
        (S.COMPLETE_COMMIT, False, False, EB),
        (S.COMPLETE_COMMIT, True, True, NONE),
        (S.COMPLETE_COMMIT, True, False, ITS),
    ],
)
def test_end_txn_v2_table_for_empty_and_completed(state, commit, retry, outcome):
    # the coordinator's own comment table (Retry = epoch - 1, Current = epoch)
    c = Cluster()
    pid, epoch = complete(c, state)
    sent = epoch - 1 if retry else epoch
    result = c.end(pid, sent, commit, version=2, now=500)
    txn = c.txn()
    if outcome == PF:
        assert result == (E.PRODUCER_FENCED, -1, -1)
    elif outcome == ITS:
        assert result == (E.INVALID_TXN_STATE, -1, -1)
    elif outcome == NONE:
        assert result == (E.NONE, pid, epoch)
        assert txn.producer_epoch == epoch
    else:  # an empty abort bumps the epoch
        assert result == (E.NONE, pid, epoch + 1)
        assert (txn.state, txn.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    if outcome != EB:
        assert (txn.state, txn.producer_epoch) == (state, epoch)


@pytest.mark.parametrize(
    ("commit", "retry_commit", "error"), [(True, True, E.CONCURRENT_TRANSACTIONS), (True, False, E.INVALID_TXN_STATE)]
)
def test_end_txn_v2_retry_while_markers_are_pending(commit, retry_commit, error):
    c, pid, epoch, _ = offline_cluster()
    c.txn().version = 2
    assert c.end(pid, epoch, commit, version=2) == (E.NONE, pid, epoch + 1)
    assert c.txn().state == S.PREPARE_COMMIT
    assert c.end(pid, epoch, retry_commit, version=2).error == error
    # in Prepare* only a retry (epoch - 1) is valid: the bumped epoch itself is fenced
    assert c.end(pid, epoch + 1, commit, version=2).error == E.PRODUCER_FENCED


def test_end_txn_v2_producer_checks():
    c = Cluster()
    pid, epoch = c.ongoing(version=2)
    assert c.end(pid, epoch, True, tid="unknown", version=2).error == E.INVALID_PRODUCER_ID_MAPPING
    assert c.end(pid + 1, epoch, True, version=2).error == E.INVALID_PRODUCER_ID_MAPPING
    assert c.end(pid, epoch + 1, True, version=2).error == E.PRODUCER_FENCED
    assert c.end(pid, epoch - 1, True, version=2).error == E.PRODUCER_FENCED  # not a retry while Ongoing


def test_end_txn_v2_at_the_last_epoch_rotates_the_producer_id():
    # shouldGenerateNewProducerIdIfEpochsExhaustedV2: Ongoing at 32766 -> markers at 32767, the
    # client goes on with a new producer id at epoch 0
    c = Cluster()
    pid, epoch = c.ongoing(version=2)
    txn = c.txn()
    txn.producer_epoch = 32766
    c.state.partition(*T0).producers.entries[pid].epoch = 32766
    error, new_pid, new_epoch = c.end(pid, 32766, True, version=2)
    assert (error, new_epoch) == (E.NONE, 0)
    assert new_pid not in (pid, -1)
    assert (txn.producer_id, txn.producer_epoch, txn.previous_producer_id) == (new_pid, 0, pid)
    assert c.markers() == [("COMMIT", pid, 32767)]
    # a retry with the old id at the exhausted epoch is recognised (retryOnOverflow)
    assert c.end(pid, 32766, True, version=2) == (E.NONE, new_pid, 0)
    assert c.add(new_pid, 0, T1, version=2) == E.NONE


def test_end_txn_v2_one_epoch_before_exhaustion_still_bumps_without_rotation():
    # generateTxnTransitMetadataForTxnCompletion allocates a next producer id only when the CURRENT
    # epoch is exhausted (>= 32766); from 32765 the epoch is bumped to 32766 and kept
    c = Cluster()
    pid, _ = c.ongoing(version=2)
    c.txn().producer_epoch = 32765
    assert c.end(pid, 32765, True, version=2) == (E.NONE, pid, 32766)
    assert (c.txn().producer_id, c.txn().producer_epoch) == (pid, 32766)


def test_init_producer_id_rotates_an_exhausted_epoch():
    c = Cluster()
    _, pid, _ = c.init()
    c.txn().producer_epoch = 32766
    error, new_pid, epoch = c.init()
    assert (error, epoch) == (E.NONE, 0)
    assert new_pid != pid
    assert c.txn().previous_producer_id == pid


# -- the transaction timeout (§9) ---------------------------------------------------------------------


def test_timed_out_transaction_is_fenced_and_aborted():
    c = Cluster()
    pid, epoch = c.ongoing(now=1_000)
    txn = c.txn()
    assert txn.start_ms == 1_000
    assert c.state.abort_timed_out(1_000 + 60_000) == 0  # start + timeout is not yet past
    assert txn.state == S.ONGOING
    mark = len(c.state.events)
    assert c.state.abort_timed_out(1_000 + 60_001) == 1
    assert c.kinds(mark)[:2] == ["txn_timed_out", "txn_fenced"]
    assert (txn.state, txn.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert c.markers() == [("ABORT", pid, epoch + 1)]
    assert c.log().last_stable_offset == c.log().log_end_offset
    # the old producer: fenced on the partition, and by the coordinator
    assert c.produce(pid, epoch, T0, now=70_000).error == E.INVALID_PRODUCER_EPOCH
    assert c.produce(pid, epoch, T1, now=70_000).error == E.INVALID_PRODUCER_EPOCH
    assert c.add(pid, epoch, T1) == E.PRODUCER_FENCED
    assert c.end(pid, epoch, True).error == E.PRODUCER_FENCED  # TV1
    # TV2: seen as a retry of the bump: an abort recovers with the bumped epoch, a commit cannot
    assert c.end(pid, epoch, True, version=2).error == E.INVALID_TXN_STATE
    assert c.end(pid, epoch, False, version=2) == (E.NONE, pid, epoch + 1)


def test_timeout_counts_from_the_first_add_not_from_init_producer_id():
    c = Cluster()
    _, pid, epoch = c.init(now=0)
    assert c.state.abort_timed_out(10**9) == 0  # Empty: nothing to abort
    assert c.add(pid, epoch, now=500_000) == E.NONE
    assert c.state.abort_timed_out(500_000 + 60_000) == 0
    assert c.state.abort_timed_out(500_000 + 60_001) == 1


def test_after_a_timeout_under_tv2_the_old_producer_can_recover_its_epoch():
    # finalized transaction.version 2: the fence goes through prepareAbortOrCommit, which records
    # lastProducerEpoch = E; InitProducerId(pid, E) (KIP-360) is then a retry of that bump: (pid, E+1)
    c = Cluster()
    pid, epoch = c.ongoing(now=0)
    c.state.abort_timed_out(60_001)
    assert c.txn().last_producer_epoch == epoch
    assert c.init(TID, pid, epoch) == (E.NONE, pid, epoch + 1)


def test_timeout_at_the_last_epoch_aborts_with_short_max():
    # shouldHandleTimeoutAtEpochOverflowBoundaryCorrectlyTV2
    c = Cluster()
    pid, _ = c.ongoing(now=0)
    c.txn().producer_epoch = 32766
    c.state.abort_timed_out(60_001)
    assert c.txn().producer_epoch == 32767
    assert c.markers()[-1] == ("ABORT", pid, 32767)


def test_timeouts_are_only_aborted_by_a_live_coordinator():
    c = Cluster(2)
    coordinator = c.state.transactions.placement.coordinator_of(TID)
    other = 1 - coordinator
    partition = c.state.partition(*T0)
    c.state.move_leader(partition, other, 0)
    pid, epoch = c.ongoing(now=0)
    txn_partition = c.state.transaction_topic().partitions[c.state.transactions.placement.partition_of(TID)]
    txn_partition.replicas[:] = [coordinator]
    c.state.broker_stopped(coordinator, 0)
    assert c.state.abort_timed_out(60_001) == 0
    assert c.txn().state == S.ONGOING
    c.state.broker_started(coordinator, "127.0.0.1", 9092 + coordinator, 70_000)
    assert c.state.abort_timed_out(70_000) == 1
    assert c.markers() == [("ABORT", pid, epoch + 1)]


# -- transactional id expiry (§9) ---------------------------------------------------------------------


def test_idle_transactional_ids_expire_and_come_back_with_a_new_producer_id():
    c = Cluster(**{"transactional.id.expiration.ms": 1_000})
    _, pid, _ = c.init(now=0)
    _, busy_pid, busy_epoch = c.init("busy", now=0)
    assert c.add(busy_pid, busy_epoch, tid="busy", now=0) == E.NONE
    assert c.state.expire_txn_ids(999) == 0
    assert c.state.expire_txn_ids(1_000) == 1  # Ongoing never expires
    assert TID not in c.coordinator.txns and "busy" in c.coordinator.txns
    expired = [e for e in c.state.events if e.kind == "txn_expired"]
    assert [(e.transactional_id, e.idle_ms) for e in expired] == [(TID, 1_000)]  # its tombstone
    error, new_pid, epoch = c.init(now=2_000)
    assert (error, epoch) == (E.NONE, 0)
    assert new_pid not in (pid, busy_pid)


def test_expiry_counts_from_the_last_update():
    c = Cluster(**{"transactional.id.expiration.ms": 1_000})
    pid, epoch = c.ongoing(now=0)
    assert c.end(pid, epoch, True, now=5_000).error == E.NONE
    assert c.state.expire_txn_ids(5_999) == 0
    assert c.state.expire_txn_ids(6_000) == 1


def test_forgetting_an_id_aborts_its_open_transaction_first():
    c = Cluster()
    pid, epoch = c.ongoing()
    log = c.log()
    assert log.last_stable_offset == 0
    c.state.forget_transactions(["tx"], 10)
    assert "tx" not in c.state.transactions.txns
    assert log.last_stable_offset == log.high_watermark == 2  # the ABORT marker at 1
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_txns] == [(pid, 0, 1)]


def test_with_a_marker_delay_the_transaction_prepares_until_its_markers_are_written():
    # Kafka answers EndTxn once PrepareCommit is written and sends the markers after.
    c = Cluster()
    c.state.transaction_marker_delay_ms = 20
    pid, epoch = c.ongoing(now=0)
    assert c.end(pid, epoch, True, now=100).error == E.NONE
    assert c.txn().state == TxnState.PREPARE_COMMIT
    assert c.log().last_stable_offset == 0  # no marker yet: still unstable
    assert c.add(pid, epoch, now=110) == E.CONCURRENT_TRANSACTIONS
    assert c.init(now=110)[0] == E.CONCURRENT_TRANSACTIONS
    assert c.end(pid, epoch, True, now=110).error == E.CONCURRENT_TRANSACTIONS  # a retry of the commit
    assert c.end(pid, epoch, False, now=110).error == E.INVALID_TXN_STATE
    c.state.tick(119)
    assert c.txn().state == TxnState.PREPARE_COMMIT
    c.state.tick(120)
    assert c.txn().state == TxnState.COMPLETE_COMMIT
    assert c.markers() == [("COMMIT", pid, epoch)]
    assert c.log().last_stable_offset == c.log().high_watermark == 2
    assert c.add(pid, epoch, now=121) == E.NONE  # the next transaction


def test_forgetting_an_id_with_markers_on_their_way_writes_them_at_once():
    c = Cluster()
    c.state.transaction_marker_delay_ms = 1_000
    pid, epoch = c.ongoing(now=0)
    assert c.end(pid, epoch, False, now=0).error == E.NONE
    c.state.forget_transactions(["tx"], 5)
    assert c.markers() == [("ABORT", pid, epoch)]
    assert c.log().last_stable_offset == c.log().high_watermark
    assert c.state.timers.keys() == [k for k in c.state.timers.keys() if k[0] != "txn-markers"]

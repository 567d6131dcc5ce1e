"""The transaction coordinator's state machine with explicit time: InitProducerId fencing,
AddPartitionsToTxn, EndTxn under transaction versions 1 and 2, markers owed to offline
partitions, the transaction timeout, transactional id expiry, the partition log's last stable
offset and aborted-transaction index, and offsets committed in transactions.

Expected answers follow Kafka 4.1's ``TransactionCoordinator`` / ``TransactionMetadata`` /
``OffsetMetadataManager`` (see the research notes cited per test, §n = section n)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.groups.placement import OFFSETS_TOPIC
from fakebroker.core.transactions.model import IllegalTransition, TxnMetadata, TxnState
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E

from ..apis.support import batch

S = TxnState
TID = "tx"
T0, T1 = ("t", 0), ("t", 1)


class Ended(NamedTuple):
    error: E
    producer_id: int
    producer_epoch: int


class Cluster:
    """A cluster with ``brokers`` brokers and topic ``t`` (2 partitions, one replica each)."""

    def __init__(self, brokers: int = 1, **config):
        self.state = ClusterState("c", BrokerConfig(config))
        for node in range(brokers):
            self.state.broker_started(node, "127.0.0.1", 9092 + node, 0)
        self.state.create_topic("t", 2, 1)
        self.seq: dict[tuple[int, int, str, int], int] = {}

    @property
    def coordinator(self):
        return self.state.transactions

    def txn(self, tid: str = TID) -> TxnMetadata:
        return self.coordinator.txns[tid]

    def init(self, tid=TID, pid=-1, epoch=-1, *, now=0, timeout_ms=60_000):
        return self.state.init_producer_id(tid, pid, epoch, timeout_ms=timeout_ms, now_ms=now)

    def add(self, pid, epoch, *partitions, tid=TID, now=0, version=1):
        return self.coordinator.add_partitions(tid, pid, epoch, list(partitions or [T0]), now, version=version)

    def end(self, pid, epoch, commit, *, tid=TID, now=0, version=1) -> Ended:
        r = self.coordinator.end_txn(tid, pid, epoch, commit, now, version=version)
        return Ended(r.error, r.producer_id, r.producer_epoch)

    def produce(self, pid, epoch, tp=T0, *values, tid=TID, now=0, version=9, transactional=True):
        """A transactional batch (sequences continue per producer, epoch and partition)."""
        values = values or (b"v",)
        key = (pid, epoch, *tp)
        seq = self.seq.get(key, 0)
        data = batch(*values, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional)
        result = self.state.append(
            self.state.partition(*tp), data, produce_version=version, transactional_id=tid, now_ms=now
        )
        if result.appended:
            self.seq[key] = seq + len(values)
        return result

    def log(self, tp=T0):
        return self.state.partition(*tp).log

    def markers(self, tp=T0) -> list[tuple[str, int, int]]:
        """(COMMIT/ABORT, producer id, producer epoch) of every control batch of a partition."""
        out = []
        for b in rec.read_batches(self.log(tp).read(0, 1 << 30)):
            if b.is_control:
                kind = "COMMIT" if b.control_records()[0].type == rec.ControlRecordType.COMMIT else "ABORT"
                out.append((kind, b.producer_id, b.producer_epoch))
        return out

    def kinds(self, since: int) -> list[str]:
        return [e.kind for e in list(self.state.events)[since:]]

    def ongoing(self, tid=TID, *, now=0, tp=T0, version=1):
        """A transactional id with an open transaction that wrote to ``tp``: (pid, epoch)."""
        _, pid, epoch = self.init(tid, now=now)
        assert self.add(pid, epoch, tp, tid=tid, now=now, version=version) == E.NONE
        assert self.produce(pid, epoch, tp, tid=tid, now=now).error == E.NONE
        return pid, epoch


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
    coordinator = c.state.txn_coordinator_of(TID)
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
    coordinator = c.state.txn_coordinator_of(TID)
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
    coordinator = c.state.txn_coordinator_of(TID)
    other = 1 - coordinator
    partition = c.state.partition(*T0)
    c.state.move_leader(partition, other, 0)
    pid, epoch = c.ongoing(now=0)
    txn_partition = c.state.transaction_topic().partitions[c.state.txn_partition(TID)]
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
    error, new_pid, epoch = c.init(now=2_000)
    assert (error, epoch) == (E.NONE, 0)
    assert new_pid not in (pid, busy_pid)


def test_expiry_counts_from_the_last_update():
    c = Cluster(**{"transactional.id.expiration.ms": 1_000})
    pid, epoch = c.ongoing(now=0)
    assert c.end(pid, epoch, True, now=5_000).error == E.NONE
    assert c.state.expire_txn_ids(5_999) == 0
    assert c.state.expire_txn_ids(6_000) == 1


# -- the last stable offset and the aborted-transaction index (§7) -----------------------------------


def test_an_open_transaction_holds_the_last_stable_offset_at_its_first_offset():
    c = Cluster()
    _, idem_pid, _ = c.state.init_producer_id(None, now_ms=0)
    log = c.log()
    data = batch(b"a", producer_id=idem_pid, producer_epoch=0, base_sequence=0)
    c.state.append(c.state.partition(*T0), data, produce_version=9, transactional_id=None, now_ms=0)
    assert log.last_stable_offset == log.log_end_offset == 1
    pid, epoch = c.ongoing()  # offset 1
    _, pid2, epoch2 = c.init("tx2")
    assert c.add(pid2, epoch2, tid="tx2") == E.NONE
    assert c.produce(pid2, epoch2, T0, b"x", b"y", tid="tx2").error == E.NONE  # offsets 2-3
    assert c.produce(pid, epoch, T0, b"z").error == E.NONE  # offset 4
    assert log.open_txns == {pid: 1, pid2: 2}
    assert (log.last_stable_offset, log.high_watermark) == (1, 5)
    # the second transaction commits first: the LSO still waits for the first
    assert c.end(pid2, epoch2, True, tid="tx2").error == E.NONE  # marker at 5
    assert log.last_stable_offset == 1
    assert c.end(pid, epoch, False).error == E.NONE  # marker at 6
    assert log.last_stable_offset == log.log_end_offset == 7
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_txns] == [(pid, 1, 6)]


def test_aborted_between_lists_the_aborted_transactions_a_read_overlaps():
    c = Cluster()
    log = c.log()
    for n, tid in enumerate(["a", "b", "c"]):
        pid, epoch = c.ongoing(tid)  # data at 2n, marker at 2n + 1
        assert c.end(pid, epoch, n == 1, tid=tid).error == E.NONE
    pid_a, pid_c = c.txn("a").producer_id, c.txn("c").producer_id
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_txns] == [
        (pid_a, 0, 1),
        (pid_c, 4, 5),
    ]
    assert [a.first_offset for a in log.aborted_between(0, 6)] == [0, 4]
    assert [a.first_offset for a in log.aborted_between(2, 4)] == []  # c starts at 4: not below the end
    assert [a.first_offset for a in log.aborted_between(1, 3)] == [0]  # a's marker at 1 is in the read
    assert [a.first_offset for a in log.aborted_between(2, 5)] == [4]


def test_committed_transactions_leave_no_aborted_entry_and_markers_without_data_none_either():
    c = Cluster()
    pid, epoch = c.ongoing()
    assert c.end(pid, epoch, True).error == E.NONE
    assert c.log().aborted_txns == []
    # a transaction that added t-1 but wrote nothing there: its marker aborts nothing in t-1
    _, pid2, epoch2 = c.init("tx2")
    assert c.add(pid2, epoch2, T1, tid="tx2") == E.NONE
    assert c.end(pid2, epoch2, False, tid="tx2").error == E.NONE
    assert c.log(T1).aborted_txns == []
    assert c.markers(T1) == [("ABORT", pid2, epoch2)]


def test_delete_records_and_retention_forget_aborted_transactions_below_the_start():
    c = Cluster()
    pids = []
    for tid in ["a", "b"]:
        pid, epoch = c.ongoing(tid, now=0)  # a: 0 + marker 1; b: 2 + marker 3
        assert c.end(pid, epoch, False, tid=tid, now=0).error == E.NONE
        pids.append(pid)
    log = c.log()
    c.state.delete_records(c.state.partition(*T0), 1)
    assert [a.producer_id for a in log.aborted_txns] == pids  # a's marker (1) is still in the log
    c.state.delete_records(c.state.partition(*T0), 2)
    assert [a.producer_id for a in log.aborted_txns] == pids[1:]
    c.state.topics["t"].config.overrides["retention.ms"] = "10"
    c.state.apply_retention(10**9)
    assert log.aborted_txns == []


def test_the_last_stable_offset_never_falls_below_the_log_start_offset():
    # UnifiedLog.updateFirstUnstableOffset: max(first unstable offset, log start offset)
    c = Cluster()
    pid, epoch = c.ongoing()  # offset 0, open
    assert c.produce(pid, epoch, T0, b"more").error == E.NONE  # offset 1
    log = c.log()
    assert log.last_stable_offset == 0
    c.state.delete_records(c.state.partition(*T0), 1)
    assert (log.log_start_offset, log.last_stable_offset) == (1, 1)
    assert c.end(pid, epoch, True).error == E.NONE
    assert log.last_stable_offset == log.high_watermark == 3


# -- offsets committed in a transaction (§5) -----------------------------------------------------------


def offsets_cluster():
    c = Cluster()
    c.state.offsets_topic()
    _, pid, epoch = c.init()
    group_tp = (OFFSETS_TOPIC, c.state.group_partition("g"))
    assert c.add(pid, epoch, group_tp) == E.NONE
    return c, pid, epoch


def txn_commit(c: Cluster, pid: int, offset: int, *, group="g", tp=T0, now=0):
    assert (
        c.state.offsets.validate_txn_commit(now, group_id=group, member_id="", group_instance_id=None, generation_id=-1)
        == E.NONE
    )
    return c.state.offsets.commit_in_txn(now, group, pid, *tp, offset, -1, "m")


def fetched(c: Cluster, group="g", tp=T0) -> int:
    [(_, _, committed)] = c.state.offsets.fetch(group, [tp])
    return -1 if committed is None else committed.offset


def test_txn_offsets_are_visible_only_when_the_commit_marker_arrives():
    c, pid, epoch = offsets_cluster()
    assert txn_commit(c, pid, 42) == E.NONE
    assert fetched(c) == -1
    assert c.state.offsets.has_pending("g", *T0)
    assert not c.state.offsets.has_pending("g", *T1)
    assert c.end(pid, epoch, True).error == E.NONE
    assert fetched(c) == 42
    assert not c.state.offsets.has_pending("g", *T0)


def test_txn_offsets_are_dropped_at_abort():
    c, pid, epoch = offsets_cluster()
    c.state.offsets.commit(0, "g", *T0, 7, -1, "")
    assert txn_commit(c, pid, 42) == E.NONE
    assert c.end(pid, epoch, False).error == E.NONE
    assert fetched(c) == 7
    assert not c.state.offsets.has_pending("g", *T0)


def test_a_later_plain_commit_wins_over_an_older_pending_txn_offset():
    c, pid, epoch = offsets_cluster()
    assert txn_commit(c, pid, 42) == E.NONE
    c.state.offsets.commit(1, "g", *T0, 50, -1, "")
    assert c.end(pid, epoch, True, now=2).error == E.NONE
    assert fetched(c) == 50


def test_a_txn_offset_newer_than_a_plain_commit_wins():
    c, pid, epoch = offsets_cluster()
    c.state.offsets.commit(0, "g", *T0, 50, -1, "")
    assert txn_commit(c, pid, 42, now=1) == E.NONE
    assert c.end(pid, epoch, True, now=2).error == E.NONE
    assert fetched(c) == 42


def test_a_timed_out_transaction_drops_its_pending_offsets():
    c, pid, epoch = offsets_cluster()
    assert txn_commit(c, pid, 42) == E.NONE
    assert c.state.abort_timed_out(60_001) == 1
    assert fetched(c) == -1
    assert not c.state.offsets.has_pending("g", *T0)


# -- validate_txn_commit (§5 step 5) ------------------------------------------------------------------


def validate(state, group="g", member="", generation=-1, instance=None):
    return state.offsets.validate_txn_commit(
        0, group_id=group, member_id=member, group_instance_id=instance, generation_id=generation
    )


def test_txn_commit_to_a_missing_group():
    c = Cluster()
    assert validate(c.state, "new", generation=-1) == E.NONE
    assert "new" in c.state.groups.groups  # a simple classic group
    assert validate(c.state, "other", generation=0) == E.ILLEGAL_GENERATION
    assert "other" not in c.state.groups.groups


def classic_stable(state, group="g") -> tuple[str, int]:
    """A one-member classic group, through the handlers: (member id, generation)."""
    from ..apis.test_group_apis import stable

    state.create_topic("orders", 1, 1)
    member = stable(state, group)
    return member, state.groups.groups[group].generation_id


def test_txn_commit_checks_the_classic_member_and_generation():
    from ..apis.support import cluster

    state = cluster(1)
    member, generation = classic_stable(state)
    assert validate(state, member=member, generation=generation) == E.NONE
    assert validate(state, member=member, generation=generation + 1) == E.ILLEGAL_GENERATION
    assert validate(state, member="nobody", generation=generation) == E.UNKNOWN_MEMBER_ID
    # no membership given at all: accepted (transactional commits need none), no REBALANCE_IN_PROGRESS
    assert validate(state) == E.NONE


def test_txn_commit_with_no_generation_to_an_empty_classic_group_is_accepted_whatever_the_member():
    c = Cluster()
    assert validate(c.state, generation=-1) == E.NONE  # creates an Empty simple group
    assert validate(c.state, member="some-member", generation=-1) == E.NONE


def consumer_member(state, group="cg") -> tuple[str, int]:
    state.create_topic("orders", 2, 1)
    result = state.consumer_groups.heartbeat(
        0,
        group_id=group,
        member_id="m1",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30_000,
        subscribed_names=["orders"],
        subscribed_regex=None,
        server_assignor=None,
        owned={},
        client_id="m1",
        client_host="/127.0.0.1",
        version=1,
    )
    assert result.error == E.NONE
    return result.member_id, result.member_epoch


def test_txn_commit_to_a_consumer_group_never_answers_stale_member_epoch():
    c = Cluster()
    member, epoch = consumer_member(c.state)
    assert validate(c.state, "cg", member=member, generation=epoch) == E.NONE
    assert validate(c.state, "cg", member=member, generation=epoch + 1) == E.ILLEGAL_GENERATION
    assert validate(c.state, "cg", member=member, generation=epoch - 1) == E.ILLEGAL_GENERATION
    assert validate(c.state, "cg", member="nobody", generation=epoch) == E.UNKNOWN_MEMBER_ID
    assert validate(c.state, "cg", member="", generation=-1) == E.NONE


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

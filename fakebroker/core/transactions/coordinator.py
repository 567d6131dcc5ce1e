"""The transaction coordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
the transaction timeout, and the markers that end a transaction in every partition it wrote.

Follows Kafka's ``TransactionCoordinator`` and ``TransactionMetadata``: the checks run in
Kafka's order, every state change goes through :meth:`TxnMetadata.transition` (the table
in ``model.py``), and the markers are written by the cluster (``write_marker``), which
answers False for a partition whose leader is offline; such a partition is retried when a
leader is elected (:meth:`TransactionCoordinator.retry_markers`) and the transaction stays
in PrepareCommit/PrepareAbort until then, as Kafka's marker channel keeps retrying.

Placement and loading (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) are the cluster's,
since they depend on which broker leads the ``__transaction_state`` partition.
"""

from __future__ import annotations

from collections.abc import Callable

from ...lazy_dataclasses import dataclass
from ...protocol.error_codes import ErrorCode as E
from .. import events as ev
from ..configs import BrokerConfig
from ..events import EventLog, TxnEvents
from ..placement import CoordinatorPlacement
from ..timers import Timers
from .model import COMPLETED, PREPARING, TxnMetadata, TxnState
from .producer_ids import EPOCH_MAX, ProducerIds, epoch_exhausted

S = TxnState
TopicPartition = tuple[str, int]
# (topic, partition, producer id, producer epoch, commit?, coordinator epoch, now) -> written?
MarkerWriter = Callable[[str, int, int, int, bool, int, int], bool]


@dataclass(frozen=True)
class EndResult:
    error: E
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(
        self,
        config: BrokerConfig,
        events: EventLog,
        ids: ProducerIds,
        write_marker: MarkerWriter,
        placement: CoordinatorPlacement,
        transaction_version: Callable[[], int] = lambda: 2,
        timers: Timers | None = None,
        marker_delay_ms: Callable[[], int] = lambda: 0,
    ):
        self.config = config
        # which broker coordinates a transactional id (its markers carry that partition's leader
        # epoch as the coordinator epoch), and whether it has loaded the id yet
        self.placement = placement
        self.events = TxnEvents(events, placement.placed_coordinator_of)  # events placed on the id's coordinator
        self.ids = ids
        self.write_marker = write_marker
        self.transaction_version = transaction_version  # the cluster's finalized transaction.version
        self.timers = timers or Timers()
        # Kafka answers EndTxn once PrepareCommit/PrepareAbort is written and sends the markers
        # after; 0 writes them at once, more leaves the transaction preparing that long
        self.marker_delay_ms = marker_delay_ms
        self.txns: dict[str, TxnMetadata] = {}

    # -- InitProducerId -------------------------------------------------------------------------
    def valid_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.get_int("transaction.max.timeout.ms")

    def init_producer_id(
        self, tid: str, timeout_ms: int, producer_id: int, producer_epoch: int, now_ms: int
    ) -> tuple[E, int, int]:
        """TransactionCoordinator.handleInitProducerId for a transactional id (the handler has
        checked the id, the timeout and the coordinator)."""
        expected = (producer_id, producer_epoch) if producer_id != -1 else None
        txn = self.txns.get(tid)
        if txn is None:
            pid = self.ids.allocate()
            txn = self.txns[tid] = TxnMetadata(tid, pid, -1, timeout_ms, previous_producer_id=-1, last_update_ms=now_ms)
        if expected is not None and not self._valid_producer_id(txn, expected):
            return E.PRODUCER_FENCED, -1, -1
        if txn.state in PREPARING:
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        if txn.state == S.ONGOING:
            # Fence the open transaction: its epoch is bumped and it is aborted; the new
            # instance retries and gets the next epoch once the abort is complete.
            self._fence_and_abort(txn, now_ms, reason="fenced by a new instance")
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        if txn.state not in (S.EMPTY, *COMPLETED):
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        if epoch_exhausted(txn.producer_epoch) and (expected is None or expected[1] == txn.producer_epoch):
            # prepareProducerIdRotation: a new producer id at epoch 0
            old_pid, old_epoch = txn.producer_id, txn.producer_epoch
            txn.previous_producer_id, txn.producer_id = old_pid, self.ids.allocate()
            txn.producer_epoch, txn.last_producer_epoch = 0, (-1 if expected is None else old_epoch)
        elif epoch_exhausted(txn.producer_epoch):
            # prepareIncrementProducerEpoch throws ("Cannot allocate any more producer epochs"): an unexpected error
            return E.UNKNOWN_SERVER_ERROR, -1, -1
        elif expected is None:
            txn.previous_producer_id = txn.producer_id
            txn.producer_epoch, txn.last_producer_epoch = txn.producer_epoch + 1, -1
        elif expected[1] == txn.producer_epoch or txn.producer_epoch == -1:
            # KIP-360: the same producer bumps its epoch to recover from an abortable error
            txn.last_producer_epoch, txn.producer_epoch = txn.producer_epoch, txn.producer_epoch + 1
        elif expected[1] == txn.last_producer_epoch:
            pass  # a retry of a bump whose answer was lost: the current epoch, not bumped again
        else:
            return E.PRODUCER_FENCED, -1, -1
        txn.timeout_ms = timeout_ms
        txn.transition(S.EMPTY, now_ms)
        txn.partitions.clear()
        txn.start_ms = -1
        self.ids.epochs[txn.producer_id] = txn.producer_epoch
        self.events.append(
            ev.ProducerId(producer_id=txn.producer_id, epoch=txn.producer_epoch, transactional_id=tid), now_ms
        )
        return E.NONE, txn.producer_id, txn.producer_epoch

    @staticmethod
    def _valid_producer_id(txn: TxnMetadata, expected: tuple[int, int]) -> bool:
        pid, epoch = expected
        return (
            txn.producer_epoch == -1
            or pid == txn.producer_id
            or (pid == txn.previous_producer_id and epoch_exhausted(epoch))
        )

    # -- AddPartitionsToTxn / AddOffsetsToTxn / implicit adds ----------------------------------
    def add_partitions(
        self, tid: str, producer_id: int, epoch: int, partitions: list[TopicPartition], now_ms: int, *, version: int = 1
    ) -> E:
        """TransactionCoordinator.handleAddPartitionsToTransaction: one error for the lot."""
        txn = self.txns.get(tid)
        error = self._check_producer(txn, producer_id, epoch)
        if error:
            return error
        assert txn is not None
        if txn.state in PREPARING or txn.state == S.PREPARE_EPOCH_FENCE:
            return E.CONCURRENT_TRANSACTIONS
        if txn.state == S.ONGOING and set(partitions) <= txn.partitions:
            return E.NONE
        began = txn.state != S.ONGOING
        if began:
            txn.start_ms = now_ms
            txn.version = version
        txn.transition(S.ONGOING, now_ms)
        added = [tp for tp in partitions if tp not in txn.partitions]
        txn.partitions.update(partitions)
        if began:
            self.events.append(
                ev.TxnBegan(transactional_id=tid, producer_id=producer_id, epoch=epoch, version=version), now_ms
            )
        if added:
            self.events.append(
                ev.TxnPartitionsAdded(transactional_id=tid, partitions=[f"{t}-{p}" for t, p in sorted(added)]),
                now_ms,
            )
        return E.NONE

    def verify_partitions(
        self, tid: str, producer_id: int, epoch: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, E]:
        """The verify-only form (KIP-890 part 1): is each partition in the open transaction?"""
        txn = self.txns.get(tid)
        error = self._check_producer(txn, producer_id, epoch)
        if not error and txn is not None and txn.state in PREPARING:
            error = E.CONCURRENT_TRANSACTIONS
        if error:
            return dict.fromkeys(partitions, error)
        assert txn is not None
        return {
            tp: E.NONE if txn.state == S.ONGOING and tp in txn.partitions else E.TRANSACTION_ABORTABLE
            for tp in partitions
        }

    @staticmethod
    def _check_producer(txn: TxnMetadata | None, producer_id: int, epoch: int) -> E:
        if txn is None or txn.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != epoch:
            return E.PRODUCER_FENCED
        return E.NONE

    # -- EndTxn -----------------------------------------------------------------------------------
    def end_txn(
        self, tid: str, producer_id: int, epoch: int, commit: bool, now_ms: int, *, version: int = 1
    ) -> EndResult:
        """TransactionCoordinator.endTransaction as the client asks it. ``version`` 2 is KIP-890's:
        the epoch is bumped at every end and returned, and a retry is recognised by the epoch
        just before the bump."""
        txn = self.txns.get(tid)
        if txn is None:
            return EndResult(E.INVALID_PRODUCER_ID_MAPPING)
        state = txn.state
        if version < 2:
            if producer_id != txn.producer_id:
                return EndResult(E.INVALID_PRODUCER_ID_MAPPING)
            if epoch != txn.producer_epoch:
                return EndResult(E.PRODUCER_FENCED)
            if state == S.ONGOING:
                self._prepare_end(txn, commit, now_ms, bump=False)
                return EndResult(E.NONE)
            if state in COMPLETED:
                return EndResult(E.NONE if (state == S.COMPLETE_COMMIT) == commit else E.INVALID_TXN_STATE)
            if state in PREPARING:
                same = (state == S.PREPARE_COMMIT) == commit
                return EndResult(E.CONCURRENT_TRANSACTIONS if same else E.INVALID_TXN_STATE)
            if state == S.PREPARE_EPOCH_FENCE:
                return EndResult(E.CONCURRENT_TRANSACTIONS)
            return EndResult(E.INVALID_TXN_STATE)
        retry_on_bump = txn.producer_epoch == epoch + 1
        retry_on_overflow = (
            producer_id == txn.previous_producer_id and epoch_exhausted(epoch) and txn.producer_epoch == 0
        )
        if state == S.PREPARE_EPOCH_FENCE:
            return EndResult(E.CONCURRENT_TRANSACTIONS)
        if producer_id != txn.producer_id and not retry_on_overflow:
            return EndResult(E.INVALID_PRODUCER_ID_MAPPING)
        current = epoch == txn.producer_epoch and producer_id == txn.producer_id
        retry = (retry_on_bump and producer_id == txn.producer_id) or retry_on_overflow
        valid = {
            S.ONGOING: current,
            S.EMPTY: current,
            S.PREPARE_COMMIT: retry,
            S.PREPARE_ABORT: retry,
        }.get(state, retry or current)
        if not valid:
            return EndResult(E.PRODUCER_FENCED)
        if state == S.ONGOING:
            self._prepare_end(txn, commit, now_ms, bump=True)
            return self._bumped(txn)
        if state in PREPARING:
            same = (state == S.PREPARE_COMMIT) == commit
            return EndResult(E.CONCURRENT_TRANSACTIONS if same else E.INVALID_TXN_STATE)
        if current and not commit:
            txn.start_ms = now_ms  # an empty transaction, aborted to bump the epoch, starts and ends now
            self._prepare_end(txn, False, now_ms, bump=True)
            return self._bumped(txn)
        if retry and state in COMPLETED and (state == S.COMPLETE_COMMIT) == commit:
            return EndResult(E.NONE, txn.producer_id, txn.producer_epoch)
        return EndResult(E.INVALID_TXN_STATE)

    @staticmethod
    def _bumped(txn: TxnMetadata) -> EndResult:
        """The id and epoch the client goes on with (the next id when the epoch was exhausted)."""
        if txn.state in COMPLETED or txn.next_producer_id == -1:
            return EndResult(E.NONE, txn.producer_id, txn.producer_epoch)
        return EndResult(E.NONE, txn.next_producer_id, 0)

    def _prepare_end(self, txn: TxnMetadata, commit: bool, now_ms: int, *, bump: bool) -> None:
        if bump:
            if epoch_exhausted(txn.producer_epoch):
                # the id rotates: the markers carry the old id's bumped epoch, the client gets the new id
                txn.next_producer_id = self.ids.allocate()
            txn.last_producer_epoch = txn.producer_epoch
            txn.producer_epoch += 1
        txn.transition(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, now_ms)
        self.events.append(
            ev.TxnPrepared(
                transactional_id=txn.transactional_id,
                producer_id=txn.producer_id,
                epoch=txn.producer_epoch,
                commit=commit,
            ),
            now_ms,
        )
        self._start_markers(txn, now_ms)

    def _fence_and_abort(self, txn: TxnMetadata, now_ms: int, *, reason: str) -> None:
        """prepareFenceProducerEpoch then an abort with the bumped epoch (a new instance, or the timeout)."""
        fenced_epoch = txn.producer_epoch
        txn.transition(S.PREPARE_EPOCH_FENCE, now_ms)
        if txn.producer_epoch < EPOCH_MAX:  # up to Short.MAX_VALUE, kept free for exactly this
            txn.producer_epoch += 1
        # Under transaction version 2 the abort is a version-2 end: the fenced epoch is remembered,
        # so the producer that was fenced may recover it with InitProducerId (KIP-360)
        txn.last_producer_epoch = fenced_epoch if self.transaction_version() >= 2 else -1
        self.ids.epochs[txn.producer_id] = txn.producer_epoch
        self.events.append(
            ev.TxnFenced(
                transactional_id=txn.transactional_id,
                producer_id=txn.producer_id,
                epoch=fenced_epoch,
                new_epoch=txn.producer_epoch,
                reason=reason,
            ),
            now_ms,
        )
        txn.transition(S.PREPARE_ABORT, now_ms)
        self._start_markers(txn, now_ms)

    # -- markers ----------------------------------------------------------------------------------
    def _start_markers(self, txn: TxnMetadata, now_ms: int) -> None:
        txn.markers_pending = set(txn.partitions)
        delay = self.marker_delay_ms()
        if delay <= 0:
            self._send_markers(txn, now_ms)
            return

        def send(t: int) -> None:
            if self.txns.get(txn.transactional_id) is txn and txn.state in PREPARING:
                self._send_markers(txn, t)

        self.timers.schedule(("txn-markers", txn.transactional_id), now_ms + delay, send)

    def _send_markers(self, txn: TxnMetadata, now_ms: int) -> None:
        commit = txn.state == S.PREPARE_COMMIT
        coordinator_epoch = self.placement.epoch_of(txn.transactional_id)
        for topic, partition in sorted(txn.markers_pending):
            if self.write_marker(
                topic, partition, txn.producer_id, txn.producer_epoch, commit, coordinator_epoch, now_ms
            ):
                txn.markers_pending.discard((topic, partition))
        if not txn.markers_pending:
            self._complete(txn, now_ms)

    def _complete(self, txn: TxnMetadata, now_ms: int) -> None:
        commit = txn.state == S.PREPARE_COMMIT
        txn.transition(S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT, now_ms)
        partitions = sorted(txn.partitions)
        txn.partitions.clear()  # the start time stays until the next InitProducerId, as Kafka keeps it
        kind = ev.TxnCommitted if commit else ev.TxnAborted
        self.events.append(
            kind(
                transactional_id=txn.transactional_id,
                producer_id=txn.producer_id,
                epoch=txn.producer_epoch,
                partitions=[f"{t}-{p}" for t, p in partitions],
            ),
            now_ms,
        )
        if txn.next_producer_id != -1:
            txn.previous_producer_id, txn.producer_id = txn.producer_id, txn.next_producer_id
            txn.next_producer_id = -1
            txn.last_producer_epoch, txn.producer_epoch = txn.producer_epoch, 0
        self.ids.epochs[txn.producer_id] = txn.producer_epoch

    def retry_markers(self, now_ms: int) -> None:
        """Markers owed to partitions that were offline: try again (a leader was elected)."""
        for txn in list(self.txns.values()):
            waiting = self.timers.deadline(("txn-markers", txn.transactional_id)) is not None
            if txn.state in PREPARING and txn.markers_pending and not waiting:
                self._send_markers(txn, now_ms)

    # -- a restart: the state a data directory kept (``storage.txn_state``) ----------------------
    def knows_open(self, producer_id: int, tp: TopicPartition) -> bool:
        """An open transaction of ``producer_id`` that wrote (or may write) ``tp``: its end is this
        coordinator's to write, so a restored log leaves it open."""
        return any(t.open and t.producer_id == producer_id and tp in t.partitions for t in self.txns.values())

    def resume(self, now_ms: int, owed: Callable[[str, int, int], bool]) -> None:
        """Once the topics are back after a restart: every transaction restored in PrepareCommit or
        PrepareAbort writes its markers now, as Kafka's coordinator does when it loads its
        partition. ``owed(topic, partition, producer id)`` says whether a partition still needs
        one (a marker written before the crash is not written twice); Ongoing ones stay open."""
        for txn in list(self.txns.values()):
            self.ids.epochs[txn.producer_id] = txn.producer_epoch
            if txn.state in PREPARING:
                txn.markers_pending = {tp for tp in txn.markers_pending if owed(tp[0], tp[1], txn.producer_id)}
                self._send_markers(txn, now_ms)

    # -- timers -----------------------------------------------------------------------------------
    def abort_timed_out(self, now_ms: int, owned: Callable[[str], bool] = lambda tid: True) -> int:
        """abortTimedOutTransactions: every Ongoing transaction older than its timeout is fenced
        and aborted (the producer's next request is fenced)."""
        aborted = 0
        for txn in list(self.txns.values()):
            if txn.state == S.ONGOING and txn.start_ms >= 0 and txn.start_ms + txn.timeout_ms < now_ms:
                if not owned(txn.transactional_id):
                    continue
                self.events.append(
                    ev.TxnTimedOut(
                        transactional_id=txn.transactional_id, producer_id=txn.producer_id, timeout_ms=txn.timeout_ms
                    ),
                    now_ms,
                )
                self._fence_and_abort(txn, now_ms, reason="transaction timed out")
                aborted += 1
        return aborted

    def expire_ids(self, now_ms: int, owned: Callable[[str], bool] = lambda tid: True) -> int:
        """transactional.id.expiration.ms: idle ids with no open transaction are forgotten."""
        limit = self.config.get_int("transactional.id.expiration.ms")
        gone = [
            tid
            for tid, txn in self.txns.items()
            if txn.state in (S.EMPTY, *COMPLETED) and now_ms - txn.last_update_ms >= limit and owned(tid)
        ]
        for tid in gone:
            txn = self.txns.pop(tid)
            self.events.append(ev.TxnExpired(transactional_id=tid, idle_ms=now_ms - txn.last_update_ms), now_ms)
        return len(gone)

    def forget(self, tids: list[str], now_ms: int) -> None:
        """Drop transactional ids (a shared cluster between tests); an open transaction is
        aborted first, so no partition keeps an unstable offset and no group a pending offset."""
        for tid in tids:
            txn = self.txns.get(tid)
            if txn is not None and txn.state == S.ONGOING:
                self._prepare_end(txn, False, now_ms, bump=True)
            self.timers.cancel(("txn-markers", tid))
            if txn is not None and txn.state in PREPARING:
                self._send_markers(txn, now_ms)  # no reader may wait on a forgotten transaction
            if self.txns.pop(tid, None) is not None:
                self.events.append(ev.TxnForgotten(transactional_id=tid), now_ms)

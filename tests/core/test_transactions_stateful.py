"""Transactions against a model, driven by hypothesis: several transactional producers (some on
transaction version 1 with AddPartitionsToTxn and Produce v9, some on version 2 with implicit
adds on Produce v12 and an epoch bump at every EndTxn) write to two topics of a 3-broker
cluster, commit offsets in their transactions, commit, abort, get fenced by a new instance or
by the timeout, while coordinators move and brokers stop and start.

The model decides which transactions committed (only an EndTxn commit answered NONE commits)
and which records each wrote; a read_committed reader (records below the last stable offset,
skipping aborted transactions the way the Java consumer does from the aborted-transaction
index) must see exactly the committed transactions whose markers are written, whole, and
nothing of an aborted or open one."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.groups.placement import OFFSETS_TOPIC
from fakebroker.core.groups.requests import CommitRequest
from fakebroker.core.transactions.model import COMPLETED, PREPARING, TxnState
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E

from ..conftest import examples

S = TxnState
TIDS = ["p0", "p1", "p2"]
PARTITIONS = [("a", 0), ("a", 1), ("b", 0)]
GROUP = "g"
TIMEOUT_MS = 60_000


@dataclass
class ModelTxn:
    tid: str
    records: dict[tuple[str, int], list[tuple[int, bytes]]] = field(default_factory=dict)  # tp -> (offset, value)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    outcome: str | None = None  # None (open), "commit", "abort"
    complete: bool = False


@dataclass
class Producer:
    tid: str
    version: int  # transaction version 1 or 2
    pid: int = -1
    epoch: int = -1
    seq: dict[tuple[int, int, str, int], int] = field(default_factory=dict)
    current: ModelTxn | None = None
    commit_requested: bool = False


class Transactions(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state = ClusterState("c", BrokerConfig({}))
        for node in range(3):
            self.state.broker_started(node, "127.0.0.1", 9092 + node, 0)
        self.state.create_topic("a", 2, 2)
        self.state.create_topic("b", 1, 1)
        self.state.offsets_topic()
        self.state.transaction_topic()
        self.now = 1
        self.producers = {tid: Producer(tid, 1 if i % 2 == 0 else 2) for i, tid in enumerate(TIDS)}
        self.txns: list[ModelTxn] = []
        self.values = 0
        self.offset_counter = 0
        self.epochs: dict[str, tuple[int, int]] = {}
        self.leader_epochs: dict[tuple[str, int], int] = {}

    # -- helpers ---------------------------------------------------------------------------------------
    def tick(self, ms: int = 1) -> int:
        self.now += ms
        return self.now

    def meta(self, tid):
        return self.state.transactions.txns.get(tid)

    def observe(self) -> None:
        """Which open model transactions the coordinator decided, and which are complete."""
        for p in self.producers.values():
            meta = self.meta(p.tid)
            txn = p.current
            if txn is None or meta is None:
                continue
            if txn.outcome is None and meta.state != S.ONGOING:
                commit = meta.state in (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
                assert not commit or p.commit_requested, f"{p.tid} committed without an EndTxn commit"
                txn.outcome = "commit" if commit else "abort"
            if txn.outcome is not None and meta.state in COMPLETED | {S.EMPTY, S.ONGOING}:
                txn.complete = True
                p.current = None
        for p in self.producers.values():
            meta = self.meta(p.tid)
            if meta is not None and meta.state == S.ONGOING and p.current is None:
                p.current = ModelTxn(p.tid)
                self.txns.append(p.current)
                p.commit_requested = False

    def marker_written(self, txn: ModelTxn, tp) -> bool:
        if txn.outcome is None:
            return False
        if txn.complete:
            return True
        meta = self.meta(txn.tid)
        return meta is not None and meta.state in PREPARING and tp not in meta.markers_pending

    def coordinator_up(self, tid) -> bool:
        return self.state.transactions.placement.available(tid)

    def leader_up(self, tp) -> bool:
        partition = self.state.partition(*tp)
        return partition.leader != -1 and self.state.brokers[partition.leader].alive

    def started(self, tid) -> Producer:
        """The producer, initialised first if it never was."""
        if self.producers[tid].pid < 0:
            self.init(tid)
        return self.producers[tid]

    # -- rules -----------------------------------------------------------------------------------------
    @rule(tid=st.sampled_from(TIDS))
    def init(self, tid):
        """A new instance of the producer (fences its open transaction)."""
        if not self.coordinator_up(tid):
            return
        p = self.producers[tid]
        error, pid, epoch = self.state.init_producer_id(tid, timeout_ms=TIMEOUT_MS, now_ms=self.tick())
        self.observe()
        if error == E.CONCURRENT_TRANSACTIONS:
            error, pid, epoch = self.state.init_producer_id(tid, timeout_ms=TIMEOUT_MS, now_ms=self.tick())
        assert error in (E.NONE, E.CONCURRENT_TRANSACTIONS), error
        if error == E.NONE:
            p.pid, p.epoch = pid, epoch

    @rule(tid=st.sampled_from(TIDS), tp=st.sampled_from(PARTITIONS), count=st.integers(1, 3))
    def produce(self, tid, tp, count):
        p = self.started(tid)
        if p.pid < 0 or not self.leader_up(tp) or not self.coordinator_up(tid):
            return
        if p.version == 1:
            error = self.state.transactions.add_partitions(tid, p.pid, p.epoch, [tp], self.tick(), version=1)
            self.observe()
            if error:
                return
        values = []
        for _ in range(count):
            self.values += 1
            values.append(f"{tid}-{self.values}".encode())
        key = (p.pid, p.epoch, *tp)
        seq = p.seq.get(key, 0)
        data = rec.build_batch(
            [(None, v, [], 1_000) for v in values],
            producer_id=p.pid,
            producer_epoch=p.epoch,
            base_sequence=seq,
            transactional=True,
        )
        result = self.state.append(
            self.state.partition(*tp),
            data,
            produce_version=12 if p.version == 2 else 9,
            transactional_id=tid,
            now_ms=self.tick(),
        )
        self.observe()
        if result.appended:
            p.seq[key] = seq + count
            # While a decided transaction's markers are on their way, a write to a partition it
            # already wrote is taken without asking the coordinator (as on Kafka): it joins that
            # transaction's fate, so a fenced producer's late record is aborted with the rest.
            assert p.current is not None
            p.current.records.setdefault(tp, []).extend((result.base_offset + i, v) for i, v in enumerate(values))

    @rule(tid=st.sampled_from(TIDS), tp=st.sampled_from(PARTITIONS))
    def txn_offset_commit(self, tid, tp):
        p = self.started(tid)
        offsets_tp = (OFFSETS_TOPIC, self.state.groups.partition_of(GROUP))
        if p.pid < 0 or not self.coordinator_up(tid) or not self.leader_up(offsets_tp):
            return
        error = self.state.transactions.add_partitions(
            tid, p.pid, p.epoch, [offsets_tp], self.tick(), version=p.version
        )
        self.observe()
        if error:
            return
        offsets = self.state.groups.offsets
        commit = CommitRequest(GROUP, "", None, -1, 5, transactional=True)
        assert self.state.groups.txn_commit_error(self.now, self.state.groups.coordinator_of(GROUP), commit) == E.NONE
        self.offset_counter += 1
        assert offsets.commit_in_txn(self.now, GROUP, p.pid, *tp, self.offset_counter, -1, "") == E.NONE
        assert p.current is not None
        p.current.offsets[tp] = self.offset_counter

    @rule(tid=st.sampled_from(TIDS), commit=st.booleans())
    def end(self, tid, commit):
        p = self.started(tid)
        if p.pid < 0 or not self.coordinator_up(tid):
            return
        if commit:
            p.commit_requested = True
        result = self.state.transactions.end_txn(tid, p.pid, p.epoch, commit, self.tick(), version=p.version)
        self.observe()
        if result.error == E.NONE and p.version == 2:
            assert result.producer_id == p.pid
            p.epoch = result.producer_epoch

    @rule(delay=st.sampled_from([0, 5]))
    def set_marker_delay(self, delay):
        """Kafka writes markers after it answers EndTxn: the transaction prepares meanwhile."""
        self.state.transaction_marker_delay_ms = delay

    @rule(ms=st.integers(1, 10))
    def wait(self, ms):
        self.state.tick(self.tick(ms))  # delayed markers land
        self.observe()

    @rule()
    def time_out(self):
        self.state.abort_timed_out(self.tick(TIMEOUT_MS + 1))
        self.observe()

    @rule(tid=st.sampled_from(TIDS), data=st.data())
    def move_coordinator(self, tid, data):
        partition = self.state.transaction_topic().partitions[self.state.transactions.placement.partition_of(tid)]
        alive = [b.node_id for b in self.state.alive_brokers()]
        self.state.move_leader(partition, data.draw(st.sampled_from(alive)), self.tick())
        self.observe()

    @precondition(lambda self: len(self.state.alive_brokers()) > 2)
    @rule(tp=st.sampled_from(PARTITIONS))
    def stop_a_leader(self, tp):
        """Stop the broker leading ``tp`` (``b-0`` has one replica: it goes offline, and markers wait)."""
        leader = self.state.partition(*tp).leader
        if leader != -1:
            self.state.broker_stopped(leader, self.tick())
        self.observe()

    @rule(node=st.integers(0, 2))
    def start_broker(self, node):
        self.state.broker_started(node, "127.0.0.1", 9092 + node, self.tick())
        self.observe()

    # -- invariants ------------------------------------------------------------------------------------
    def read_committed(self, tp) -> set[bytes]:
        """What a read_committed consumer reading from offset 0 gets (Java's Fetcher logic)."""
        log = self.state.partition(*tp).log
        lso = log.last_stable_offset
        aborted = sorted(log.aborted_between(0, lso), key=lambda a: a.first_offset)
        skipping: set[int] = set()
        seen: set[bytes] = set()
        for b in rec.read_batches(log.read(0, 1 << 30, upper_bound=lso)):
            while aborted and aborted[0].first_offset <= b.last_offset:
                skipping.add(aborted.pop(0).producer_id)
            if b.is_control:
                if b.control_records()[0].type == rec.ControlRecordType.ABORT:
                    skipping.discard(b.producer_id)
                continue
            assert b.last_offset < lso
            if b.is_transactional and b.producer_id in skipping:
                continue
            seen.update(r.value for r in b.records)
        return seen

    @invariant()
    def read_committed_sees_exactly_the_committed_transactions(self):
        for tp in PARTITIONS:
            seen = self.read_committed(tp)
            lso = self.state.partition(*tp).log.last_stable_offset
            expected = set()
            for txn in self.txns:
                written = txn.records.get(tp, [])
                if not written:
                    continue
                values = {v for _, v in written}
                if txn.outcome == "commit" and self.marker_written(txn, tp):
                    # visible up to the last stable offset (an older open transaction holds the rest back)
                    below = {v for o, v in written if o < lso}
                    expected |= below
                    assert below <= seen, f"{txn.tid}: a committed transaction is not seen whole on {tp}"
                    if txn.complete and lso == self.state.partition(*tp).log.high_watermark:
                        assert values <= seen
                else:
                    assert not values & seen, f"{txn.tid} ({txn.outcome}): records seen on {tp}"
                if not self.marker_written(txn, tp):
                    assert lso <= written[0][0], f"LSO {lso} passed the open transaction at {written[0][0]}"
            assert seen == expected

    @invariant()
    def txn_offsets_are_visible_only_once_committed(self):
        offsets_tp = (OFFSETS_TOPIC, self.state.groups.partition_of(GROUP))
        for tp in PARTITIONS:
            arrived = [
                t.offsets[tp]
                for t in self.txns
                if tp in t.offsets and t.outcome == "commit" and self.marker_written(t, offsets_tp)
            ]
            [(_, _, stored)] = self.state.groups.offsets.fetch(GROUP, [tp])
            assert (stored.offset if stored else -1) == max(arrived, default=-1)

    @invariant()
    def epochs_only_grow(self):
        for tid, meta in self.state.transactions.txns.items():
            before = self.epochs.get(tid)
            if before is not None and before[0] == meta.producer_id:
                assert meta.producer_epoch >= before[1]
            self.epochs[tid] = (meta.producer_id, meta.producer_epoch)
        for partition in self.state.all_partitions():
            key = (partition.topic, partition.index)
            assert partition.leader_epoch >= self.leader_epochs.get(key, -1)
            self.leader_epochs[key] = partition.leader_epoch


Transactions.TestCase.settings = settings(max_examples=examples(100), stateful_step_count=40, deadline=None)
test_transactions = Transactions.TestCase

"""A pure cluster with one topic for the transaction coordinator's tests: ``Cluster`` calls
InitProducerId, AddPartitionsToTxn, EndTxn and transactional appends with explicit time."""

from __future__ import annotations

from typing import NamedTuple

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.transactions.model import TxnMetadata, TxnState
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

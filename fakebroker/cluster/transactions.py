"""Transactions as tests see them: snapshots of transactional ids, what a read_committed
reader sees, and moving a transaction coordinator."""

from __future__ import annotations

from typing import Any

from ..core.cluster_state import ClusterState
from ..core.transactions.model import STATE_NAMES
from ..lazy_dataclasses import dataclass
from ..protocol import records as rec
from .actions import check_broker, live_brokers, partition_of, topic_of
from .proxy import LoopProxy


@dataclass(frozen=True)
class TransactionView:
    transactional_id: str
    state: str  # Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, ...
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    partitions: list[tuple[str, int]]  # of the open transaction
    start_ms: int  # when the open transaction began (-1: none)
    coordinator: int  # the broker coordinating the id (-1: none alive)

    def to_dict(self) -> dict[str, Any]:
        return {
            "transactional_id": self.transactional_id,
            "state": self.state,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "timeout_ms": self.timeout_ms,
            "partitions": [f"{t}-{p}" for t, p in self.partitions],
            "start_ms": self.start_ms,
            "coordinator": self.coordinator,
        }


def transaction_view(state: ClusterState, transactional_id: str) -> TransactionView | None:
    txn = state.transactions.txns.get(transactional_id)
    if txn is None:
        return None
    return TransactionView(
        transactional_id,
        STATE_NAMES[txn.state],
        txn.producer_id,
        txn.producer_epoch,
        txn.timeout_ms,
        sorted(txn.partitions),
        txn.start_ms,
        state.transactions.placement.coordinator_of(transactional_id),
    )


def committed_records(state: ClusterState, topic: str, partition: int | None) -> list[tuple[int, int, Any, Any]]:
    """What a read_committed consumer reads: records below the last stable offset that no
    aborted transaction wrote, as (partition, offset, key, value)."""
    out: list[tuple[int, int, Any, Any]] = []
    if partition is not None:
        partition_of(state, topic, partition)  # ClusterUsageError naming the valid ones
    for p in topic_of(state, topic).partitions:
        if partition is not None and p.index != partition:
            continue
        log = p.log
        lso = log.last_stable_offset
        aborted = log.aborted_txns
        for stored in log.batches:
            if stored.base_offset >= lso or stored.is_control:
                continue
            if stored.is_transactional and any(
                a.producer_id == stored.producer_id and a.first_offset <= stored.base_offset <= a.last_offset
                for a in aborted
            ):
                continue
            for entry in rec.read_batches(stored.data):
                if isinstance(entry, rec.RecordBatch):
                    out.extend(
                        (p.index, entry.offset_of(r), r.key, r.value)
                        for r in entry.records
                        if log.log_start_offset <= entry.offset_of(r) < lso
                    )
                else:
                    out.extend((p.index, m.offset, m.key, m.value) for m in entry.messages if m.offset < lso)
    return out


class TransactionActions:
    def __init__(self, proxy: LoopProxy, state_of, now_ms):
        self._proxy = proxy
        self._state = state_of
        self._now = now_ms

    def move_coordinator(self, transactional_id: str, broker: int | None, load_time_ms: int | None) -> int:
        def move() -> int:
            state = self._state()
            live_brokers(state, f"coordinate transactional id {transactional_id!r}")  # before the topic is made
            if broker is not None:
                check_broker(state, broker, alive=True, what="coordinator")
            return state.move_coordinator(
                state.transactions.placement,
                transactional_id,
                broker,
                self._now(),
                reason="transaction coordinator moved",
                load_time_ms=load_time_ms,
            )

        return self._proxy.act(move)

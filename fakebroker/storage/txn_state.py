"""The transaction coordinator's state as a data directory keeps it: what Kafka writes to
``__transaction_state`` (one record per transactional id: producer id and epoch, state,
partitions, timeout, start time) and the offsets a transaction committed to a group
(TxnOffsetCommit), which wait in ``__consumer_offsets`` for the transaction's marker.

One JSON object per transactional id, in the snapshot's ``transactions`` and in journal lines
``["txn", id, entry|null]``. A restart brings them back before the topics (so a log's open
transaction that the coordinator knows stays open), then :func:`resume` writes the markers of
transactions that were answered in PrepareCommit/PrepareAbort; Ongoing ones go on, or are
aborted when their ``transaction.timeout.ms`` passes, and a completed one keeps its producer id
and epoch, so InitProducerId bumps the epoch and fences a zombie, as after a Kafka restart.
"""

from __future__ import annotations

from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.offsets import CommittedOffset
from ..core.groups.placement import OFFSETS_TOPIC
from ..core.transactions.model import TxnMetadata, TxnState
from .rows import first_problem, is_count, offset_row, row_problem

_STATES = {s.value: s for s in TxnState}
_INTS = ("producer_id", "epoch", "previous_id", "next_id", "last_epoch", "timeout_ms", "start_ms", "update_ms")


def txn_entry(state: ClusterState, tid: str) -> dict[str, Any] | None:
    """One transactional id as kept (None: the coordinator no longer knows it)."""
    txn = state.transactions.txns.get(tid)
    if txn is None:
        return None
    offsets = {
        group: [offset_row(t, p, o) for (t, p), o in sorted(by_producer[txn.producer_id].items())]
        for group, by_producer in sorted(state.groups.offsets.pending.items())
        if by_producer.get(txn.producer_id)
    }
    return {
        "producer_id": txn.producer_id,
        "epoch": txn.producer_epoch,
        "previous_id": txn.previous_producer_id,
        "next_id": txn.next_producer_id,
        "last_epoch": txn.last_producer_epoch,
        "timeout_ms": txn.timeout_ms,
        "state": txn.state.value,
        "partitions": [[t, p] for t, p in sorted(txn.partitions)],
        "markers_pending": [[t, p] for t, p in sorted(txn.markers_pending)],
        "start_ms": txn.start_ms,
        "update_ms": txn.last_update_ms,
        "version": txn.version,
        "offsets": offsets,
    }


def txn_entries(state: ClusterState) -> dict[str, dict[str, Any]]:
    return {tid: entry for tid in sorted(state.transactions.txns) if (entry := txn_entry(state, tid)) is not None}


def restore(state: ClusterState, entries: dict[str, Any]) -> None:
    """Bring the coordinator's transactional ids back, and the offsets their open transactions
    committed (before the topics: ``ClusterState.restore_topic`` asks the coordinator)."""
    for tid, e in entries.items():
        state.transactions.txns[tid] = TxnMetadata(
            tid,
            e["producer_id"],
            e["epoch"],
            e["timeout_ms"],
            previous_producer_id=e["previous_id"],
            next_producer_id=e["next_id"],
            last_producer_epoch=e["last_epoch"],
            state=_STATES[e["state"]],
            partitions={(t, p) for t, p in e["partitions"]},
            start_ms=e["start_ms"],
            last_update_ms=e["update_ms"],
            version=e.get("version", 0),
            markers_pending={(t, p) for t, p in e["markers_pending"]},
        )
        for group, rows in (e.get("offsets") or {}).items():
            for t, p, offset, epoch, metadata, committed_ms, expire_ms in rows:
                o = CommittedOffset(offset, epoch, metadata, committed_ms, expire_ms)
                state.groups.offsets.pending.setdefault(group, {}).setdefault(e["producer_id"], {})[(t, p)] = o


def resume(state: ClusterState, now_ms: int) -> None:
    """Once the topics are restored: transactions answered in PrepareCommit/PrepareAbort write
    their markers (to the partitions whose log still holds the transaction open, and to the
    offsets partitions, where the pending offsets wait)."""
    _order_writes(state)
    txns = state.transactions.txns
    if any(t == OFFSETS_TOPIC for txn in txns.values() if txn.open for t, _ in txn.partitions):
        state.offsets_topic()  # created again, as on first use: a marker must find its pending offsets

    def owed(topic: str, index: int, producer_id: int) -> bool:
        if topic == OFFSETS_TOPIC:
            return True
        partition = state.partition(topic, index)
        return partition is not None and producer_id in partition.log.open_txns

    state.transactions.resume(now_ms, owed)


def _order_writes(state: ClusterState) -> None:
    """A transaction's offset wins at its marker only over a plain commit written before it: the
    restored offsets are given the order of their times (a plain commit first at a tie)."""
    store = state.groups.offsets
    pending = [(o.commit_timestamp_ms, 1, o) for g in store.pending.values() for d in g.values() for o in d.values()]
    if not pending:
        return
    kept = [(o.commit_timestamp_ms, 0, o) for stored in store.offsets.values() for o in stored.values()]
    for order, (_, _, o) in enumerate(sorted(kept + pending, key=lambda x: x[:2]), 1):
        o.written = order
    store._writes = max(store._writes, len(kept) + len(pending))


def problem(entries: Any) -> str | None:
    """What is wrong with the snapshot's ``transactions`` (None: usable)."""
    return first_problem(entries, entry_problem)


def entry_problem(e: Any) -> str | None:
    if not isinstance(e, dict):
        return "not an object"
    if not all(is_count(e.get(k), -1) for k in _INTS) or not is_count(e.get("version", 0)):
        return f"one of {', '.join(_INTS)} or version is missing or not a number"
    if e.get("state") not in _STATES:
        return f"state {e.get('state')!r} is not a transaction state"
    for key in ("partitions", "markers_pending"):
        parts = e.get(key)
        if not isinstance(parts, list) or not all(
            isinstance(tp, list) and len(tp) == 2 and isinstance(tp[0], str) and is_count(tp[1]) for tp in parts
        ):
            return f"{key} is not a list of [topic, partition]"
    offsets = e.get("offsets", {})
    if not isinstance(offsets, dict):
        return "offsets is not an object"
    for group, rows in offsets.items():
        if not isinstance(rows, list) or any(row_problem(r) is not None for r in rows):
            return f"offsets.{group} is not a list of offset rows"
    return None

"""The share coordinator's store (``__share_group_state``): per share partition, the state
that survives a leader move or a restart — the start offset and every delivered range that is
not acquired, with its state and delivery count. Initialize/Read/Write/Delete/ReadSummary
(keys 83-87) are answered from here, with the share coordinator's epoch checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from ....lazy_dataclasses import dataclass
from ....protocol.error_codes import ErrorCode as E

StateKey = tuple[str, uuid.UUID, int]  # group id, topic id, partition
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
# Kafka's default messages (``Errors``) of the fences
FENCED_STATE_EPOCH_MESSAGE = "The coordinator rejected the request because the state epoch did not match."
FENCED_LEADER_EPOCH_MESSAGE = "The leader epoch in the request is older than the epoch on the broker."
Batch = tuple[int, int, int, int]  # first offset, last offset, record state, delivery count


@dataclass(frozen=True)
class ShareState:
    """A ShareSnapshot."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = -1
    batches: tuple[Batch, ...] = ()
    write_ms: int = 0


def combine(old: Iterable[Batch], new: Iterable[Batch], start: int) -> tuple[Batch, ...]:
    """PersisterStateBatchCombiner, in short: newer batches win where they overlap older ones;
    nothing below the start offset is kept."""
    new = sorted(new)
    out: list[Batch] = []
    for first, last, state, count in sorted(old):
        pieces = [(first, last)]
        for nf, nl, _, _ in new:
            cut = []
            for pf, pl in pieces:
                if nl < pf or nf > pl:
                    cut.append((pf, pl))
                    continue
                if pf < nf:
                    cut.append((pf, nf - 1))
                if pl > nl:
                    cut.append((nl + 1, pl))
            pieces = cut
        out.extend((pf, pl, state, count) for pf, pl in pieces)
    out.extend(new)
    return tuple(sorted((max(f, start), last, s, c) for f, last, s, c in out if last >= start))


class ShareStateStore:
    """Every share partition's persisted state. ``on_change(key, state or None)`` is told of
    each change (the journal of ``--data-dir``)."""

    def __init__(self) -> None:
        self.states: dict[StateKey, ShareState] = {}
        self.on_change: Callable[[StateKey, ShareState | None], None] | None = None

    def _set(self, key: StateKey, state: ShareState | None) -> None:
        if state is None:
            self.states.pop(key, None)
        else:
            self.states[key] = state
        if self.on_change is not None:
            self.on_change(key, state)

    def initialize(self, key: StateKey, start_offset: int, state_epoch: int, now_ms: int = 0) -> tuple[E, str | None]:
        stored = self.states.get(key)
        if stored is not None and stored.state_epoch > state_epoch:
            return E.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MESSAGE
        leader_epoch = stored.leader_epoch if stored is not None else -1
        # a start offset given (an admin's reset) is a delivery with nothing completed yet: lag counts
        complete = 0 if start_offset >= 0 else -1
        self._set(key, ShareState(state_epoch, leader_epoch, start_offset, complete, write_ms=now_ms))
        return E.NONE, None

    def read(self, key: StateKey, leader_epoch: int) -> tuple[E, str | None, ShareState | None]:
        stored = self.states.get(key)
        if stored is None:
            return E.INVALID_REQUEST, READ_UNINITIALIZED, None
        if stored.leader_epoch > leader_epoch:
            return E.FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH_MESSAGE, None
        if leader_epoch > stored.leader_epoch:  # the new leader's epoch is recorded
            stored = ShareState(
                stored.state_epoch,
                leader_epoch,
                stored.start_offset,
                stored.delivery_complete_count,
                stored.batches,
                stored.write_ms,
            )
            self._set(key, stored)
        return E.NONE, None, stored

    def write(
        self,
        key: StateKey,
        leader_epoch: int,
        state_epoch: int,
        start_offset: int,
        batches: Iterable[Batch],
        delivery_complete_count: int = -1,
        now_ms: int = 0,
        *,
        replace: bool = False,
    ) -> tuple[E, str | None]:
        """WriteShareGroupState. As in Kafka (``generateShareStateRecord``) a write keeps the
        recorded leader epoch (only a read with a newer one records it), the start offset never
        goes back, and the delivery-complete count is the request's unless the start offset
        stayed (then the larger one) or the request's is older (then the stored one)."""
        stored = self.states.get(key)
        if stored is None:
            return E.INVALID_REQUEST, WRITE_UNINITIALIZED
        if stored.leader_epoch > leader_epoch:
            return E.FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH_MESSAGE
        if state_epoch < stored.state_epoch:
            return E.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MESSAGE
        start = max(stored.start_offset, start_offset)
        complete = delivery_complete_count
        if start_offset == stored.start_offset:
            complete = max(delivery_complete_count, stored.delivery_complete_count)
        elif start_offset < stored.start_offset:
            complete = stored.delivery_complete_count
        merged = tuple(sorted(batches)) if replace else combine(stored.batches, batches, start)
        self._set(
            key,
            ShareState(
                stored.state_epoch,
                stored.leader_epoch,
                start,
                complete,
                tuple(b for b in merged if b[1] >= start),
                now_ms,
            ),
        )
        return E.NONE, None

    def summary(self, key: StateKey) -> ShareState | None:
        return self.states.get(key)

    def delete(self, key: StateKey) -> None:
        if key in self.states:
            self._set(key, None)

    def keys_of(self, group_id: str) -> list[StateKey]:
        return [k for k in self.states if k[0] == group_id]

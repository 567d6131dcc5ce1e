"""A transactional id's state, and the transitions between transaction states as data.

Kafka's ``TransactionState`` lists, for each state, the states it may be entered from; the
table below is that list, so a reader can scan every allowed transition in one place and
the coordinator refuses any other (an IllegalStateException in Kafka).
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum

from ...lazy_dataclasses import dataclass


class TxnState(Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"


S = TxnState

# state -> the states it may be entered from (TransactionState.validPreviousStates)
ENTERED_FROM: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # Empty and Complete*: transaction version 2 aborts an empty transaction to bump the epoch
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

# States ListTransactions and DescribeTransactions name (TransactionState.stateName)
STATE_NAMES = {s: s.value for s in TxnState}

COMPLETED = frozenset({S.COMPLETE_COMMIT, S.COMPLETE_ABORT})
PREPARING = frozenset({S.PREPARE_COMMIT, S.PREPARE_ABORT})


class IllegalTransition(Exception):
    """A transition the table does not allow: a bug in the coordinator, never a client error."""


@dataclass
class TxnMetadata:
    """What ``TransactionMetadata`` holds for one transactional id.

    ``partitions`` are the topic partitions of the open (or completing) transaction; the
    ``__consumer_offsets`` partition of a group added by AddOffsetsToTxn (or TxnOffsetCommit
    under transaction version 2) is among them. ``last_producer_epoch`` is the epoch before
    the last bump a client asked for with its id and epoch (-1 otherwise), so that a retry of
    that bump (or of a version-2 EndTxn) is recognised instead of fenced.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1  # the id an exhausted epoch rotates to at the next EndTxn (version 2)
    last_producer_epoch: int = -1
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1  # when the open transaction began (-1: none open)
    last_update_ms: int = 0
    version: int = 0  # transaction version the client uses (0/1: classic; 2: KIP-890)
    markers_pending: set[tuple[str, int]] = field(default_factory=set)  # partitions still owed a marker

    def transition(self, to: TxnState, now_ms: int) -> None:
        if self.state not in ENTERED_FROM[to]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.value} -> {to.value} is not allowed")
        self.state = to
        self.last_update_ms = now_ms

    @property
    def open(self) -> bool:
        """A transaction is open or being completed (its partitions may hold unstable data)."""
        return self.state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE)

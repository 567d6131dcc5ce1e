"""Event kinds of transactions: each names its transactional id."""

from __future__ import annotations

from .base import Event, _kind


@_kind
class TxnEvent(Event):
    """An event of one transactional id, placed on the broker coordinating it."""

    transactional_id: str


@_kind
class TxnBegan(TxnEvent):
    producer_id: int
    epoch: int
    version: int


@_kind
class TxnPartitionsAdded(TxnEvent):
    partitions: list[str]


@_kind
class TxnOffsetsAdded(TxnEvent):
    """Offsets committed in a transaction (TxnOffsetCommit): pending until its marker."""

    group: str
    offsets: dict[str, int]


@_kind
class TxnPrepared(TxnEvent):
    """EndTxn was answered: PrepareCommit or PrepareAbort is written; the markers follow."""

    producer_id: int
    epoch: int
    commit: bool


@_kind
class TxnCommitted(TxnEvent):
    producer_id: int
    epoch: int
    partitions: list[str]


@_kind
class TxnAborted(TxnEvent):
    producer_id: int
    epoch: int
    partitions: list[str]


@_kind
class TxnFenced(TxnEvent):
    producer_id: int
    epoch: int
    new_epoch: int
    reason: str


@_kind
class TxnForgotten(TxnEvent):
    """The transactional id was dropped without a trace (the pytest plugin cleaning up after a test)."""


@_kind
class TxnExpired(TxnEvent):
    """An idle transactional id was dropped after ``transactional.id.expiration.ms`` (Kafka
    writes its tombstone to ``__transaction_state``)."""

    idle_ms: int


@_kind
class TxnTimedOut(TxnEvent):
    producer_id: int
    timeout_ms: int


# -- faults, network, time (the facade) ----------------------------------------------------------

"""Event kinds of connections, requests, brokers, topics, faults and the clock."""

from __future__ import annotations

from typing import Any

from .base import Event, _kind


# -- connections and requests (the server) ----------------------------------------------------
@_kind
class ClientConnected(Event):
    peer: str
    client_id: str | None = None


@_kind
class ConnectionClosed(Event):
    """The broker closed a connection (``reason``: Kafka's cause, or the fault or cut that did);
    ``principal`` once it authenticated as someone (not ``User:ANONYMOUS``)."""

    peer: str
    client_id: str | None
    reason: str
    principal: str | None = None  # who the connection authenticated as (not set for User:ANONYMOUS)


@_kind
class HandlerError(Event):
    api: int | str
    version: int
    error: str


@_kind
class RequestError(Event):
    """An answer to ``api`` carried ``error`` (one event per distinct error code in it; ``fault``:
    the rule that put it there); ``principal``: who sent the request, when its connection
    authenticated as someone (not ``User:ANONYMOUS``)."""

    api: int | str
    client_id: str | None
    error: str | None
    fault: int | None = None
    principal: str | None = None  # who the connection authenticated as (not set for User:ANONYMOUS)


@_kind
class FaultFired(Event):
    """Fault rule ``rule`` fired for a request of ``api`` (its ``group`` and ``topics`` when it
    names some) and did ``action``; ``principal`` as in ``request_error``."""

    rule: int
    action: str
    api: int | str
    version: int
    client_id: str | None
    group: str | None = None
    topics: list[str] | None = None
    error: str | None = None
    principal: str | None = None  # who the connection authenticated as (not set for User:ANONYMOUS)


# -- brokers, topics, leaders ------------------------------------------------------------------
@_kind
class BrokerStarted(Event):
    host: str
    port: int
    restarted: bool | None = None


@_kind
class BrokerStopped(Event):
    pass


@_kind
class TopicCreated(Event):
    topic: str
    partitions: int
    auto: bool | None = None


@_kind
class TopicDeleted(Event):
    topic: str


@_kind
class PartitionsCreated(Event):
    topic: str
    count: int


@_kind
class LeaderMoved(Event):
    topic: str
    partition: int
    leader: int
    epoch: int
    reason: str | None = None


@_kind
class RecordsDeleted(Event):
    topic: str
    partition: int
    before: int


@_kind
class ProduceRejected(Event):
    topic: str
    partition: int
    error: str
    reason: str


@_kind
class ProducerId(Event):
    producer_id: int
    epoch: int
    transactional_id: str | None


@_kind
class ConfigsAltered(Event):
    resource: str
    configs: dict[str, Any]


@_kind
class GroupConfigsAltered(Event):
    """A group's configs (resource type GROUP) set to ``configs``; the id need name no group."""

    group: str
    configs: dict[str, Any]


@_kind
class ScramCredentialsAltered(Event):
    """A user's SCRAM credential for ``mechanism`` (SCRAM-SHA-256 or SCRAM-SHA-512) set
    (``change`` upserted, with its ``iterations``) or removed (deleted) by
    AlterUserScramCredentials."""

    user: str
    mechanism: str
    change: str
    iterations: int | None = None


@_kind
class RetentionApplied(Event):
    batches_dropped: int


@_kind
class TopicRestored(Event):
    """A topic found again in the data directory at start."""

    topic: str
    partitions: int


@_kind
class SegmentsDeleted(Event):
    """Retention deleted a partition's oldest segments (``reason``: retention.ms,
    retention.bytes or log_start_offset); its log start offset is now ``log_start_offset``."""

    topic: str
    partition: int
    reason: str
    batches: int
    log_start_offset: int


@_kind
class OffsetsExpired(Event):
    count: int


# -- transactions (the transaction coordinator) ----------------------------------------------------
@_kind
class FaultAdded(Event):
    rule: int
    spec: dict[str, Any]

    @property
    def details(self) -> dict[str, Any]:
        return {"rule": self.rule, **self.spec}


@_kind
class FaultRemoved(Event):
    rule: int


@_kind
class FaultsCleared(Event):
    pass


@_kind
class NetworkCut(Event):
    client_id: str


@_kind
class NetworkHealed(Event):
    client_id: str


@_kind
class ClockAdvanced(Event):
    by_ms: int
    now_ms: int


# -- groups (the coordinator) -------------------------------------------------------------------

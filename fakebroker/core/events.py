"""What happened, as typed events in one ordered log.

Every event kind is a frozen dataclass with its own fields; ``kind`` names it in snake case
(``member_joined``) for logs, the control endpoint and timelines. The core appends to one
:class:`EventLog` per cluster; the server, the console, the timeline, the control endpoint
and the pytest plugin all read that one log. The log stamps each event with its place
(``seq``), the cluster clock's time (``time_ms``) and the real time (``wall``), places
group events on the broker that coordinates their group, and names the client of a member.

Appending never calls out: whoever changes the core (the server after a request or a timer,
the facade after an action) tells listeners afterwards with :meth:`EventLog.take_new`.

>>> log = EventLog(now_ms=lambda: 5)
>>> e = log.append(MemberJoined(group="g", member="svc-0e9080ea-1111-4222-8333-444455556666", instance=None))
>>> (e.seq, e.time_ms, e.kind, e.client_id)
(1, 5, 'member_joined', 'svc')
>>> e.describe()
'member_joined group=g member=svc-0e9080ea-1111-4222-8333-444455556666 instance=None client_id=svc'
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, overload

from .event_ring import DEFAULT_CAPACITY, EventRing

if TYPE_CHECKING:  # what a kind is: a frozen dataclass with keyword-only fields
    _kind = dataclass(frozen=True, kw_only=True, eq=False, repr=False)
else:
    # What a kind is made with: dataclass compiles no function for it (about 0.25 ms a kind,
    # 15 ms at import), as Event's one __init__, __setattr__ and __delattr__ serve them all.
    _kind = dataclass(init=False, eq=False, repr=False)

_BASE = frozenset({"broker", "seq", "time_ms", "wall"})
_DETAIL_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    found = _FIELD_NAMES.get(cls)
    if found is None:
        found = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return found


def _detail_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """An event class's own fields as (name, left out when None), worked out once per class
    (the event printer asks for every event's details)."""
    found = _DETAIL_FIELDS.get(cls)
    if found is None:
        found = _DETAIL_FIELDS[cls] = tuple(
            (f.name, f.default is None and not f.metadata.get("shown"))
            for f in dataclasses.fields(cls)
            if f.name not in _BASE
        )
    return found


def _fields_in_dict(cls: type) -> bool:
    """Whether every field of an event class lives in its instances' ``__dict__`` (no class of it
    declares ``__slots__``), so a copy is its ``__dict__`` copied."""
    found = _IN_DICT.get(cls)
    if found is None:
        found = _IN_DICT[cls] = not any("__slots__" in vars(c) for c in cls.__mro__[:-1])
    return found


_IN_DICT: dict[type, bool] = {}
_REQUIRED = object()
_INIT_SPECS: dict[type, tuple[tuple[str, Any, Any], ...]] = {}


def _init_spec(cls: type) -> tuple[tuple[str, Any, Any], ...]:
    """A kind's fields as (name, default, factory), ``_REQUIRED`` for what has none."""
    found = _INIT_SPECS.get(cls)
    if found is None:
        found = _INIT_SPECS[cls] = tuple(
            (
                f.name,
                _REQUIRED if f.default is dataclasses.MISSING else f.default,
                None if f.default_factory is dataclasses.MISSING else f.default_factory,
            )
            for f in dataclasses.fields(cls)
        )
    return found


KINDS: dict[str, type[Event]] = {}
_MEMBER_ID = re.compile(r"^(.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@_kind
class Event:
    """One thing that happened. Fields without a default always appear in ``details``;
    optional ones (default None) only when set, unless marked ``shown``."""

    kind: ClassVar[str] = "event"
    broker: int | None = None
    seq: int = 0
    time_ms: int = 0
    wall: float = 0.0

    if not TYPE_CHECKING:  # a type checker sees each kind's own keyword __init__ (see _kind)

        def __init__(self, **values: Any) -> None:
            fields = self.__dict__
            for name, default, factory in _init_spec(type(self)):
                if name in values:
                    fields[name] = values.pop(name)
                elif factory is not None:
                    fields[name] = factory()
                elif default is _REQUIRED:
                    raise TypeError(f"{type(self).__name__}() missing keyword argument {name!r}")
                else:
                    fields[name] = default
            if values:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {next(iter(values))!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = "".join(f"_{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("_")
        if "kind" not in cls.__dict__:
            cls.kind = name
        KINDS[cls.kind] = cls
        if cls.__doc__ is None:  # else dataclass would work one out with inspect.signature (slow)
            cls.__doc__ = f"{cls.__name__}({', '.join(cls.__dict__.get('__annotations__', ()))})"

    # One __eq__, __hash__ and __repr__ for every kind (the dataclass ones compare and show the
    # same fields): dataclass would otherwise generate and compile three per class at import.
    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _field_names(type(self)))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _field_names(type(self)))
        return f"{type(self).__qualname__}({inner})"

    @property
    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, hidden_when_none in _detail_fields(type(self)):
            value = getattr(self, name)
            if value is None and hidden_when_none:
                continue
            out[name] = value
        return out

    def __getattr__(self, name: str) -> Any:
        # Every event answers ``group`` and ``client_id``: None for kinds that have no such field.
        if name in ("group", "client_id"):
            return None
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def describe(self) -> str:
        inner = " ".join(f"{k}={v}" for k, v in self.details.items())
        where = f"broker {self.broker}: " if self.broker is not None else ""
        return f"{where}{self.kind} {inner}".rstrip()

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (the control endpoint's ``GET /events``)."""
        return {
            "seq": self.seq,
            "time_ms": self.time_ms,
            "wall": self.wall,
            "kind": self.kind,
            "broker": self.broker,
            "group": self.group,
            "client_id": self.client_id,
            "details": {
                k: v if isinstance(v, (int, float, str, bool, type(None), list, dict)) else str(v)
                for k, v in self.details.items()
            },
        }


# -- connections and requests (the server) ----------------------------------------------------
@_kind
class ClientConnected(Event):
    peer: str
    client_id: str | None = None


@_kind
class ConnectionClosed(Event):
    peer: str
    client_id: str | None
    reason: str


@_kind
class HandlerError(Event):
    api: int | str
    version: int
    error: str


@_kind
class RequestError(Event):
    api: int | str
    client_id: str | None
    error: str | None
    fault: int | None = None


@_kind
class FaultFired(Event):
    rule: int
    action: str
    api: int | str
    version: int
    client_id: str | None
    group: str | None = None
    topics: list[str] | None = None
    error: str | None = None


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
class TxnTimedOut(TxnEvent):
    producer_id: int
    timeout_ms: int


# -- faults, network, time (the facade) ----------------------------------------------------------
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
@_kind
class GroupEvent(Event):
    """An event of one group: the log places it on the group's coordinator."""

    group: str


@_kind
class MemberEvent(GroupEvent):
    """An event of one member: the log names the member's client when it is known."""

    member: str


@_kind
class GroupCreated(GroupEvent):
    simple: bool | None = None


@_kind
class GroupDeleted(GroupEvent):
    pass


@_kind
class GroupForgotten(GroupEvent):
    """The group was dropped without a trace (the pytest plugin cleaning up after a test)."""


@_kind
class GroupStateChanged(GroupEvent):
    old: str
    new: str
    generation: int


@_kind
class GroupUnloaded(GroupEvent):
    pass


@_kind
class GroupLoaded(GroupEvent):
    state: str
    generation: int


@_kind
class RebalanceStarted(GroupEvent):
    reason: str
    generation: int


@_kind
class GenerationStarted(GroupEvent):
    generation: int
    members: int
    protocol: str | None = None
    leader: str | None = None


@_kind
class LeaderAssigned(GroupEvent):
    leader: str
    generation: int
    members: int


@_kind
class OffsetCommitted(GroupEvent):
    topic: str
    partition: int
    offset: int


@_kind
class OffsetDeleted(GroupEvent):
    """OffsetDelete removed a group's committed offset of a partition."""

    topic: str
    partition: int


@_kind
class GroupConverted(GroupEvent):
    """A group changed protocol online (``group.consumer.migration.policy``): to "consumer"
    when a KIP-848 member joined a classic group, to "classic" when only classic members remain."""

    to: str
    generation: int


@_kind
class GroupEpochBumped(GroupEvent):
    """A consumer group (KIP-848) moved to a new group epoch: its target assignment follows."""

    epoch: int
    reason: str


@_kind
class TargetAssignmentComputed(GroupEvent):
    """The server-side assignor's target for a consumer group's epoch (member id -> partitions)."""

    epoch: int
    assignment: dict[str, dict[str, list[int]]]


@_kind
class MemberIdRequired(MemberEvent):
    client_id: str | None = None


@_kind
class MemberJoined(MemberEvent):
    instance: str | None = field(default=None, metadata={"shown": True})  # shown even when None
    client_id: str | None = None


@_kind
class MemberFenced(MemberEvent):
    instance: str | None = field(default=None, metadata={"shown": True})  # shown even when None
    replaced_by: str
    client_id: str | None = None


@_kind
class StaticMemberRejoined(MemberEvent):
    instance: str | None = field(default=None, metadata={"shown": True})  # shown even when None
    client_id: str | None = None


@_kind
class MemberRemoved(MemberEvent):
    reason: str
    client_id: str | None = None


@_kind
class MemberExpired(MemberEvent):
    pending: bool | None = None
    new: bool | None = None
    session_timeout_ms: int | None = None
    client_id: str | None = None


@_kind
class MemberLeft(MemberEvent):
    instance: str | None = field(default=None, metadata={"shown": True})  # shown even when None
    client_id: str | None = None


@_kind
class MemberReconciled(MemberEvent):
    """A consumer group member's epoch, state or partitions moved towards its target."""

    epoch: int
    state: str
    assignment: dict[str, list[int]]
    revoking: dict[str, list[int]] | None = None
    client_id: str | None = None


@_kind
class AssignmentDelivered(MemberEvent):
    generation: int
    assignment: dict[str, list[int]] | None = None
    client_id: str | None = None


# Every kind says it is frozen, as Event's __setattr__ makes it (dataclass made them without
# that flag, which it would check against their bases): a frozen dataclass may subclass one.
_FROZEN = copy.copy(Event.__dataclass_params__)  # type: ignore[attr-defined]
_FROZEN.frozen = True
for _cls in (Event, *KINDS.values()):
    _cls.__dataclass_params__ = _FROZEN  # type: ignore[attr-defined]


def make(
    kind: str, broker: int | None = None, *, seq: int = 0, time_ms: int = 0, wall: float = 0.0, **details: Any
) -> Event:
    """An event from its kind and details as ``details`` names them (``group``, ``client_id``)."""
    cls = KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown event kind {kind!r}; kinds: {', '.join(sorted(KINDS))}")
    if cls is FaultAdded:
        details = {"rule": details.pop("rule"), "spec": details}
    return cls(broker=broker, seq=seq, time_ms=time_ms, wall=wall, **details)


class EventLog:
    """The cluster's one ordered log of events.

    ``now_ms`` and ``wall`` read the cluster's clock and the real time (the server passes
    them in; the core reads no clock). ``coordinator_of`` names the broker coordinating a
    group, or -1; ``member_client`` the client id of a live member, if any.
    """

    def __init__(
        self,
        now_ms: Callable[[], int] = lambda: 0,
        wall: Callable[[], float] = lambda: 0.0,
        coordinator_of: Callable[[str], int] | None = None,
        member_client: Callable[[str, str], str | None] | None = None,
        capacity: int | None = DEFAULT_CAPACITY,
    ):
        self.now_ms = now_ms
        self.wall = wall
        self.coordinator_of = coordinator_of
        self.txn_coordinator_of: Callable[[str], int] | None = None  # the broker coordinating a transactional id
        self.member_client = member_client
        self._events: EventRing[Event] = EventRing(capacity)  # the newest ``capacity`` events
        # member id -> client id, kept after it leaves; as many as the log keeps events, the oldest
        # joins dropped first (issue 33: each member that ever joined stayed)
        self._member_clients: dict[str, str] = {}
        self._told = 0  # how many events listeners have been given (take_new)

    def append(self, event: Event, now_ms: int | None = None) -> Event:
        """Stamp and record ``event``; ``now_ms`` is the time of the transition it records, when the
        caller knows it (the core's methods do), else the cluster clock's time."""
        changes: dict[str, Any] = {
            "seq": self._events.total + 1,
            "time_ms": self.now_ms() if now_ms is None else now_ms,
            "wall": self.wall(),
        }
        if isinstance(event, GroupEvent) and event.broker is None and self.coordinator_of is not None:
            broker = self.coordinator_of(event.group)
            if broker >= 0:
                changes["broker"] = broker
        if isinstance(event, TxnEvent) and event.broker is None and self.txn_coordinator_of is not None:
            broker = self.txn_coordinator_of(event.transactional_id)
            if broker >= 0:
                changes["broker"] = broker
        if isinstance(event, MemberEvent):
            client = event.client_id
            if isinstance(event, MemberJoined) and client is not None:
                clients = self._member_clients
                clients[event.member] = client
                if self._events.capacity is not None and len(clients) > self._events.capacity:
                    del clients[next(iter(clients))]  # the oldest join, older than every event kept
            elif client is None and "client_id" in event.__dataclass_fields__:
                found = self._client_of(event.group, event.member)
                if found is not None:
                    changes["client_id"] = found
        # A copy with the stamps, made by copying its fields: dataclasses.replace builds it again
        # through __init__, which cost every failed heartbeat (one event each) about 2 us.
        cls = type(event)
        if _fields_in_dict(cls):
            stamped = object.__new__(cls)
            stamped.__dict__.update(event.__dict__, **changes)
        else:  # a kind with __slots__
            stamped = dataclasses.replace(event, **changes)
        self._events.append(stamped)
        return stamped

    def _client_of(self, group_id: str, member_id: str) -> str | None:
        if member_id in self._member_clients:
            return self._member_clients[member_id]
        if self.member_client is not None:
            found = self.member_client(group_id, member_id)
            if found is not None:
                return found
        # A member id is "<client id>-<uuid>" (or "<instance id>-<uuid>" for static members).
        match = _MEMBER_ID.match(member_id)
        return match.group(1) if match else None

    @property
    def has_new(self) -> bool:
        """Whether events were appended since the last :meth:`take_new`."""
        return self._events.total != self._told

    def take_new(self) -> list[Event]:
        """Events appended since the last call (for listeners, told after each change)."""
        new = self._events.since(self._told)
        self._told = self._events.total
        return new

    @property
    def dropped(self) -> int:
        """How many of the oldest events were dropped to keep the log within its capacity."""
        return self._events.dropped

    @property
    def capacity(self) -> int | None:
        return self._events.capacity

    def since(self, count: int) -> list[Event]:
        """The kept events after the first ``count`` ever appended (reads only those)."""
        return self._events.since(count)

    def __len__(self) -> int:
        """How many events were ever appended (the next event's place; kept or dropped)."""
        return self._events.total

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        """By absolute place (``seq - 1``); a slice leaves out dropped events."""
        return self._events.slice(index) if isinstance(index, slice) else self._events.at(index)

    def of_kind(self, *classes: type[Event]) -> list[Event]:
        return [e for e in self._events if isinstance(e, classes)]

"""The cluster's one ordered log of events, and ``make``: an event from its kind's name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, overload

from .base import KINDS, Event, _fields_in_dict
from .cluster import FaultAdded
from .ring import DEFAULT_CAPACITY, EventRing


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
    them in; the core reads no clock). What an event is about (the broker coordinating its
    group or transactional id, a member's client) is stamped by whoever records it
    (``emitters.py``); the log adds its place and times.
    """

    def __init__(
        self,
        now_ms: Callable[[], int] = lambda: 0,
        wall: Callable[[], float] = lambda: 0.0,
        capacity: int | None = DEFAULT_CAPACITY,
    ):
        self.now_ms = now_ms
        self.wall = wall
        self._events: EventRing[Event] = EventRing(capacity)  # the newest ``capacity`` events
        self._told = 0  # how many events listeners have been given (take_new)

    def append(self, event: Event, now_ms: int | None = None, stamps: dict[str, Any] | None = None) -> Event:
        """Record a copy of ``event`` stamped with its place, ``now_ms`` (the time of the
        transition it records, when the caller knows it: the core's methods do; else the
        cluster clock's) and the real time, and with ``stamps`` (field -> value) of the emitter's."""
        changes: dict[str, Any] = {
            "seq": self._events.total + 1,
            "time_ms": self.now_ms() if now_ms is None else now_ms,
            "wall": self.wall(),
        }
        if stamps:
            changes.update(stamps)
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

"""The cluster's one ordered log of events, and ``make``: an event from its kind's name."""

from __future__ import annotations

import dataclasses
import pickle
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


_RENEWABLE: dict[type, bool] = {}  # event kinds a pickle round trip copies (tried on the first of each)


def _renewable(event: Event) -> bool:
    cls = type(event)
    found = _RENEWABLE.get(cls)
    if found is None:
        try:
            found = _fields_in_dict(cls) and pickle.loads(pickle.dumps(event, pickle.HIGHEST_PROTOCOL)) == event
        except Exception:
            found = False
        _RENEWABLE[cls] = found
    return found


def _picklable(event: Event) -> bool:
    try:
        pickle.dumps(event, pickle.HIGHEST_PROTOCOL)
    except Exception:
        return False
    return True


_PLACEHOLDER: Any = object()  # the place of an event being made anew


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
        self._renewed = 0  # how many events had been appended at the last renew()

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

    def renew(self, between: Callable[[], Any] | None = None) -> int:
        """Make the events kept that were appended since the last call again, equal, all at
        once: pickled, dropped, ``between()`` called, and unpickled into their places; returns
        how many. For a process giving memory back after a burst (``serve``, issue 33, whose
        ``between`` collects and trims): the last events of a burst were made among the
        burst's own objects, each with its strings and numbers, so the hundred a small log
        keeps held a page each of what the burst took. Dropped before ``between``, they leave
        that memory free; made again after it, they take a few pages together. Equal strings
        in them become one object. An event pickle cannot copy stays as it is. An event read
        before and the same event read after compare equal, but are not the same object."""
        start = max(self._renewed, self._events.dropped)
        self._renewed = self._events.total
        fresh = self._events.since(start)
        if not fresh:
            return 0
        stays = {i: event for i, event in enumerate(fresh) if not _renewable(event)}
        try:
            blob = pickle.dumps([None if i in stays else e for i, e in enumerate(fresh)], pickle.HIGHEST_PROTOCOL)
        except Exception:  # a value pickle cannot copy in one of them (a fault's callable): it stays
            stays.update((i, e) for i, e in enumerate(fresh) if i not in stays and not _picklable(e))
            blob = pickle.dumps([None if i in stays else e for i, e in enumerate(fresh)], pickle.HIGHEST_PROTOCOL)
        self._events.replace(start, [stays.get(i, _PLACEHOLDER) for i in range(len(fresh))])
        del fresh
        try:
            if between is not None:
                between()
        finally:
            copies: list[Event | None] = pickle.loads(blob)
            del blob
            strings: dict[str, str] = {}
            for copy in copies:
                if copy is not None:
                    fields = copy.__dict__
                    for name, value in fields.items():
                        if type(value) is str:
                            fields[name] = strings.setdefault(value, value)
            self._events.replace(start, [stays[i] if copy is None else copy for i, copy in enumerate(copies)])
        return len(copies) - len(stays)

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

"""Conditions tests wait for (``await cluster.wait_for(...)``), each able to say what it
waited for and what it saw last, so a timeout explains itself.

A condition is any callable taking the cluster and returning a truthy value, checked on the
cluster's loop after every event and every ``poll``. The classes here are the common ones and
say which events can change their answer (:meth:`Condition.wakes_on`, a key of
``core.events.index``), so a pending wait is woken only by those: an event wait by events of
its kind (and group or topic), a group's state or offsets by that group's events.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..core.events import Event
from ..core.events.index import Key, key_for
from .views import GroupView


class ClusterLike(Protocol):
    """What conditions read of the cluster (the facade's public methods)."""

    def group(self, group_id: str) -> GroupView | None: ...

    def committed(self, group_id: str) -> dict[tuple[str, int], int]: ...

    def events_since(self, count: int) -> list[Event]: ...


class Condition(abc.ABC):
    last_seen: Any = None
    polled: ClassVar[bool] = True  # whether the answer can change without an event it wakes on

    @abc.abstractmethod
    def __call__(self, cluster: ClusterLike) -> Any:
        """Truthy (the value ``wait_for`` returns) once the condition holds."""

    def wakes_on(self) -> list[Key] | None:
        """The events that can change the answer, as index keys; None: every event."""
        return None

    def check(self, cluster: ClusterLike, delivered: list[Event]) -> Any:
        """The answer again, after ``delivered`` (the events it woke on; none after a poll)."""
        return self(cluster)

    def describe(self) -> str:
        return repr(self)


@dataclass(repr=False)
class GroupState(Condition):
    """Group ``group`` is in ``state`` (Kafka's name, e.g. "Stable"), optionally with exactly
    ``members`` members, and optionally with a generation above ``generation_above``."""

    group: str
    state: str | None = "Stable"
    members: int | None = None
    generation_above: int | None = None

    def __call__(self, cluster: ClusterLike) -> Any:
        view = cluster.group(self.group)
        self.last_seen = (
            None if view is None else f"{view.state}, generation {view.generation}, {len(view.members)} members"
        )
        if view is None:
            return False
        if self.state is not None and view.state != self.state:
            return False
        if self.members is not None and len(view.members) != self.members:
            return False
        if self.generation_above is not None and view.generation <= self.generation_above:
            return False
        return view

    def wakes_on(self) -> list[Key] | None:
        return [key_for(None, {"group": self.group})]

    def describe(self) -> str:
        parts = [f"group {self.group!r}"]
        if self.state:
            parts.append(f"is {self.state}")
        if self.members is not None:
            parts.append(f"with {self.members} members")
        if self.generation_above is not None:
            parts.append(f"past generation {self.generation_above}")
        return " ".join(parts)


def generation_above(group: str, generation: int) -> GroupState:
    """The group has started a generation greater than ``generation`` and is Stable in it."""
    return GroupState(group, "Stable", None, generation)


@dataclass(repr=False)
class EventSeen(Condition):
    """An event of ``kind`` whose fields include ``details`` (``client_id`` and ``group`` match
    the event's own), at or after event number ``since``."""

    kind: str
    details: dict[str, Any]
    since: int = 0
    _seen: int = field(default=0, init=False, compare=False)  # events already looked at (their count)
    polled: ClassVar[bool] = False  # only a new event can answer it

    def __call__(self, cluster: ClusterLike) -> Any:
        # Incremental: each call reads only the events appended since the last one.
        return self._first(cluster.events_since(max(self.since, self._seen)))

    def wakes_on(self) -> list[Key] | None:
        return [key_for(self.kind, self.details)]

    def check(self, cluster: ClusterLike, delivered: list[Event]) -> Any:
        # Only the events filed under this wait's key, never the rest of the log.
        return self._first([e for e in delivered if e.seq > max(self.since, self._seen)])

    def _first(self, events: list[Event]) -> Any:
        for event in events:
            self._seen = event.seq
            if event.kind == self.kind and all(event.details.get(k) == v for k, v in self.details.items()):
                return event
        return False

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.details.items())
        return f"event {self.kind}({inner})"


def event(kind: str, *, since: int = 0, **details: Any) -> EventSeen:
    return EventSeen(kind, details, since)


def member_expired(group: str, client_id: str, *, since: int = 0) -> EventSeen:
    """A member of ``group`` whose client id is ``client_id`` had its session expire."""
    return EventSeen("member_expired", {"group": group, "client_id": client_id}, since)


@dataclass(repr=False)
class CommittedOffset(Condition):
    """``group`` has committed at least ``at_least`` on ``topic``-``partition``."""

    group: str
    topic: str
    partition: int
    at_least: int

    def __call__(self, cluster: ClusterLike) -> Any:
        self.last_seen = cluster.committed(self.group).get((self.topic, self.partition))
        return self.last_seen is not None and self.last_seen >= self.at_least

    def wakes_on(self) -> list[Key] | None:
        # transactional offsets become committed with the transaction's marker, whose event
        # names the transactional id, not the group
        return [key_for(None, {"group": self.group}), key_for("txn_committed", {})]

    def describe(self) -> str:
        return f"group {self.group!r} committed offset >= {self.at_least} on {self.topic}-{self.partition}"


def committed_offset(group: str, topic: str, partition: int, at_least: int) -> CommittedOffset:
    return CommittedOffset(group, topic, partition, at_least)


def describe(condition: Callable[..., Any]) -> str:
    if isinstance(condition, Condition):
        text = condition.describe()
        if condition.last_seen is not None:
            text += f" (last seen: {condition.last_seen})"
        return text
    return getattr(condition, "__name__", repr(condition))

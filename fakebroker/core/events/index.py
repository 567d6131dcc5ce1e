"""Pending waits filed by the events that can answer them, so a new event is offered only to
the waits that could match it, not to every wait (nor each wait to every event).

A wait is filed under one key ``(kind, field, value)``: ``kind`` the event kind it wants (None:
any kind), and, where the wait names one, the most selective field of :data:`FIELDS` with its
value (``("member_expired", "group", "g")``); ``(kind, None, None)`` otherwise. An event is
looked up under the few keys it could be filed under, a handful of dict lookups however many
waits are pending. The index only narrows: the wait still checks the rest of what it asks.

>>> index = EventIndex()
>>> index.add(key_for("member_expired", {"group": "g", "client_id": "c"}), "w1")
>>> index.add(key_for("member_expired", {}), "w2")
>>> index.add(key_for(None, {"group": "h"}), "w3")
>>> from fakebroker.core.events import MemberExpired, TopicCreated
>>> sorted(index.watchers_of(MemberExpired(group="g", member="m")))
['w1', 'w2']
>>> sorted(index.watchers_of(MemberExpired(group="h", member="m")))
['w2', 'w3']
>>> sorted(index.watchers_of(TopicCreated(topic="t", partitions=1)))
[]
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Generic, TypeVar

from .base import Event

W = TypeVar("W", bound=Hashable)
Key = tuple[str | None, str | None, Any]
FIELDS = ("group", "topic")  # most selective first; every event answers ``group`` (None if it has none)


def key_for(kind: str | None, details: Mapping[str, Any]) -> Key:
    """The key a wait for an event of ``kind`` (None: any) whose fields include ``details`` is filed under."""
    for name in FIELDS:
        value = details.get(name)
        if value is not None and isinstance(value, Hashable):
            return (kind, name, value)
    return (kind, None, None)


def _keys_of(event: Event) -> list[Key]:
    keys: list[Key] = [(event.kind, None, None)]
    for name in FIELDS:
        value = getattr(event, name, None)
        if value is not None and isinstance(value, Hashable):
            keys += [(event.kind, name, value), (None, name, value)]
    return keys


class EventIndex(Generic[W]):
    def __init__(self) -> None:
        self._by_key: dict[Key, set[W]] = {}

    def add(self, key: Key, watcher: W) -> None:
        self._by_key.setdefault(key, set()).add(watcher)

    def discard(self, key: Key, watcher: W) -> None:
        watchers = self._by_key.get(key)
        if watchers is not None:
            watchers.discard(watcher)
            if not watchers:
                del self._by_key[key]

    def watchers_of(self, event: Event) -> set[W]:
        """The waits filed under a key ``event`` answers to (an empty set when none)."""
        found: set[W] = set()
        for key in _keys_of(event):
            watchers = self._by_key.get(key)
            if watchers:
                found |= watchers
        return found

    def __bool__(self) -> bool:
        return bool(self._by_key)

    def __len__(self) -> int:
        return sum(len(w) for w in self._by_key.values())

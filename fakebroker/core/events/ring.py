"""The bounded store behind the event log: the newest ``capacity`` events, in order.

Places are absolute: the n-th event ever appended has place ``n - 1`` (its ``seq`` is ``n``)
whether or not it is still kept, so a reader remembers ``len(ring)`` and later asks for
:meth:`since` that count; when older events have been dropped to make room, ``dropped``
counts them and a place before the oldest kept one reads as the oldest kept one. Reading
the newest events costs what is read, never a scan of the whole ring.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_CAPACITY = 100_000


class EventRing(Generic[T]):
    def __init__(self, capacity: int | None = DEFAULT_CAPACITY):
        if capacity is not None and capacity < 1:
            raise ValueError("the event log keeps at least one event")
        self.capacity = capacity
        self._items: deque[T] = deque(maxlen=capacity)
        self.dropped = 0  # how many of the oldest events made room for newer ones

    def append(self, item: T) -> None:
        if self.capacity is not None and len(self._items) == self.capacity:
            self.dropped += 1
        self._items.append(item)

    @property
    def total(self) -> int:
        """How many events were ever appended (the place after the newest)."""
        return self.dropped + len(self._items)

    def since(self, count: int) -> list[T]:
        """The kept events at places ``count`` and after, read from the newest end."""
        wanted = self.total - max(count, self.dropped)
        if wanted <= 0:
            return []
        if wanted >= len(self._items):
            return list(self._items)
        newest = list(itertools.islice(reversed(self._items), wanted))
        newest.reverse()
        return newest

    def at(self, index: int) -> T:
        """The event at absolute place ``index`` (negative: from the newest)."""
        if index < 0:
            return self._items[index]
        if index < self.dropped:
            raise IndexError(f"event {index + 1} was dropped (the log keeps the newest {self.capacity})")
        return self._items[index - self.dropped]

    def slice(self, index: slice) -> list[T]:
        start, stop, step = index.indices(self.total)
        if step != 1:
            return [self.at(i) for i in range(max(start, self.dropped), stop, step)]
        return self.since(start)[: max(0, stop - max(start, self.dropped))]

    def replace(self, start: int, items: list[T]) -> None:
        """The items at places ``start`` on replaced by ``items``, those of them still kept,
        in a new deque (the old one's blocks go with it)."""
        first = max(start - self.dropped, 0)
        skip = first - (start - self.dropped)  # items of places dropped meanwhile
        kept = list(self._items)
        new = items[skip : skip + max(0, len(kept) - first)]
        kept[first : first + len(new)] = new
        self._items = deque(kept, maxlen=self.capacity)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

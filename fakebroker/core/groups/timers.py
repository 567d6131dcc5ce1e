"""Keyed timers and parked responses for the sans-IO coordinator.

Scheduling an existing key replaces it, as Kafka's ``CoordinatorTimer`` does. Nothing here
sleeps: the server asks for ``next_deadline()`` and calls ``fire_due(now)``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any


class Pending:
    """A response that is decided later (a parked JoinGroup or SyncGroup)."""

    __slots__ = ("done", "value", "_callbacks")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self._callbacks: list[Callable[[], None]] = []

    def complete(self, value: Any) -> None:
        if self.done:
            return
        self.done, self.value = True, value
        for callback in self._callbacks:
            callback()

    def on_done(self, callback: Callable[[], None]) -> None:
        if self.done:
            callback()
        else:
            self._callbacks.append(callback)


class Timers:
    def __init__(self) -> None:
        self._active: dict[str, tuple[int, int, Callable[[int], None]]] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()
        self.changed: Callable[[], None] = lambda: None  # the server's wake-up

    def schedule(self, key: str, deadline_ms: int, action: Callable[[int], None]) -> None:
        seq = next(self._seq)
        self._active[key] = (deadline_ms, seq, action)
        heapq.heappush(self._heap, (deadline_ms, seq, key))
        self.changed()

    def cancel(self, key: str) -> None:
        self._active.pop(key, None)

    def cancel_prefix(self, prefix: str) -> None:
        for key in [k for k in self._active if k.startswith(prefix)]:
            del self._active[key]

    def deadline(self, key: str) -> int | None:
        entry = self._active.get(key)
        return entry[0] if entry else None

    def next_deadline(self) -> int | None:
        while self._heap:
            deadline, seq, key = self._heap[0]
            entry = self._active.get(key)
            if entry is not None and entry[1] == seq:
                return deadline
            heapq.heappop(self._heap)
        return None

    def fire_due(self, now_ms: int) -> int:
        """Run every timer whose deadline has passed, earliest first; returns how many ran."""
        fired = 0
        while (deadline := self.next_deadline()) is not None and deadline <= now_ms:
            _, seq, key = heapq.heappop(self._heap)
            _, _, action = self._active.pop(key)
            action(now_ms)
            fired += 1
        return fired

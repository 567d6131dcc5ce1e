"""Keyed timers and parked responses for the sans-IO core.

A timer key is a tuple whose first item names the timer kind, e.g. ``("heartbeat", group,
member)``, ``("join", group)``, ``("load", partition)``. Scheduling an existing key replaces
it, as Kafka's ``CoordinatorTimer`` does. Keys are compared item by item, never as text: a
group named ``orders`` and one named ``orders-eu`` share no key prefix.

Nothing here sleeps: the server asks for ``next_deadline()`` and calls ``fire_due(now)``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable
from typing import Any

TimerKey = tuple[Hashable, ...]


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


STALE_SLACK = 64  # stale heap entries tolerated beyond as many as there are live timers


class Timers:
    """The heap holds an entry per scheduling; one cancelled or scheduled again stays there,
    stale, until it reaches the top. Once stale entries outnumber live timers (by
    ``STALE_SLACK``) the heap is rebuilt from the live ones: otherwise 5,000 members that
    joined and left kept theirs (keys, member ids) for their 5-minute join timeout, and
    members heartbeating piled one per heartbeat for a session timeout (issue 33)."""

    def __init__(self) -> None:
        self._active: dict[TimerKey, tuple[int, int, Callable[[int], None]]] = {}
        self._heap: list[tuple[int, int, TimerKey]] = []
        self._seq = itertools.count()

    def schedule(self, key: TimerKey, deadline_ms: int, action: Callable[[int], None]) -> None:
        seq = next(self._seq)
        self._active[key] = (deadline_ms, seq, action)
        heapq.heappush(self._heap, (deadline_ms, seq, key))
        if len(self._heap) > 2 * len(self._active) + STALE_SLACK:
            self._prune()

    def cancel(self, key: TimerKey) -> None:
        if self._active.pop(key, None) is not None and len(self._heap) > 2 * len(self._active) + STALE_SLACK:
            self._prune()

    def cancel_under(self, prefix: TimerKey) -> int:
        """Cancel every timer whose key starts with the items of ``prefix``; returns how many."""
        n = len(prefix)
        doomed = [k for k in self._active if k[:n] == prefix]
        for key in doomed:
            del self._active[key]
        if len(self._heap) > 2 * len(self._active) + STALE_SLACK:
            self._prune()
        return len(doomed)

    def _prune(self) -> None:
        # the key map is copied too: a dict keeps the table it grew to (5,000 members' timers)
        self._active = dict(self._active)
        self._heap = [(deadline, seq, key) for key, (deadline, seq, _) in self._active.items()]
        heapq.heapify(self._heap)

    def deadline(self, key: TimerKey) -> int | None:
        entry = self._active.get(key)
        return entry[0] if entry else None

    def keys(self) -> list[TimerKey]:
        return list(self._active)

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

"""Clocks. The server reads one and hands its time to the core, which reads none.

``RealClock`` follows the wall clock. ``VirtualClock`` stands still until a test moves it:
the core's timers (session, rebalance, sync and initial-delay timeouts, coordinator loading,
offset expiry and retention checks) and LogAppendTime stamps all follow it. Client I/O never
does: Fetch long polls, fault delays and black holes, and the clients' own timeouts run in
real time. ``server.ticker`` fires the core's timers as either clock reaches them.
"""

from __future__ import annotations

import time


class RealClock:
    """Wall-clock time in milliseconds, as Kafka timestamps are."""

    virtual = False

    def now_ms(self) -> int:
        return int(time.time() * 1000)


class VirtualClock:
    """Time that moves only when told to (like Kafka's own ``MockTime``).

    It starts at the wall-clock time of its creation, so record timestamps written by real
    clients stay comparable with it.

    >>> clock = VirtualClock(start_ms=1_000)
    >>> clock.set_ms(46_000 + clock.now_ms()); clock.now_ms()
    47000
    """

    virtual = True

    def __init__(self, start_ms: int | None = None):
        self._now = int(time.time() * 1000) if start_ms is None else start_ms

    def now_ms(self) -> int:
        return self._now

    def set_ms(self, value: int) -> None:
        """Move to ``value``; time never goes backwards, so an earlier value is ignored."""
        self._now = max(self._now, int(value))


Clock = RealClock | VirtualClock

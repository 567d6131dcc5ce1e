"""``cluster.clock``: read the cluster's time and, on a virtual clock, move it.

Advancing fires every timer of the core that falls due on the way, in deadline order and
each at its own deadline (``server.ticker``), then runs the retention and offset-expiry
checks once at the new time. Nothing else moves: clients keep running in real time, so a
jump of 46 s is a jump in which no member heartbeats. ``step`` and ``settle`` split a jump
into steps with real pauses between them, in which live clients get to heartbeat.
"""

from __future__ import annotations

import time

import anyio

from ..server.clock import Clock
from ..server.ticker import Ticker
from .proxy import LoopProxy


class ClockControl:
    def __init__(self, proxy: LoopProxy, clock: Clock, ticker: Ticker):
        self._proxy = proxy
        self._ticker = ticker
        self.raw = clock

    @property
    def virtual(self) -> bool:
        return self.raw.virtual

    def now_ms(self) -> int:
        """The cluster's time in ms (readable before the start and after the stop too)."""
        return self.raw.now_ms()

    def now(self) -> float:
        """The cluster's time in seconds since the epoch."""
        return self.raw.now_ms() / 1000

    def _check(self, seconds: float) -> None:
        self._proxy.check_running()
        if not self.raw.virtual:
            raise RuntimeError(
                "this cluster runs on the real clock; create it with FakeCluster(virtual_time=True) to advance time"
            )
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds != seconds:
            raise ValueError(f"seconds must be a number of seconds >= 0, not {seconds!r}")
        if seconds < 0:
            raise ValueError("time only moves forward")

    def advance(self, seconds: float, *, step: float | None = None, settle: float = 0.0) -> int:
        """Move virtual time forward by ``seconds``; returns the new time in ms.

        With ``step``, time moves ``step`` seconds at a time with a real pause of ``settle``
        seconds after each step (from a test thread; from async code use ``advance_async``).
        """
        self._check(seconds)
        if step is None or settle <= 0:
            return self._proxy.read(self._jump, seconds)
        if self._proxy.on_loop_thread():
            raise RuntimeError(
                "a stepped advance pauses between steps: use `await cluster.clock.advance_async(...)` in async code"
            )
        for chunk in _chunks(seconds, step):
            self._proxy.read(self._jump, chunk)
            time.sleep(settle)
        return self.now_ms()

    async def advance_async(self, seconds: float, *, step: float | None = None, settle: float = 0.0) -> int:
        """``advance`` for async tests: the pauses let the loop (and the clients) run."""
        self._check(seconds)
        for chunk in _chunks(seconds, step or seconds):
            self._jump(chunk)
            await anyio.sleep(settle)
        return self.now_ms()

    def _jump(self, seconds: float) -> int:
        return self._ticker.advance(round(seconds * 1000))


def _chunks(total: float, step: float) -> list[float]:
    if step <= 0:
        raise ValueError("step must be positive")
    out, left = [], total
    while left > 1e-9:
        out.append(min(step, left))
        left -= step
    return out or [0.0]

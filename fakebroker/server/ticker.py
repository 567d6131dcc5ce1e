"""Time drives the core: one ``tick(now_ms)`` whether time is real or virtual.

On the real clock the ticker sleeps until the core's next deadline (or until a request sets
an earlier one) and ticks. On a virtual clock nothing is due until a test moves time:
:meth:`Ticker.advance` walks the clock from deadline to deadline, ticking at each, so every
timer fires at its own time (a session that expires at +45 s starts its rebalance at +45 s,
whose own timeout counts from there), then runs the periodic checks once at the new time.
"""

from __future__ import annotations

import math

from ..core import events as ev
from .clock import VirtualClock
from .runtime import Runtime


class Ticker:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    async def run(self) -> None:
        """Fire the core's timers when due, for as long as the cluster runs."""
        runtime, state, clock = self.runtime, self.runtime.state, self.runtime.clock
        state.start_periodic_checks(clock.now_ms())
        while True:
            now = clock.now_ms()
            deadline = state.next_deadline()
            if deadline is not None and deadline <= now:
                state.tick(now)
                runtime.settle(data_changed=True)  # retention may have dropped records
                continue
            if clock.virtual:  # only what is due now can fire; later deadlines wait for advance()
                await runtime.wait_timers(now + 1, math.inf)
            else:
                await runtime.wait_timers(deadline, math.inf if deadline is None else (deadline - now) / 1000)

    def advance(self, ms: int) -> int:
        """Move a virtual clock ``ms`` forward, firing timers at their own deadlines; returns the
        new time."""
        clock = self.runtime.clock
        if not isinstance(clock, VirtualClock):
            raise RuntimeError(
                "this cluster runs on the real clock; create it with FakeCluster(virtual_time=True) to advance time"
            )
        state = self.runtime.state
        start = clock.now_ms()
        target = start + ms
        while (deadline := state.next_deadline()) is not None and deadline <= target:
            clock.set_ms(deadline)
            state.tick(deadline)
        clock.set_ms(target)
        state.events.append(ev.ClockAdvanced(by_ms=target - start, now_ms=target))
        state.run_periodic_checks(target)
        self.runtime.settle(data_changed=True)
        return target

"""Waiting for conditions instead of sleeping: checked after every event and every ``poll``,
or, for a condition that names the events that can change it (``Condition.wakes_on``), after
each of those only (and every ``poll`` if it also reads state), so pending waits cost
nothing per unrelated event."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio

from ..server.runtime import Runtime
from .proxy import LoopProxy


class WaitTimeout(AssertionError, TimeoutError):
    """``wait_for`` gave up; the message says what it waited for and what it saw last."""


class Waiting:
    def __init__(self, proxy: LoopProxy, runtime: Runtime):
        self._proxy = proxy
        self._runtime = runtime

    async def wait_for(self, cluster: Any, condition: Callable[[Any], Any], timeout: float, poll: float) -> Any:
        from .conditions import Condition  # imported on first wait: a cluster only started needs none

        deadline = anyio.current_time() + timeout
        result = condition(cluster)
        keys = condition.wakes_on() if isinstance(condition, Condition) else None
        if keys is None:
            while not result:
                remaining = self._remaining(deadline, timeout, condition)
                await self._runtime.wait_event(min(poll, remaining))
                result = condition(cluster)
            return result
        assert isinstance(condition, Condition)
        watch = self._runtime.watch_events(keys)  # filed before any await: no event slips past
        try:
            while not result:
                remaining = self._remaining(deadline, timeout, condition)
                delivered = await watch.next(min(poll, remaining) if condition.polled else remaining)
                if delivered or condition.polled:
                    result = condition.check(cluster, delivered)
            return result
        finally:
            self._runtime.unwatch(watch)

    @staticmethod
    def _remaining(deadline: float, timeout: float, condition: Callable[[Any], Any]) -> float:
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            from .conditions import describe

            raise WaitTimeout(f"waited {timeout:g} s for {describe(condition)}")
        return remaining

    def wait_for_sync(
        self, cluster: Any, condition: Callable[[Any], Any], timeout: float, poll: float | Callable[[float], Any]
    ) -> Any:
        if not self._proxy.from_other_thread():
            raise RuntimeError(
                "wait_for_sync is for a cluster run with run_in_thread(); in async code use "
                "`await cluster.wait_for(...)`"
            )
        if not callable(poll):
            return self._proxy.run_async(self.wait_for, cluster, condition, timeout, poll)
        # A client's poll function: the test's thread keeps the client polling (its joins,
        # rebalances and callbacks happen inside poll) and checks the condition between polls.
        deadline = time.monotonic() + timeout
        while True:
            result = self._proxy.read(condition, cluster)
            if result:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                from .conditions import describe

                raise WaitTimeout(f"waited {timeout:g} s for {describe(condition)}")
            poll(min(POLL_SECONDS, remaining))


POLL_SECONDS = 0.05  # how long one call of a client's poll function may wait between checks

"""Waiting for conditions instead of sleeping: checked after every event and every ``poll``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio

from ..server.runtime import Runtime
from .conditions import describe
from .proxy import LoopProxy


class WaitTimeout(AssertionError, TimeoutError):
    """``wait_for`` gave up; the message says what it waited for and what it saw last."""


class Waiting:
    def __init__(self, proxy: LoopProxy, runtime: Runtime):
        self._proxy = proxy
        self._runtime = runtime

    async def wait_for(self, cluster: Any, condition: Callable[[Any], Any], timeout: float, poll: float) -> Any:
        deadline = anyio.current_time() + timeout
        while True:
            result = condition(cluster)
            if result:
                return result
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                raise WaitTimeout(f"waited {timeout:g} s for {describe(condition)}")
            await self._runtime.wait_event(min(poll, remaining))

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
                raise WaitTimeout(f"waited {timeout:g} s for {describe(condition)}")
            poll(min(POLL_SECONDS, remaining))


POLL_SECONDS = 0.05  # how long one call of a client's poll function may wait between checks

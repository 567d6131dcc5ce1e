"""Waiting for conditions instead of sleeping: checked after every event and every ``poll``."""

from __future__ import annotations

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

    def wait_for_sync(self, cluster: Any, condition: Callable[[Any], Any], timeout: float, poll: float) -> Any:
        if not self._proxy.from_other_thread():
            raise RuntimeError(
                "wait_for_sync is for a cluster run with run_in_thread(); in async code use "
                "`await cluster.wait_for(...)`"
            )
        return self._proxy.run_async(self.wait_for, cluster, condition, timeout, poll)

"""The one way into a running cluster from outside its loop.

Every part of the facade calls through one :class:`LoopProxy`: from the test's own thread
the call runs on the cluster's loop and waits (a look or a change straight through trio's
token on a ``run_in_thread()`` trio loop, anything else through anyio's blocking portal); on
the loop it runs at once. After a change, the proxy lets the server settle it (listeners are
told of new events, parked fetches re-check, the ticker sees new timers). Before the cluster
starts and after it stops every call raises :class:`ClusterNotRunning`: one attribute check.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from ..server.runtime import Runtime
from .errors import ClusterNotRunning

if TYPE_CHECKING:  # anyio.from_thread is imported with the first portal: an async cluster may need none
    from anyio.abc import TaskGroup
    from anyio.from_thread import BlockingPortal

T = TypeVar("T")


class NotRunning(RuntimeError):
    """A call from a thread the running cluster does not serve (it runs on another thread's
    loop and lends no portal: see ``threads_may_call``)."""


class LoopProxy:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self.portal: BlockingPortal | None = None
        # run_in_thread() on trio: its loop's token. A synchronous call through it runs in one
        # hop (~70 us); the portal's runs a task it first starts with a hop of its own (~140).
        self.trio_token: trio.lowlevel.TrioToken | None = None
        self.task_group: TaskGroup | None = None
        self.loop_thread: int | None = None
        self.started = False  # once set, a cluster without a task group has stopped
        self._lent: list[BlockingPortal] = []  # portals lent by portal_for_threads(), newest last

    def on_loop_thread(self) -> bool:
        return threading.get_ident() == self.loop_thread

    def from_other_thread(self) -> bool:
        return self.portal is not None and not self.on_loop_thread()

    def check_running(self) -> None:
        """:class:`ClusterNotRunning` unless the cluster runs (between its start and its stop)."""
        if self.task_group is None:
            raise ClusterNotRunning(self.started)

    def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the cluster's loop (a look at the state; nothing changes)."""
        if self.task_group is None:
            raise ClusterNotRunning(self.started)
        if self.from_other_thread():
            if (token := self._direct_token()) is not None:
                return trio.from_thread.run_sync(fn, *args, trio_token=token)
            assert self.portal is not None
            return self.portal.call(fn, *args)
        if self.portal is None and not self.on_loop_thread():
            # a running cluster's state belongs to its loop: another thread would race it
            raise NotRunning(
                "this cluster runs on another thread's loop: call it from that loop, or from a "
                "thread under run_in_thread() or threads_may_call()"
            )
        return fn(*args)

    def read_any(self, fn: Callable[..., T], *args: Any) -> T:
        """``read``, or, when the cluster is not running, ``fn`` at once: for what stays
        readable before the start and after the stop (the event log)."""
        if self.task_group is None:
            return fn(*args)
        return self.read(fn, *args)

    def act(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` (a change of the cluster) on the cluster's loop and settle it."""

        def run() -> T:
            try:
                return fn(*args)
            finally:
                self.runtime.settle(data_changed=True)

        return self.read(run)

    def run_async(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run a coroutine function on the cluster's loop from another thread and wait for it."""
        if self.task_group is None:
            raise ClusterNotRunning(self.started)
        if self.portal is None or self.on_loop_thread():
            raise RuntimeError(
                "this call waits on the cluster's loop: use it from a test thread with "
                "run_in_thread(), or await the async form in async code"
            )
        if (token := self._direct_token()) is not None:
            return trio.from_thread.run(fn, *args, trio_token=token)
        return self.portal.call(fn, *args)

    def _direct_token(self) -> trio.lowlevel.TrioToken | None:
        """The trio token calls from other threads go through, unless a lent portal serves them."""
        return None if self._lent else self.trio_token

    def start_soon(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Start a task in the cluster's task group (from its loop)."""
        if self.task_group is None:
            raise ClusterNotRunning(self.started)
        self.task_group.start_soon(fn, *args)

    @asynccontextmanager
    async def portal_for_threads(self) -> AsyncIterator[None]:
        """On the loop of a cluster started with ``async with``: while inside, other threads'
        calls run on the loop as under ``run_in_thread()``, through a portal lent for the time
        (each user its own, the newest serving, so one leaving never closes another's)."""
        self.check_running()
        if self.portal is not None and not self._lent:  # run_in_thread's own portal serves
            yield
            return
        from anyio.from_thread import BlockingPortal

        async with BlockingPortal() as portal:
            self._lent.append(portal)
            self.portal = portal
            try:
                yield
            finally:
                self._lent.remove(portal)
                self.portal = self._lent[-1] if self._lent else None

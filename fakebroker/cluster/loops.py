"""Event loops on threads of their own, for clusters run with ``run_in_thread()``.

Starting a thread and an event loop in it costs about half a millisecond, and stopping them
as much again: most of a warm cluster's start and stop. A cluster that stopped cleanly gives
its loop back here, and the next cluster of the process borrows it, already running. One
cluster runs on a loop at a time, as before; only idle loops wait here, at most
:data:`IDLE_LOOPS` per backend. Their threads are daemons sleeping in the loop's I/O wait,
so an idle loop never holds up the interpreter's exit.

Under trio a cluster is entered and left by one task on the loop (a task group must be left
by the task that entered it), started and released with one wake-up of the loop each way:
anyio's ``wrap_async_context_manager``, still used under asyncio, waits for two.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

if TYPE_CHECKING:  # anyio.from_thread is imported when a loop thread starts: an async cluster needs none
    from anyio.abc import TaskGroup
    from anyio.from_thread import BlockingPortal

T = TypeVar("T")
IDLE_LOOPS = 2  # enough for a test that runs two clusters side by side
BACKENDS = ("trio", "asyncio")


class LoopEnded(RuntimeError):
    """The event loop a cluster ran on ended while the cluster was still on it; the exception
    that ended it (a bug: none should) is this one's ``__cause__``."""

    def __init__(self, failure: BaseException | None):
        inner = failure
        while inner is not None and len(getattr(inner, "exceptions", ())) == 1:  # a group of one: say what it holds
            inner = inner.exceptions[0]  # type: ignore[attr-defined]
        what = f"{type(inner).__name__}: {inner}" if inner is not None else "no exception recorded"
        super().__init__(f"the cluster's event loop ended while the cluster ran on it ({what})")


class LoopThread:
    """An event loop of ``backend`` running in a daemon thread, reachable through ``portal``."""

    def __init__(self, backend: str):
        self.backend = backend
        self._portal: BlockingPortal | None = None
        self._tasks: TaskGroup | None = None
        self._soon: Callable[..., Any] | None = None
        self.trio_token: Any = None  # the loop's TrioToken under trio (the proxy's direct way in)
        self._failure: BaseException | None = None
        self.idle = True  # no cluster on it, none half started or half stopped
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="fakebroker-loop", daemon=True)
        self._thread.start()
        ready.wait()
        if self._failure is not None:
            raise self._failure

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def portal(self) -> BlockingPortal:
        assert self._portal is not None
        return self._portal

    def _run(self, ready: threading.Event) -> None:
        from anyio.from_thread import BlockingPortal

        async def host() -> None:
            async with BlockingPortal() as portal, anyio.create_task_group() as tasks:
                self._portal, self._tasks = portal, tasks
                # the running loop's way to run a function on it from another thread, without waiting
                if self.backend == "trio":
                    import trio

                    self.trio_token = trio.lowlevel.current_trio_token()
                    self._soon = self.trio_token.run_sync_soon
                else:
                    import asyncio

                    self._soon = asyncio.get_running_loop().call_soon_threadsafe
                ready.set()
                await portal.sleep_until_stopped()
                tasks.cancel_scope.cancel()

        try:
            anyio.run(host, backend=self.backend)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that started the loop
            self._failure = exc
        finally:
            ready.set()

    @contextmanager
    def hosting(self, context: AbstractAsyncContextManager[T]) -> Iterator[T]:
        """Enter ``context`` on the loop, yield what it gave, and leave it there. An exception
        of the block is the block's, not the context's: the context is left as after a clean
        block, and the exception goes on unchanged."""
        self.idle = False
        if self.backend != "trio":  # anyio's task groups spawn only from inside a task there
            wrapped = self.portal.wrap_async_context_manager(context)
            value = wrapped.__enter__()
            try:
                yield value
            finally:
                wrapped.__exit__(None, None, None)
                self.idle = True
            return
        entered: Future[tuple[T, Callable[[], None]]] = Future()
        left: Future[None] = Future()
        assert self._soon is not None
        self._soon(self._spawn, context, entered, left)
        value, release = entered.result()
        try:
            yield value
        finally:
            try:
                release()
            except RuntimeError as exc:  # trio's RunFinishedError: the loop ended under the cluster
                raise LoopEnded(self._failure) from (self._failure or exc)
            left.result()
            self.idle = True

    def _spawn(self, context: AbstractAsyncContextManager[Any], entered: Future[Any], left: Future[Any]) -> None:
        try:
            assert self._tasks is not None and self._soon is not None
            self._tasks.start_soon(_hold, context, self._soon, entered, left)
        except BaseException as exc:  # noqa: BLE001 - the thread waiting on `entered` must hear of it
            entered.set_exception(exc)

    def stop(self) -> None:
        """End the loop (its remaining tasks cancelled) and wait for the thread."""
        if self._portal is not None and self._thread.is_alive():
            try:
                self._portal.call(self._portal.stop, True)
            except RuntimeError:  # the loop already ended
                pass
        self._thread.join()


async def _hold(
    context: AbstractAsyncContextManager[Any],
    soon: Callable[..., Any],
    entered: Future[Any],
    left: Future[None],
) -> None:
    """One task's life on the loop: enter ``context``, wait for the release, leave it. A failure
    goes to the waiting thread, never to the loop's other tasks."""
    leave = anyio.Event()
    try:
        value = await context.__aenter__()
    except BaseException as exc:
        entered.set_exception(exc)
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            raise
        return
    entered.set_result((value, lambda: soon(leave.set)))
    try:
        await leave.wait()
    finally:  # released, or the loop itself is stopping
        try:
            await context.__aexit__(None, None, None)
        except BaseException as exc:
            left.set_exception(exc)
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
        else:
            left.set_result(None)


_idle: dict[str, list[LoopThread]] = {}
_idle_lock = threading.Lock()


def _forget_after_fork() -> None:
    _idle.clear()  # the threads behind them exist only in the parent


os.register_at_fork(after_in_child=_forget_after_fork)


@contextmanager
def lend(backend: str) -> Iterator[LoopThread]:
    """A running loop of ``backend`` for one cluster at a time: kept for the next one if the
    cluster it hosted was left cleanly, stopped otherwise (it may still hold anything)."""
    loop = borrow(backend)
    try:
        yield loop
    finally:
        if loop.idle:
            give_back(loop)
        else:
            loop.stop()


def borrow(backend: str) -> LoopThread:
    """A running loop of ``backend``: an idle one, else a new one."""
    with _idle_lock:
        waiting = _idle.get(backend)
        if waiting:
            return waiting.pop()
    return LoopThread(backend)


def give_back(loop: LoopThread) -> None:
    """Keep ``loop`` for the next cluster, or stop it when enough loops wait already."""
    with _idle_lock:
        waiting = _idle.setdefault(loop.backend, [])
        if len(waiting) < IDLE_LOOPS and loop.alive:
            waiting.append(loop)
            return
    loop.stop()


def stop_idle() -> int:
    """Stop every idle loop and wait for its thread; returns how many there were."""
    with _idle_lock:
        idle = [loop for waiting in _idle.values() for loop in waiting]
        _idle.clear()
    for loop in idle:
        loop.stop()
    return len(idle)

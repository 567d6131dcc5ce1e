"""Parked fetches wait on the partitions they read: records appended elsewhere do not wake
them; records appended to theirs, or a change of every partition's state, do."""

from __future__ import annotations

import trio
import trio.testing

from fakebroker.core.configs import BrokerConfig
from fakebroker.server.clock import RealClock
from fakebroker.server.runtime import Runtime


def _runtime() -> Runtime:
    return Runtime("c", BrokerConfig(), RealClock())


async def _woken(runtime: Runtime, partitions, wake) -> bool:
    """Whether ``wake()`` ends a wait on ``partitions`` (or it runs to its deadline)."""
    done = trio.Event()
    result = {}

    async def waiter() -> None:
        start = trio.current_time()
        await runtime.wait_data(start + 5, partitions)
        result["early"] = trio.current_time() - start < 4
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        wake()
        with trio.move_on_after(0.5):
            await done.wait()
        nursery.cancel_scope.cancel()
    return result.get("early", False)


def test_a_produce_elsewhere_does_not_wake_a_parked_fetch():
    runtime = _runtime()
    assert not trio.run(_woken, runtime, {("a", 0)}, lambda: runtime.settle(partitions={("b", 0)}))
    assert runtime._data_waiters == {}  # a waiter that gave up leaves nothing behind


def test_a_produce_to_its_partition_wakes_it():
    runtime = _runtime()
    assert trio.run(_woken, runtime, {("a", 0), ("a", 1)}, lambda: runtime.settle(partitions={("a", 1)}))


def test_a_change_of_everything_wakes_every_fetch():
    runtime = _runtime()  # leader moves, deletions, faults and timers say data_changed
    assert trio.run(_woken, runtime, {("a", 0)}, lambda: runtime.settle(data_changed=True))


def test_a_waiter_of_no_partition_in_particular_wakes_on_any_change():
    runtime = _runtime()
    assert trio.run(_woken, runtime, None, lambda: runtime.settle(partitions={("b", 0)}))

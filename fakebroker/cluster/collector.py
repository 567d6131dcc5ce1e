"""The cyclic garbage collector while clusters run.

A cluster serving thousands of connections keeps tens of objects per connection (its task,
coroutines, cancel scopes, the request parked in a JoinGroup or a Fetch), and each rebalance
makes and drops as many again. With CPython's default thresholds, (700, 10, 10), the
collector walks all of them in a full collection dozens of times while 10,000 members join:
most of the broker's CPU (``benchmarks/groups.py``: 10,000 members Stable in 33 s, 9 s with
the thresholds below). So while at least one cluster runs, the thresholds are (20,000, 20,
20) in place of (700, 10, 10): young collections every 20,000 allocations, the older
generations' turns half as often. When the last one stops, the process gets back the
thresholds it had (unless something changed them meanwhile) at the end of the next collection,
not at once: the lowered threshold set off a young collection while the stopping cluster was
still referenced, which moved its objects to the middle generation, and that generation's
collections then walked ten clusters' worth of them, 2-3 ms each. A cluster that starts before
then keeps the raised thresholds. So a suite starting a cluster per test collects each one young,
once it is garbage: 0.2 ms of collections per test instead of 0.55.
``FakeCluster(tune_gc=False)`` leaves the collector alone.
"""

from __future__ import annotations

import gc
import threading

RUNNING_THRESHOLDS = (20_000, 20, 20)

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, ...] | None = None
_set: tuple[int, ...] | None = None
_restore_pending = False  # the last cluster stopped: give them back after the next collection


def hold() -> None:
    """A cluster starts: the thresholds are raised (never lowered) while any cluster runs."""
    global _holders, _saved, _set, _restore_pending
    with _lock:
        _holders += 1
        if _holders > 1:
            return
        if _restore_pending:  # still raised since the last cluster stopped: they stay
            _restore_pending = False
            if gc.get_threshold() == _set:
                return
        _saved = before = gc.get_threshold()
        if before[0] == 0:  # the collector is switched off this way: leave it so
            _set = None
            return
        _set = tuple(max(was, raised) for was, raised in zip(before, RUNNING_THRESHOLDS))
        gc.set_threshold(*_set)


def release() -> None:
    """A cluster stopped: the last one out has the process get back what it had, after the
    next collection."""
    global _holders, _saved, _set, _restore_pending
    with _lock:
        _holders -= 1
        if _holders > 0:
            return
        if _set is None or _saved is None or gc.get_threshold() != _set:
            _saved = _set = None
            return
        _restore_pending = True
        if _after_collection not in gc.callbacks:
            gc.callbacks.append(_after_collection)


def _after_collection(phase: str, info: dict[str, int]) -> None:
    """A gc callback: the end of the first collection after the last cluster stopped gives
    the process its own thresholds again."""
    if phase != "stop" or not _restore_pending:
        return
    if not _lock.acquire(blocking=False):  # hold() or release() is running: the next one
        return
    try:
        _give_back()
    finally:
        _lock.release()


def restore_now() -> None:
    """Give back the thresholds a stopped cluster left raised without waiting for a collection
    (for tests that check them)."""
    with _lock:
        _give_back()


def _give_back() -> None:
    """With ``_lock`` held: the process's own thresholds, if no cluster runs and nothing changed
    them meanwhile."""
    global _saved, _set, _restore_pending
    if _restore_pending and _holders == 0:
        _restore_pending = False
        if _set is not None and _saved is not None and gc.get_threshold() == _set:
            gc.set_threshold(*_saved)
        _saved = _set = None

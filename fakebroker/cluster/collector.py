"""The cyclic garbage collector while clusters run.

A cluster serving thousands of connections keeps tens of objects per connection (its task,
coroutines, cancel scopes, the request parked in a JoinGroup or a Fetch), and each rebalance
makes and drops as many again. With CPython's default thresholds, (700, 10, 10), the
collector walks all of them in a full collection dozens of times while 10,000 members join:
most of the broker's CPU (``benchmarks/groups.py``: 10,000 members Stable in 33 s, 9 s with
the thresholds below). So while at least one cluster runs, the thresholds are (20,000, 20,
20) in place of (700, 10, 10): young collections every 20,000 allocations, the older
generations' turns half as often; when the last one stops, the process gets back the
thresholds it had, unless something changed them meanwhile.
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


def hold() -> None:
    """A cluster starts: the thresholds are raised (never lowered) while any cluster runs."""
    global _holders, _saved, _set
    with _lock:
        _holders += 1
        if _holders > 1:
            return
        _saved = before = gc.get_threshold()
        if before[0] == 0:  # the collector is switched off this way: leave it so
            _set = None
            return
        _set = tuple(max(was, raised) for was, raised in zip(before, RUNNING_THRESHOLDS))
        gc.set_threshold(*_set)


def release() -> None:
    """A cluster stopped: the last one out puts back what the process had."""
    global _holders, _saved, _set
    with _lock:
        _holders -= 1
        if _holders > 0:
            return
        if _set is not None and _saved is not None and gc.get_threshold() == _set:
            gc.set_threshold(*_saved)
        _saved = _set = None

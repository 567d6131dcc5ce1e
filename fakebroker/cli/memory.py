"""What a burst of connections or group members took goes back to the system, in the process
``fakebroker serve`` owns (issue 33). Nothing here runs for an embedded ``FakeCluster``: a
test's process and its allocator are the test's.

Measured with ``benchmarks/serve_memory.py --bursts``: 10,000 connections open at once cost
the server about 12 KB of small Python objects each (a connection, its trio task, socket and
scopes), all of it garbage once they close. What kept it after the reference cycles were
fixed (``server/connection.py``):

- CPython's small-object allocator (pymalloc) hands a 1 MiB arena back only when every object
  in it is gone, and the few objects that outlive a burst (its events in the event log, a
  timer, an object replaced meanwhile) are spread over most of the burst's arenas;
- glibc's malloc keeps freed memory until ``malloc_trim``.

So :func:`serve_with_malloc` starts the serve command again, at once and in the same process
(``execve``), with Python's documented ``PYTHONMALLOC=malloc``: small objects then come from
glibc's malloc, whose free pages go back one by one. And :class:`Reclaimer`, run by
:func:`reclaim_when_quiet`, makes a full collection and calls ``malloc_trim(0)`` once the
process is quiet after a burst. Only on CPython on Linux with glibc; a ``PYTHONMALLOC`` the
user set is kept as it is.

A page goes back only when nothing on it is alive, and what outlives a burst was made in the
middle of it: a small event log's last hundred events (each with its strings and numbers) and
the member -> client ids beside it kept ~2.5 MB of pages after 10,000 connections and 5,000
members. So the reclaim drops them first, collects and trims, and makes them again, together,
from a pickle (``FakeCluster.renew_events``, ``EventLog.renew``), then trims once more. trio's
own tables are kept small by the broker, which serves its connections a few hundred to a task
group (``server/broker.py``).

ctypes, for ``malloc_trim`` only: a glibc function with no Python binding in any maintained
package.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import logging
import os
import sys
import time
from collections.abc import Callable

log = logging.getLogger("fakebroker")

CHECK_S = 1.0  # how often the reclaimer looks
QUIET_CPU = 0.02  # quiet: the process used less than this share of a core since the last look
GROWTH_BYTES = 8 << 20  # give back once quiet after RSS grew this much over its lowest since the last time,
FDS_DROP = 64  # or after this many connections (descriptors) closed, from their most since then,
WORK_CPU_S = 1.0  # or after this much CPU time of work since then (garbage a collection may free) ...
WORK_PER_RECLAIM = 20  # ... and at least this many times what the last reclaim cost


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library's symbols, on Linux with glibc only."""
    if sys.platform != "linux":
        return None
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):  # "glibc 2.36"; musl has no such name
            return None
        libc = ctypes.CDLL(None)
    except (ValueError, OSError):
        return None
    if hasattr(libc, "malloc_trim"):
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


def trim() -> bool:
    """``malloc_trim(0)``: glibc hands the free pages of every arena back to the system; False
    where there is no glibc."""
    libc = _glibc()
    if libc is None or not hasattr(libc, "malloc_trim"):
        return False
    libc.malloc_trim(0)
    return True


def serve_with_malloc(argv: list[str] | None = None) -> None:
    """When this process is ``fakebroker serve`` (its command line's first argument) on
    CPython with glibc and ``PYTHONMALLOC`` is unset: replace it by the same command with
    ``PYTHONMALLOC=malloc`` (same process id, descriptors and arguments, interpreter options
    included). Otherwise return. Called first thing by the command line's entry point, before
    anything is imported or started; never by ``FakeCluster`` or a test's ``CliRunner``."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["serve"] or "PYTHONMALLOC" in os.environ or sys.implementation.name != "cpython":
        return
    if _glibc() is None:
        return
    # sys.orig_argv: the interpreter's own options, then the script or -m module and its arguments
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, "PYTHONMALLOC": "malloc"})


def rss_bytes() -> int | None:
    """This process's resident set size (``/proc/self/statm``), None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def open_fds() -> int | None:
    """How many descriptors this process has open (``/proc/self/fd``): its connections, about;
    None where it cannot be read. Read once a second: 10 us at idle, 8 ms with 10,000 open."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def collect_and_trim() -> None:
    """A full collection (which also empties the free lists of floats, tuples, ...), then
    ``malloc_trim(0)``."""
    gc.collect()
    trim()


class Reclaimer:
    """Decides, at each :meth:`check`, whether to give memory back. Only when the process is
    quiet (it used less than ``quiet`` of a core since the last check: the burst is over and
    nobody waits on the collection), and only after a burst, one of:

    - RSS grew by ``growth`` bytes over its lowest since the last reclaim;
    - ``fds_drop`` descriptors closed, from the most open since the last reclaim: connections
      ended, and what they held is garbage now (also when it was still in use at the last
      reclaim, such as members that had joined and not yet left);
    - the process did ``work`` CPU seconds of work since, and ``work_per_reclaim`` times what
      the last reclaim cost (garbage only a collection frees).

    Readings are injected, so a test can drive it. Each is cheap: no reading walks the heap
    (glibc's ``mallinfo2`` took 30-70 ms on a heap a burst had fragmented)."""

    def __init__(
        self,
        *,
        rss: Callable[[], int | None] = rss_bytes,
        fds: Callable[[], int | None] = open_fds,
        cpu: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
        reclaim: Callable[[], object] = collect_and_trim,
        quiet: float = QUIET_CPU,
        growth: int = GROWTH_BYTES,
        fds_drop: int = FDS_DROP,
        work: float = WORK_CPU_S,
        work_per_reclaim: float = WORK_PER_RECLAIM,
    ):
        self._rss, self._fds, self._cpu, self._clock, self._reclaim = rss, fds, cpu, clock, reclaim
        self.quiet, self.growth, self.fds_drop = quiet, growth, fds_drop
        self.work, self.work_per_reclaim = work, work_per_reclaim
        self.reclaims = 0
        self._last = (clock(), cpu())  # at the last check
        self._after_reclaim()
        self._cost = 0.0  # CPU time the last reclaim took

    def _after_reclaim(self) -> None:
        self.floor = self._rss()  # the lowest RSS since
        self.fds_peak = self._fds()  # the most descriptors open since
        self._since = self._cpu()  # CPU time then

    def check(self) -> bool:
        """Look once; True when memory was given back."""
        now, cpu, rss, fds = self._clock(), self._cpu(), self._rss(), self._fds()
        (then, cpu_then), self._last = self._last, (now, cpu)
        if rss is not None:
            self.floor = rss if self.floor is None else min(self.floor, rss)
        if fds is not None:
            self.fds_peak = fds if self.fds_peak is None else max(self.fds_peak, fds)
        if (cpu - cpu_then) / max(now - then, 1e-6) >= self.quiet or not self._due(rss, fds, cpu):
            return False
        self._reclaim()
        self.reclaims += 1
        self._after_reclaim()
        self._cost = self._since - cpu
        self._last = (self._clock(), self._since)  # the reclaim's own CPU is not load
        return True

    def _due(self, rss: int | None, fds: int | None, cpu: float) -> bool:
        if rss is not None and self.floor is not None and rss - self.floor >= self.growth:
            return True
        if fds is not None and self.fds_peak is not None and self.fds_peak - fds >= self.fds_drop:
            return True
        work = cpu - self._since
        return work >= self.work and work >= self.work_per_reclaim * self._cost


async def reclaim_when_quiet(renew: Callable[[Callable[[], None]], object] | None = None) -> None:
    """For as long as the server runs: memory given back after each burst (see the module's
    docstring). With ``renew`` (the cluster's :meth:`~fakebroker.FakeCluster.renew_events`),
    each reclaim drops what the event log keeps of the burst, collects and trims, makes it
    again (in a few pages) and trims once more."""
    import anyio  # here: the entry point imports this module before anything else

    def reclaim() -> None:
        if renew is None:
            collect_and_trim()
            return
        renew(collect_and_trim)
        trim()

    reclaimer = Reclaimer(reclaim=reclaim)
    while True:
        await anyio.sleep(CHECK_S)
        start = time.perf_counter()
        if reclaimer.check() and log.isEnabledFor(logging.DEBUG):
            log.debug(
                "memory given back in %.1f ms: RSS now %s MiB",
                (time.perf_counter() - start) * 1000,
                None if reclaimer.floor is None else reclaimer.floor >> 20,
            )

"""Runs of fixed loopback ports for tests that must name their ports up front.

A port from ``bind(("127.0.0.1", 0))`` lies in the kernel's ephemeral range, where every outgoing
connection on the machine (other tests, other xdist workers) also takes its local port; the
next few ports after it are taken that way within milliseconds under load (Linux even gives
connect() the even ports and bind(0) the odd ones, so P+1 is the likeliest to go). So the
runs offered here lie below that range, where only another listener naming its port can take
them, and the caller starts again with the next run when that happens (``EADDRINUSE``).
"""

from __future__ import annotations

import errno
import random
import socket
from collections.abc import Iterator
from contextlib import contextmanager

ATTEMPTS = 30


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default; other systems' ranges start higher


def _free(base: int, count: int) -> bool:
    held = []
    try:
        for port in range(base, base + count):
            s = socket.socket()
            held.append(s)
            s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        for s in held:
            s.close()


def port_runs(count: int = 1, attempts: int = ATTEMPTS) -> Iterator[int]:
    """Bases P such that P..P+count-1 were free when offered, below the ephemeral range; the
    caller tries each until one starts (see :func:`taken`). Raises after ``attempts``."""
    rng = random.Random()  # not the test's seeded random: xdist workers must not pick alike
    high = max(_ephemeral_low() - count, 10_001)
    for _ in range(attempts):
        base = rng.randrange(10_000, high)
        if _free(base, count):
            yield base
    raise RuntimeError(f"no run of {count} free ports found in {attempts} attempts")


def taken(error: OSError) -> bool:
    """Whether a start failed because another listener took the run meanwhile: try the next."""
    return error.errno == errno.EADDRINUSE


@contextmanager
def a_taken_port() -> Iterator[int]:
    """A loopback port a listener holds for the block: a cluster told to bind it cannot start."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]

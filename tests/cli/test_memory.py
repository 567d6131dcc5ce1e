"""``fakebroker.cli.memory``: when the serve command gives memory back, and how it starts itself
again with ``PYTHONMALLOC=malloc`` (the whole of it is measured in ``test_serve_memory.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fakebroker.cli.memory import Reclaimer

ROOT = Path(__file__).resolve().parents[2]
MB = 1 << 20


class Process:
    """Readings a test sets: RSS, open descriptors, CPU seconds, the clock."""

    def __init__(self) -> None:
        self.rss, self.fds, self.cpu, self.now = 40 * MB, 10, 0.0, 0.0
        self.reclaimed = 0

    def reclaimer(self) -> Reclaimer:
        def reclaim() -> None:
            self.reclaimed += 1
            self.rss, self.cpu = 41 * MB, self.cpu + 0.05

        return Reclaimer(
            rss=lambda: self.rss, fds=lambda: self.fds, cpu=lambda: self.cpu, clock=lambda: self.now, reclaim=reclaim
        )

    def second(self, *, cpu: float = 0.0, rss: int = 0, fds: int = 0) -> None:
        self.now += 1.0
        self.cpu += cpu
        self.rss += rss
        self.fds += fds


def test_memory_goes_back_once_quiet_after_rss_grew():
    p = Process()
    r = p.reclaimer()
    p.second(cpu=0.9, rss=100 * MB)  # a burst: busy
    assert not r.check()
    p.second(cpu=0.005)  # quiet now
    assert r.check() and p.reclaimed == 1
    p.second()
    assert not r.check()  # nothing new since


def test_memory_freed_after_a_reclaim_goes_back_when_connections_close():
    """Members joined (RSS grew), the process went quiet (a reclaim, nothing to free: they are
    alive), then they left and closed their connections: RSS does not grow, but what they
    held is garbage."""
    p = Process()
    r = p.reclaimer()
    p.second(cpu=0.5, rss=20 * MB, fds=1_000)
    assert not r.check()
    p.second()
    assert r.check() and p.reclaimed == 1  # mid-burst
    p.second(cpu=0.3, fds=-1_000)  # they leave
    assert not r.check()
    p.second()
    assert r.check() and p.reclaimed == 2
    p.second(fds=10)
    p.second(fds=-10)
    assert not r.check()  # a few connections come and go: nothing worth a collection


def test_work_without_growth_is_collected_after_enough_of_it_and_not_while_busy():
    p = Process()
    r = p.reclaimer()
    p.second(cpu=0.5)
    assert not r.check()
    p.second()
    assert not r.check()  # half a second of work: not worth a collection
    for _ in range(3):
        p.second(cpu=0.4)
        assert not r.check()  # busy
    p.second()
    assert r.check()


def test_a_process_that_never_quiets_down_is_left_alone():
    p = Process()
    r = p.reclaimer()
    for _ in range(20):
        p.second(cpu=0.5, rss=10 * MB, fds=100)
        assert not r.check()
    assert p.reclaimed == 0


def allocator_of(*command: str, env: dict[str, str] | None = None) -> str:
    """What ``python -m fakebroker COMMAND`` runs under once the entry point is done: a stand-in
    for the command line prints the allocator's name and the arguments it got."""
    script = (
        "import sys, fakebroker.cli.memory as m, ctypes\n"
        "m.serve_with_malloc()\n"
        "name = ctypes.pythonapi._PyMem_GetCurrentAllocatorName\n"
        "name.restype = ctypes.c_char_p\n"
        "print(name().decode(), sys.argv[1:])\n"
    )
    return subprocess.run(
        [sys.executable, "-X", "utf8", "-c", script, *command],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()


@pytest.mark.skipif(sys.platform != "linux", reason="glibc only")
def test_serve_starts_again_with_malloc_keeping_its_arguments_and_options():
    assert allocator_of("serve", "--port", "0") == "malloc ['serve', '--port', '0']"


@pytest.mark.skipif(sys.platform != "linux", reason="glibc only")
def test_other_commands_and_a_users_pythonmalloc_are_left_alone():
    assert allocator_of("run", "x.py") == "pymalloc ['run', 'x.py']"
    assert allocator_of("serve", env={"PYTHONMALLOC": "pymalloc"}) == "pymalloc ['serve']"

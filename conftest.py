"""A hard limit per test for the whole repository's suite (tests/, examples/, doctests).

pytest-timeout (ini ``timeout``, signal method) fails a test that runs too long, with every
thread's stack in its report. A test blocked inside C code never sees that signal, so past
``HARD_LIMIT_S`` faulthandler's own watchdog thread writes every thread's stack to a file and
ends the process: under xdist the worker is reported crashed and replaced, the run goes on,
and the controller prints the stacks at the end. A hang costs one test, never the CI run.
"""

from __future__ import annotations

import faulthandler
import os
import re
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest

HARD_LIMIT_S = 900  # above the ini's timeout (600 s), which fails the test more gently first
_DIR_VARIABLE = "FAKEBROKER_HANG_DUMPS"


def pytest_configure(config: pytest.Config) -> None:
    # set before xdist starts its workers, which inherit it
    if _DIR_VARIABLE not in os.environ:
        os.environ[_DIR_VARIABLE] = tempfile.mkdtemp(prefix="fakebroker-hangs-")


def _dump_path(item: pytest.Item) -> Path:
    return Path(os.environ[_DIR_VARIABLE]) / (re.sub(r"[^\w.-]+", "_", item.nodeid)[-150:] + ".txt")


_HUNG_BEFORE = pytest.StashKey[bool]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # xdist hands a crashed worker's test to its replacement: fail it there, do not hang again
    if item.stash.get(_HUNG_BEFORE, False):
        pytest.fail(f"hung earlier in this run (over {HARD_LIMIT_S} s): its stacks are in the summary", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    path = _dump_path(item)
    if path.exists():
        item.stash[_HUNG_BEFORE] = True
        return (yield)
    with open(path, "w") as dump:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        dump.write(f"{item.nodeid} ran over {HARD_LIMIT_S} s on {worker}; every thread's stack:\n")
        dump.flush()
        faulthandler.dump_traceback_later(HARD_LIMIT_S, exit=True, file=dump)
        try:
            return (yield)
        finally:
            faulthandler.cancel_dump_traceback_later()
            path.unlink()


def pytest_unconfigure(config: pytest.Config) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        try:
            os.rmdir(os.environ[_DIR_VARIABLE])  # empty unless a test hung
        except OSError:
            pass


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for dump in sorted(Path(os.environ[_DIR_VARIABLE]).glob("*.txt")):
        terminalreporter.section(f"hung test: {dump.name}")
        terminalreporter.write(dump.read_text(errors="replace")[-20000:] + "\n")

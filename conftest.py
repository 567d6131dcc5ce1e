"""Hard limits for the whole repository's suite (tests/, examples/, doctests).

pytest-timeout (ini ``timeout``, or a test's ``timeout`` mark; signal method) fails a test
that runs too long, with every thread's stack in its report. A test blocked inside C code
(librdkafka's ``close()``, say) never sees that signal, so ``HARD_MARGIN_S`` later
faulthandler's own watchdog thread writes every thread's stack to a file and ends the
process: under xdist the worker is reported crashed and replaced, the run goes on, and the
controller prints the stacks at the end. A hang costs one test, never the CI run.

The whole session has a limit too (``FAKEBROKER_SESSION_LIMIT_S``, default 75 minutes, inside
CI's 90): past it the controller names the tests still running and interrupts the run, so
even a hang nothing above catches ends with a report instead of CI's own timeout.
"""

from __future__ import annotations

import faulthandler
import os
import re
import signal
import tempfile
import threading
import time
from collections.abc import Generator
from pathlib import Path

import pytest

# past a test's own timeout, which fails it more gently first
HARD_MARGIN_S = float(os.environ.get("FAKEBROKER_HARD_MARGIN_S", 60))
_DIR_VARIABLE = "FAKEBROKER_HANG_DUMPS"
_STARTED_VARIABLE = "FAKEBROKER_RUN_STARTED"  # when the controller started: older dumps are not this run's
_SESSION_LIMIT_VARIABLE = "FAKEBROKER_SESSION_LIMIT_S"
SIGINT_AGAIN_S = 5.0  # past the limit, the interrupt is sent again this often until the run has stopped
SESSION_LIMIT_S = 75 * 60
_session_report: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # set before xdist starts its workers, which inherit it
    if _DIR_VARIABLE not in os.environ:
        os.environ[_DIR_VARIABLE] = tempfile.mkdtemp(prefix="fakebroker-hangs-")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ[_STARTED_VARIABLE] = repr(time.time())
        # A run started by a test under xdist inherits its worker's ignored SIGINT, which would
        # make the limit's interrupt (and Ctrl-C) do nothing: take Python's own handler back.
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        limit = float(os.environ.get(_SESSION_LIMIT_VARIABLE, SESSION_LIMIT_S))
        threading.Thread(target=_end_session_after, args=(limit,), name="session-limit", daemon=True).start()


def _end_session_after(limit: float) -> None:
    time.sleep(limit)
    # a test's file holds one line while it runs, and its stacks once it hung
    running = [lines[0] for dump in _this_runs_dumps() if len(lines := _lines(dump)) == 1]
    report = f"\nthe session ran over {limit:g} s ({_SESSION_LIMIT_VARIABLE}); running now:\n"
    report += "".join(f"  {line}\n" for line in running) or "  (none)\n"
    _session_report.append(report)  # for the summary: the stderr of a run without xdist is captured
    os.write(2, report.encode())
    # pytest stops, prints its summary and exits non-zero. Again every few seconds until it has:
    # one SIGINT delivered while plugins were still starting was once lost on a loaded machine
    while True:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(SIGINT_AGAIN_S)


def _this_run(path: Path) -> bool:
    try:
        return path.stat().st_mtime >= float(os.environ.get(_STARTED_VARIABLE, 0))
    except OSError:  # its test has just ended
        return False


def _this_runs_dumps() -> list[Path]:
    """The dump files of this run's tests (FAKEBROKER_HANG_DUMPS may name a folder used before)."""
    return [dump for dump in sorted(Path(os.environ[_DIR_VARIABLE]).glob("*.txt")) if _this_run(dump)]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()
    except OSError:  # its test has just ended
        return []


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """pytest-xdist 3.8's ``--dist loadfile`` after a crashed worker is replaced: it puts the
    files the dead worker had finished back on the queue as empty units, which never complete
    (pytest-xdist#1378), and gives the replacement a file of one test, which it holds until it
    learns the next (#1327); either way every worker waits forever and the run never ends."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class CrashSafeLoadFileScheduling(LoadFileScheduling):
        def remove_node(self, node: object) -> str | None:
            finished = [scope for scope, unit in self.assigned_work.get(node, {}).items() if all(unit.values())]
            for scope in finished:
                del self.assigned_work[node][scope]
            return super().remove_node(node)

        def _reschedule(self, node: object) -> None:
            # a replacement still collecting has no collection to take tests from yet (xdist's
            # own raised KeyError here when another worker's collection ended first); it gets
            # its files when its own collection ends
            if node.shutting_down or node not in self.registered_collections:
                return
            while self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
                self._assign_work_unit(node)
            if not self.workqueue:  # all it will get: it may run its last test now
                node.shutdown()

    return CrashSafeLoadFileScheduling(config, log)


def _timeout_of(item: pytest.Item) -> float:
    """The test's pytest-timeout limit: its ``timeout`` mark, else the ini's (0: none)."""
    mark = item.get_closest_marker("timeout")
    if mark is not None and mark.args:
        return float(mark.args[0] or 0)
    try:
        return float(item.config.getini("timeout") or 0)
    except ValueError:  # pytest-timeout not loaded (-p no:timeout)
        return 0.0


def _dump_path(item: pytest.Item) -> Path:
    return Path(os.environ[_DIR_VARIABLE]) / (re.sub(r"[^\w.-]+", "_", item.nodeid)[-150:] + ".txt")


_HUNG_BEFORE = pytest.StashKey[bool]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # xdist hands a crashed worker's test to its replacement: fail it there, do not hang again
    if item.stash.get(_HUNG_BEFORE, False):
        pytest.fail("ended its worker earlier in this run (hung, or the process died): see the summary", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    path = _dump_path(item)
    if _this_run(path):
        item.stash[_HUNG_BEFORE] = True
        return (yield)
    timeout = _timeout_of(item)  # 0: bounded some other way (its own frame count)
    limit = timeout + HARD_MARGIN_S
    with open(path, "w") as dump:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        started = time.strftime("%H:%M:%S")
        ending = f"ended past {limit:g} s with every thread's stack" if timeout else "no time limit"
        dump.write(f"{item.nodeid} (started {started} on {worker}; {ending}):\n")
        dump.flush()
        if timeout:
            faulthandler.dump_traceback_later(limit, exit=True, file=dump)
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
    if _session_report:
        terminalreporter.section("session limit")
        terminalreporter.write(_session_report[0])
    for dump in _this_runs_dumps():
        text = dump.read_text(errors="replace")
        hung = text.count("\n") > 1  # its stacks follow the first line
        terminalreporter.section(f"{'hung test' if hung else 'its worker died in'}: {dump.name}")
        terminalreporter.write(text[-20000:] + "\n")

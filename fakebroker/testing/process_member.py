"""A churn member handle over an operating-system process: the application under test as it
ships (a Kafka Streams app's jar, a service binary), started, stopped and stalled whole.

:class:`ProcessMember` has what :mod:`fakebroker.testing.churn`'s blocks need (``name``,
``client_id``, ``start()``, ``stop()``, ``stall(seconds)``): ``start`` runs ``command``,
``stop`` sends SIGTERM (a JVM runs its shutdown hooks: a Kafka Streams app's
``KafkaStreams.close()`` leaves the group) and waits for the exit, killing it past
``stop_timeout``; ``stall`` freezes the process with SIGSTOP and thaws it with SIGCONT
``seconds`` later, so every thread of it (heartbeats too) stops, as in a long GC pause or a
machine that hangs. Its output goes to ``log`` (a file; never a pipe nobody reads)::

    app = ProcessMember("a", ["java", "-cp", "app.jar", "com.acme.WordCount", bootstrap],
                        client_id="wordcount-a", log=tmp_path / "a.log")
    churn(cluster, [app, other], group="wordcount", topic="lines", seed=7)

``client_id`` is the ``client.id`` the process gives its Kafka clients: the churn blocks cut its
connections by it, and find its group members by it (a Kafka Streams member's client id is
``<client.id>-StreamThread-<n>-consumer``). Stalling needs POSIX signals (Linux, macOS).
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

_LIVE: weakref.WeakSet[ProcessMember] = weakref.WeakSet()


@atexit.register
def _stop_the_rest() -> None:
    """A test that ended without stopping its members (an interrupt, a crash) leaves no process
    behind, frozen ones included."""
    for member in list(_LIVE):
        member.stop()


class ProcessMember:
    """One instance of the application under test, as a process (see the module's text)."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        client_id: str,
        log: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stop_timeout: float = 30.0,
    ):
        if not command or not all(isinstance(part, str) for part in command):
            raise ValueError(f"command must be a non-empty list of strings, not {command!r}")
        if not isinstance(client_id, str) or not client_id:
            raise ValueError(f"client_id must be the client.id the process's Kafka clients use, not {client_id!r}")
        self.name = name
        self.client_id = client_id
        self.command = list(command)
        self.log = Path(log) if log is not None else None
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stop_timeout = stop_timeout
        self.starts = 0  # how often it was started
        self._process: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None
        self._thaw: threading.Timer | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running and self._process is not None else None

    def start(self) -> None:
        """Run the command (again after a stop); a running process is left as it is."""
        if self.running:
            return
        self._close_log()
        self._out = open(self.log, "ab") if self.log is not None else None  # noqa: SIM115 - kept while it runs
        env = {**os.environ, **self.env} if self.env is not None else None
        self._process = subprocess.Popen(
            self.command,
            stdout=self._out if self._out is not None else subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=self.cwd,
        )
        self.starts += 1
        _LIVE.add(self)

    def stop(self) -> None:
        """SIGTERM (thawed first if stalled), then wait for the exit; SIGKILL past ``stop_timeout``."""
        process = self._process
        self._cancel_thaw()
        if process is not None and process.poll() is None:
            self._signal(signal.SIGCONT)
            process.terminate()
            try:
                process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        self._close_log()

    def stall(self, seconds: float) -> None:
        """Freeze the whole process now (SIGSTOP) and thaw it ``seconds`` later (SIGCONT); returns at once."""
        if not hasattr(signal, "SIGSTOP"):  # pragma: no cover - Windows
            raise NotImplementedError("stall needs POSIX signals (SIGSTOP/SIGCONT)")
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0, not {seconds!r}")
        if not self.running:
            return
        self._cancel_thaw()
        self._signal(signal.SIGSTOP)
        self._thaw = threading.Timer(seconds, self._signal, (signal.SIGCONT,))
        self._thaw.daemon = True
        self._thaw.start()

    def output(self) -> str:
        """What the process wrote to its log so far ("" without a log)."""
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(errors="replace")

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> ProcessMember:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.running else "not running"
        return f"ProcessMember({self.name!r}, client_id={self.client_id!r}, {state})"

    def _signal(self, sig: signal.Signals) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            try:
                process.send_signal(sig)
            except ProcessLookupError:  # pragma: no cover - exited in between
                pass

    def _cancel_thaw(self) -> None:
        if self._thaw is not None:
            self._thaw.cancel()
            self._thaw = None

    def _close_log(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

"""A long-running client program driven over stdin/stdout, one line per command and per reply.

The program reads one command per stdin line, each with an ``id``, and prints JSON objects, one
per stdout line: ``{"type": "reply", "id": ...}`` answers a command (with ``error`` if it
failed); every other line (assigned, revoked, ...) is a note and is kept in ``notes``. Lines not
starting with ``{`` are ignored. ``LineDriver`` encodes commands as JSON objects
(``{"id": ..., "cmd": ..., **args}``); a subclass overrides ``encode`` (and ``describe``, how a
command reads in a failure message) for another encoding.
"""

from __future__ import annotations

import collections
import json
import queue
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster


class LineDriver:
    """A running client program: ``call(cmd, **args)`` sends one command and returns its reply;
    other lines are kept in ``notes``."""

    name = "the client"  # in failure messages: "<name> is gone", "<name> exited"
    log_name = "client"  # heading of the stderr tail in ``diagnostics``
    stderr_lines = 400  # how much of stderr is kept
    stderr_tail = 120  # how much of it ``diagnostics`` shows

    def __init__(self, argv: Sequence[str], cluster: FakeCluster, *, lifetime: float | None = None, **popen: Any):
        """Start ``argv`` (extra ``Popen`` arguments in ``popen``); with ``lifetime`` (seconds) the
        process is killed after that long whatever happens."""
        self.cluster = cluster
        self.proc = subprocess.Popen(
            list(argv),
            **popen,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=1,
        )
        self.killer: threading.Timer | None = None
        if lifetime is not None:
            self.killer = threading.Timer(lifetime, self.proc.kill)
            self.killer.daemon = True
            self.killer.start()
        self.lines: queue.Queue[dict | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=self.stderr_lines)
        self.notes: list[dict] = []
        self._ids = 0
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))
        self.lines.put(None)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip())

    def first_line(self, timeout: float = 20) -> dict | None:
        """The first line the program prints, or None if it exits or says nothing within ``timeout``."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def diagnostics(self) -> str:
        events = [e.describe() for e in self.cluster.events if e.kind != "client_connected"]
        return (
            f"\n{self.log_name} stderr (tail):\n"
            + "\n".join(list(self.stderr)[-self.stderr_tail :])
            + "\nnotes:\n"
            + "\n".join(json.dumps(n) for n in self.notes[-40:])
            + "\nbroker events (tail):\n"
            + "\n".join(events[-120:])
        )

    def encode(self, ident: int, cmd: str, args: dict[str, Any]) -> str:
        """The stdin line (without the newline) for command ``cmd`` with id ``ident``."""
        return json.dumps({"id": ident, "cmd": cmd, **args})

    def describe(self, cmd: str, args: dict[str, Any], line: str) -> str:
        """How the command sent as ``line`` reads in a failure message."""
        return f"{cmd} {args}"

    def call(self, cmd: str, timeout: float = 30, **args: Any) -> dict:
        self._ids += 1
        ident = self._ids
        line = self.encode(ident, cmd, args)
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pytest.fail(f"{self.name} is gone (exit {self.proc.poll()}) before {cmd}{self.diagnostics()}")
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no reply to {self.describe(cmd, args, line)} within {timeout} s{self.diagnostics()}")
            if got is None:
                pytest.fail(
                    f"{self.name} exited ({self.proc.wait(5)}) during {self.describe(cmd, args, line)}"
                    f"{self.diagnostics()}"
                )
            if got.get("type") == "reply" and got.get("id") == ident:
                if "error" in got:
                    pytest.fail(f"{self.describe(cmd, args, line)} failed: {got['error']}{self.diagnostics()}")
                return got
            self.notes.append(got)

    def drain(self) -> list[dict]:
        """All notes so far, with those not yet read off the queue."""
        while True:
            try:
                got = self.lines.get_nowait()
            except queue.Empty:
                return self.notes
            if got is not None:
                self.notes.append(got)

    def of_type(self, kind: str, **match: Any) -> list[dict]:
        return [n for n in self.drain() if n["type"] == kind and all(n.get(k) == v for k, v in match.items())]

    def cancel_killer(self) -> None:
        if self.killer is not None:
            self.killer.cancel()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(5)

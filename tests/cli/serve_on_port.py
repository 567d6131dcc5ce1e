"""Starting ``fakebroker serve`` on a fixed port, as a restart on the same port needs (clients
connected across it reconnect to the address they know)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def start_on_port(tmp_path: Path, port: int, *args: str) -> subprocess.Popen | None:
    """serve on ``port`` with ``args``, once its bootstrap line is out (a warning may come
    first); None if the port was taken."""
    out = tmp_path / f"serve-{time.monotonic_ns()}.out"
    with open(out, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fakebroker", "serve", "--port", str(port), "--no-color", *args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = out.read_text()
        if "bootstrap: " in text:
            return proc
        if proc.poll() is not None:
            assert "another process uses that port" in text, text
            return None
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"serve did not start: {out.read_text()}")

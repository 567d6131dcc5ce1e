"""``fakebroker serve --control-port 0`` driven by curl from a shell script (control_curl.sh)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.clients

SCRIPT = Path(__file__).parent / "control_curl.sh"
CONTROL_LINE = re.compile(r"^control: http://127\.0\.0\.1:(\d+) token=(\S+)$")


def _tool(name: str, *alternatives: str) -> str:
    for candidate in (name, *alternatives):
        path = shutil.which(candidate)
        if path:
            return path
    pytest.fail(f"{name} is not installed: scripts/setup.sh installs it")


def _serve(*args: str) -> tuple[subprocess.Popen, str, str, list[str]]:
    """Start the server; returns it, its two first lines and a list that collects the rest."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    first, second = proc.stdout.readline().strip(), proc.stdout.readline().strip()
    rest: list[str] = []

    def drain() -> None:  # keep the pipe from filling while the script runs
        rest.extend(proc.stdout)

    proc.drainer = threading.Thread(target=drain, daemon=True)  # type: ignore[attr-defined]
    proc.drainer.start()  # type: ignore[attr-defined]
    return proc, first, second, rest


def _stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(15)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.drainer.join(10)  # type: ignore[attr-defined]  # every line read before the caller looks


def test_curl_script_drives_the_served_cluster():
    curl, kcat = _tool("curl"), _tool("kcat", "kafkacat")
    proc, first, second, rest = _serve("--brokers", "2", "--port", "0", "--control-port", "0")
    try:
        assert first.startswith("bootstrap: 127.0.0.1:"), (first, proc.stderr.read() if proc.poll() is not None else "")
        match = CONTROL_LINE.match(second)
        assert match, second
        url, token = f"http://127.0.0.1:{match[1]}", match[2]
        assert len(token) >= 32
        env = {
            **os.environ,
            "CONTROL_URL": url,
            "CONTROL_TOKEN": token,
            "BOOTSTRAP": first.split()[1],
            "KCAT": kcat,
            "PYTHON": sys.executable,
            "PATH": f"{Path(curl).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        run = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=90)
        assert run.returncode == 0, f"{SCRIPT.name} failed:\n{run.stdout}\n{run.stderr}\nserver:\n" + "".join(
            rest[-40:]
        )
        assert "all control endpoint checks passed" in run.stdout
    finally:
        code = _stop(proc)
    assert code == 0
    assert any("fault_fired" in line and "NOT_ENOUGH_REPLICAS" in line for line in rest)  # the server saw it fire


def test_control_token_option_and_no_endpoint_by_default():
    proc, first, second, _ = _serve("--port", "0", "--control-port", "0", "--control-token", "s3cret")
    try:
        match = CONTROL_LINE.match(second)
        assert match and match[2] == "s3cret", second
        url = f"http://127.0.0.1:{match[1]}/brokers"
        out = subprocess.run(
            [_tool("curl"), "-sS", "--max-time", "10", "-H", "Authorization: Bearer s3cret", url],
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert '"alive": true' in out.stdout, out
    finally:
        assert _stop(proc) == 0
    proc, first, second, rest = _serve("--port", "0", "--topic", "a")  # the topic gives a second line to read
    try:
        assert first.startswith("bootstrap: ") and second.split()[2:] == [
            "topic_created",
            "-",
            "-",
            "topic=a",
            "partitions=1",
        ]
    finally:
        assert _stop(proc) == 0
    assert not any(line.startswith("control:") for line in rest)

"""Runs the kafkajs example's own test suite (``node --test`` in this folder) in CI.

The JavaScript side needs no Python: its helper ``fakebroker.js`` starts ``fakebroker serve``
and scripts faults over HTTP. Here we only install its npm packages from the lock file when
they are missing, point ``FAKEBROKER`` at this interpreter's fakebroker, and check that node's
test runner reports every test passed.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.clients, pytest.mark.node]

HERE = Path(__file__).parent
TESTS = 3  # in consumer.test.js
RUN_TIMEOUT = 180  # each test has its own 50 s limit; the suite takes ~15 s


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: scripts/setup.sh installs node and npm")
    return path


def _npm_ci() -> None:
    with open(HERE / ".npm-ci.lock", "w") as lock:  # several pytest processes may start together
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (HERE / "node_modules" / "kafkajs").is_dir():
            return
        proc = subprocess.run(
            [_tool("npm"), "ci", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, f"npm ci failed in {HERE}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def test_the_kafkajs_example_suite_passes():
    node = _tool("node")
    _npm_ci()
    env = {**os.environ, "FAKEBROKER": f"{sys.executable} -m fakebroker"}
    env.pop("NODE_TEST_CONTEXT", None)  # a node --test run that started pytest would capture ours
    try:
        proc = subprocess.run(
            [node, "--test", "--test-reporter=tap"],
            cwd=HERE,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"node --test ran over {RUN_TIMEOUT} s:\n{exc.stdout}\n{exc.stderr}")
    out = proc.stdout + proc.stderr
    summary = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail|cancelled) (\d+)$", proc.stdout, re.M)}
    assert proc.returncode == 0, f"node --test exited {proc.returncode}:\n{out[-12000:]}"
    assert summary == {"tests": TESTS, "pass": TESTS, "fail": 0, "cancelled": 0}, f"{summary}\n{out[-6000:]}"
    print("\n".join(line for line in proc.stdout.splitlines() if line.startswith(("ok ", "# joins", "# duration"))))

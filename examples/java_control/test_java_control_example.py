"""Runs the Java example's own JUnit 5 suite (``mvn -q -B test`` in this folder) in CI.

The Java side needs no Python: its ``FakeBroker`` test helper starts ``fakebroker serve`` and
scripts faults over HTTP. Here we point ``FAKEBROKER`` at this interpreter's fakebroker, run
Maven (its downloads stay in ~/.m2, so only the first run needs the network), and read
surefire's XML reports: every test run, none failed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = [pytest.mark.clients, pytest.mark.java]

HERE = Path(__file__).parent
REPORTS = HERE / "target" / "surefire-reports"
TESTS = 3  # in ConsumerTest.java
RUN_TIMEOUT = 600  # a first run downloads kafka-clients, JUnit, Jackson and Maven's plugins; later ones take ~15 s


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: the Java example needs a JDK (17+) and Maven (scripts/setup.sh)")
    return path


def _surefire_counts() -> dict[str, int]:
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for report in sorted(REPORTS.glob("TEST-*.xml")):
        suite = ET.parse(report).getroot()
        for key in counts:
            counts[key] += int(suite.get(key, "0"))
    return counts


def _test_output() -> str:
    return "\n".join(p.read_text(errors="replace")[-8000:] for p in sorted(REPORTS.glob("*.txt")))


def test_the_java_example_suite_passes():
    _tool("java")
    mvn = _tool("mvn")
    env = {**os.environ, "FAKEBROKER": f"{sys.executable} -m fakebroker"}
    (HERE / "target").mkdir(exist_ok=True)
    with open(HERE / "target" / ".run.lock", "w") as lock:  # one Maven run at a time in this folder
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(REPORTS, ignore_errors=True)  # count this run's reports only
        started = time.monotonic()
        try:
            proc = subprocess.run(
                [mvn, "-q", "-B", "test"], cwd=HERE, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"mvn test ran over {RUN_TIMEOUT} s:\n{exc.stdout}\n{exc.stderr}\n{_test_output()}")
        counts = _surefire_counts()
        detail = f"{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}\n{_test_output()}"
    assert proc.returncode == 0, f"mvn test exited {proc.returncode}:\n{detail}"
    assert counts == {"tests": TESTS, "failures": 0, "errors": 0, "skipped": 0}, f"{counts}\n{detail}"
    print(f"surefire: {counts['tests']} tests run, 0 failures, in {time.monotonic() - started:.1f} s")

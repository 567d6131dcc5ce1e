"""What the pytest plugin costs a pytest run that does not use it: ``pytest --co`` time.

    python benchmarks/pytest_startup.py [--runs 9]

In a temporary project with one plain test, ``python -m pytest --co -q`` is timed (median of
``--runs``, each a new process) three ways, side by side in one run:

- ``-p no:fakebroker``: as if pytest-fakebroker were not installed;
- the plugin as installed (``pytest_fakebroker``, which imports fakebroker at the first
  fixture use);
- the plugin plus ``-p fakebroker.cluster``: what loading cost when the plugin imported the
  cluster at load (as fakebroker's own plugin did before it became ``pytest-fakebroker``).

Also printed: how many ``fakebroker`` modules each way has imported by the end of collection.
The other plugins of this environment (xdist, hypothesis, anyio, trio, ...) load every time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WAYS = {
    "without the plugin (-p no:fakebroker)": ["-p", "no:fakebroker"],
    "with pytest-fakebroker (lazy)": [],
    "with an eager import (-p fakebroker.cluster)": ["-p", "fakebroker.cluster"],
}
CONFTEST = """
import sys

def pytest_collection_finish(session):
    print("FAKEBROKER_MODULES", sum(1 for m in sys.modules if m.split(".")[0] == "fakebroker"))
"""


def once(project: Path, extra: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-s", "-p", "no:cacheprovider", *extra],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seconds = time.perf_counter() - started
    line = next(x for x in result.stdout.splitlines() if x.startswith("FAKEBROKER_MODULES"))
    return seconds, int(line.split()[1])


def measure(project: Path, runs: int) -> list[tuple[str, float, int]]:
    """The ways take turns, run after run, so a busy moment of the machine hits them all."""
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    modules: dict[str, int] = {}
    for _ in range(runs):
        for way, extra in WAYS.items():
            seconds, modules[way] = once(project, extra)
            times[way].append(seconds)
    return [(way, statistics.median(times[way]), modules[way]) for way in WAYS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "conftest.py").write_text(CONFTEST)
        (project / "test_plain.py").write_text("def test_plain():\n    assert True\n")
        rows = measure(project, args.runs)
    base = rows[0][1]
    print(f"pytest --co, median of {args.runs} runs")
    print(f"{'':46} {'seconds':>8} {'vs without':>11} {'fakebroker modules':>19}")
    for way, seconds, modules in rows:
        print(f"{way:46} {seconds:8.3f} {seconds - base:+10.3f}s {modules:19d}")


if __name__ == "__main__":
    main()

"""What a test pays for its cluster: 50 tests, each a produce/consume round trip with
confluent-kafka, run by pytest with a fresh fakebroker per test (the fixture's warm cluster, and
a cold one as a fresh Kafka: ``warm=False``), one shared fakebroker, and a fresh librdkafka mock
cluster per test, side by side.

    python benchmarks/fixture.py [--tests 50] [--runs 5]

Each way runs ``--runs`` times, taking turns; a row gives the median and the range. ``per
test`` is the run's wall time less ``pytest --co`` on the same files (start-up and collection,
plugin loading included), divided by the number of tests. ``per_test_ratio_mock`` is the
median over the runs of each run's ratio (the fixture's per-test time over the fresh mock's in
the same turn), printed with its range: one run cannot say which is cheaper, as the mock's
figure swings with librdkafka's close-time commit race (below). A line then says in how many
runs fakebroker was the cheaper, per test and per further test, with a one-sided sign test's
p (how likely that many would be if neither were cheaper). The last line is
``per_test_ms: X``, the per-test time with the ``fakebroker`` fixture (a fresh cluster per test).

Every pytest process runs as a user's machine runs it: with bytecode caches (a private
``PYTHONPYCACHEPREFIX`` that an untimed first run of each way fills, as an installed package
has its ``.pyc`` files), even where the shell says ``PYTHONDONTWRITEBYTECODE``: without them,
each run compiled fakebroker's ~230 modules again, ~250 ms that no user pays.

Each test's own time (setup, call and teardown, from a hook in the conftest) gives two more
columns, far steadier than wall times: ``first test ms``, which holds what a process pays once
(fakebroker's import and its codecs' first compiles; the mock's first cluster), and ``steady
ms``, the median of the other tests. ``steady_ratio_mock`` is the median over the runs of the
fixture's steady time over the mock's: what each further test costs, once both are loaded.

The consumer commits nothing. With librdkafka's default auto-commit, ``close()`` commits the
offsets of the partitions it gives up, and when it has not learned its group's coordinator yet
(its first FindCoordinator went out on the bootstrap connection, which librdkafka drops as soon
as the Metadata answer names the broker) it retries that commit ~50 ms later. That hit 4-13 of
40 round trips against fakebroker and the mock alike, and moved a run's per-test figure between
18 and 54 ms for either.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEST = """
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

QUIET = {{"log_level": 3}}


def round_trip(bootstrap, topic):
    producer = Producer({{"bootstrap.servers": bootstrap, **QUIET}})
    producer.produce(topic, value=b"hello", partition=0)
    assert producer.flush(10) == 0
    # No commit: with one, close() waits ~50 ms for a coordinator in a random 10-30% of tests,
    # against any broker (the mock too), and that client timer swamped what is measured here.
    consumer = Consumer({{"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False, **QUIET}})
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        for _ in range(100):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                assert message.value() == b"hello"
                return
        raise AssertionError("nothing read back")
    finally:
        consumer.close()


@pytest.mark.parametrize("n", range({tests}))
def test_round_trip(bootstrap, n):
    round_trip(*bootstrap)
"""

# appended to every conftest: each test's own time, written where the benchmark says
TIMES_HOOK = """

import json as _json
import os as _os
import time as _time

_times = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    started = _time.perf_counter()
    yield
    _times.append(_time.perf_counter() - started)


def pytest_sessionfinish(session):
    where = _os.environ.get("FIXTURE_BENCH_TIMES")
    if where and _times:
        with open(where, "w") as out:
            _json.dump(_times, out)
"""

CONFTESTS = {
    "fakebroker fixture (fresh cluster)": """
import pytest

@pytest.fixture
def bootstrap(fakebroker):
    fakebroker.create_topic("t", 1)
    return fakebroker.bootstrap_servers, "t"
""",
    "fakebroker fixture, cold (warm=False)": """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:  # a fresh cluster as a fresh Kafka: no __consumer_offsets at start
        item.add_marker(pytest.mark.fakebroker(warm=False))

@pytest.fixture
def bootstrap(fakebroker):
    fakebroker.create_topic("t", 1)
    return fakebroker.bootstrap_servers, "t"
""",
    "fakebroker shared (--fakebroker-shared)": """
import pytest

@pytest.fixture
def bootstrap(fakebroker, fakebroker_unique):
    topic = fakebroker_unique("t")
    fakebroker.create_topic(topic, 1)
    return fakebroker.bootstrap_servers, topic
""",
    "librdkafka mock (fresh cluster)": """
import pytest
from confluent_kafka import Producer

@pytest.fixture
def bootstrap():
    mock = Producer({"test.mock.num.brokers": 1, "log_level": 3})
    brokers = mock.list_topics(timeout=10).brokers.values()
    yield ",".join(f"{b.host}:{b.port}" for b in brokers), "t"  # the mock auto-creates the topic
    del mock
""",
}
EXTRA_ARGS = {"fakebroker shared (--fakebroker-shared)": ["--fakebroker-shared"]}


def timed(project: Path, *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(project.parent / "pycache")  # shared by the ways, filled by the warm-up
    env["FIXTURE_BENCH_TIMES"] = str(project / "times.json")
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pytest failed in {project}:\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    walls: dict[str, list[float]] = {way: [] for way in CONFTESTS}
    starts: dict[str, list[float]] = {way: [] for way in CONFTESTS}
    firsts: dict[str, list[float]] = {way: [] for way in CONFTESTS}  # each run's first test, ms
    steadies: dict[str, list[float]] = {way: [] for way in CONFTESTS}  # each run's median other test, ms
    with tempfile.TemporaryDirectory() as folder:
        projects = {}
        for index, (way, conftest) in enumerate(CONFTESTS.items()):
            project = Path(folder) / f"p{index}"
            project.mkdir()
            (project / "pytest.ini").write_text("[pytest]\n")
            (project / "conftest.py").write_text(conftest + TIMES_HOOK)
            (project / "test_round_trip.py").write_text(TEST.format(tests=args.tests))
            projects[way] = project
        for way, project in projects.items():  # untimed: fills the bytecode cache
            timed(project, *EXTRA_ARGS.get(way, []))
        for _ in range(args.runs):  # the ways take turns, so a busy moment hits them all
            for way, project in projects.items():
                extra = EXTRA_ARGS.get(way, [])
                walls[way].append(timed(project, *extra))
                times = json.loads((project / "times.json").read_text())
                firsts[way].append(times[0] * 1000)
                steadies[way].append(statistics.median(times[1:]) * 1000)
                starts[way].append(timed(project, "--co", *extra))
    print(f"{args.tests} tests, each a produce/consume round trip (confluent-kafka); median of {args.runs} runs")
    header = ["run s", "start-up s", "per test ms", "range ms", "first test ms", "steady ms", "range ms"]
    print(f"{'':42} " + " ".join(f"{h:>13}" for h in header))
    per_run: dict[str, list[float]] = {}
    for way in CONFTESTS:
        per_run[way] = [(w - s) / args.tests * 1000 for w, s in zip(walls[way], starts[way])]
        cells = [
            f"{statistics.median(walls[way]):.2f}",
            f"{statistics.median(starts[way]):.2f}",
            f"{statistics.median(per_run[way]):.1f}",
            f"{min(per_run[way]):.1f}-{max(per_run[way]):.1f}",
            f"{statistics.median(firsts[way]):.1f}",
            f"{statistics.median(steadies[way]):.2f}",
            f"{min(steadies[way]):.2f}-{max(steadies[way]):.2f}",
        ]
        print(f"{way:42} " + " ".join(f"{c:>13}" for c in cells))
    fixture, mock = "fakebroker fixture (fresh cluster)", "librdkafka mock (fresh cluster)"
    ratios = [f / m for f, m in zip(per_run[fixture], per_run[mock])]
    print(f"per-run ratios: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(f"per_test_ratio_mock: {statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f})")
    steady = [f / m for f, m in zip(steadies[fixture], steadies[mock])]
    print(f"steady_ratio_mock: {statistics.median(steady):.2f} (range {min(steady):.2f}-{max(steady):.2f})")
    print(f"cheaper than the mock per test: {_sign_test(ratios)}; each further test: {_sign_test(steady)}")
    print(f"per_test_ms: {statistics.median(per_run[fixture]):.1f}")


def _sign_test(ratios: list[float]) -> str:
    """In how many runs fakebroker cost less, and how likely that many or more would be if
    neither way were cheaper (a one-sided sign test): what "cheaper, with confidence" needs
    is a small p, which five runs can give only when all five agree (p = 0.03)."""
    n, k = len(ratios), sum(r < 1 for r in ratios)
    p = sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n
    return f"{k} of {n} runs (sign test p = {p:.2f})"


if __name__ == "__main__":
    main()

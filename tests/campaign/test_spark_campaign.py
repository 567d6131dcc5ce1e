"""Fault campaigns on Spark (issue 38) with real clients: ``fakebroker campaign`` on ``local[2]``
over the shipped examples. A campaign over the planted bug (a consumer that commits before
processing) finds lost records, shrinks the failure to one or two blocks, writes Parquet rows by
verdict, a report and a replay test that fails under pytest while the bug is there; the correct
consumer loses nothing; of two client settings that differ in one behaviour, only one fails.

The first test is part of the CI run (3 seeds); the campaigns of hundreds of seeds are marked
``slow`` (``python3 -m pytest -m slow tests/campaign``; about 10 minutes each on 2 cores)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fakebroker.campaign import Schedule

pytestmark = [pytest.mark.clients, pytest.mark.spark]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "campaigns"


def campaign(tmp_path: Path, module: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fakebroker", "campaign", str(EXAMPLES / module), "--master", "local[2]", "--out",
         str(tmp_path / "out"), *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_a_campaign_finds_the_planted_bug_shrinks_it_and_replays_it_under_pytest(tmp_path):
    # the default three tries a shrinking candidate and a replay: with one, a schedule that lost
    # records once by chance could be kept, and its one-run replay then pass (seen in CI)
    done = campaign(tmp_path, "commit_first.py", "--seeds", "3", "--grid", "protocol=classic", "--shrink")
    last = done.stdout.strip().splitlines()[-1]
    found = re.fullmatch(r"campaign: 3 runs, (\d) failed", last)
    assert found and int(found[1]) >= 1, done.stdout + done.stderr[-3000:]
    assert done.returncode == 1  # a failing run fails the command
    out = tmp_path / "out"
    assert sorted(p.name for p in (out / "runs").iterdir() if p.is_dir())[0] == "verdict=lost"
    assert (out / "report.html").read_text().count("<tr>") >= 2 and (out / "failures.png").stat().st_size > 1000
    assert "python -m pytest" in done.stdout and "smallest seed" in done.stdout  # the summary table
    replays = sorted((out / "replays").glob("test_replay_lost_seed_*.py"))
    assert len(replays) == 1, list((out / "replays").iterdir())
    source = replays[0].read_text()
    steps = Schedule.from_json(re.search(r"schedule=(\[.*?\]),\n", source)[1].replace("'", '"')).steps
    # a crash needs a member stopped: a rolling restart, or the restart a member stall makes
    assert 1 <= len(steps) <= 2 and {s.block for s in steps} & {"rolling_restart", "member_stall"}, source
    replayed = subprocess.run(
        [sys.executable, "-m", "pytest", str(replays[0]), "-q", "-n", "0", "-p", "no:randomly",
         "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert replayed.returncode == 1, replayed.stdout[-3000:]
    assert "AssertionError: lost again" in replayed.stdout and "timeline picture:" in replayed.stdout
    assert next((out / "replays").glob("replay_lost_seed_*.png")).stat().st_size > 1000


@pytest.fixture(scope="module")
def spark():
    # The first SparkSession of an xdist worker fixes its JVM's classpath: started here without
    # the Kafka connector, the Spark example tests that land on this worker later would find no
    # "kafka" source. So it starts the way the pipeline example starts it, connector included.
    from ..examples.test_spark_pipeline import pipeline

    session = pipeline.spark_session(app_name="fakebroker campaign tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.mark.slow
@pytest.mark.timeout(2400)  # 200 runs of 3-10 s on 2 cores, then shrinking
def test_two_hundred_seeds_over_the_planted_bug(spark, tmp_path):
    from fakebroker.campaign.report import findings
    from fakebroker.campaign.spark import run_campaign

    result = run_campaign(
        spark, str(EXAMPLES / "commit_first.py"), seeds=200, grid={"protocol": ["classic"]}, shrink_failures=True
    )
    verdicts = Counter(r["verdict"] for r in result.runs)
    assert len(result.runs) == 200 and verdicts["lost"] >= 20, verdicts
    assert set(verdicts) <= {"ok", "lost"}, verdicts
    smallest = result.smallest_failing()["lost"]
    assert smallest["seed"] == min(r["seed"] for r in result.failed)
    shrunk = result.shrunk["lost"]
    assert 1 <= len(shrunk.schedule) <= 2 and shrunk.reproduced >= 1, shrunk
    (finding,) = findings(result, str(EXAMPLES / "commit_first.py"), tmp_path)
    replayed = subprocess.run(
        [sys.executable, "-m", "pytest", finding.command.split()[-1], "-q", "-n", "0", "-p", "no:randomly"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert replayed.returncode == 1 and "lost again" in replayed.stdout, replayed.stdout[-3000:]
    print(f"200 seeds in {result.seconds} s: {dict(verdicts)}; smallest seed {smallest['seed']}; {finding.shrunk}")


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_two_hundred_seeds_over_the_correct_consumer_find_nothing(spark):
    from fakebroker.campaign.spark import campaign as run

    rows = run(spark, str(EXAMPLES / "correct.py"), seeds=200, grid={"protocol": ["classic"]})
    verdicts = {r["verdict"]: r["count"] for r in rows.groupBy("verdict").count().collect()}
    assert verdicts == {"ok": 200}, verdicts


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_of_two_settings_that_differ_in_one_behaviour_only_one_fails(spark):
    from fakebroker.campaign.spark import run_campaign

    result = run_campaign(spark, str(EXAMPLES / "auto_commit.py"), seeds=16)
    by_setting = Counter((r["cell"]["enable.auto.commit"], r["verdict"]) for r in result.runs)
    assert by_setting[("false", "ok")] == 16, by_setting
    assert by_setting[("true", "lost")] >= 1, by_setting


def test_max_minutes_starts_no_new_wave_past_its_time(spark, tmp_path):
    """Runs go in waves of 8 on local[2] when a time is given; past it no wave starts, and the
    runs done are kept (a scenario of no client: each run is a 0.2 s sleep and an ok verdict)."""
    from fakebroker.campaign.spark import run_campaign, to_dataframe

    module = tmp_path / "sleepy_campaign.py"
    module.write_text(
        "import time\nfrom fakebroker.testing.ledger import Verdict\nCLUSTER = {'brokers': 1}\n"
        "def scenario(cluster, seed, schedule, cell):\n    time.sleep(0.2)\n    return Verdict(1, 1)\n"
    )
    result = run_campaign(spark, str(module), seeds=40, max_minutes=0.01)
    assert result.cut_short and len(result.runs) == 8, (result.cut_short, len(result.runs))
    assert {r["verdict"] for r in result.runs} == {"ok"}
    rows = to_dataframe(spark, result.rows)
    assert rows.count() == 8 and rows.filter("verdict = 'ok'").count() == 8

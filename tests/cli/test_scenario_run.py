"""``fakebroker run SCENARIO.py -- COMMAND`` and ``play(...)``: the command runs against the
scenario's cluster, the scenario's faults reach it, and the run ends with the command's status
(3 when the scenario fails, 124 on timeout) and a timeline.

The CLI runs in a subprocess (``sys.executable -m fakebroker``), every run with a timeout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fakebroker.cli.scenario import SCENARIO_FAILED, TIMED_OUT, play

ROOT = Path(__file__).resolve().parents[2]
STORM = ROOT / "examples" / "scenarios" / "rebalance_storm.py"

# The application under test: produce 200 orders, consume them in a group committing each one
# synchronously, and exit 0 only if every order was processed (= handled and committed) exactly
# once. A commit refused because the generation moved on is not a processed record: the
# consumer gets that record again from the last committed offset.
ORDERS_APP = """
import os, sys, time
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

N = 200
RETRY = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
         KafkaError.REQUEST_TIMED_OUT, KafkaError._TRANSPORT, KafkaError._WAIT_COORD, KafkaError._TIMED_OUT}
bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]

producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 3})
for i in range(N):
    producer.produce("orders", key=str(i), value=f"order-{i}")
if producer.flush(30) != 0:
    sys.exit("app: records left unsent")

consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "orders-app", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                     "max.poll.interval.ms": 10000, "log_level": 3})
assignments = []  # one entry per rebalance: the storm brings at least one more after the first
consumer.subscribe(["orders"], on_assign=lambda c, parts: assignments.append(len(parts)))
processed = {}
lost_commits = 0
deadline = time.monotonic() + 45
quiet_until = None  # after the last order, poll a little longer to catch late duplicates
while time.monotonic() < deadline and (quiet_until is None or time.monotonic() < quiet_until):
    msg = consumer.poll(0.2)
    # done once every order is in and the storm's rebalance has come (on a busy
    # machine the orders can be through before the scenario has played)
    if len(processed) == N and len(assignments) >= 2 and quiet_until is None:
        quiet_until = time.monotonic() + 1.5
    if msg is None or msg.error():
        continue
    time.sleep(0.02)  # "processing": keeps the group busy while the scenario plays
    for attempt in range(50):
        try:
            consumer.commit(message=msg, asynchronous=False)
            value = msg.value().decode()
            processed[value] = processed.get(value, 0) + 1
            break
        except KafkaException as exc:
            if exc.args[0].code() in RETRY:
                time.sleep(0.1)
                continue
            lost_commits += 1
            break
consumer.close()
twice = sorted(v for v, n in processed.items() if n > 1)
print(f"app: {len(processed)}/{N} orders processed, {len(twice)} twice, {lost_commits} commits lost", flush=True)
sys.exit(0 if len(processed) == N and not twice else 1)
"""


def fakebroker_run(*args: str | os.PathLike[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fakebroker", "run", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def timeline_count(text: str, pattern: str) -> int:
    """How many events of the timeline match ``pattern`` (a regex over one line). Works for
    one ``describe()`` per line and for a table that folds repeats into "(xN)"."""
    count = 0
    for line in text.splitlines():
        if re.search(pattern, line):
            repeat = re.search(r"\(x(\d+)\)\s*$", line)
            count += int(repeat.group(1)) if repeat else 1
    return count


@pytest.mark.clients
def test_rebalance_storm_example_keeps_every_order_exactly_once(tmp_path):
    app = write(tmp_path / "orders_app.py", ORDERS_APP)
    done = fakebroker_run(STORM, "--", sys.executable, app, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "app: 200/200 orders processed, 0 twice" in done.stdout
    # The scenario really played while the app ran: both heartbeat faults fired, the
    # coordinator moved, and the group settled in a later generation.
    assert re.search(r"scenario: group orders-app is Stable in generation (\d+)", done.stdout)
    assert re.search(r"scenario: coordinator now broker \d; group Stable in generation \d+", done.stdout)
    assert timeline_count(done.stderr, r"fault_fired\b") == 2, done.stderr
    assert timeline_count(done.stderr, r"fault_fired\b.*api=Heartbeat\b.*error=REBALANCE_IN_PROGRESS\b") == 2
    assert timeline_count(done.stderr, r"(leader_moved\b.*topic=__consumer_offsets|group_loaded\b)") >= 1
    assert "command exited with status 0; scenario completed" in done.stderr


def test_command_status_and_environment(tmp_path):
    # The command sees the bootstrap address under three names, and its status is the run's.
    scenario = write(
        tmp_path / "idle.py",
        """
        import anyio
        CLUSTER = {"brokers": 2}
        async def scenario(cluster):
            await anyio.sleep(30)   # still running when the command exits: cancelled
    """,
    )
    env_file = tmp_path / "env.txt"
    code = (
        f"import os, sys; open({str(env_file)!r}, 'w').write('\\n'.join(os.environ.get(k, '-') for k in "
        "('FAKEBROKER_BOOTSTRAP', 'KAFKA_BOOTSTRAP_SERVERS', 'BOOTSTRAP_SERVERS'))); sys.exit(7)"
    )
    started = time.monotonic()
    done = fakebroker_run(scenario, "--", sys.executable, "-c", code, timeout=30)
    assert done.returncode == 7, done.stderr
    assert time.monotonic() - started < 20  # the idle scenario did not hold the run up
    bootstrap = re.search(r"fakebroker: bootstrap (\S+);", done.stderr).group(1)
    assert len(bootstrap.split(",")) == 2
    assert env_file.read_text().splitlines() == [bootstrap] * 3
    assert "command exited with status 7; scenario cancelled" in done.stderr


def test_failing_scenario_stops_the_command_and_exits_3(tmp_path):
    pid_file = tmp_path / "pid"
    scenario = write(
        tmp_path / "boom.py",
        f"""
        import anyio
        from pathlib import Path
        async def scenario(cluster, proc):
            pid_file = Path({str(pid_file)!r})
            with anyio.fail_after(10):
                while not pid_file.exists() or not pid_file.read_text():
                    await anyio.sleep(0.05)
            assert int(pid_file.read_text()) == proc.pid and proc.running
            raise RuntimeError("the scenario broke on purpose")
    """,
    )
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    started = time.monotonic()
    done = fakebroker_run(scenario, "--quiet", "--", sys.executable, "-c", code, timeout=30)
    assert done.returncode == SCENARIO_FAILED, done.stderr
    assert time.monotonic() - started < 20  # the 60 s command was stopped, not waited for
    assert "RuntimeError: the scenario broke on purpose" in done.stderr and "Traceback" in done.stderr
    assert "timeline" not in done.stderr  # --quiet keeps the timeline out, not the failure
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_timeout_stops_the_command_and_timeline_goes_to_a_file(tmp_path):
    scenario = write(
        tmp_path / "slow.py",
        """
        TIMEOUT = 1
        CLUSTER = {"topics": {"payments": 3}}
        async def scenario(cluster):
            cluster.faults.add(api="Fetch", delay=0.1)
    """,
    )
    timeline = tmp_path / "timeline.txt"
    started = time.monotonic()
    done = fakebroker_run(
        scenario,
        "--topic",
        "audit:2",
        "--timeline",
        timeline,
        "--",
        sys.executable,
        "-c",
        "import time; time.sleep(60)",
        timeout=30,
    )
    assert done.returncode == TIMED_OUT, done.stderr
    assert time.monotonic() - started < 20
    text = timeline.read_text()
    # The file holds the timeline (not stderr): both the scenario's topic and the CLI's.
    assert timeline_count(text, r"topic_created\b.*topic=payments partitions=3") == 1
    assert timeline_count(text, r"topic_created\b.*topic=audit partitions=2") == 1
    assert "topic_created" not in done.stderr and "timed out" in done.stderr


def test_scenario_file_without_a_scenario_is_refused(tmp_path):
    bad = write(tmp_path / "empty.py", "CLUSTER = {}\n")
    done = fakebroker_run(bad, "--", sys.executable, "-c", "pass", timeout=30)
    assert done.returncode == 2 and "defines no `async def scenario" in done.stderr


@pytest.mark.clients
@pytest.mark.trio
async def test_play_an_async_function(tmp_path):
    # The function form from Python: after the command's exit the scenario reads the records
    # it produced.
    app = write(
        tmp_path / "produce.py",
        """
        import os, sys
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": os.environ["BOOTSTRAP_SERVERS"], "log_level": 3})
        for i in range(10):
            p.produce("events", key=b"k", value=f"event-{i}".encode())
        sys.exit(0 if p.flush(20) == 0 else 1)
    """,
    )
    seen: list[bytes | None] = []

    async def scenario(cluster, proc):
        # Awaiting proc.wait() lets the scenario look at the aftermath instead of being cancelled.
        assert await proc.wait() == 0
        seen.extend(value for _, _, _, value in cluster.records("events"))

    result = await play(scenario, [sys.executable, str(app)], {"brokers": 2, "topics": {"events": 1}}, timeout=40)
    assert result.status == 0 and result.command_status == 0 and result.scenario_completed
    assert seen == [f"event-{i}".encode() for i in range(10)]
    assert timeline_count(result.timeline, r"topic_created\b.*topic=events\b") == 1


def test_the_docs_show_the_example_scenario_as_it_is():
    guide = (ROOT / "docs" / "guides" / "scenarios.md").read_text()
    assert STORM.read_text().split('"""', 2)[2].strip() in guide


@pytest.mark.trio
async def test_a_failed_check_after_the_command_exits_fails_the_run():
    async def scenario(cluster, proc):
        await proc.wait()
        assert cluster.groups() == ["never-formed"], "the scenario's own check of the outcome"

    result = await play(scenario, [sys.executable, "-c", "pass"], timeout=30)
    assert result.command_status == 0 and result.status == SCENARIO_FAILED
    assert isinstance(result.scenario_error, AssertionError) and "outcome" in result.scenario_traceback

"""`fakebroker serve` polish: a TOML config with initial faults, JSON log lines, coloured
text, a clear message for a taken port."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

from confluent_kafka import Producer

CONFIG = """
brokers = 2
port = 0

[settings]
"auto.create.topics.enable" = false

[topics.orders]
partitions = 3
replication_factor = 2
config = { "retention.ms" = 600000 }

[[faults]]
api = "Produce"
error = "NOT_ENOUGH_REPLICAS"
times = 2
"""


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0
    return out


def test_toml_config_with_initial_faults_and_json_logs(tmp_path):
    path = tmp_path / "fakebroker.toml"
    path.write_text(CONFIG)
    proc = start("--config", str(path), "--json-logs")
    try:
        bootstrap = proc.stdout.readline().strip()
        assert bootstrap.startswith("bootstrap: ") and bootstrap.count(",") == 1  # two brokers from the file
        first = json.loads(proc.stdout.readline())
        assert first["kind"] == "topic_created" and first["details"] == {"topic": "orders", "partitions": 3}
        producer = Producer({"bootstrap.servers": bootstrap.split()[1], "retries": 5, "retry.backoff.ms": 50})
        producer.produce("orders", value=b"x", partition=0)
        assert producer.flush(15) == 0  # two NOT_ENOUGH_REPLICAS, then it lands
        producer.produce("nope", value=b"x")  # auto-creation is off in the file
        producer.flush(2)
    finally:
        out = stop(proc) if proc.poll() is None else proc.communicate()[0]
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    fired = [e for e in events if e["kind"] == "fault_fired"]
    assert len(fired) == 2 and {e["details"]["error"] for e in fired} == {"NOT_ENOUGH_REPLICAS"}
    assert all(set(e) == {"seq", "time_ms", "wall", "kind", "broker", "group", "client_id", "details"} for e in events)
    assert not [e for e in events if e["kind"] == "topic_created" and e["details"].get("topic") == "nope"]


def test_command_line_wins_over_the_file_and_bad_files_are_refused(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    proc = start("--config", str(path), "--brokers", "3", "--port", "0", "--topic", "extra:2", "--no-color")
    try:
        assert proc.stdout.readline().count(",") == 2
        lines = [proc.stdout.readline().split() for _ in range(2)]
        assert {tuple(line[2:3] + line[5:]) for line in lines} == {
            ("topic_created", "topic=orders", "partitions=3"),
            ("topic_created", "topic=extra", "partitions=2"),
        }
        assert all(line[0].endswith("s") for line in lines)  # aligned: time, broker, kind, group, client, details
    finally:
        stop(proc)
    bad = tmp_path / "bad.toml"
    bad.write_text('brokres = 2\n[[faults]]\napi = "Hartbeat"\n')
    result = subprocess.run(
        [sys.executable, "-m", "fakebroker", "serve", "--config", str(bad)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2 and "unknown key(s) brokres" in result.stderr
    bad.write_text('[[faults]]\napi = "Hartbeat"\nerror = 1\n')
    result = subprocess.run(
        [sys.executable, "-m", "fakebroker", "serve", "--config", str(bad)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2 and "Did you mean Heartbeat" in result.stderr


def test_colours_when_forced_and_a_taken_port_explained():
    proc = start("--port", "0", "--topic", "t", "--color")
    try:
        proc.stdout.readline()
        assert "\x1b[" in proc.stdout.readline()  # ANSI colour codes
    finally:
        stop(proc)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "fakebroker", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port 0" in result.stderr


def test_feature_levels_are_finalized_and_bad_ones_refused():
    from ..raw_client import RawClient

    proc = start("--port", "0", "--feature", "transaction.version=1")
    try:
        host, port = proc.stdout.readline().split()[1].split(",")[0].rsplit(":", 1)
        with RawClient(int(port), host) as client:
            answer = client.request(18, 4, {"client_software_name": "t", "client_software_version": "1"})
        assert {f.name: f.max_version_level for f in answer.finalized_features}["transaction.version"] == 1
    finally:
        stop(proc)
    for flag, message in [
        ("transaction.version=5", "transaction.version supports levels 0..2, not 5"),
        ("nope=1", "unknown feature 'nope'; known: eligible.leader.replicas.version"),
        ("transaction.version", "expected NAME=LEVEL"),
    ]:
        bad = subprocess.run(
            [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--feature", flag],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_kafka_version_picks_the_release_and_a_bad_one_is_refused(tmp_path):
    from ..raw_client import RawClient

    config = tmp_path / "serve.toml"
    config.write_text('kafka_version = "4.3"\n')
    for args, api_versions_max in ((["--kafka-version", "3.9"], 4), (["--config", str(config)], 4), ([], 5)):
        proc = start("--port", "0", *args)
        try:
            host, port = proc.stdout.readline().split()[1].split(",")[0].rsplit(":", 1)
            with RawClient(int(port), host) as client:
                answer = client.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
            ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
            assert ranges[18] == (0, api_versions_max), args
            assert ranges[2][0] == (0 if "3.9" in args else 1), args  # ListOffsets v0: gone in 4.x (KIP-896)
        finally:
            stop(proc)
    for args, message in [
        (["--kafka-version", "2.8"], "unknown kafka_version '2.8'; valid: 4.4, 4.3, 3.9"),
        (["--kafka-version", "3.9", "--feature", "transaction.version=2"], "unknown feature 'transaction.version'"),
    ]:
        bad = subprocess.run(
            [sys.executable, "-m", "fakebroker", "serve", "--port", "0", *args],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr

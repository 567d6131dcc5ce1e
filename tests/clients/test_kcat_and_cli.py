"""kcat (librdkafka's CLI) and the ``fakebroker serve`` dev server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest

from ..ports import port_runs

pytestmark = pytest.mark.clients


def _kcat() -> str:
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.fail("kcat is not installed: .ci/run installs the Debian package 'kcat'")
    return path


def test_kcat_lists_the_cluster(cluster3):
    out = subprocess.run(
        [_kcat(), "-b", cluster3.bootstrap_servers, "-L", "-J"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    meta = json.loads(out.stdout)
    assert sorted(b["id"] for b in meta["brokers"]) == [0, 1, 2]
    orders = next(t for t in meta["topics"] if t["topic"] == "orders")
    assert len(orders["partitions"]) == 6
    assert {p["leader"] for p in orders["partitions"]} == {0, 1, 2}


def test_kcat_produces_and_consumes(cluster3):
    lines = "\n".join(f"k{i}:v{i}" for i in range(20)) + "\n"
    out = subprocess.run(
        [_kcat(), "-b", cluster3.bootstrap_servers, "-P", "-t", "orders", "-p", "2", "-K", ":"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    out = subprocess.run(
        [
            _kcat(),
            "-b",
            cluster3.bootstrap_servers,
            "-C",
            "-t",
            "orders",
            "-p",
            "2",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%k=%s@%o\n",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"k{i}=v{i}@{i}" for i in range(20)]


def _start_server(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_prints_bootstrap_first_and_stops_cleanly(sig):
    for port in port_runs(3):  # another listener may take the run between the check and the start
        proc = _start_server("--brokers", "3", "--port", str(port), "--topic", "orders:6")
        first = proc.stdout.readline().strip()
        if first or proc.wait(10) != 2:
            break
    try:
        assert first == f"bootstrap: 127.0.0.1:{port},127.0.0.1:{port + 1},127.0.0.1:{port + 2}"
        event = proc.stdout.readline().split()
        assert event[2:] == [
            "topic_created",
            "-",
            "-",
            "topic=orders",
            "partitions=6",
        ]  # time, broker, kind, group, client
        out = subprocess.run([_kcat(), "-b", first.split()[1], "-L"], capture_output=True, text=True, timeout=30)
        assert 'topic "orders" with 6 partitions' in out.stdout
        proc.send_signal(sig)
        rest, _ = proc.communicate(timeout=10)
        assert proc.returncode == 0
        assert "client_connected" in rest  # one line per notable event
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_with_port_zero_picks_free_ports():
    proc = _start_server("--brokers", "2", "--port", "0")
    try:
        first = proc.stdout.readline().strip()
        assert first.startswith("bootstrap: 127.0.0.1:")
        ports = [int(hp.rsplit(":", 1)[1]) for hp in first.split()[1].split(",")]
        assert len(ports) == 2 and all(p > 0 for p in ports)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_reports_a_taken_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = _start_server("--port", str(port))
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err

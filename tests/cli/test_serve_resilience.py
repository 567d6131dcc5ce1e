"""``fakebroker serve`` survives what its surroundings do: running out of file descriptors,
a stdout nobody reads or whose reader went away; it warns when listening on every
interface and advertises a reachable address."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..raw_client import RawClient

ROOT = Path(__file__).resolve().parents[2]  # this checkout, whatever is installed
API_VERSIONS = 18


def start(*args: str, preexec_fn=None, stderr=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)},
        preexec_fn=preexec_fn,
    )


def bootstrap(proc: subprocess.Popen) -> tuple[str, int]:
    line = proc.stdout.readline().strip()
    assert line.startswith("bootstrap: "), line
    host, port = line.split()[1].rsplit(":", 1)
    return host, int(port)


def answers(port: int) -> bool:
    with RawClient(port, timeout=10) as client:
        return (
            client.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code
            == 0
        )


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=15)
    finally:
        proc.kill() if proc.poll() is None else None


def test_running_out_of_file_descriptors_does_not_end_serve():
    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    proc = start(preexec_fn=low_limit, stderr=subprocess.DEVNULL)
    try:
        _, port = bootstrap(proc)
        conns = []
        for _ in range(150):  # well past the limit: the kernel queues what the broker cannot accept
            conns.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(1.0)  # the broker meets EMFILE and backs off
        assert proc.poll() is None, "serve ended on an accept error"
        for conn in conns:
            conn.close()
        deadline = time.monotonic() + 20
        while True:
            try:
                if answers(port):
                    break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert proc.poll() is None
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_stdout_nobody_reads_does_not_freeze_serve():
    proc = start("--json-logs", stderr=subprocess.DEVNULL)
    try:
        _, port = bootstrap(proc)  # then nobody reads stdout again
        for _ in range(1000):  # each one prints a client_connected line, far more than a pipe holds
            assert answers(port)
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_stdout_whose_reader_left_does_not_kill_serve():
    proc = start("--json-logs", stderr=subprocess.DEVNULL)
    try:
        _, port = bootstrap(proc)
        proc.stdout.close()  # the reader goes away: the next event meets EPIPE
        for _ in range(50):
            assert answers(port)
        assert proc.poll() is None
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_host_0000_warns_and_advertises_a_reachable_address():
    proc = start("--host", "0.0.0.0")
    host, port = bootstrap(proc)
    assert host == "127.0.0.1" and answers(port)
    assert stop(proc) == 0
    err = proc.stderr.read()
    assert "warning: --host 0.0.0.0 listens on every network interface" in err and "--advertised-host" in err

    proc = start("--host", "0.0.0.0", "--advertised-host", "localhost")
    host, port = bootstrap(proc)
    assert host == "localhost" and answers(port)
    assert stop(proc) == 0

    proc = start()  # loopback: no warning
    bootstrap(proc)
    assert stop(proc) == 0
    assert "warning" not in proc.stderr.read()

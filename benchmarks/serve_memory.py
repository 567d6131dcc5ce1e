"""Resident memory of a long `fakebroker serve` run: in memory, in memory with retention, on disk.

    python benchmarks/serve_memory.py [--seconds 60] [--rate 5] [--size 1000] [--samples 6]

Starts `fakebroker serve` as a subprocess on 127.0.0.1 three times and produces to it with
confluent-kafka for ``--seconds`` at up to ``--rate`` MB/s (a bounded loop), sampling the
server's RSS (``/proc/PID/status`` VmRSS) as it goes:

- ``memory``: logs in memory, Kafka's default retention (7 days, no size limit): the baseline,
  every record stays in RAM;
- ``memory+retention``: logs in memory, ``retention.bytes`` 16 MB and ``segment.bytes`` 4 MB
  per partition, the retention check every 2 s;
- ``data-dir``: ``--data-dir``, default retention: every record is kept, on disk.

Prints one table, RSS in MB over time for the three side by side, then what was produced
and what each run kept (log bytes in memory or on disk).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from rich.console import Console
from rich.table import Table

try:
    from ._measure import rss_mb
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import rss_mb

TOPIC = "bench"
PARTITIONS = 4
QUIET = {"log_level": 3}
TOPIC_TOML = f"""
[topics.{TOPIC}]
partitions = {PARTITIONS}
"""
RETENTION_TOML = f"""
[settings]
"log.retention.check.interval.ms" = 2000

[topics.{TOPIC}]
partitions = {PARTITIONS}
config = {{ "retention.bytes" = 16000000, "segment.bytes" = 4000000 }}
"""


RUNS = {
    "memory": (TOPIC_TOML, []),
    "memory+retention": (RETENTION_TOML, []),
    "data-dir": (TOPIC_TOML, ["--data-dir", "{workdir}/data"]),
}


def start(workdir: Path, toml: str, *args: str) -> tuple[subprocess.Popen, str]:
    config = workdir / "serve.toml"
    config.write_text(toml)
    out = open(workdir / "serve.out", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--config", str(config), "--json-logs", *args],
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        first = Path(out.name).read_text().partition("\n")[0]
        if first.startswith("bootstrap: "):
            return proc, first.split()[1]
        if proc.poll() is not None:
            raise RuntimeError(Path(out.name).read_text())
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("serve did not start")


def run(name: str, toml: str, args: list[str], seconds: float, rate_mb: float, size: int, samples: int) -> dict:
    """Produce for ``seconds`` at up to ``rate_mb`` MB/s; RSS at each of ``samples`` points."""
    workdir = Path(tempfile.mkdtemp(prefix=f"serve-memory-{name}-"))
    args = [a.replace("{workdir}", str(workdir)) for a in args]
    proc, bootstrap = start(workdir, toml, *args)
    try:
        idle = rss_mb(proc.pid)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": 1, **QUIET})
        value = b"x" * size
        per_second = rate_mb * 1e6 / size
        marks = [seconds * (i + 1) / samples for i in range(samples)]
        rss = []
        sent = 0
        begin = time.monotonic()
        while marks:
            elapsed = time.monotonic() - begin
            if elapsed >= marks[0]:
                producer.flush(30)
                rss.append(rss_mb(proc.pid))
                marks.pop(0)
                continue
            if sent >= per_second * elapsed:  # ahead of the rate: wait a little
                producer.poll(0.005)
                continue
            try:
                producer.produce(TOPIC, value=value, partition=sent % PARTITIONS)
                sent += 1
            except BufferError:
                producer.poll(0.01)
        if producer.flush(60):
            raise RuntimeError("records not delivered")
        del producer  # before the server stops, so it does not log its reconnect attempts
        kept = sum(p.stat().st_size for p in workdir.rglob("*.log"))
        return {"idle": idle, "rss": rss, "produced_mb": sent * size / 1e6, "disk_mb": kept / 1e6}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long each run produces")
    parser.add_argument("--rate", type=float, default=5.0, help="MB/s produced at most")
    parser.add_argument("--size", type=int, default=1000, help="bytes per record value")
    parser.add_argument("--samples", type=int, default=6, help="RSS samples per run")
    parser.add_argument("--only", action="append", choices=list(RUNS), help="run only these modes (repeatable)")
    opts = parser.parse_args()
    runs = {name: spec for name, spec in RUNS.items() if not opts.only or name in opts.only}
    results = {
        name: run(name, toml, args, opts.seconds, opts.rate, opts.size, opts.samples)
        for name, (toml, args) in runs.items()
    }
    table = Table(
        title=f"fakebroker serve RSS (MB) while producing up to {opts.rate:g} MB/s of {opts.size}-byte records "
        f"to {PARTITIONS} partitions (confluent-kafka)"
    )
    table.add_column("time", justify="right")
    for name in runs:
        table.add_column(name, justify="right")
    table.add_row("idle", *(f"{r['idle']:.0f}" for r in results.values()))
    for i in range(opts.samples):
        t = opts.seconds * (i + 1) / opts.samples
        table.add_row(f"{t:.0f} s", *(f"{r['rss'][i]:.0f}" for r in results.values()))
    table.add_row("produced MB", *(f"{r['produced_mb']:.0f}" for r in results.values()))
    table.add_row("on disk MB", *(f"{r['disk_mb']:.0f}" for r in results.values()))
    Console(width=150).print(table)


if __name__ == "__main__":
    main()

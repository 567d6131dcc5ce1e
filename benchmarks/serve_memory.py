"""Resident memory of `fakebroker serve`: a long produce run (in memory, in memory with
retention, on disk), or bursts of connections and group members (``--bursts``).

    python benchmarks/serve_memory.py [--seconds 60] [--rate 5] [--size 1000] [--samples 6]
    python benchmarks/serve_memory.py --bursts [--rounds 5] [--connections 10000] [--members 5000]
        [--event-log-size N ...] [--baseline DIR] [--warm-up]

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

``--bursts`` (issue 33) starts ``fakebroker serve --port 0`` and, ``--rounds`` times, opens
``--connections`` connections at once, sends one ApiVersions request on each, reads every
answer and closes them all; then ``--members`` connections each join one group (JoinGroup v5:
the member id handshake, then the join with it; ``group.initial.rebalance.delay.ms`` is Kafka's
3000, so one generation takes them all) and leave it (LeaveGroup v3) and close. After each step
it waits until the server has used no CPU for ``SETTLE_S`` (at most ``SETTLE_LIMIT_S``) and
reads its RSS. One
column per tree (this one, and ``--baseline DIR``, e.g. a ``git worktree add /tmp/rss-before
HEAD``) and per event log size (``--event-log-size``, repeatable; default: the server's own,
100,000 events, and 100). Rows: RSS at idle (after start-up, before any burst), after each
step, the peak (VmHWM), and the last over idle. Connections are capped by the descriptor
limits of this process and of the server (both raised to their hard limit), which the table
title states.

``--warm-up`` adds one small round after the idle reading, before the bursts:
``WARM_UP_CONNECTIONS`` connections and ``WARM_UP_MEMBERS`` members, as a burst does them. It
makes what the first use of each request and of a group makes for the server's life (codecs,
caches, the group and its ``__consumer_offsets``, the event log's first events): a row "idle
after warm-up", and a last row "last / idle after warm-up" beside "last / idle", so what a
burst leaves behind is told apart from what any first client would have made. Both ratios are
printed (``last_over_idle``, ``last_over_warm_idle``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


HERE = Path(__file__).resolve().parent.parent  # this tree


def start(workdir: Path, toml: str, *args: str, tree: Path = HERE) -> tuple[subprocess.Popen, str]:
    """``fakebroker serve`` of ``tree`` (first on its path, whatever is installed)."""
    config = workdir / "serve.toml"
    config.write_text(toml)
    out = open(workdir / "serve.out", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--config", str(config), "--json-logs", *args],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=tree,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(tree)},
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
    from confluent_kafka import Producer

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
        stop(proc, workdir)


def stop(proc: subprocess.Popen, workdir: Path) -> None:
    """Stop a server started by a run (SIGTERM, then SIGKILL after 30 s) and remove its files."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(workdir, ignore_errors=True)


# -- bursts (--bursts) -------------------------------------------------------------------------

API_VERSIONS, JOIN_GROUP, LEAVE_GROUP = 18, 11, 13
MEMBER_ID_REQUIRED = 79
GROUP = "burst-group"
SETTLE_S = 3.0  # a step is over once the server has used no CPU for this long ...
SETTLE_LIMIT_S = 120.0  # ... or after this long at most
STEP_LIMIT_S = 120.0  # a burst's requests give up after this long
CONNECTING = 256  # connections being opened at once
WARM_UP_CONNECTIONS = 10  # --warm-up: the small round before the bursts
WARM_UP_MEMBERS = 10


def raise_fd_limit() -> int:
    """This process's soft descriptor limit raised to its hard one (the server inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def fd_limit_of(pid: int) -> int:
    """A process's soft limit of open files (``/proc/PID/limits``)."""
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise RuntimeError(f"no open files limit for {pid}")


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def settled_rss(pid: int) -> float:
    """RSS once the server has been idle (no CPU tick) for ``SETTLE_S``: its connections'
    ends are handled, and whatever it does when quiet is done."""
    deadline = time.monotonic() + SETTLE_LIMIT_S
    last, quiet_since = cpu_ticks(pid), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < SETTLE_S:
        time.sleep(0.1)
        ticks = cpu_ticks(pid)
        if ticks > last:
            quiet_since = time.monotonic()
        last = ticks
    return rss_mb(pid)


def _frame(api_key: int, version: int, body: dict) -> bytes:
    from fakebroker.protocol import headers

    payload = headers.encode_request(api_key, version, 1, body, client_id="burst")
    return struct.pack(">i", len(payload)) + payload


async def _call(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], request: bytes) -> bytes:
    reader, writer = conn
    writer.write(request)
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


async def _connections(port: int, n: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    opening = asyncio.Semaphore(CONNECTING)

    async def one() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        async with opening:
            return await asyncio.open_connection("127.0.0.1", port)

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def _close(conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]) -> None:
    for _, writer in conns:
        writer.close()
    await asyncio.gather(*(writer.wait_closed() for _, writer in conns), return_exceptions=True)


async def connection_burst(port: int, n: int) -> None:
    """``n`` connections open at once, one ApiVersions request answered on each, all closed."""
    conns = await _connections(port, n)
    try:
        request = _frame(API_VERSIONS, 3, {"client_software_name": "burst", "client_software_version": "1"})
        await asyncio.wait_for(asyncio.gather(*(_call(c, request) for c in conns)), STEP_LIMIT_S)
    finally:
        await _close(conns)


async def join_and_leave(port: int, n: int) -> None:
    """``n`` members join one group (the member id handshake, then the join with the id, all
    in the initial rebalance delay's window) and leave it, each on its connection."""
    from fakebroker.protocol import data, headers

    def join(member_id: str) -> bytes:
        return _frame(
            JOIN_GROUP,
            5,
            {
                "group_id": GROUP,
                "session_timeout_ms": 30_000,
                "rebalance_timeout_ms": 30_000,
                "member_id": member_id,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": data.encode_subscription(["t"])}],
            },
        )

    conns = await _connections(port, n)
    try:
        first = join("")
        answers = await asyncio.wait_for(asyncio.gather(*(_call(c, first) for c in conns)), STEP_LIMIT_S)
        ids = []
        for payload in answers:
            body = headers.decode_response(JOIN_GROUP, 5, payload)[1]
            if body.error_code != MEMBER_ID_REQUIRED:
                raise RuntimeError(f"JoinGroup without a member id answered {body.error_code}")
            ids.append(body.member_id)
        await asyncio.wait_for(asyncio.gather(*(_call(c, join(member)) for c, member in zip(conns, ids))), STEP_LIMIT_S)
        await asyncio.wait_for(
            asyncio.gather(
                *(
                    _call(c, _frame(LEAVE_GROUP, 3, {"group_id": GROUP, "members": [{"member_id": member}]}))
                    for c, member in zip(conns, ids)
                )
            ),
            STEP_LIMIT_S,
        )
    finally:
        await _close(conns)


def burst_run(
    tree: Path, event_log_size: int | None, rounds: int, connections: int, members: int, warm_up: bool = False
) -> dict:
    """One server of ``tree``: RSS at idle (and after the warm-up round) and after each step of
    ``rounds`` rounds."""
    workdir = Path(tempfile.mkdtemp(prefix="serve-memory-bursts-"))
    toml = "" if event_log_size is None else f"event_log_size = {event_log_size}\n"
    # Kafka's own default (fakebroker's is 0): the first join waits for the others, so one
    # generation takes every member instead of each join starting a rebalance the members
    # already answered would have to rejoin (they time out after rebalance_timeout_ms)
    toml += '[settings]\n"group.initial.rebalance.delay.ms" = 3000\n'
    proc, bootstrap = start(workdir, toml, tree=tree)
    port = int(bootstrap.rpartition(":")[2])
    try:
        limit = fd_limit_of(proc.pid)
        n, m = min(connections, limit - 64), min(members, limit - 64)
        rows = [("idle", settled_rss(proc.pid))]
        if warm_up:
            asyncio.run(connection_burst(port, WARM_UP_CONNECTIONS))
            if m:
                asyncio.run(join_and_leave(port, WARM_UP_MEMBERS))
            rows.append(("idle after warm-up", settled_rss(proc.pid)))
        for i in range(1, rounds + 1):
            asyncio.run(connection_burst(port, n))
            rows.append((f"{i}: {n:,} connections", settled_rss(proc.pid)))
            if m:
                asyncio.run(join_and_leave(port, m))
                rows.append((f"{i}: {m:,} members", settled_rss(proc.pid)))
        return {"rows": rows, "peak": peak_mb(proc.pid), "connections": n, "members": m, "server_fds": limit}
    finally:
        stop(proc, workdir)


def bursts_main(opts: argparse.Namespace) -> None:
    client_fds = raise_fd_limit()
    connections = min(opts.connections, client_fds - 64)
    members = min(opts.members, client_fds - 64)
    trees = [("this tree", HERE)] + ([("baseline", Path(opts.baseline).resolve())] if opts.baseline else [])
    sizes = opts.event_log_size or [None, 100]
    results = {}
    for size in sizes:  # the trees take turns, so a busy moment of a shared machine hits both
        for name, tree in trees:
            label = f"{name}, event log {'100,000 (default)' if size is None else f'{size:,}'}"
            results[label] = burst_run(tree, size, opts.rounds, connections, members, opts.warm_up)
    first = next(iter(results.values()))
    capped = "" if connections == opts.connections else f" (capped by the descriptor limit {client_fds})"
    warm = (
        f"; a warm-up round of {WARM_UP_CONNECTIONS} connections"
        + (f" and {WARM_UP_MEMBERS} members" if first["members"] else "")
        + " after the idle reading"
        if opts.warm_up
        else ""
    )
    table = Table(
        title=f"fakebroker serve RSS (MB): {opts.rounds} rounds of {first['connections']:,} connections at once"
        f"{capped}, then {first['members']:,} members joining and leaving one group; "
        f"server's descriptor limit {first['server_fds']:,}{warm}"
    )
    table.add_column("after", justify="left")
    for label in results:
        table.add_column(label, justify="right")
    for i, (step, _) in enumerate(first["rows"]):
        table.add_row(step, *(f"{r['rows'][i][1]:.1f}" for r in results.values()))
    table.add_row("peak (VmHWM)", *(f"{r['peak']:.0f}" for r in results.values()))
    table.add_row("last / idle", *(f"{r['rows'][-1][1] / r['rows'][0][1]:.2f}" for r in results.values()), style="bold")
    if opts.warm_up:
        table.add_row(
            "last / idle after warm-up",
            *(f"{r['rows'][-1][1] / r['rows'][1][1]:.2f}" for r in results.values()),
            style="bold",
        )
    Console(width=200).print(table)
    for label, r in results.items():
        print(f"last_over_idle[{label}]: {r['rows'][-1][1] / r['rows'][0][1]:.3f}")
        if opts.warm_up:
            print(f"last_over_warm_idle[{label}]: {r['rows'][-1][1] / r['rows'][1][1]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long each run produces")
    parser.add_argument("--rate", type=float, default=5.0, help="MB/s produced at most")
    parser.add_argument("--size", type=int, default=1000, help="bytes per record value")
    parser.add_argument("--samples", type=int, default=6, help="RSS samples per run")
    parser.add_argument("--only", action="append", choices=list(RUNS), help="run only these modes (repeatable)")
    parser.add_argument("--bursts", action="store_true", help="connection and group bursts instead of producing")
    parser.add_argument("--rounds", type=int, default=5, help="--bursts: rounds of bursts")
    parser.add_argument("--connections", type=int, default=10_000, help="--bursts: connections open at once")
    parser.add_argument("--members", type=int, default=5_000, help="--bursts: members joining and leaving (0: none)")
    parser.add_argument(
        "--event-log-size", type=int, action="append", help="--bursts: the server's event log size (repeatable)"
    )
    parser.add_argument("--baseline", help="--bursts: another checkout measured side by side")
    parser.add_argument(
        "--warm-up",
        action="store_true",
        help=f"--bursts: a round of {WARM_UP_CONNECTIONS} connections and {WARM_UP_MEMBERS} members after the "
        "idle reading, and a second idle reading after it",
    )
    opts = parser.parse_args()
    if opts.bursts:
        bursts_main(opts)
        return
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

"""How fast groups form: fakebroker vs librdkafka's mock cluster, in one run.

    python benchmarks/groups.py [--sizes 10,100,1000,5000,10000] [--no-mock] [--no-serve]

1. N members, driven by our own raw protocol client (one connection each, asyncio), run the
   whole classic join: FindCoordinator, JoinGroup (MEMBER_ID_REQUIRED, then join with the
   id), the leader computes a round-robin assignment, SyncGroup. Timed from the first
   request to the last SyncGroup answer, i.e. until the group is Stable for everyone.
2. Three confluent-kafka consumers subscribe to a 6-partition topic; timed until all three
   hold two partitions each; with the classic protocol and with KIP-848's consumer protocol.
3. A second consumer joins a group whose one member owns all 4 partitions; timed until each
   holds two, under each protocol.

Both run against a 3-broker FakeCluster and a 3-broker librdkafka mock cluster, each in a
child process of its own: the clients' CPU is not the broker's (no shared GIL), 10,000
members' sockets fit each process's descriptor limit, and the child's CPU seconds over a
raw-client row are reported beside its wall time, with the raw client's own CPU seconds
(when these approach the wall time, the client is the bottleneck). The raw rows run a third
time against ``fakebroker serve`` (3 brokers) printing its coloured event lines into a pipe
this process drains, as a user's terminal would (``--no-serve`` skips it). A raw-client row
gives up after ``ROW_LIMIT_S`` and says so. The table shows seconds and the ratio mock /
fakebroker (above 1 = fakebroker faster); the last lines are ``stable_N_s: X`` and ``stable_N_serve_s: X`` for N
of 1,000, 5,000 and 10,000 (those of ``--sizes``), seconds for N members to reach Stable on a
FakeCluster and on ``fakebroker serve``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from types import SimpleNamespace

from confluent_kafka import Consumer, Producer
from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import data, headers
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.protocol.errors import DecodeError

TOPIC = "bench"
TOPIC_4 = "bench4"
SUBSCRIPTION = data.encode_subscription([TOPIC])
QUIET = {"log_level": 3}
ROW_LIMIT_S = 60  # a raw-client row (connecting included) gives up after this long


# Encoded requests by (api key, version, key): the same request body is encoded once, then only
# its correlation id is patched in (bytes 4-8 of the header), so 10,000 members cost the client
# one encode of the first JoinGroup and one of each member's heartbeat, not one per request.
_ENCODED: dict[tuple[int, int, object], bytes] = {}


class AsyncRawClient:
    """One connection speaking our protocol codec, one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer, self.cid = reader, writer, 0

    @classmethod
    async def connect(cls, host: str, port: int) -> AsyncRawClient:
        return cls(*await asyncio.open_connection(host, port))

    async def request(self, api_key: int, version: int, body: dict, same_as: object = None):
        """``same_as``: a key under which this body was sent before (it is not encoded again)."""
        self.cid += 1
        template = None if same_as is None else _ENCODED.get((api_key, version, same_as))
        if template is None:
            template = headers.encode_request(api_key, version, 0, body, client_id="bench")
            if same_as is not None:
                _ENCODED[api_key, version, same_as] = template
        payload = template[:4] + struct.pack(">i", self.cid) + template[8:]
        self.writer.write(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        payload = await self.reader.readexactly(size)
        try:
            return headers.decode_response(api_key, version, payload)[1]
        except DecodeError:
            if api_key != 14:
                raise
            # librdkafka's mock answers SyncGroup errors with a null assignment, which the
            # spec does not allow (Kafka sends empty bytes); keep just its error code.
            return SimpleNamespace(error_code=struct.unpack_from(">h", payload, 4 + 4)[0], assignment=b"")

    def close(self) -> None:
        self.writer.close()


async def form_group(
    bootstrap: list[tuple[str, int]],
    group: str,
    n: int,
    partitions: int,
    lenient: bool = False,
    server_cpu: Callable[[], float] | None = None,
) -> tuple[float, float | None, float, int]:
    """Seconds until ``n`` raw members all hold an assignment of one, current generation, the
    server's CPU seconds meanwhile (when ``server_cpu`` reads them), this client's, and that
    generation. Without an initial rebalance delay (fakebroker's default, as the mock's), the
    first generation holds the members that joined first, so the usual figure is generation 2;
    a run where some members' first JoinGroup came after that rebalance completed needs a
    third and more, each a full rejoin of every member: that is what a slow run shows.
    ``lenient`` (for the mock) rejoins on any SyncGroup error: librdkafka's mock answers
    syncs outside its syncing state with errors Kafka does not use (INVALID_REQUEST, ...)."""
    host, port = bootstrap[0]
    probe = await AsyncRawClient.connect(host, port)
    found = await probe.request(10, 2, {"key": group, "key_type": 0})
    probe.close()
    if found.error_code:
        raise RuntimeError(f"FindCoordinator: {ErrorCode(found.error_code).name}")
    clients = [await AsyncRawClient.connect(found.host, found.port) for _ in range(n)]
    join_body = {
        "group_id": group,
        "session_timeout_ms": 30000,
        "rebalance_timeout_ms": 30000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "roundrobin", "metadata": SUBSCRIPTION}],
    }

    synced_at: dict[int, int] = {}  # client index -> generation it last synced successfully
    rejoin = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION}

    async def member(index: int, client: AsyncRawClient) -> None:
        """Join and sync like a real consumer: rejoin whenever told a rebalance is on, and
        heartbeat until every member holds an assignment of the same, current generation."""
        member_id = ""
        while True:
            answer = await client.request(
                11, 5, {**join_body, "member_id": member_id}, same_as=(group, member_id or None)
            )
            if answer.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                member_id = answer.member_id
                continue
            if answer.error_code:
                raise RuntimeError(f"JoinGroup: {ErrorCode(answer.error_code).name}")
            member_id = answer.member_id
            assignments = []
            if answer.leader == answer.member_id:
                ids = [m.member_id for m in answer.members]
                owned: dict[str, list[int]] = {m: [] for m in ids}
                for p in range(partitions):
                    owned[ids[p % len(ids)]].append(p)
                assignments = [
                    {"member_id": m, "assignment": data.encode_assignment({TOPIC: ps})} for m, ps in owned.items()
                ]
            synced = await client.request(
                14,
                3,
                {
                    "group_id": group,
                    "generation_id": answer.generation_id,
                    "member_id": member_id,
                    "assignments": assignments,
                },
            )
            if synced.error_code in rejoin or (lenient and synced.error_code):
                continue
            if synced.error_code:
                raise RuntimeError(f"SyncGroup: {ErrorCode(synced.error_code).name}")
            synced_at[index] = answer.generation_id
            while True:
                beat = await client.request(
                    12,
                    3,
                    {"group_id": group, "generation_id": answer.generation_id, "member_id": member_id},
                    same_as=(group, member_id, answer.generation_id),
                )
                if beat.error_code in rejoin:
                    break
                if beat.error_code:
                    raise RuntimeError(f"Heartbeat: {ErrorCode(beat.error_code).name}")
                if len(synced_at) == n and set(synced_at.values()) == {answer.generation_id}:
                    return
                await asyncio.sleep(0.01)

    cpu_before = server_cpu() if server_cpu else None
    start, client_start = time.perf_counter(), time.process_time()
    try:
        await asyncio.gather(*(member(i, c) for i, c in enumerate(clients)))
        elapsed, client_cpu = time.perf_counter() - start, time.process_time() - client_start
    finally:
        for c in clients:
            c.close()
    used = None if cpu_before is None or server_cpu is None else server_cpu() - cpu_before
    return elapsed, used, client_cpu, max(synced_at.values())


CLASSIC = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200}
CONSUMER = {"group.protocol": "consumer"}  # KIP-848: the broker sets the heartbeat interval


def three_consumers_split(
    bootstrap: str, group: str, topic: str = TOPIC, split: tuple[int, ...] = (2, 2, 2), protocol: dict = CLASSIC
) -> float:
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group, **protocol, **QUIET}) for _ in range(3)]
    start = time.perf_counter()
    for c in consumers:
        c.subscribe([topic])
    deadline = start + 60
    try:
        while time.perf_counter() < deadline:
            for c in consumers:
                c.poll(0.01)
            if sorted((len(c.assignment()) for c in consumers), reverse=True) == list(split):
                return time.perf_counter() - start
        raise RuntimeError(f"no {split} split: {[len(c.assignment()) for c in consumers]}")
    finally:
        for c in consumers:
            c.close()


def second_member_joins(bootstrap: str, group: str, topic: str, protocol: dict) -> float:
    """One consumer owns every partition; a second subscribes: seconds until each holds half."""
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group, **protocol, **QUIET}) for _ in range(2)]
    try:
        consumers[0].subscribe([topic])
        deadline = time.perf_counter() + 60
        while not consumers[0].assignment() or len(consumers[0].assignment()) < 4:
            consumers[0].poll(0.01)
            if time.perf_counter() > deadline:
                raise RuntimeError("the first member never got every partition")
        start = time.perf_counter()
        consumers[1].subscribe([topic])
        while time.perf_counter() < start + 60:
            for c in consumers:
                c.poll(0.01)
            if [len(c.assignment()) for c in consumers] == [2, 2]:
                return time.perf_counter() - start
        raise RuntimeError(f"no 2/2 split: {[len(c.assignment()) for c in consumers]}")
    finally:
        for c in consumers:
            c.close()


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    return [(hp.rsplit(":", 1)[0], int(hp.rsplit(":", 1)[1])) for hp in text.split(",")]


SPLIT_4 = "3 confluent-kafka consumers, 4-partition topic, to a 2/1/1 split"
SPLIT_6 = "3 confluent-kafka consumers to a 2/2/2 split"
# The same with the KIP-848 consumer protocol, and a second member joining a 4-partition group
# under each protocol (fakebroker's consumer heartbeat interval is 200 ms here, like the classic
# clients' heartbeat.interval.ms above; the mock keeps its own).
SPLIT_4_848 = "KIP-848: 3 consumers, 4-partition topic, to a 2/1/1 split"
SPLIT_6_848 = "KIP-848: 3 consumers to a 2/2/2 split"
SECOND_CLASSIC = "classic: a 2nd member joins, to a 2/2 split (4 partitions)"
SECOND_848 = "KIP-848: a 2nd member joins, to a 2/2 split (4 partitions)"


def raw_row(n: int) -> str:
    return f"{n} members to Stable (raw client)"


def measure(
    bootstrap: str,
    sizes: list[int],
    label: str,
    server_cpu: Callable[[], float],
    lenient: bool = False,
    raw_only: bool = False,
) -> tuple[dict[str, float | str], dict[str, tuple[float | None, float, int]]]:
    """Seconds per scenario, or the reason a scenario could not finish (printed, not hidden);
    and the server's and the client's CPU seconds and the generation reached per raw-client
    row. A size given twice gets a row per run, each with a group of its own (a group reused
    would wait for the members of the run before it, gone but not yet expired)."""
    out: dict[str, float | str] = {}
    cpu: dict[str, tuple[float | None, float, int]] = {}
    for index, n in enumerate(sizes):
        run = sizes[:index].count(n)
        name = raw_row(n) + (f" #{run + 1}" if run else "")
        row = form_group(parse_bootstrap(bootstrap), f"{label}-{n}-{run}", n, 6, lenient, server_cpu)
        try:
            out[name], used, client, generation = asyncio.run(asyncio.wait_for(row, timeout=ROW_LIMIT_S))
            cpu[name] = (used, client, generation)
        except TimeoutError:
            out[name] = f"gave up after {ROW_LIMIT_S} s"
        except Exception as exc:
            out[name] = f"failed: {exc!r}"
    if raw_only:
        return out, cpu
    # The mock auto-creates topics with 4 partitions and cannot create others from Python,
    # so the side-by-side row uses a 4-partition topic on both.
    for name, topic, split, protocol in (
        (SPLIT_6, TOPIC, (2, 2, 2), CLASSIC),
        (SPLIT_4, TOPIC_4, (2, 1, 1), CLASSIC),
        (SPLIT_6_848, TOPIC, (2, 2, 2), CONSUMER),
        (SPLIT_4_848, TOPIC_4, (2, 1, 1), CONSUMER),
    ):
        try:
            kind = "848" if protocol is CONSUMER else "classic"
            out[name] = three_consumers_split(bootstrap, f"{label}-{topic}-{kind}", topic, split, protocol)
        except Exception as exc:
            out[name] = f"failed: {exc!r}"
    for name, protocol in ((SECOND_CLASSIC, CLASSIC), (SECOND_848, CONSUMER)):
        try:
            out[name] = second_member_joins(bootstrap, f"{label}-second-{name[:7]}", TOPIC_4, protocol)
        except Exception as exc:
            out[name] = f"failed: {exc!r}"
    return out, cpu


def _serve(kind: str, conn: Connection) -> None:
    """Child process: run a fakebroker cluster or librdkafka's mock, send its bootstrap, then
    answer "cpu" with this process's CPU seconds until told "stop"."""
    if kind == "fake":
        config = {"group.consumer.heartbeat.interval.ms": 200}
        with FakeCluster(brokers=3, topics={TOPIC: 6, TOPIC_4: 4}, config=config).run_in_thread() as cluster:
            conn.send(cluster.bootstrap_servers)
            while conn.recv() == "cpu":
                conn.send(time.process_time())
        return
    mock = Producer({"test.mock.num.brokers": 3, **QUIET})
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in mock.list_topics(timeout=10).brokers.values())
    warm = Producer({"bootstrap.servers": bootstrap, **QUIET})
    for topic in (TOPIC, TOPIC_4):  # auto-created by the mock, with 4 partitions
        warm.produce(topic, b"")
    warm.flush(10)
    conn.send(bootstrap)
    while conn.recv() == "cpu":
        conn.send(time.process_time())


@contextmanager
def served_cli() -> Iterator[tuple[str, Callable[[], float]]]:
    """``fakebroker serve`` as a user runs it: events printed (coloured, as on a terminal)
    into a pipe this process drains; its bootstrap, and a reader of its CPU seconds."""
    command = [sys.executable, "-m", "fakebroker", "serve", "--brokers", "3", "--port", "0", "--color"]
    command += ["--topic", f"{TOPIC}:6", "--topic", f"{TOPIC_4}:4", "--set", "group.consumer.heartbeat.interval.ms=200"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    lines = [0]
    try:
        bootstrap = proc.stdout.readline().decode().split("bootstrap: ", 1)[1].strip()

        def drain() -> None:
            for _ in proc.stdout:  # type: ignore[union-attr]
                lines[0] += 1

        threading.Thread(target=drain, daemon=True).start()
        tick = os.sysconf("SC_CLK_TCK")

        def cpu() -> float:
            with open(f"/proc/{proc.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick  # utime + stime

        yield bootstrap, cpu
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        print(f"fakebroker serve printed {lines[0]} lines")


@contextmanager
def server(kind: str) -> Iterator[tuple[str, Callable[[], float]]]:
    """A server in a child process: its bootstrap, and a reader of its CPU seconds."""
    if kind == "serve":
        with served_cli() as served:
            yield served
        return
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("spawn").Process(target=_serve, args=(kind, theirs), daemon=True)
    child.start()
    try:
        bootstrap = ours.recv()

        def cpu() -> float:
            ours.send("cpu")
            return ours.recv()

        yield bootstrap, cpu
    finally:
        ours.send("stop")
        child.join(10)
        if child.is_alive():
            child.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10,100,1000,5000,10000")
    parser.add_argument("--no-mock", action="store_true", help="fakebroker only (no librdkafka mock column)")
    parser.add_argument("--no-serve", action="store_true", help="no `fakebroker serve` column (events printed)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    with server("fake") as (bootstrap, cpu):
        fake, fake_cpu = measure(bootstrap, sizes, "fake", cpu)
    served: dict[str, float | str] = {}
    served_cpu: dict[str, tuple[float | None, float, int]] = {}
    if not args.no_serve:
        with server("serve") as (bootstrap, cpu):
            served, served_cpu = measure(bootstrap, sizes, "serve", cpu, raw_only=True)
    base: dict[str, float | str] = {}
    base_cpu: dict[str, tuple[float | None, float, int]] = {}
    if not args.no_mock:
        with server("mock") as (bootstrap, cpu):
            base, base_cpu = measure(bootstrap, sizes, "mock", cpu, lenient=True)

    def cell(value: float | str | None, cpu: tuple[float | None, float, int] | None = None) -> str:
        if not isinstance(value, float):
            return "-" if value is None else value
        if cpu is None:
            return f"{value:.3f}"
        server_cpu, client_cpu, generation = cpu
        return f"{value:.3f} (generation {generation}; cpu {server_cpu:.2f}, client {client_cpu:.2f})"

    table = Table(
        title="group formation, 3 brokers (seconds; the generation reached; server and client CPU seconds; "
        "ratio = mock / fakebroker)"
    )
    for col in ("scenario", "fakebroker s", "fakebroker serve s (events printed)", "librdkafka mock s", "ratio"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for name, seconds in fake.items():
        other = base.get(name)
        ratio = f"{other / seconds:.2f}" if isinstance(seconds, float) and isinstance(other, float) else "-"
        row = (cell(seconds, fake_cpu.get(name)), cell(served.get(name), served_cpu.get(name)))
        table.add_row(name, *row, cell(other, base_cpu.get(name)), ratio)
    Console(width=180).print(table)
    for size in (1000, 5000, 10000):
        for key, results in ((f"stable_{size}_s", fake), (f"stable_{size}_serve_s", served)):
            stable = results.get(raw_row(size))
            if isinstance(stable, float):
                generation = (fake_cpu if results is fake else served_cpu)[raw_row(size)][2]
                print(f"{key}: {stable:.3f} (generation {generation})")
            elif size in sizes and results:
                print(f"{key}: {stable}")


if __name__ == "__main__":
    main()

"""Where a test's produce/consume round trip spends its time: fakebroker in the test's process,
``fakebroker serve`` in a process of its own, fakebroker's trio edge and a bare trio server
answering fakebroker's answers without working them out, and librdkafka's mock, side by side.

    python benchmarks/round_trip.py [--rounds 5] [--trips 30]

A trip is what the fixture benchmark's test does (``benchmarks/fixture.py``), on a cluster that
is already running: a confluent-kafka producer sends one record and flushes (``produce``), a
consumer assigned to the partition polls until it reads that record (``consume``), and both
close (``close``: librdkafka's own timers, about the same against any server). The servers run
at once and each round measures ``--trips`` trips of each in turn, in a rotating order; a cell
is the median over the rounds of each round's median, with the range. The ratios compare
``produce`` plus ``consume``, where the server answers: each is the median over the rounds of
that round's ratio, both sides measured within seconds of each other on this shared VM.

Two ways answer from a recording instead of working answers out: fakebroker's answers to the
same bytes (their correlation ids put back), recorded from a cluster on the port each then
listens on, so the answers name it. A request with no recording gets the last answer recorded
for its API, but a Fetch waits as a long poll would, until the client leaves.

- ``fakebroker's edge, its answers``: a fakebroker cluster whose pipeline answers from the
  recording: its listeners and connections, with no decoding, handling or encoding.
- ``bare trio, fakebroker's answers``: the floor of any broker on trio in the test's process,
  a trio server in a thread that reads, frames and writes, and nothing more.

``round_trip_ratio_mock`` is fakebroker in process over the mock; ``floor_ratio_mock`` the floor
over the mock, what a broker on trio that spent nothing on its answers would still pay;
``edge_ratio_floor`` fakebroker's edge over the floor; ``handling_share`` the part of
fakebroker's time that its edge answering from the recording does not pay (decoding, handling,
encoding); ``serve_ratio_in_process`` a ``fakebroker serve`` process over the embedded cluster,
which shares the test's process and its GIL.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager

import trio
from confluent_kafka import Consumer, Producer, TopicPartition

try:
    from ._measure import spread
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import spread

TOPIC = "t"
QUIET = {"log_level": 3}
PHASES = ("produce", "consume", "close")
FETCH = (1).to_bytes(2, "big")


def trip(bootstrap: str) -> tuple[float, float, float]:
    """One round trip's phases, ms."""
    started = time.perf_counter()
    producer = Producer({"bootstrap.servers": bootstrap, **QUIET})
    producer.produce(TOPIC, value=b"hello", partition=0)
    assert producer.flush(10) == 0
    produced = time.perf_counter()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False, **QUIET})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    try:
        for _ in range(100):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                break
        else:
            raise AssertionError("nothing read back")
        consumed = time.perf_counter()
    finally:
        consumer.close()
        del producer
    ended = time.perf_counter()
    return (produced - started) * 1e3, (consumed - produced) * 1e3, (ended - consumed) * 1e3


@contextmanager
def in_process() -> Iterator[str]:
    from fakebroker import FakeCluster

    with FakeCluster(warm=True, topics={TOPIC: 1}).run_in_thread() as cluster:
        yield cluster.bootstrap_servers


@contextmanager
def served() -> Iterator[str]:
    command = [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--topic", f"{TOPIC}:1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().split()[1]  # "bootstrap: HOST:PORT"
        # its event lines read and dropped, so a full pipe never stops it
        threading.Thread(target=process.stdout.read, daemon=True).start()
        yield bootstrap
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def mocked() -> Iterator[str]:
    mock = Producer({"test.mock.num.brokers": 1, **QUIET})  # it creates the topic on first use
    yield ",".join(f"{b.host}:{b.port}" for b in mock.list_topics(timeout=10).brokers.values())
    del mock


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def recording(
    process: Callable[..., Awaitable[bytes | None]], answers: dict[bytes, bytes]
) -> Callable[..., Awaitable[bytes | None]]:
    """A pipeline's ``process`` that also records each answer (see :func:`recorded_answers`)."""

    async def recorded(payload: bytes, peer: object) -> bytes | None:
        reply = await process(payload, peer)
        if reply is not None:
            answers[payload[:4] + payload[8:]] = answers[payload[:2]] = reply[4:]
        return reply

    return recorded


def recorded_answers(port: int, trips: int) -> dict[bytes, bytes]:
    """fakebroker's answers on ``port`` to a few trips: the request less its correlation id ->
    the answer less it (and, under the API key alone, the last answer of that API)."""
    from fakebroker import FakeCluster

    answers: dict[bytes, bytes] = {}
    with FakeCluster(warm=True, port=port, topics={TOPIC: 1}).run_in_thread() as cluster:
        for server in cluster.servers:
            server.pipeline.process = recording(server.pipeline.process, answers)  # type: ignore[method-assign,assignment]
        for _ in range(trips):
            trip(cluster.bootstrap_servers)
    return answers


def replayed(answers: dict[bytes, bytes], request: bytes) -> bytes | None:
    """The recorded answer to ``request`` with its correlation id put back (less the frame's
    size), or None for a Fetch with no recording, which is held as a long poll would be."""
    answer = answers.get(request[:4] + request[8:])
    if answer is None:
        if request[:2] == FETCH:
            return None
        answer = answers[request[:2]]
    return request[4:8] + answer


@contextmanager
def floor(trips: int) -> Iterator[str]:
    port = free_port()  # the recording cluster's, then the floor's
    answers = recorded_answers(port, trips)

    async def serve(stream: trio.SocketStream) -> None:
        buffer, parked = b"", False
        async with stream:
            try:
                while data := await stream.receive_some(65536):
                    buffer += data
                    out = []
                    while not parked and len(buffer) >= 4:
                        size = struct.unpack_from(">i", buffer)[0]
                        if len(buffer) < 4 + size:
                            break
                        request, buffer = buffer[4 : 4 + size], buffer[4 + size :]
                        answer = replayed(answers, request)
                        if answer is None:
                            parked = True  # until the client leaves
                            break
                        out.append(struct.pack(">i", len(answer)) + answer)
                    if out:
                        await stream.send_all(b"".join(out))
            except trio.BrokenResourceError:
                pass

    ready = threading.Event()
    stop: list[Callable[[], object]] = []

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as scope:
            stop.append(lambda: token.run_sync_soon(scope.cancel))
            ready.set()
            await trio.serve_listeners(serve, listeners)

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        stop[0]()
        thread.join(10)


@contextmanager
def edge(trips: int) -> Iterator[str]:
    """fakebroker's own edge (listeners, connections, the pipeline's entry) answering the
    recorded answers as the floor does: what its trio edge costs beside the bare server's."""
    from fakebroker import FakeCluster

    port = free_port()
    answers = recorded_answers(port, trips)

    def replaying(process: Callable[..., Awaitable[bytes | None]]) -> Callable[..., Awaitable[bytes | None]]:
        async def replay(payload: bytes, peer: object) -> bytes | None:
            answer = replayed(answers, payload)
            return answer if answer is not None else await process(payload, peer)  # a Fetch waits as fakebroker's

        return replay

    with FakeCluster(warm=True, port=port, topics={TOPIC: 1}).run_in_thread() as cluster:
        for server in cluster.servers:
            server.pipeline.process = replaying(server.pipeline.process)  # type: ignore[method-assign,assignment]
        yield cluster.bootstrap_servers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trips", type=int, default=30, help="trips of each way per round")
    args = parser.parse_args()
    ways = {
        "fakebroker, in process": in_process(),
        "fakebroker serve": served(),
        "fakebroker's edge, its answers": edge(10),
        "bare trio, fakebroker's answers": floor(10),
        "librdkafka mock": mocked(),
    }
    medians: dict[str, list[tuple[float, ...]]] = {way: [] for way in ways}
    with ExitStack() as running:
        bootstraps = {way: running.enter_context(server) for way, server in ways.items()}
        for bootstrap in bootstraps.values():
            for _ in range(5):  # untimed: the first trips pay for first uses
                trip(bootstrap)
        names = list(ways)
        for index in range(args.rounds):
            for way in names[index % len(names) :] + names[: index % len(names)]:
                trips = [trip(bootstraps[way]) for _ in range(args.trips)]
                medians[way].append(tuple(statistics.median(t[k] for t in trips) for k in range(len(PHASES))))
    print(f"a produce/consume round trip on a running cluster, ms: {args.rounds} rounds of {args.trips} trips each")
    print(f"{'':34}" + "".join(f"{phase:>22}" for phase in PHASES))
    for way, rows in medians.items():
        print(f"{way:34}" + "".join(f"{spread([r[k] for r in rows], 2):>22}" for k in range(len(PHASES))))

    def answered(row: tuple[float, ...]) -> float:
        return row[0] + row[1]  # produce and consume: the phases the server answers in

    def ratios(top: str, bottom: str) -> list[float]:
        return [answered(a) / answered(b) for a, b in zip(medians[top], medians[bottom])]

    def show(name: str, values: list[float]) -> None:
        print(f"{name}: {statistics.median(values):.2f} (range {min(values):.2f}-{max(values):.2f})")

    show("round_trip_ratio_mock", ratios("fakebroker, in process", "librdkafka mock"))
    show("floor_ratio_mock", ratios("bare trio, fakebroker's answers", "librdkafka mock"))
    show("edge_ratio_floor", ratios("fakebroker's edge, its answers", "bare trio, fakebroker's answers"))
    show("handling_share", [1 - r for r in ratios("fakebroker's edge, its answers", "fakebroker, in process")])
    show("serve_ratio_in_process", ratios("fakebroker serve", "fakebroker, in process"))


if __name__ == "__main__":
    main()

"""Streams groups (KIP-1071): how fast N members of a streams group reach a settled assignment,
fakebroker against a real Kafka 4.4 broker in the same run (when Java and the conformance
tests' Kafka jars are there; librdkafka's mock has no streams groups).

    python benchmarks/streams_groups.py [--sizes 3,30,300] [--no-kafka]

N members driven by our raw protocol client (one connection each, asyncio) send
StreamsGroupHeartbeat as Kafka Streams does: a join at epoch 0 with a one-subtopology topology
reading a topic of 2N partitions, then heartbeats every 10 ms reporting the active tasks they
hold (a member takes what it is assigned at once: no state to restore). Timed from the first
join until every member is at the same epoch with tasks of its own, and their tasks cover
every partition once. Both
brokers run with ``group.streams.initial.rebalance.delay.ms=0`` and otherwise Kafka's defaults
(the target assignment is recomputed at most every ``group.streams.assignment.interval.ms``,
1 s, on both). fakebroker runs in a child process of its own (its CPU is not the clients'),
as in ``benchmarks/groups.py``. The last lines are ``streams_stable_N_s`` (fakebroker) and
``streams_stable_N_kafka_s`` per size, and ``streams_ratio_kafka_N`` (Kafka's seconds over
fakebroker's: above 1, fakebroker is faster).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import time
import uuid
from multiprocessing.connection import Connection
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster

try:
    from ._measure import real_kafka, tests_importable
    from .groups import AsyncRawClient, parse_bootstrap
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import real_kafka, tests_importable
    from groups import AsyncRawClient, parse_bootstrap

STREAMS_GROUP_HEARTBEAT = 88
ROW_LIMIT_S = 90
QUIET = {"log_level": 3}


def probes() -> Any:
    """The conformance probes' StreamsGroupHeartbeat bodies (``tests/conformance``)."""
    tests_importable()
    from tests.conformance import probes_streams

    return probes_streams


async def settle(bootstrap: str, group: str, topic: str, n: int, partitions: int) -> float:
    """Seconds until ``n`` raw members each hold tasks, every partition's once, all at one epoch."""
    host, port = parse_bootstrap(bootstrap)[0]
    probe = await AsyncRawClient.connect(host, port)
    found = await probe.request(10, 4, {"key_type": 0, "coordinator_keys": [group]})
    probe.close()
    coordinator = found.coordinators[0]
    if coordinator.error_code:
        raise RuntimeError(f"FindCoordinator: error {coordinator.error_code}")
    clients = [await AsyncRawClient.connect(coordinator.host, coordinator.port) for _ in range(n)]
    streams = probes()
    held: dict[int, tuple[int, frozenset[int]]] = {}  # member index -> (epoch, partitions held)
    settled = asyncio.Event()

    def all_settled() -> bool:
        if len(held) < n or len({epoch for epoch, _ in held.values()}) != 1:
            return False
        if not all(parts for _, parts in held.values()):  # the target of all n, not of the first
            return False
        taken = [p for _, parts in held.values() for p in parts]
        return len(taken) == partitions and set(taken) == set(range(partitions))

    async def member(index: int, client: AsyncRawClient) -> None:
        member_id, process = uuid.uuid4().hex, str(uuid.uuid4())
        body = streams.heartbeat_body(
            group,
            member_id,
            0,
            rebalance_timeout_ms=300000,
            topology=streams.stateless(topic),
            active_tasks=[],
            standby_tasks=[],
            warmup_tasks=[],
            process_id=process,
            client_tags=[],
        )
        mine: list[int] = []
        while not settled.is_set():
            answer = await client.request(STREAMS_GROUP_HEARTBEAT, 1, body)
            if answer.error_code:
                raise RuntimeError(f"StreamsGroupHeartbeat: error {answer.error_code}: {answer.error_message}")
            if answer.active_tasks is not None:
                mine = sorted(p for task in answer.active_tasks for p in task.partitions)
            held[index] = (answer.member_epoch, frozenset(mine))
            if all_settled():
                settled.set()
                return
            await asyncio.sleep(0.01)
            tasks = [{"subtopology_id": "0", "partitions": mine}] if mine else []
            body = streams.heartbeat_body(
                group, member_id, answer.member_epoch, active_tasks=tasks, standby_tasks=[], warmup_tasks=[]
            )

    start = time.perf_counter()
    try:
        await asyncio.gather(*(member(i, c) for i, c in enumerate(clients)))
        return time.perf_counter() - start
    finally:
        for c in clients:
            c.close()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)


def measure(bootstrap: str, sizes: list[int], label: str) -> dict[int, float | str]:
    out: dict[int, float | str] = {}
    for n in sizes:
        topic, group = f"{label}-source-{n}", f"{label}-app-{n}"
        create_topic(bootstrap, topic, 2 * n)
        try:
            out[n] = asyncio.run(asyncio.wait_for(settle(bootstrap, group, topic, n, 2 * n), ROW_LIMIT_S))
        except TimeoutError:
            out[n] = f"gave up after {ROW_LIMIT_S} s"
        except Exception as exc:
            out[n] = f"failed: {exc!r}"
    return out


def _fakebroker_child(conn: Connection) -> None:
    """A FakeCluster of one broker in this process until told to stop."""
    with FakeCluster(config={"group.streams.initial.rebalance.delay.ms": 0}).run_in_thread() as cluster:
        conn.send(cluster.bootstrap_servers)
        conn.recv()


def against_fakebroker(sizes: list[int]) -> dict[int, float | str]:
    parent, child = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_fakebroker_child, args=(child,))
    process.start()
    try:
        return measure(parent.recv(), sizes, "fake")
    finally:
        parent.send("stop")
        process.join(30)


def against_kafka(sizes: list[int]) -> dict[int, float | str] | str:
    KafkaBroker = real_kafka()
    if isinstance(KafkaBroker, str):
        return KafkaBroker
    with KafkaBroker() as kafka:  # group.streams.initial.rebalance.delay.ms=0 among its settings
        return measure(f"127.0.0.1:{kafka.port}", sizes, "kafka")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="3,30,300", help="member counts, comma-separated")
    parser.add_argument("--no-kafka", action="store_true", help="skip the real Kafka broker")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    fake = against_fakebroker(sizes)
    kafka = "not measured: --no-kafka" if args.no_kafka else against_kafka(sizes)

    table = Table(title="streams group members to a settled assignment (raw StreamsGroupHeartbeat, 2N partitions)")
    for col in ("members", "fakebroker s", "Kafka 4.4 s", "ratio"):
        table.add_column(col, justify="right")
    for n in sizes:
        ours = fake[n]
        theirs = kafka if isinstance(kafka, str) else kafka[n]
        ratio = f"{theirs / ours:.2f}" if isinstance(ours, float) and isinstance(theirs, float) else "-"
        show = [f"{x:.3f}" if isinstance(x, float) else x for x in (ours, theirs)]
        table.add_row(str(n), *show, ratio)
    Console(width=150).print(table)
    for n in sizes:
        if isinstance(fake[n], float):
            print(f"streams_stable_{n}_s: {fake[n]:.3f}")
        if not isinstance(kafka, str) and isinstance(kafka[n], float):
            print(f"streams_stable_{n}_kafka_s: {kafka[n]:.3f}")
            if isinstance(fake[n], float):
                print(f"streams_ratio_kafka_{n}: {kafka[n] / fake[n]:.2f}")
    if isinstance(kafka, str):
        print(f"real Kafka: {kafka}")


if __name__ == "__main__":
    main()

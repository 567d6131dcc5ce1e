"""kafka-python consumer groups (subscribe + group_id): the scenarios of ``group_scenarios.py``
against a 3-broker FakeCluster run in a background thread (``run_in_thread``).

Every member runs its own poll loop in its own thread, as an application does (kafka-python 3
also runs the network and heartbeats on an IO thread per consumer; see ``Member`` for why
round-robin polling from one thread does not work with kafka-python 3.0.12): poll, record what
arrived, synchronously commit exactly that, repeat. The scenarios run on the test's asyncio
loop and call kafka-python's blocking API in worker threads.
"""

from __future__ import annotations

import contextlib
import queue
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Future
from typing import Any

import anyio
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kafka_errors
from kafka.structs import OffsetAndMetadata

from fakebroker.cluster import FakeCluster
from fakebroker.protocol.error_codes import ErrorCode
from tests.clients import group_client as gc
from tests.clients.group_client import PARTITIONS, TOPIC, Described, Ledger
from tests.clients.group_scenarios import SCENARIOS, run_scenario
from tests.clients.kafka_python_join import knows_partitions

pytestmark = [pytest.mark.clients, pytest.mark.anyio]

MAX_POLL_INTERVAL_MS = gc.REBALANCE_TIMEOUT_MS  # kafka-python sends it as the rebalance timeout
COMMON = {
    "request_timeout_ms": 10_000,
    "retry_backoff_ms": 50,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 500,
    "metadata_max_age_ms": 5_000,
}
# What a commit may fail with when a rebalance overtakes it (kafka-python turns the broker's
# REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID into CommitFailedError).
COMMIT_REBALANCE_ERRORS = (kafka_errors.CommitFailedError, kafka_errors.RebalanceInProgressError)


@pytest.fixture
def anyio_backend():
    return "asyncio"


def in_thread(fn: Callable[..., Any], *args: Any) -> Awaitable[Any]:
    """``fn(*args)`` in a worker thread: kafka-python blocks."""
    return anyio.to_thread.run_sync(fn, *args)


def produce(cluster: FakeCluster, n: int, start: int = 0, per_burst: int | None = None) -> None:
    """Records ``start..start+n-1``, record i into partition i % 6, acknowledged by all; with
    ``per_burst``, in bursts 50 ms apart."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2, **COMMON)
    try:
        step = per_burst or n
        for first in range(start, start + n, step):
            futures = [
                producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS)
                for i in range(first, min(start + n, first + step))
            ]
            producer.flush(timeout=10)
            for f in futures:
                f.get(timeout=10)
            if per_burst:
                time.sleep(0.05)
    finally:
        producer.close(timeout=5)


class PacedProducer(threading.Thread):
    """:func:`produce` in bursts of 30, in a thread of its own."""

    def __init__(self, cluster: FakeCluster, n: int):
        super().__init__(name="paced-producer", daemon=True)
        self.cluster, self.n = cluster, n
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            produce(self.cluster, self.n, per_burst=30)
        except BaseException as exc:
            self.error = exc

    @property
    def running(self) -> bool:
        return self.is_alive()

    async def finish(self) -> None:
        await in_thread(self.join, 30)
        assert not self.is_alive(), "the producer did not finish"
        if self.error is not None:
            raise self.error

    def cancel(self) -> None:
        pass  # a daemon thread; it ends with its last burst


class Member:
    """One group consumer with its own poll loop in its own thread, as an application runs it:
    poll, record what arrived, commit exactly that synchronously, repeat. ``paused`` stops the
    loop (a stall).

    One thread per consumer because kafka-python 3.0.12 discards a JoinGroup/SyncGroup result
    that completes while no poll() is waiting for it (``join_group_async`` starts a new join
    when ``_join_task.is_done``): driving several consumers round-robin with short polls makes
    a leader rejoin after every generation, which Kafka answers, correctly, with yet another
    rebalance."""

    def __init__(self, cluster: FakeCluster, gid: str, name: str, ledger: Ledger, **config: Any):
        self.settings = gc.member_settings(
            cluster, gid, name, **{**COMMON, "max_poll_interval_ms": MAX_POLL_INTERVAL_MS, **config}
        )
        self.label = name
        self.ledger = ledger
        self.consumer: KafkaConsumer | None = None
        self.thread = threading.Thread(target=self._loop, name=f"member-{name}", daemon=True)
        self.paused = threading.Event()
        self._stopping = threading.Event()
        self._calls: queue.Queue = queue.Queue()
        self.partitions: list[int] = []
        self.member_id = ""
        self.generation = -1
        self.polls = 0
        self.error: BaseException | None = None

    def _open(self) -> None:
        self.consumer = KafkaConsumer(TOPIC, **self.settings)
        knows_partitions(self.consumer, TOPIC, PARTITIONS)  # kafka-python 3.0.12: see kafka_python_join.py

    async def start(self, loop: bool = True) -> Member:
        await in_thread(self._open)
        if loop:
            self.run()
        return self

    def run(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        assert self.consumer is not None
        try:
            while not self._stopping.is_set():
                while not self._calls.empty():
                    fn, done = self._calls.get()
                    try:
                        done.set_result(fn(self.consumer))
                    except BaseException as exc:  # handed to the caller
                        done.set_exception(exc)
                if self.paused.is_set():
                    time.sleep(0.02)
                    continue
                self._step()
        except BaseException as exc:
            self.error = exc
        finally:
            self.consumer.close(autocommit=False)

    def _step(self) -> None:
        assert self.consumer is not None
        batches = self.consumer.poll(timeout_ms=gc.POLL_MS)
        self.polls += 1
        offsets = {}
        for tp, records in batches.items():
            self.ledger.delivered(self.label, [(r.partition, r.offset) for r in records])
            offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
        if offsets:
            try:
                self.consumer.commit(offsets)
            except COMMIT_REBALANCE_ERRORS as exc:
                self.ledger.commit_failed(self.label, type(exc).__name__)
            else:
                self.ledger.committed({tp.partition: o.offset for tp, o in offsets.items()})
        meta = self.consumer.group_metadata()
        self.partitions = sorted(tp.partition for tp in self.consumer.assignment())
        self.member_id, self.generation = meta.member_id, meta.generation_id

    def _call(self, fn: Callable[[KafkaConsumer], Any]) -> Any:
        """Run ``fn(consumer)`` on the member's own thread (KafkaConsumer is not thread-safe)."""
        done: Future = Future()
        self._calls.put((fn, done))
        return done.result(timeout=15)

    def pause(self) -> None:
        self.paused.set()

    def check_alive(self) -> None:
        if self.error is not None:
            raise self.error

    async def commit(self, offsets: dict[int, tuple[int, str]]) -> None:
        self.paused.set()
        chosen = {TopicPartition(TOPIC, p): OffsetAndMetadata(o, meta, -1) for p, (o, meta) in offsets.items()}
        await in_thread(self._call, lambda c: c.commit(chosen))

    async def committed(self, partition: int) -> int | None:
        assert self.consumer is not None and not self.thread.is_alive()
        return await in_thread(self.consumer.committed, TopicPartition(TOPIC, partition))

    def _close(self) -> None:
        self._stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=20)
            assert not self.thread.is_alive(), f"{self.label} did not stop"
        elif self.thread.ident is None and self.consumer is not None:  # never started
            self.consumer.close(autocommit=False)
        if self.error is not None:
            raise self.error

    async def close(self) -> None:
        await in_thread(self._close)


class Admin:
    """kafka-python's KafkaAdminClient (kafka-python 3 renamed the group calls: list_groups,
    describe_groups, list_group_offsets, delete_groups), in worker threads."""

    filters_by_state = True
    missing_group_error = ErrorCode.GROUP_ID_NOT_FOUND  # it sends DescribeGroups v6 or later

    def __init__(self, admin: KafkaAdminClient):
        self.client = admin

    async def list_groups(self, states: Sequence[str] | None = None) -> dict[str, tuple[str, str | None]]:
        groups = await in_thread(lambda: self.client.list_groups(states_filter=states))
        return {g["group_id"]: (g["protocol_type"], g.get("group_state")) for g in groups}

    async def describe(self, gid: str) -> Described:
        group = (await in_thread(self.client.describe_groups, [gid]))[gid]
        members = {}
        for m in group["members"]:
            # kafka-python decodes the consumer-protocol bytes into dicts
            assigned = m["member_assignment"]["assigned_partitions"] if m["member_assignment"] else []
            members[m["member_id"]] = {
                "client_id": m["client_id"],
                "client_host": m["client_host"],
                "assignment": {t["topic"]: sorted(t["partitions"]) for t in assigned},
                "topics": m["member_metadata"]["topics"] if m["member_metadata"] else [],
            }
        error = re.match(r"\[Error (-?\d+)\]", group["error"]) if group["error"] else None
        return Described(
            error=int(error.group(1)) if error else 0,
            group=group["group_id"],
            state=group["group_state"],
            protocol_type=group["protocol_type"],
            protocol=group["protocol_data"],
            members=members,
        )

    async def offsets(self, gid: str) -> dict[int, int]:
        offsets = (await in_thread(self.client.list_group_offsets, {gid: None}))[gid]
        return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC}

    async def delete(self, gid: str) -> str:
        return (await in_thread(self.client.delete_groups, [gid]))[gid]

    async def close(self) -> None:
        await in_thread(self.client.close)


class KafkaPythonClient:
    """The :class:`group_client.Client` of kafka-python."""

    name = "kp"
    assignor = "range"  # kafka-python's default assignor

    @contextlib.asynccontextmanager
    async def open_cluster(self, **settings: Any) -> AsyncIterator[FakeCluster]:
        with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, **settings).run_in_thread() as cluster:
            yield cluster

    def member(self, cluster: FakeCluster, gid: str, name: str, ledger: Ledger, **config: Any) -> Member:
        return Member(cluster, gid, name, ledger, **config)

    def stall_config(self, max_poll_ms: int) -> dict[str, Any]:
        return {"max_poll_interval_ms": max_poll_ms}  # also its rebalance timeout

    async def produce(self, cluster: FakeCluster, n: int, start: int = 0) -> None:
        await in_thread(produce, cluster, n, start)

    def produce_paced(self, cluster: FakeCluster, n: int) -> PacedProducer:
        return PacedProducer(cluster, n)

    async def admin(self, cluster: FakeCluster) -> Admin:
        return Admin(
            await in_thread(
                lambda: KafkaAdminClient(
                    bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000, retry_backoff_ms=50
                )
            )
        )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_group(scenario) -> None:
    await run_scenario(scenario, KafkaPythonClient())

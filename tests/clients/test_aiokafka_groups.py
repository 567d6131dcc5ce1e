"""aiokafka consumer groups (subscribe + group_id): the scenarios of ``group_scenarios.py``
against a 3-broker FakeCluster served from the test's own asyncio loop (``async with
FakeCluster``, anyio's pytest plugin).

Every member runs its own poll loop as an asyncio task, as an application does: ``getmany()``,
record what arrived, commit exactly that, repeat.

aiokafka has no public accessor for its member id and generation; they are read from
``consumer._coordinator`` to compare them with the broker's view. Its admin client has no
delete_consumer_groups: deleting goes through kafka-python's KafkaAdminClient (delete_groups),
run in a worker thread because the cluster is served from this very event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka import errors as aiokafka_errors
from aiokafka.structs import OffsetAndMetadata

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import data as consumer_protocol
from fakebroker.protocol.error_codes import ErrorCode
from tests.clients import group_client as gc
from tests.clients.group_client import PARTITIONS, TOPIC, Described, Ledger
from tests.clients.group_scenarios import SCENARIOS, run_scenario

pytestmark = [pytest.mark.clients, pytest.mark.anyio]

COMMON = {"request_timeout_ms": 10_000, "retry_backoff_ms": 50, "metadata_max_age_ms": 5_000}
# What a commit may fail with when a rebalance overtakes it: the broker's REBALANCE_IN_PROGRESS
# / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID become CommitFailedError; a partition revoked
# between getmany() and commit() is IllegalStateError.
COMMIT_REBALANCE_ERRORS = (aiokafka_errors.CommitFailedError, aiokafka_errors.IllegalStateError)


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def produce(cluster: FakeCluster, n: int, start: int = 0, per_burst: int | None = None) -> None:
    """Records ``start..start+n-1``, record i into partition i % 6, acknowledged by all; with
    ``per_burst``, in bursts 50 ms apart."""
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2, **COMMON)
    await asyncio.wait_for(producer.start(), 15)
    try:
        step = per_burst or n
        for first in range(start, start + n, step):
            futures = [
                await producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS)
                for i in range(first, min(start + n, first + step))
            ]
            await asyncio.wait_for(asyncio.gather(*futures), 15)
            if per_burst:
                await asyncio.sleep(0.05)
    finally:
        await producer.stop()


class PacedProducer:
    """:func:`produce` in bursts of 30, as an asyncio task."""

    def __init__(self, cluster: FakeCluster, n: int):
        self.task = asyncio.create_task(produce(cluster, n, per_burst=30), name="paced-producer")

    @property
    def running(self) -> bool:
        return not self.task.done()

    async def finish(self) -> None:
        await asyncio.wait_for(self.task, 30)

    def cancel(self) -> None:
        self.task.cancel()


class Member:
    """One group consumer with its own poll loop (an asyncio task); ``paused`` stops the loop."""

    def __init__(self, cluster: FakeCluster, gid: str, name: str, ledger: Ledger, **config: Any):
        settings = gc.member_settings(
            cluster, gid, name, **{**COMMON, "rebalance_timeout_ms": gc.REBALANCE_TIMEOUT_MS, **config}
        )
        self.label = name
        self.ledger = ledger
        self.consumer = AIOKafkaConsumer(TOPIC, **settings)
        self.paused = False
        self.polls = 0
        self._stopping = False
        self._task: asyncio.Task | None = None
        self.started = False

    async def start(self, loop: bool = True) -> Member:
        await asyncio.wait_for(self.consumer.start(), 15)
        self.started = True
        if loop:
            self.run()
        return self

    def run(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"member-{self.label}")

    async def _run(self) -> None:
        while not self._stopping:
            if self.paused:
                await asyncio.sleep(0.02)
                continue
            batches = await self.consumer.getmany(timeout_ms=gc.POLL_MS)
            self.polls += 1
            offsets = {}
            for tp, records in batches.items():
                self.ledger.delivered(self.label, [(r.partition, r.offset) for r in records])
                offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "")
            if offsets:
                try:
                    await self.consumer.commit(offsets)
                except COMMIT_REBALANCE_ERRORS as exc:
                    self.ledger.commit_failed(self.label, type(exc).__name__)
                else:
                    self.ledger.committed({tp.partition: o.offset for tp, o in offsets.items()})

    @property
    def partitions(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment())

    @property
    def member_id(self) -> str:
        return self.consumer._coordinator.member_id

    @property
    def generation(self) -> int:
        return self.consumer._coordinator.generation

    def pause(self) -> None:
        self.paused = True

    def check_alive(self) -> None:
        if self._task is not None and self._task.done() and not self._stopping:
            self._task.result()  # raises what killed the loop
            raise AssertionError(f"{self.label}'s poll loop ended")

    async def commit(self, offsets: dict[int, tuple[int, str]]) -> None:
        self.paused = True
        await asyncio.sleep(gc.POLL_MS / 1000 * 2)  # let a getmany() in progress return
        await self.consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(*o) for p, o in offsets.items()})

    async def committed(self, partition: int) -> int | None:
        return await self.consumer.committed(TopicPartition(TOPIC, partition))

    async def close(self) -> None:
        self._stopping = True
        try:
            if self._task is not None:
                await asyncio.wait_for(self._task, 15)
        finally:
            if self.started:
                self.started = False
                await asyncio.wait_for(self.consumer.stop(), 15)


class Admin:
    """aiokafka's admin client, with kafka-python's for DeleteGroups (in a worker thread)."""

    filters_by_state = False  # list_consumer_groups takes no states
    missing_group_error = ErrorCode.NONE  # it sends DescribeGroups v2

    def __init__(self, cluster: FakeCluster):
        from aiokafka.admin import AIOKafkaAdminClient

        self.cluster = cluster
        self.client = AIOKafkaAdminClient(
            bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000, retry_backoff_ms=50
        )
        self.deleter: Any = None

    async def start(self) -> Admin:
        import kafka.admin as kafka_admin

        await asyncio.wait_for(self.client.start(), 15)
        self.deleter = await asyncio.to_thread(
            lambda: kafka_admin.KafkaAdminClient(
                bootstrap_servers=self.cluster.bootstrap_servers, request_timeout_ms=10_000, retry_backoff_ms=50
            )
        )
        return self

    async def list_groups(self, states: Sequence[str] | None = None) -> dict[str, tuple[str, str | None]]:
        assert states is None
        return {gid: (protocol_type, None) for gid, protocol_type in await self.client.list_consumer_groups()}

    async def describe(self, gid: str) -> Described:
        [response] = await self.client.describe_consumer_groups([gid])
        [group] = response.to_object()["groups"]
        members = {
            m["member_id"]: {
                "client_id": m["client_id"],
                "client_host": m["client_host"],
                "assignment": consumer_protocol.assignment_dict(m["member_assignment"]),
                "topics": list(consumer_protocol.decode_subscription(m["member_metadata"]).topics),
            }
            for m in group["members"]
        }
        fields = ("error_code", "group", "state", "protocol_type", "protocol")
        return Described(*(group[f] for f in fields), members=members)

    async def offsets(self, gid: str) -> dict[int, int]:
        offsets = await self.client.list_consumer_group_offsets(gid)
        return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC}

    async def delete(self, gid: str) -> str:
        return (await asyncio.to_thread(self.deleter.delete_groups, [gid]))[gid]

    async def close(self) -> None:
        try:
            await self.client.close()
        finally:
            if self.deleter is not None:
                await asyncio.to_thread(self.deleter.close)


class AiokafkaClient:
    """The :class:`group_client.Client` of aiokafka."""

    name = "aio"
    assignor = "roundrobin"  # aiokafka's default assignor

    def open_cluster(self, **settings: Any) -> FakeCluster:
        return FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, **settings)

    def member(self, cluster: FakeCluster, gid: str, name: str, ledger: Ledger, **config: Any) -> Member:
        return Member(cluster, gid, name, ledger, **config)

    def stall_config(self, max_poll_ms: int) -> dict[str, Any]:
        # aiokafka sends rebalance_timeout_ms apart from max_poll_interval_ms
        return {"max_poll_interval_ms": max_poll_ms, "rebalance_timeout_ms": max_poll_ms}

    async def produce(self, cluster: FakeCluster, n: int, start: int = 0) -> None:
        await produce(cluster, n, start)

    def produce_paced(self, cluster: FakeCluster, n: int) -> PacedProducer:
        return PacedProducer(cluster, n)

    async def admin(self, cluster: FakeCluster) -> Admin:
        return await Admin(cluster).start()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_group(scenario) -> None:
    await run_scenario(scenario, AiokafkaClient())

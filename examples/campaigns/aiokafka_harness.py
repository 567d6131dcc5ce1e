"""A churn member handle over an aiokafka consumer: its own asyncio loop on a thread of its own,
which the churn blocks can start, stop (as a crash: the batch in hand is dropped half-processed,
uncommitted) and stall (no ``getmany`` for a while; aiokafka's heartbeat task goes on)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster

WORK_S = 0.01  # processing one record takes this long: a crash usually lands mid-batch

Process = Callable[[Any], Awaitable[None]]
Handler = Callable[[AIOKafkaConsumer, TopicPartition, list[Any], Process], Awaitable[None]]


class Crashed(Exception):
    """The member was stopped while processing a batch."""


class AiokafkaMember:
    """One consumer of the application; ``handle(consumer, tp, records, process)`` is what the
    application does with each partition's batch from ``getmany``."""

    def __init__(
        self, cluster: FakeCluster, name: str, ledger: DeliveryLedger, topic: str, group: str, handle: Handler
    ):
        self.cluster, self.name, self.client_id, self.ledger = cluster, name, name, ledger
        self.topic, self.group, self.handle = topic, group, handle
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._stall = 0.0

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=asyncio.run, args=(self._loop(),), name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(30)

    def stall(self, seconds: float) -> None:
        self._stall = seconds

    async def _process(self, record: Any) -> None:
        await asyncio.sleep(WORK_S)
        if self._stopping.is_set():  # stopped mid-batch: a crash, the rest of the batch is not done
            raise Crashed
        self.ledger.record(self.name, record)

    async def _loop(self) -> None:
        consumer = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.cluster.bootstrap_servers,
            group_id=self.group,
            client_id=self.name,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=200,
            max_poll_interval_ms=8000,
            # a bound on each batch: processing one must end well inside max_poll_interval_ms,
            # or aiokafka stops heartbeating (and does not rejoin) and its session expires
            max_poll_records=20,
            metadata_max_age_ms=500,
            retry_backoff_ms=50,
        )
        await consumer.start()
        try:
            while not self._stopping.is_set():
                if self._stall:
                    stall, self._stall = self._stall, 0.0
                    await asyncio.sleep(stall)
                batches = await consumer.getmany(timeout_ms=50)
                for tp, records in batches.items():
                    await self.handle(consumer, tp, records, self._process)
        except Crashed:
            pass
        finally:
            await consumer.stop()  # leaves the group; nothing is committed (no auto-commit)

"""The campaign's harness around the application: a member handle the churn blocks can start,
stop (as a crash: the record in hand is dropped half-processed) and stall, and a producer feeding
the topic at a steady rate. Shared by the campaigns in this folder."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster

WORK_S = 0.01  # processing one record takes this long: a crash usually lands mid-record


class Crashed(Exception):
    """The member was stopped while processing a record."""


class ConsumerMember:
    """A churn member handle over one consumer of the application, on a thread of its own."""

    def __init__(
        self,
        cluster: FakeCluster,
        name: str,
        ledger: DeliveryLedger,
        settings: dict[str, Any],
        topic: str,
        handle: Callable[[Consumer, Any, Callable[[Any], None]], None],
    ):
        self.cluster, self.name, self.client_id, self.ledger = cluster, name, name, ledger
        self.settings, self.topic, self.handle = settings, topic, handle
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._stall = 0.0

    def start(self) -> None:
        self._stopping.clear()
        consumer = Consumer(self.settings)
        self._thread = threading.Thread(target=self._loop, args=(consumer,), name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(30)

    def stall(self, seconds: float) -> None:
        self._stall = seconds

    def _process(self, msg: Any) -> None:
        if self._stopping.wait(WORK_S):  # stopped mid-record: a crash, the record is not done
            raise Crashed
        self.ledger.record(self.name, msg)

    def _loop(self, consumer: Consumer) -> None:
        consumer.subscribe([self.topic])
        try:
            while not self._stopping.is_set():
                if self._stall:
                    stall, self._stall = self._stall, 0.0
                    time.sleep(stall)
                msg = consumer.poll(0.05)
                if msg is None or msg.error():
                    continue
                self.handle(consumer, msg, self._process)
        except Crashed:
            pass
        finally:
            consumer.close()


class Feed:
    """An idempotent producer writing key-0, key-1, ... at ``rate`` records/s until stopped."""

    def __init__(self, cluster: FakeCluster, ledger: DeliveryLedger, topic: str, rate: float = 100):
        self.producer = Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True, "linger.ms": 5, "log_level": 0}
        )
        self.ledger, self.topic, self.rate = ledger, topic, rate
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i, next_at = 0, time.monotonic()
        while not self._stopping.is_set():
            wait = next_at - time.monotonic()
            if wait > 0:
                self.producer.poll(min(wait, 0.005))
                continue
            self.producer.produce(self.topic, key=f"key-{i}", value=b"x", on_delivery=self.ledger.on_delivery)
            self.producer.poll(0)
            i, next_at = i + 1, next_at + 1 / self.rate
        self.producer.flush(30)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(40)

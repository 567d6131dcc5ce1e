"""Shared pieces of the confluent-kafka fault tests: running clusters, producers and group
members driven from the test's thread, and what the log holds.

Set ``FAKEBROKER_CGRP_DEBUG=1`` for librdkafka's debug log.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from fakebroker.cluster import FakeCluster

TOPIC = "orders"
PARTITIONS = 6
DEBUG = (
    {"debug": "cgrp,consumer,protocol,broker", "log_level": 7}
    if os.environ.get("FAKEBROKER_CGRP_DEBUG")
    else {"log_level": 0}
)
# Short group timings (the broker's minimum session timeout is lowered to allow them).
GROUP = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 200, "max.poll.interval.ms": 6000}
BROKER_CONFIG = {"group.min.session.timeout.ms": 1000}


@contextmanager
def running(**kwargs) -> Iterator[FakeCluster]:
    """3 brokers, ``orders`` with 6 partitions on 3 replicas; fails the test on a handler error."""
    config = {**BROKER_CONFIG, **kwargs.pop("config", {})}
    topics = {TOPIC: {"partitions": PARTITIONS, "replication_factor": 3}}
    with FakeCluster(brokers=3, topics=topics, config=config, **kwargs).run_in_thread() as cluster:
        yield cluster
        assert not [e.describe() for e in cluster.events if e.kind == "handler_error"]


def pick_group(cluster: FakeCluster, prefix: str) -> str:
    """A group id whose coordinator is not broker 0 (the first bootstrap broker)."""
    return next(f"{prefix}-{i}" for i in range(100) if cluster.coordinator(f"{prefix}-{i}") != 0)


def fired(cluster: FakeCluster, rule) -> list[dict]:
    return [e.details for e in cluster.events if e.kind == "fault_fired" and e.details["rule"] == rule.id]


def keys_of(cluster: FakeCluster, topic: str = TOPIC) -> Counter:
    return Counter(k.decode() for _, _, k, _ in cluster.records(topic))


def assert_once_in_order(cluster: FakeCluster, n: int) -> None:
    """The log holds k0..k(n-1) once each, record i at partition i % 6 in send order."""
    assert keys_of(cluster) == Counter(f"k{i}" for i in range(n)), "each record exactly once"
    for p in range(PARTITIONS):
        assert [k for _, _, k, _ in cluster.records(TOPIC, p)] == [b"k%d" % i for i in range(p, n, PARTITIONS)]


class Producing:
    """A producer whose delivery reports are kept: ``ok`` keys, ``failed`` (key, error)."""

    def __init__(self, cluster: FakeCluster, **config):
        conf = {
            "bootstrap.servers": cluster.bootstrap_servers,
            "linger.ms": 2,
            "enable.idempotence": True,
            "retry.backoff.ms": 50,
            "message.timeout.ms": 20000,
            **DEBUG,
            **config,
        }
        self.producer = Producer(conf)
        self.ok: list[str] = []
        self.failed: list[tuple[str, KafkaError]] = []
        self.sent = 0

    def _report(self, err, msg) -> None:
        if err is None:
            self.ok.append(msg.key().decode())
        else:
            self.failed.append((msg.key().decode(), err))

    def send(self, n: int, *, partition: Callable[[int], int] | None = None, topic: str = TOPIC) -> None:
        for _ in range(n):
            i = self.sent
            self.sent += 1
            part = (i % PARTITIONS) if partition is None else partition(i)
            self.producer.produce(
                topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=part, on_delivery=self._report
            )
            self.producer.poll(0)

    def flush(self, timeout: float = 15) -> None:
        left = self.producer.flush(timeout)
        assert left == 0, f"{left} records undelivered after {timeout}s"


class Member:
    """A group consumer polled from the test thread. It commits each record synchronously right
    after processing it, so a record is read twice only if its commit failed (counted). With
    ``assign`` it reads those partitions from offset 0 instead of joining the group."""

    def __init__(
        self,
        cluster: FakeCluster,
        gid: str,
        name: str,
        *,
        commit: bool = True,
        topics=(TOPIC,),
        assign: list[int] | None = None,
        **config,
    ):
        self.name = name
        self.commit = commit
        self.got: list[tuple[int, int]] = []
        self.first_at: dict[int, float] = {}  # partition -> when its first record arrived (monotonic)
        self.errors: list[KafkaError] = []
        self.commit_failures: list[str] = []
        self.assigns: list[list[int]] = []
        conf = {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": gid,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            **GROUP,
            **DEBUG,
            **config,
        }
        self.consumer = Consumer(conf)
        if assign is None:
            self.consumer.subscribe(list(topics), on_assign=self._on_assign)
        else:
            self.consumer.assign([TopicPartition(TOPIC, p, 0) for p in assign])
        self.closed = False

    def _on_assign(self, consumer, partitions) -> None:
        self.assigns.append(sorted(tp.partition for tp in partitions))

    def partitions(self) -> list[int]:
        return [] if self.closed else sorted(tp.partition for tp in self.consumer.assignment())

    def poll_once(self, timeout: float = 0.02) -> None:
        if self.closed:
            return
        msg = self.consumer.poll(timeout)
        if msg is None:
            return
        if msg.error() is not None:
            self.errors.append(msg.error())
            return
        self.got.append((msg.partition(), msg.offset()))
        self.first_at.setdefault(msg.partition(), time.monotonic())
        if self.commit:
            try:
                for tp in self.consumer.commit(message=msg, asynchronous=False) or []:
                    if tp.error is not None:
                        self.commit_failures.append(f"{tp.partition}@{msg.offset()}: {tp.error}")
            except KafkaException as exc:
                self.commit_failures.append(f"{msg.partition()}@{msg.offset()}: {exc}")

    def close(self) -> None:
        if not self.closed:
            # serve a rebalance that is already queued while the group handle still answers:
            # close() serving it after can block forever (confluentinc/librdkafka#4884)
            self.poll_once(0)
            self.closed = True
            self.consumer.close()


def close_abandoned(consumer: Consumer, timeout: float = 15) -> None:
    """Close a consumer nobody polled since it was abandoned, without risking the test on a
    librdkafka 2.16 deadlock: close serves the revocation the consumer never polled for, after
    its group sub-system has already terminated, and confluent-kafka's automatic unassign then
    waits forever for that sub-system (py-spy: Consumer_close -> rd_kafka_poll_cb ->
    Consumer_rebalance_cb -> rd_kafka_assign -> rd_kafka_op_req; seen in about 1 run in 20 under
    load, never with the broker owing an answer). A poll first serves a pending revocation while
    the sub-system still runs; a close that still hangs is left to its daemon thread."""
    consumer.poll(0.2)
    closer = threading.Thread(target=consumer.close, name="close-abandoned", daemon=True)
    closer.start()
    closer.join(timeout)


def drive(
    members: list[Member],
    until: Callable[[], object],
    timeout: float,
    what: str,
    tick: Callable[[], None] | None = None,
) -> float:
    """Poll every member round-robin until ``until()``; returns the seconds it took."""
    start = time.monotonic()
    while True:
        if tick is not None:
            tick()
        for m in members:
            m.poll_once()
        if until():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what}: "
                + "; ".join(
                    f"{m.name}: partitions {m.partitions()} got {len(m.got)} errors {[str(e) for e in m.errors[-3:]]}"
                    for m in members
                )
            )


def drive_for(members: list[Member], seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for m in members:
            m.poll_once()


def seen(members: list[Member]) -> Counter:
    return Counter(rec for m in members for rec in m.got)


def stable_split(cluster: FakeCluster, gid: str, members: list[Member]) -> Callable[[], bool]:
    """The group is Stable with exactly these members, and what each consumer holds is what the
    coordinator assigned it, covering all partitions once."""

    def check() -> bool:
        view = cluster.group(gid)
        if view is None or view.state != "Stable" or len(view.members) != len(members):
            return False
        held = [m.partitions() for m in members]
        by_client = {c: a.get(TOPIC, []) for c, a in view.assignment.items()}
        return sorted(p for ps in held for p in ps) == list(range(PARTITIONS)) and all(
            sorted(by_client.get(m.name, [])) == ps for m, ps in zip(members, held)
        )

    return check


def close_all(members: list[Member]) -> None:
    for m in members:
        m.close()


def stored(cluster: FakeCluster) -> set[tuple[int, int]]:
    return {(p, o) for p, o, _, _ in cluster.records(TOPIC)}


# == fault kinds ===================================================================================

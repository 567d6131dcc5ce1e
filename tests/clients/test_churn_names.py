"""``churn`` with block names and real consumers: confluent-kafka members churned by the names
the control endpoint takes, judged by the ledger; and a group name the members do not join,
named at once with the group they did join (kafka-python members)."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from fakebroker import DeliveryLedger
from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.testing.churn import churn

from .kafka_python_join import knows_partitions

pytestmark = pytest.mark.clients


class Member:
    """A confluent-kafka consumer on its own thread: process, then commit."""

    def __init__(self, cluster: FakeCluster, name: str, group: str, ledger: DeliveryLedger) -> None:
        self.cluster, self.name, self.client_id, self.group, self.ledger = cluster, name, name, group, ledger
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.stopping.clear()
        self.thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.cluster.bootstrap_servers,
                "group.id": self.group,
                "client.id": self.name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "heartbeat.interval.ms": 200,
                "session.timeout.ms": 6000,
                "topic.metadata.refresh.interval.ms": 500,
                "log_level": 0,
            }
        )
        consumer.subscribe(["orders"])
        try:
            while not self.stopping.is_set():
                msg = consumer.poll(0.05)
                if msg is None or msg.error() is not None:
                    continue
                self.ledger.record(self.name, msg)
                try:
                    consumer.commit(msg, asynchronous=False)
                except KafkaException:
                    pass  # a commit racing a rebalance: the record may be read again
        finally:
            consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(30)

    def stall(self, seconds: float) -> None:  # not used by the blocks chosen here
        raise AssertionError("no stall expected")


def test_churn_takes_block_names(tmp_path):
    topics = {"orders": {"partitions": 4, "replication_factor": 3}}
    with FakeCluster(brokers=3, topics=topics).run_in_thread() as cluster:
        ledger = DeliveryLedger(cluster, group="named")
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "on_delivery": ledger.on_delivery})
        for i in range(100):
            producer.produce("orders", key=b"k%d" % i, value=b"v")
        assert producer.flush(10) == 0
        members = [Member(cluster, f"n{i}", "named", ledger) for i in range(2)]
        try:
            report = churn(
                cluster,
                members,
                group="named",
                topic="orders",
                seed=5,
                steps=2,
                blocks=["coordinator_failover_storm", "partition_growth"],
                ledger=ledger,
            )
        finally:
            for m in members:
                m.stop()
        assert sorted(a.split(":")[0] for a in report.actions) == ["coordinator_failover_storm", "partition_growth"]
        assert report.seed == 5 and "replay: churn(..., seed=5)" in str(report)
        assert report.verdict is not None and report.verdict.at_least_once, report
        assert report.verdict.committed_beyond_processed == [], report
        assert cluster.topics()["orders"] > 4  # partition_growth ran


def test_a_group_the_members_do_not_join_is_named_at_once_with_the_one_they_did():
    """The members join ``billing``; churn was told ``biling``: it says so once they have
    joined, not after the 30 s settle timeout, and nothing of the blocks runs."""
    from kafka import KafkaConsumer

    class Joins:
        def __init__(self, cluster: FakeCluster, name: str) -> None:
            self.cluster, self.name, self.client_id = cluster, name, name
            self.consumer: KafkaConsumer | None = None

        def start(self) -> None:
            self.consumer = KafkaConsumer(
                "orders", bootstrap_servers=self.cluster.bootstrap_servers, group_id="billing", client_id=self.name
            )
            knows_partitions(self.consumer, "orders", 2)  # kafka-python 3.0.12: see kafka_python_join.py
            self.consumer.poll(timeout_ms=500)  # joins; heartbeats go on in its own thread

        def stop(self) -> None:
            if self.consumer is not None:
                self.consumer.close(autocommit=False)

        def stall(self, seconds: float) -> None:
            raise AssertionError("no block should run")

    with FakeCluster(topics={"orders": 2}).run_in_thread() as cluster:
        members = [Joins(cluster, "j0"), Joins(cluster, "j1")]
        start = time.monotonic()
        try:
            with pytest.raises(ClusterUsageError) as failed:
                churn(cluster, members, group="biling", topic="orders", steps=1, blocks=["network_cut"])
        finally:
            for m in members:
                m.stop()
        assert time.monotonic() - start < 15  # not the 30 s settle timeout
        assert str(failed.value) == (
            "no group 'biling', but members j0, j1 joined group 'billing': is group='billing' meant? "
            "(groups: 'billing')"
        )
        assert not [e for e in cluster.events if e.kind == "network_cut"]  # network_cut never ran

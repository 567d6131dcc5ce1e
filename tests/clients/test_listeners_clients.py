"""Several listeners per broker (issue 37) with real clients: a cluster of three brokers with a
PLAINTEXT listener advertised as ``localhost`` and a SASL_SSL one on 127.0.0.1. A client that
bootstraps on one listener is told that listener's addresses for every broker: were it told the
other's, it would speak TLS to a plaintext port (or the reverse) and fail, so a round trip on each
listener, across all three brokers, shows each was told its own."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from fakebroker.cluster import FakeCluster

from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_security import of_type, run_scenario

pytestmark = pytest.mark.clients
USERS = {"alice": "alice-secret"}
LISTENERS = {
    "listeners": "INTERNAL://:0,EXTERNAL://:0",
    "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
    "advertised.listeners": "INTERNAL://localhost:0",
}
N = 30
QUIET = {"log_level": 3}


def two_listener_cluster() -> FakeCluster:
    return FakeCluster(brokers=3, config=LISTENERS, users=USERS)


def external(cluster: FakeCluster) -> dict:
    return {
        "bootstrap.servers": cluster.bootstrap_for("EXTERNAL"),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": USERS["alice"],
        "ssl.ca.location": cluster.tls_ca_file,
        **QUIET,
    }


def test_confluent_produces_on_one_listener_and_a_group_consumes_on_the_other():
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    with two_listener_cluster().run_in_thread() as cluster:
        assert cluster.bootstrap_servers.startswith("localhost:")
        cluster.create_topic(topic, 3)  # a leader on each broker
        producer = Producer({"bootstrap.servers": cluster.bootstrap_for("INTERNAL"), "client.id": "internal", **QUIET})
        for i in range(N):
            producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)
        assert producer.flush(15) == 0
        consumer = Consumer(
            external(cluster) | {"group.id": group, "auto.offset.reset": "earliest", "client.id": "external"}
        )
        consumer.subscribe([topic])
        got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < N and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got[msg.partition()].append(msg.value())
        consumer.commit(asynchronous=False)
        consumer.close()
        assert got == {p: [b"v%d" % i for i in range(p, N, 3)] for p in range(3)}
        assert cluster.committed(group) == {(topic, p): N // 3 for p in range(3)}
        authenticated = [e for e in cluster.events if e.kind == "client_authenticated"]
        assert {(e.client_id, e.principal) for e in authenticated} == {("external", "User:alice")}
        assert {e.broker for e in authenticated} == {0, 1, 2}  # it reached every broker over SASL_SSL
        producer_peers = {
            e.broker for e in cluster.events if e.kind == "client_connected" and e.client_id == "internal"
        }
        assert producer_peers == {0, 1, 2}  # and the producer every broker over PLAINTEXT, no login


@pytest.mark.java
def test_java_round_trip_on_the_second_listener(java_client_jar):  # noqa: F811
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    with two_listener_cluster().run_in_thread() as cluster:
        cluster.create_topic(topic, 2)
        lines = run_scenario(
            java_client_jar,
            cluster,
            "round-trip",
            bootstrap=cluster.bootstrap_for("EXTERNAL"),
            topic=topic,
            group=group,
            n=10,
            mechanism="SCRAM-SHA-512",
            user="alice",
            password=USERS["alice"],
            ca=cluster.tls_ca_file,
        )
        records = sorted((r["partition"], r["offset"], r["value"]) for r in of_type(lines, "record"))
        assert records == sorted((i % 2, i // 2, f"value-{i}") for i in range(10))
        assert cluster.committed(group) == {(topic, 0): 5, (topic, 1): 5}
        authenticated = [e for e in cluster.events if e.kind == "client_authenticated"]
        assert {e.principal for e in authenticated} == {"User:alice"}
        assert {e.broker for e in authenticated} >= {0, 1}  # the partitions' leaders, over SASL_SSL

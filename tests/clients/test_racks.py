"""Racks (``FakeCluster(racks=...)``, ``serve --rack``): rack-aware assignment (KIP-881) with real
consumers that set ``client.rack``.

Three brokers in racks a, b and c; a 6-partition topic with one replica each, so every rack
leads two partitions. A rack-aware range assignor gives each consumer the partitions whose
replica is in its own rack (plain range would give c-a partitions 0 and 1); the coordinator's
view shows each member's rack, read from its subscription.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from fakebroker.cluster import FakeCluster

from .jvm_driver import JvmDriver
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = pytest.mark.clients

TOPIC, PARTITIONS, RACKS = "orders", 6, ["a", "b", "c"]


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, racks=RACKS, topics={TOPIC: PARTITIONS}).run_in_thread() as c:
        yield c


def by_rack(cluster: FakeCluster) -> dict[str, list[int]]:
    """rack -> the partitions of TOPIC whose (only) replica is in it."""
    racks: dict[str, list[int]] = {}
    for p in cluster.state.topics[TOPIC].partitions:
        (replica,) = p.replicas
        racks.setdefault(cluster.state.brokers[replica].rack, []).append(p.index)
    return racks


def wait_group(cluster: FakeCluster, gid: str, members: int, poll=lambda: None, timeout: float = 20) -> object:
    deadline = time.monotonic() + timeout
    while True:
        poll()
        g = cluster.group(gid)
        owned = g and sum(len(ps) for m in g.members for ps in (m.assignment or {}).values())
        if g and g.state == "Stable" and len(g.members) == members and owned == PARTITIONS:
            return g
        assert time.monotonic() < deadline, f"group {gid} not Stable with {members} members: {g}"
        time.sleep(0.02)


def test_brokers_report_their_racks_and_replicas_spread_over_racks(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
    described = admin.describe_cluster(request_timeout=10).result()
    assert sorted((n.id, n.rack) for n in described.nodes) == [(0, "a"), (1, "b"), (2, "c")]
    assert sorted(len(ps) for ps in by_rack(cluster).values()) == [2, 2, 2]
    # a topic with three replicas per partition has one in every rack
    cluster.create_topic("spread", 6, replication_factor=3)
    for p in cluster.state.topics["spread"].partitions:
        assert sorted(cluster.state.brokers[r].rack for r in p.replicas) == RACKS
    assert {b["id"]: b["rack"] for b in (v.to_dict() for v in cluster.brokers())} == {0: "a", 1: "b", 2: "c"}


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_librdkafka_assigns_each_member_its_own_racks_partitions(cluster, strategy):
    consumers = {
        rack: Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": f"racks-{strategy}",
                "client.id": f"c-{rack}",
                "client.rack": rack,
                "partition.assignment.strategy": strategy,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 200,
                "log_level": 3,
            }
        )
        for rack in RACKS
    }
    try:
        for c in consumers.values():
            c.subscribe([TOPIC])
        group = wait_group(cluster, f"racks-{strategy}", 3, poll=lambda: [c.poll(0.02) for c in consumers.values()])
        assert group.protocol == strategy
        assert {m.client_id: m.rack for m in group.members} == {"c-a": "a", "c-b": "b", "c-c": "c"}
        assert group.assignment == {f"c-{r}": {TOPIC: ps} for r, ps in by_rack(cluster).items()}
        # what the clients themselves hold, once each has read its SyncGroup answer
        deadline = time.monotonic() + 10
        while (held := {r: sorted(tp.partition for tp in c.assignment()) for r, c in consumers.items()}) != by_rack(
            cluster
        ) and time.monotonic() < deadline:
            for c in consumers.values():
                c.poll(0.02)
        assert held == by_rack(cluster)
    finally:
        for c in consumers.values():
            c.close()


def test_without_client_rack_range_ignores_the_brokers_racks(cluster):
    consumers = [
        Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "no-racks",
                "client.id": f"c-{i}",
                "partition.assignment.strategy": "range",
                "heartbeat.interval.ms": 200,
                "log_level": 3,
            }
        )
        for i in range(3)
    ]
    try:
        for c in consumers:
            c.subscribe([TOPIC])
        group = wait_group(cluster, "no-racks", 3, poll=lambda: [c.poll(0.02) for c in consumers])
        assert {m.rack for m in group.members} == {None}
        assert sorted(ps[TOPIC] for ps in group.assignment.values()) == [[0, 1], [2, 3], [4, 5]]
    finally:
        for c in consumers:
            c.close()


class GroupDriver(JvmDriver):
    main_class = "fakebroker.GroupScenarios"
    lifetime = 80


@pytest.mark.java
def test_java_range_assignor_places_partitions_on_same_rack_members(cluster, java_client_jar):  # noqa: F811
    gid = "java-racks"
    with GroupDriver(java_client_jar, cluster) as driver:
        for rack in RACKS:
            driver.call("start", name=rack, group=gid, topic=TOPIC, rack=rack, assignors="range")
        got = driver.call("waitAssigned", names=RACKS, topic=TOPIC, partitions=PARTITIONS)
        assert {name: sorted(ps) for name, ps in got["assignments"].items()} == by_rack(cluster)
        group = wait_group(cluster, gid, 3)
        assert group.protocol == "range"
        assert sorted(m.rack for m in group.members) == RACKS

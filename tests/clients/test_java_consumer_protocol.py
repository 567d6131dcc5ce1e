"""The Java KafkaConsumer (kafka-clients 4.x) with ``group.protocol=consumer`` (KIP-848) against
fakebroker's consumer-group coordinator, driven through the same GroupScenarios JVM as the
classic tests (tests/clients/test_java_groups.py): the broker assigns, members reconcile."""

from __future__ import annotations

import collections
import time

import pytest

from fakebroker.cluster import FakeCluster

from .group_state import group_off_first_broker, live_offsets
from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_groups import PARTITIONS, TOPIC, Driver, assert_no_loss

pytestmark = [pytest.mark.clients, pytest.mark.java]


@pytest.fixture
def cluster():
    config = {"group.consumer.heartbeat.interval.ms": 300}
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, config=config).run_in_thread() as c:
        yield c
        assert not [e.describe() for e in c.events if e.kind == "handler_error"]


@pytest.fixture
def driver(java_client_jar, cluster):  # noqa: F811
    with Driver(java_client_jar, cluster) as d:
        yield d


def consumer_group(cluster: FakeCluster, gid: str, members: int) -> bool:
    view = cluster.group(gid)
    return view is not None and view.state == "Stable" and len(view.members) == members


def test_three_java_consumers_split_six_partitions_and_read_each_record_once(cluster, driver):
    gid = group_off_first_broker(cluster, "java-kip848")
    for name in "abc":
        driver.call("start", name=name, group=gid, topic=TOPIC, protocol="consumer")
    got = driver.call("waitAssigned", names=list("abc"), topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    assert sorted(len(ps) for ps in got["assignments"].values()) == [2, 2, 2]
    cluster.wait_for_sync(lambda c: consumer_group(c, gid, 3), timeout=10)
    view = cluster.group(gid)
    assert view.group_type == "consumer" and view.protocol == "uniform"
    assert {m.client_id: sorted(m.assignment[TOPIC]) for m in view.members} == {
        f"fakebroker-java-{n}": sorted(ps) for n, ps in got["assignments"].items()
    }
    assert {m.member_epoch for m in view.members} == {view.generation}

    driver.call("produce", topic=TOPIC, n=600, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]
    assert assert_no_loss(records, 600) == 0 and len(records) == 600, "every record exactly once"
    assert collections.Counter(r[0] for r in records) == {"a": 200, "b": 200, "c": 200}
    assert live_offsets(cluster, gid) == {p: 100 for p in range(PARTITIONS)}
    assert not driver.of_type("commit_failed")


def test_a_java_member_leaves_and_the_others_take_its_partitions_without_loss(cluster, driver):
    gid = group_off_first_broker(cluster, "java-kip848-leave")
    for name in "abc":
        driver.call("start", name=name, group=gid, topic=TOPIC, protocol="consumer")
    driver.call("waitAssigned", names=list("abc"), topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=300)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    driver.call("close", name="c")
    got = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    assert sorted(len(ps) for ps in got["assignments"].values()) == [3, 3]
    driver.call("produce", topic=TOPIC, first=300, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    records = driver.call("consumed")["records"]
    assert assert_no_loss(records, 600) == 0, "no record lost or read twice"
    assert any(e.kind == "member_left" and e.group == gid for e in cluster.events)
    cluster.wait_for_sync(lambda c: consumer_group(c, gid, 2), timeout=10)


def test_a_classic_java_member_joins_a_consumer_protocol_group(cluster, driver):
    gid = group_off_first_broker(cluster, "java-kip848-mixed")
    driver.call("start", name="a", group=gid, topic=TOPIC, protocol="consumer")
    driver.call("waitAssigned", names=["a"], topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    driver.call("start", name="b", group=gid, topic=TOPIC, protocol="classic")
    got = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    assert sorted(len(ps) for ps in got["assignments"].values()) == [3, 3]
    cluster.wait_for_sync(lambda c: consumer_group(c, gid, 2), timeout=10)
    driver.call("produce", topic=TOPIC, n=600, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]
    assert assert_no_loss(records, 600) == 0 and len(records) == 600, "every record exactly once"
    assert collections.Counter(r[0] for r in records) == {"a": 300, "b": 300}
    assert cluster.group(gid).group_type == "consumer"
    assert not driver.of_type("commit_failed")


def test_a_classic_java_group_upgrades_online_when_a_consumer_protocol_member_joins(cluster, driver):
    gid = group_off_first_broker(cluster, "java-kip848-upgrade")
    driver.call("start", name="b", group=gid, topic=TOPIC, protocol="classic")
    driver.call("waitAssigned", names=["b"], topic=TOPIC, partitions=PARTITIONS)
    assert cluster.group(gid).group_type == "classic"
    driver.call("start", name="a", group=gid, topic=TOPIC, protocol="consumer")
    got = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    assert sorted(len(ps) for ps in got["assignments"].values()) == [3, 3]
    assert cluster.group(gid).group_type == "consumer"
    driver.call("produce", topic=TOPIC, n=600, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    records = driver.call("consumed")["records"]
    assert assert_no_loss(records, 600) == 0, "every record exactly once"
    assert [e.details["to"] for e in cluster.events if e.kind == "group_converted"] == ["consumer"]


def test_java_admin_describes_and_lists_a_consumer_protocol_group(cluster, driver):
    gid = group_off_first_broker(cluster, "java-kip848-admin")
    for name in "ab":
        driver.call("start", name=name, group=gid, topic=TOPIC, protocol="consumer")
    got = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    cluster.wait_for_sync(lambda c: consumer_group(c, gid, 2), timeout=10)
    described = driver.call("describeGroup", group=gid)  # the Admin client uses ConsumerGroupDescribe
    assert (described["state"], described["groupType"], described["assignor"], described["coordinator"]) == (
        "Stable",
        "Consumer",
        "uniform",
        cluster.coordinator(gid),
    )
    assert {m["clientId"]: m["partitions"] for m in described["members"]} == {
        f"fakebroker-java-{n}": sorted(ps) for n, ps in got["assignments"].items()
    }
    listed = [g for g in driver.call("listGroups")["groups"] if g["group"] == gid]
    assert listed == [{"group": gid, "simple": False, "state": "Stable", "groupType": "Consumer"}]


def test_java_members_get_added_partitions_and_a_static_member_keeps_its_own_across_a_restart(cluster, driver):
    gid = group_off_first_broker(cluster, "java-kip848-static")
    for name in "ab":
        driver.call("start", name=name, group=gid, topic=TOPIC, protocol="consumer", instance=f"box-{name}")
    got = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    joins = [e for e in cluster.events if e.kind == "member_joined" and e.group == gid]
    cluster.add_partitions(TOPIC, 8)  # no member rejoins: the next heartbeats carry the new target
    grown = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=8, sameGeneration="false")
    assert sorted(p for ps in grown["assignments"].values() for p in ps) == list(range(8))
    assert [e for e in cluster.events if e.kind == "member_joined" and e.group == gid] == joins
    before, epoch = grown["assignments"]["b"], cluster.group(gid).generation
    driver.call("close", name="b")  # a static member leaves with epoch -2 and keeps its place
    driver.call("start", name="b", group=gid, topic=TOPIC, protocol="consumer", instance="box-b")
    again = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=8, sameGeneration="false")
    assert again["assignments"]["b"] == before and cluster.group(gid).generation == epoch
    assert got["memberIds"]["b"] != again["memberIds"]["b"]  # a new member id took the instance over


def test_java_consumers_follow_a_coordinator_move_without_loss(cluster, driver):
    gid = group_off_first_broker(cluster, "java-kip848-move")
    for name in "abc":
        driver.call("start", name=name, group=gid, topic=TOPIC, protocol="consumer")
    driver.call("waitAssigned", names=list("abc"), topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
    driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=300)
    old = cluster.coordinator(gid)
    new = cluster.move_coordinator(gid)
    driver.call("produce", topic=TOPIC, first=300, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]
    assert new != old and cluster.coordinator(gid) == new
    duplicates = assert_no_loss(records, 600)
    assert duplicates <= len(driver.of_type("commit_failed")), "a record is read again only after a failed commit"
    assert live_offsets(cluster, gid) == {p: 100 for p in range(PARTITIONS)}


def test_a_java_regex_subscription_picks_up_a_topic_created_afterwards(cluster, driver):
    gid = group_off_first_broker(cluster, "java-kip848-regex")
    driver.call("start", name="r", group=gid, topic="pay-eu", protocol="consumer", pattern="pay-.*")
    cluster.wait_for_sync(lambda c: c.group(gid) is not None and len(c.group(gid).members) == 1, timeout=15)
    cluster.create_topic("pay-eu", 2)
    cluster.create_topic("payroll", 1)  # "pay-.*" must match a whole name
    got = driver.call("waitAssigned", names=["r"], topic="pay-eu", partitions=2, sameGeneration="false")
    assert got["assignments"]["r"] == [0, 1]
    assert cluster.group(gid).members[0].assignment == {"pay-eu": [0, 1]}


def test_a_java_member_that_stops_heartbeating_is_fenced_at_the_session_timeout_in_virtual_time(java_client_jar):  # noqa: F811
    config = {"group.consumer.heartbeat.interval.ms": 300}
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, config=config, virtual_time=True).run_in_thread() as c:
        driver = Driver(java_client_jar, c)
        try:
            gid = group_off_first_broker(c, "java-kip848-fence")
            for name in "abc":
                driver.call("start", name=name, group=gid, topic=TOPIC, protocol="consumer")
            driver.call("waitAssigned", names=list("abc"), topic=TOPIC, partitions=PARTITIONS, sameGeneration="false")
            c.faults.add(api="ConsumerGroupHeartbeat", client_id="fakebroker-java-c", action="blackhole")
            start = time.monotonic()
            c.clock.advance(48, step=2, settle=0.15)  # 45 s of session in 24 steps; a and b heartbeat between
            wall = time.monotonic() - start
            expired = [e for e in c.events if e.kind == "member_expired" and e.group == gid]
            assert [e.client_id for e in expired] == ["fakebroker-java-c"], [e.describe() for e in expired]
            got = driver.call(
                "waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, sameGeneration="false"
            )
            assert sorted(len(ps) for ps in got["assignments"].values()) == [3, 3]
            assert wall < 10, f"48 s of cluster time took {wall:.1f} s"
        finally:
            c.faults.clear()
            driver.close()

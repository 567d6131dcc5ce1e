"""confluent-kafka (librdkafka) with ``group.protocol=consumer`` (KIP-848) against a 3-broker
cluster whose group coordinator is not the bootstrap broker: the server assigns, members
reconcile, and every record is consumed once through joins, leaves, added partitions, regex
subscriptions, static restarts, a fenced member and a coordinator move."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from fakebroker.cluster import FakeCluster
from fakebroker.cluster import conditions as cond

from .group_state import group_off_first_broker

pytestmark = pytest.mark.clients

TOPIC, PARTITIONS = "orders", 6
CONFIG = {"group.consumer.heartbeat.interval.ms": 200}


def produce(cluster: FakeCluster, n: int, topic: str = TOPIC, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    for i in range(start, start + n):
        producer.produce(
            topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % len(cluster.state.topics[topic].partitions)
        )
    assert producer.flush(15) == 0


class Member:
    """A consumer that commits each record synchronously after processing it."""

    def __init__(self, cluster: FakeCluster, gid: str, name: str, topics: list[str], **extra):
        self.name = name
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": gid,
                "group.protocol": "consumer",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "log_level": 0,
                "topic.metadata.refresh.interval.ms": 500,
                **extra,
            }
        )
        self.consumer.subscribe(topics)
        self.seen: list[bytes] = []
        self.commit_errors: list[str] = []

    def poll(self) -> None:
        message = self.consumer.poll(0.02)
        if message is None or message.error():
            return
        self.seen.append(message.key())
        try:
            self.consumer.commit(message, asynchronous=False)
        except KafkaException as exc:
            self.commit_errors.append(exc.args[0].name())

    def partitions(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment())

    def close(self) -> None:
        self.consumer.close()


def drive(members: list[Member], until: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not until():
        assert time.monotonic() < deadline, f"gave up waiting for {what}: " + ", ".join(
            f"{m.name}={m.partitions()}" for m in members
        )
        for m in members:
            m.poll()


def seen(members: list[Member]) -> Counter:
    return Counter(k for m in members for k in m.seen)


@pytest.fixture
def cluster():
    with FakeCluster(
        brokers=3, topics={TOPIC: {"partitions": PARTITIONS, "replication_factor": 3}}, config=CONFIG
    ).run_in_thread() as c:
        yield c
        assert not [e.describe() for e in c.events if e.kind == "handler_error"]


def test_three_members_split_six_partitions_and_a_leaver_hands_over_without_loss(cluster):
    gid = group_off_first_broker(cluster, "kip848")
    produce(cluster, 300)
    members = [Member(cluster, gid, f"c{i}", [TOPIC]) for i in range(3)]
    try:
        drive(
            members,
            lambda: sorted(len(m.partitions()) for m in members) == [2, 2, 2] and len(seen(members)) >= 90,
            20,
            "a 2/2/2 split",
        )
        view = cluster.group(gid)
        assert view.group_type == "consumer" and view.state in ("Stable", "Reconciling")
        assert sorted(p for m in members for p in m.partitions()) == list(range(PARTITIONS))
        leaver = members.pop()
        leaver.close()  # leaves with epoch -1: its partitions move to the others once released
        drive(members, lambda: sorted(len(m.partitions()) for m in members) == [3, 3], 15, "a 3/3 split")
        produce(cluster, 300, start=300)
        drive(members, lambda: len(seen(members + [leaver])) == 600, 20, "every record")
    finally:
        for m in members:
            m.close()
    counts = seen(members + [leaver])
    assert set(counts) == {b"k%d" % i for i in range(600)}, "no record lost"
    assert max(counts.values()) == 1, "no record read twice: each was committed before its partition moved"
    assert [e for m in members + [leaver] for e in m.commit_errors] == []
    kinds = [e.kind for e in cluster.events if e.group == gid]
    assert "member_left" in kinds and kinds.count("group_epoch_bumped") >= 4
    assert all(
        e.broker == cluster.coordinator(gid) != 0
        for e in cluster.events
        if e.kind == "group_epoch_bumped" and e.group == gid
    )


def test_added_partitions_and_a_topic_matching_a_regex_are_assigned_without_rejoining(cluster):
    gid = group_off_first_broker(cluster, "kip848-grow")
    members = [Member(cluster, gid, f"g{i}", [TOPIC]) for i in range(2)]
    regex = Member(cluster, f"{gid}-regex", "rx", ["^pay-.*"])
    try:
        drive(members, lambda: sorted(len(m.partitions()) for m in members) == [3, 3], 15, "a 3/3 split")
        joins = [e for e in cluster.events if e.kind == "member_joined" and e.group == gid]
        cluster.add_partitions(TOPIC, 8)
        drive(
            members,
            lambda: sorted(p for m in members for p in m.partitions()) == list(range(8)),
            15,
            "the new partitions",
        )
        assert [e for e in cluster.events if e.kind == "member_joined" and e.group == gid] == joins, "nobody rejoined"
        cluster.create_topic("pay-eu", 2)
        cluster.create_topic("payroll", 1)  # "^pay-.*" does not match it
        produce(cluster, 10, topic="pay-eu")
        drive([regex], lambda: len(regex.seen) == 10, 15, "the records of the topic created afterwards")
        assert sorted((tp.topic, tp.partition) for tp in regex.consumer.assignment()) == [("pay-eu", 0), ("pay-eu", 1)]
    finally:
        for m in members + [regex]:
            m.close()


def test_a_static_member_restarts_and_keeps_its_partitions(cluster):
    gid = group_off_first_broker(cluster, "kip848-static")
    members = [Member(cluster, gid, f"s{i}", [TOPIC], **{"group.instance.id": f"box-{i}"}) for i in range(3)]
    try:
        drive(members, lambda: sorted(len(m.partitions()) for m in members) == [2, 2, 2], 20, "a 2/2/2 split")
        before = members[1].partitions()
        others = [members[0].partitions(), members[2].partitions()]
        epoch = cluster.group(gid).generation
        members[1].close()  # a static member leaves with epoch -2: it keeps its place
        assert cluster.wait_for_sync(cond.event("member_left", group=gid), timeout=10)
        members[1] = Member(cluster, gid, "s1-again", [TOPIC], **{"group.instance.id": "box-1"})
        drive(members, lambda: members[1].partitions() == before, 15, "the same partitions back")
        assert cluster.group(gid).generation == epoch, "a static restart moves no epoch"
        assert [members[0].partitions(), members[2].partitions()] == others
        assert any(e.kind == "member_fenced" and e.group == gid for e in cluster.events)
    finally:
        for m in members:
            m.close()


def test_a_member_that_stops_heartbeating_is_fenced_at_the_session_timeout_in_virtual_time():
    with FakeCluster(
        brokers=3, topics={TOPIC: PARTITIONS}, config=CONFIG, virtual_time=True
    ).run_in_thread() as cluster:
        gid = group_off_first_broker(cluster, "kip848-fence")
        members = [Member(cluster, gid, f"f{i}", [TOPIC]) for i in range(3)]
        try:
            drive(members, lambda: sorted(len(m.partitions()) for m in members) == [2, 2, 2], 20, "a 2/2/2 split")
            cluster.faults.add(api="ConsumerGroupHeartbeat", client_id="f2", action="blackhole")
            start = time.monotonic()
            for _ in range(24):  # 48 s of cluster time; the two live members heartbeat in between
                cluster.clock.advance(2)
                end = time.monotonic() + 0.08
                while time.monotonic() < end:
                    for m in members[:2]:
                        m.poll()
            wall = time.monotonic() - start
            expired = [e for e in cluster.events if e.kind == "member_expired" and e.group == gid]
            assert [e.client_id for e in expired] == ["f2"], [e.describe() for e in expired]
            view = cluster.group(gid)
            assert sorted(m.client_id for m in view.members) == ["f0", "f1"]
            drive(members[:2], lambda: sorted(len(m.partitions()) for m in members[:2]) == [3, 3], 15, "3/3")
            assert wall < 10, f"45 s of session timeout took {wall:.1f} s of wall time"
        finally:
            cluster.faults.clear()
            for m in members:
                m.close()


def test_a_coordinator_move_mid_stream_loses_nothing(cluster):
    gid = group_off_first_broker(cluster, "kip848-move")
    produce(cluster, 300)
    members = [Member(cluster, gid, f"m{i}", [TOPIC]) for i in range(3)]
    try:
        drive(members, lambda: len(seen(members)) >= 100, 20, "the first records")
        old = cluster.coordinator(gid)
        new = cluster.move_coordinator(gid)
        produce(cluster, 300, start=300)
        drive(members, lambda: len(seen(members)) == 600, 30, "every record")
        assert new != old and cluster.group(gid).coordinator == new
    finally:
        for m in members:
            m.close()
    counts = seen(members)
    assert set(counts) == {b"k%d" % i for i in range(600)}, "no record lost"
    failures = [f for m in members for f in m.commit_errors]
    assert set(failures) <= {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "_TIMED_OUT", "STALE_MEMBER_EPOCH"}
    assert sum(n - 1 for n in counts.values()) <= len(failures), "a record is read again only after a failed commit"


def test_admin_describes_and_lists_the_consumer_group(cluster):
    gid = group_off_first_broker(cluster, "kip848-admin")
    members = [Member(cluster, gid, f"a{i}", [TOPIC]) for i in range(2)]
    try:
        drive(members, lambda: sorted(len(m.partitions()) for m in members) == [3, 3], 15, "a 3/3 split")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
        described = admin.describe_consumer_groups([gid])[gid].result(10)
        assert described.type.name == "CONSUMER" and described.state.name == "STABLE"
        got = {m.client_id: sorted(tp.partition for tp in m.assignment.topic_partitions) for m in described.members}
        assert got == {m.name: m.partitions() for m in members}
        listed = {g.group_id: (g.state.name, g.type.name) for g in admin.list_consumer_groups().result(10).valid}
        assert listed[gid] == ("STABLE", "CONSUMER")
    finally:
        for m in members:
            m.close()


def test_the_protocol_turned_off_is_refused():
    config = {**CONFIG, "group.coordinator.rebalance.protocols": "classic"}
    with FakeCluster(brokers=1, topics={TOPIC: 1}, config=config).run_in_thread() as cluster:
        errors: list[KafkaError] = []
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "off",
                "group.protocol": "consumer",
                "log_level": 0,
                "error_cb": errors.append,
            }
        )
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 10
        while (
            not any(
                e.kind == "request_error" and e.details.get("error") == "UNSUPPORTED_VERSION" for e in cluster.events
            )
            and time.monotonic() < deadline
        ):
            consumer.poll(0.05)
        consumer.close()
        assert any(
            e.kind == "request_error"
            and e.details["api"] == "ConsumerGroupHeartbeat"
            and e.details["error"] == "UNSUPPORTED_VERSION"
            for e in cluster.events
        )
        assert consumer is not None and cluster.group("off") is None


def test_a_classic_member_and_a_consumer_protocol_member_share_one_group(cluster):
    gid = group_off_first_broker(cluster, "kip848-mixed")
    produce(cluster, 300)
    modern = Member(cluster, gid, "modern", [TOPIC])
    drive([modern], lambda: len(modern.partitions()) == PARTITIONS, 15, "the first member owning every partition")
    classic = Member(
        cluster,
        gid,
        "classic",
        [TOPIC],
        **{"group.protocol": "classic", "session.timeout.ms": 6000, "heartbeat.interval.ms": 200},
    )
    members = [modern, classic]
    try:
        drive(
            members,
            lambda: [len(m.partitions()) for m in members] == [3, 3] and len(seen(members)) == 300,
            20,
            "a 3/3 split and every record",
        )
        view = cluster.group(gid)
        assert view.group_type == "consumer" and sorted(m.client_id for m in view.members) == ["classic", "modern"]
        assert sorted(p for m in members for p in m.partitions()) == list(range(PARTITIONS))
        produce(cluster, 60, start=300)
        drive(members, lambda: len(seen(members)) == 360, 15, "the records produced after")
    finally:
        for m in members:
            m.close()
    counts = seen(members)
    assert set(counts) == {b"k%d" % i for i in range(360)}, "no record lost"
    assert max(counts.values()) == 1 and [e for m in members for e in m.commit_errors] == []
    assert any(e.kind == "assignment_delivered" and e.group == gid for e in cluster.events)  # SyncGroup answered


def test_a_classic_group_upgrades_online_and_downgrades_when_the_consumer_member_leaves(cluster):
    gid = group_off_first_broker(cluster, "kip848-migrate")
    produce(cluster, 300)
    classic_settings = {"group.protocol": "classic", "session.timeout.ms": 6000, "heartbeat.interval.ms": 200}
    old = Member(cluster, gid, "old", [TOPIC], **classic_settings)
    drive([old], lambda: len(old.partitions()) == PARTITIONS and len(old.seen) >= 50, 15, "a classic group")
    assert cluster.group(gid).group_type == "classic"
    new = Member(cluster, gid, "new", [TOPIC])  # group.protocol=consumer: the group upgrades online
    members = [old, new]
    try:
        drive(members, lambda: [len(m.partitions()) for m in members] == [3, 3], 15, "a 3/3 split")
        assert cluster.group(gid).group_type == "consumer"
        drive(members, lambda: len(seen(members)) == 300, 15, "every record")
        new.close()  # the last consumer-protocol member leaves: back to a classic group
        drive([old], lambda: len(old.partitions()) == PARTITIONS, 15, "the classic member owning everything")
        produce(cluster, 60, start=300)
        drive([old], lambda: len(seen(members)) == 360, 15, "the records produced after")
    finally:
        old.close()
    assert cluster.group(gid) is None or cluster.group(gid).group_type == "classic"
    converted = [e.details["to"] for e in cluster.events if e.kind == "group_converted" and e.group == gid]
    assert converted == ["consumer", "classic"]
    counts = seen(members)
    assert set(counts) == {b"k%d" % i for i in range(360)} and max(counts.values()) == 1

"""confluent-kafka's ShareConsumer (librdkafka, KIP-932 share groups) against fakebroker: members
share partitions and every record is delivered once; RELEASE brings a record back with its
delivery count raised, REJECT never; a member that closes or stops acknowledging hands its
records to another (at lock expiry on the virtual clock: no 30 s wait); a poison record is
archived after the delivery limit; acknowledged progress survives a coordinator move and a
leader restart."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients

Seen = tuple[int, int, bytes, int]  # partition, offset, value, delivery count


def produce(cluster: FakeCluster, topic: str, values: list[bytes], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
    assert producer.flush(15) == 0


def share_configs(cluster: FakeCluster, group: str, **configs: str) -> None:
    """Group configs, as kafka-configs --entity-type groups sets them (earliest: the records
    produced before the members joined are theirs)."""
    cluster.set_group_configs(group, share_auto_offset_reset="earliest", **configs)


class Member:
    """A ShareConsumer; ``decide`` picks each record's acknowledgement (explicit mode), None
    leaves the record unacknowledged; without ``decide`` acknowledgement is implicit."""

    def __init__(
        self, cluster: FakeCluster, group: str, topic: str, decide: Callable[[Seen], int | None] | None = None
    ):
        config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "log_level": 0}
        if decide is not None:
            config["share.acknowledgement.mode"] = "explicit"
        self.consumer = ShareConsumer(config)
        self.consumer.subscribe([topic])
        self.decide = decide
        self.seen: list[Seen] = []
        self.closed = False

    def poll(self, timeout: float = 0.05) -> int:
        got = 0
        for message in self.consumer.poll(timeout):
            if message.error():
                continue
            record = (message.partition(), message.offset(), message.value(), message.delivery_count())
            self.seen.append(record)
            got += 1
            if self.decide is not None:
                ack = self.decide(record)
                if ack is not None:
                    self.consumer.acknowledge(message, ack)
        if got and self.decide is not None:
            self.consumer.commit_sync(10)
        return got

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


def run_until(members: list[Member], done: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, [len(m.seen) for m in members]
        for m in members:
            if not m.closed:
                m.poll()


def values(seen: list[Seen]) -> Counter:
    return Counter(v for _, _, v, _ in seen)


@pytest.fixture
def cluster1():
    with FakeCluster(brokers=1).run_in_thread() as cluster:
        yield cluster


def test_two_members_split_a_topic_and_every_record_is_delivered_once() -> None:
    with FakeCluster(brokers=1, config={"group.share.heartbeat.interval.ms": 200}).run_in_thread() as cluster:
        cluster.create_topic("jobs", partitions=4)
        a, b = Member(cluster, "workers", "jobs"), Member(cluster, "workers", "jobs")

        def split() -> bool:
            group = cluster.state.groups.share.groups.get("workers")
            members = list(group.members.values()) if group is not None else []
            held = [m.assigned.get("jobs", set()) for m in members if m.member_epoch == group.assignment_epoch]
            return len(held) == 2 and all(len(h) == 2 for h in held) and not held[0] & held[1]

        sent = [b"job-%d" % i for i in range(400)]
        try:
            run_until([a, b], split)  # 2 + 2, as Kafka's simple assignor splits them
            # A ShareFetch parked from before the split still names all 4 partitions, and the
            # broker acquires records for what a fetch names: the fetches in flight end before
            # producing (under CI load one member once took all 400).
            settled = time.monotonic() + 1.5
            while time.monotonic() < settled:
                a.poll()
                b.poll()
            produce(cluster, "jobs", sent, 4)  # share.auto.offset.reset is latest: produced after joining
            run_until([a, b], lambda: len(a.seen) + len(b.seen) >= 400)
            for m in (a, b):
                m.poll(0.2)  # implicit mode: the last poll's records are accepted by the next one
        finally:
            a.close()
            b.close()
        assert values(a.seen + b.seen) == Counter(sent)  # each exactly once, none lost
        assert len(a.seen) == len(b.seen) == 200  # two partitions each
        assert all(count == 1 for *_, count in a.seen + b.seen)
        view = cluster.share_group("workers")
        assert view is not None and view.state == "Empty"
        # every record acknowledged: each partition's start offset past its 100 records
        assert [(p.partition, p.start_offset, p.in_flight) for p in view.partitions] == [(i, 100, ()) for i in range(4)]


def test_release_brings_a_record_back_and_reject_never(cluster1: FakeCluster) -> None:
    cluster1.create_topic("jobs", partitions=1)
    share_configs(cluster1, "g")
    produce(cluster1, "jobs", [b"ok-0", b"again", b"bad", b"ok-1"], 1)

    def decide(record: Seen) -> int:
        _, _, value, count = record
        if value == b"again" and count == 1:
            return AcknowledgeType.RELEASE
        if value == b"bad":
            return AcknowledgeType.REJECT
        return AcknowledgeType.ACCEPT

    m = Member(cluster1, "g", "jobs", decide)
    try:
        run_until([m], lambda: any(v == b"again" and c == 2 for _, _, v, c in m.seen))
        for _ in range(10):
            m.poll(0.1)  # nothing else comes back
    finally:
        m.close()
    seen = sorted((v, c) for _, _, v, c in m.seen)
    assert seen == [(b"again", 1), (b"again", 2), (b"bad", 1), (b"ok-0", 1), (b"ok-1", 1)]
    archived = [e for e in cluster1.events if e.kind == "share_records_archived"]
    assert [(e.details["first"], e.details["reason"]) for e in archived] == [(2, "rejected")]


def test_a_member_closing_with_records_acquired_hands_them_to_the_other(cluster1: FakeCluster) -> None:
    cluster1.create_topic("jobs", partitions=1)
    share_configs(cluster1, "g")
    produce(cluster1, "jobs", [b"r%d" % i for i in range(10)], 1)
    holder = Member(cluster1, "g", "jobs", decide=lambda record: None)  # never acknowledges
    run_until([holder], lambda: len(holder.seen) == 10)
    other = Member(cluster1, "g", "jobs", decide=lambda record: AcknowledgeType.ACCEPT)
    try:
        for _ in range(5):
            other.poll(0.1)
        assert other.seen == []  # still held by the first member
        holder.close()  # its share session closes: its records are released
        run_until([other], lambda: len(other.seen) == 10)
    finally:
        holder.close()
        other.close()
    assert values(other.seen) == Counter(b"r%d" % i for i in range(10))
    assert {c for *_, c in other.seen} == {2}
    released = [e for e in cluster1.events if e.kind == "share_records_released"]
    assert [(e.details["records"], e.details["reason"]) for e in released] == [(10, "session closed")]


def test_a_member_that_never_acknowledges_loses_its_records_at_lock_expiry() -> None:
    with FakeCluster(brokers=1, virtual_time=True).run_in_thread() as cluster:
        cluster.create_topic("jobs", partitions=1)
        share_configs(cluster, "g", share_record_lock_duration_ms="15000")
        produce(cluster, "jobs", [b"r%d" % i for i in range(5)], 1)
        stuck = Member(cluster, "g", "jobs", decide=lambda record: None)
        run_until([stuck], lambda: len(stuck.seen) == 5)
        other = Member(cluster, "g", "jobs", decide=lambda record: AcknowledgeType.ACCEPT)
        try:
            for _ in range(5):
                other.poll(0.1)
            assert other.seen == []
            cluster.clock.advance(16)  # the 15 s lock, at once
            run_until([other], lambda: len(other.seen) == 5)
        finally:
            other.close()
            stuck.close()
        assert {(v, c) for _, _, v, c in other.seen} == {(b"r%d" % i, 2) for i in range(5)}
        expired = [e for e in cluster.events if e.kind == "share_records_released"]
        assert expired[0].details["reason"] == "lock expired" and expired[0].details["records"] == 5


def test_a_poison_record_is_archived_after_the_delivery_limit(cluster1: FakeCluster) -> None:
    cluster1.create_topic("jobs", partitions=1)
    share_configs(cluster1, "g", share_delivery_count_limit="3")
    produce(cluster1, "jobs", [b"a", b"poison", b"b", b"c"], 1)

    def decide(record: Seen) -> int:
        return AcknowledgeType.RELEASE if record[2] == b"poison" else AcknowledgeType.ACCEPT

    m = Member(cluster1, "g", "jobs", decide)
    try:
        run_until([m], lambda: values(m.seen)[b"poison"] == 3)
        produce(cluster1, "jobs", [b"after"], 1)
        run_until([m], lambda: values(m.seen)[b"after"] == 1)
        for _ in range(5):
            m.poll(0.1)
    finally:
        m.close()
    assert [c for _, _, v, c in m.seen if v == b"poison"] == [1, 2, 3]
    assert values(m.seen) == Counter({b"poison": 3, b"a": 1, b"b": 1, b"c": 1, b"after": 1})
    archived = [e.details for e in cluster1.events if e.kind == "share_records_archived"]
    assert [(d["first"], d["last"], d["reason"]) for d in archived] == [(1, 1, "delivery limit")]
    view = cluster1.share_group("g")
    assert view is not None and (view.partition("jobs", 0).start_offset, view.partition("jobs", 0).in_flight) == (5, ())


def test_acknowledged_progress_survives_a_coordinator_move_and_a_leader_restart() -> None:
    with FakeCluster(brokers=3).run_in_thread() as cluster:
        cluster.create_topic("jobs", partitions=1, replication_factor=3)
        share_configs(cluster, "g")
        produce(cluster, "jobs", [b"r%d" % i for i in range(20)], 1)
        first = Member(cluster, "g", "jobs", decide=lambda record: AcknowledgeType.ACCEPT)
        try:
            run_until([first], lambda: len(first.seen) >= 20)
        finally:
            first.close()
        coordinator = cluster.coordinator("g")
        cluster.move_coordinator("g", (coordinator + 1) % 3)
        leader = cluster.state.topics["jobs"].partitions[0].leader
        cluster.restart_broker(leader)
        assert cluster.state.topics["jobs"].partitions[0].leader_epoch > 0
        produce(cluster, "jobs", [b"s%d" % i for i in range(10)], 1)
        second = Member(cluster, "g", "jobs", decide=lambda record: AcknowledgeType.ACCEPT)
        try:
            run_until([second], lambda: len(second.seen) >= 10, seconds=30)
            for _ in range(5):
                second.poll(0.1)
        finally:
            second.close()
        # nothing acknowledged before came back; only the new records were delivered
        assert values(second.seen) == Counter(b"s%d" % i for i in range(10))

"""confluent-kafka (librdkafka) consumer groups against fakebroker's classic group coordinator.

Every test runs a 3-broker cluster and picks a group whose coordinator is *not* broker 0, the
first bootstrap broker, so the client must follow FindCoordinator to another broker.

All consumers of a test are driven from the test's thread, one ``poll`` each per round, and
every loop has a deadline. "Processed" means recorded by the test; where a test commits, it
commits synchronously right after processing a record, so a record handed over to another
member is read again only if its commit failed (the tests count those).

Set ``FAKEBROKER_CGRP_DEBUG=1`` to get librdkafka's ``cgrp,consumer,protocol`` debug log.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import (  # noqa: E402
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient  # noqa: E402

from fakebroker.cluster import FakeCluster  # noqa: E402

pytestmark = pytest.mark.clients

TOPIC = "orders"
PARTITIONS = 6
DEBUG = (
    {"debug": "cgrp,consumer,protocol", "log_level": 7} if os.environ.get("FAKEBROKER_CGRP_DEBUG") else {"log_level": 3}
)
GROUP_TIMINGS = {
    "session.timeout.ms": 6000,  # the broker's group.min.session.timeout.ms
    "heartbeat.interval.ms": 500,
    "max.poll.interval.ms": 10000,  # = the JoinGroup rebalance timeout; librdkafka wants >= session.timeout.ms
}


# -- helpers ---------------------------------------------------------------------------------------
@pytest.fixture
def cluster(request):
    load_ms = getattr(request, "param", 0)
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, coordinator_load_time_ms=load_ms).run_in_thread() as c:
        yield c
        broken = [e.describe() for e in c.events if e.kind in ("handler_error", "connection_closed")]
        assert broken == [], "the broker failed a request or dropped a connection"


def pick_group(cluster: FakeCluster, prefix: str) -> str:
    """A group id whose coordinator is not broker 0 (the first bootstrap broker)."""
    for i in range(100):
        gid = f"{prefix}-{i}"
        if cluster.coordinator(gid) != 0:
            return gid
    raise AssertionError("no group id coordinated away from broker 0")


def group_view(cluster: FakeCluster, gid: str) -> tuple[str, int, dict[str, str]] | None:
    """(state, generation, {member id: client id}) as the coordinator has it, or None."""

    def read():
        g = cluster.state.groups.classic.groups.get(gid)
        if g is None:
            return None
        return g.state.value, g.generation_id, {mid: m.client_id for mid, m in g.members.items()}

    return cluster.call(read)


def committed_offsets(cluster: FakeCluster, gid: str) -> dict[int, int]:
    """Partition -> committed offset for TOPIC, read from the broker's offset store."""

    def read():
        return {
            p: o.offset for t, p, o in cluster.state.groups.offsets.fetch(gid, None) if t == TOPIC and o is not None
        }

    return cluster.call(read)


def events_of(cluster: FakeCluster, gid: str, *kinds: str, since: int = 0) -> list:
    return [e for e in cluster.events[since:] if e.kind in kinds and e.details.get("group") == gid]


def produce(cluster: FakeCluster, n: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, **DEBUG})
    failed = []
    for i in range(start, start + n):
        producer.produce(
            TOPIC,
            key=b"k%d" % i,
            value=b"v%d" % i,
            partition=i % PARTITIONS,
            on_delivery=lambda err, msg: failed.append(err) if err else None,
        )
        producer.poll(0)
    assert producer.flush(15) == 0
    assert not failed, failed[:3]


def stored(cluster: FakeCluster) -> set[tuple[int, int]]:
    return {(p, o) for p, o, _, _ in cluster.records(TOPIC)}


class Member:
    """One consumer of the group plus what the test saw it do."""

    def __init__(self, cluster: FakeCluster, gid: str, name: str, *, commit: bool = True, **config):
        self.name = name
        self.commit = commit
        self.processed: list[tuple[int, int]] = []  # (partition, offset) in processing order
        self.assigns: list[list[int]] = []
        self.revokes: list[list[int]] = []
        self.errors: list[KafkaError] = []
        self.commit_failures: list[str] = []
        self.discarding = False  # poll but do not process (nor commit) what arrives
        self.discarded = 0
        self.on_assign_hook: Callable[[Member, list[int]], None] | None = None
        conf = {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": gid,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **GROUP_TIMINGS,
            **DEBUG,
            **config,
        }
        self.consumer = Consumer(conf)
        self.consumer.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
        self.closed = False

    def _on_assign(self, consumer, partitions) -> None:
        got = sorted(tp.partition for tp in partitions)
        self.assigns.append(got)
        if self.on_assign_hook is not None:
            self.on_assign_hook(self, got)

    def _on_revoke(self, consumer, partitions) -> None:
        self.revokes.append(sorted(tp.partition for tp in partitions))

    def partitions(self) -> list[int]:
        return [] if self.closed else sorted(tp.partition for tp in self.consumer.assignment())

    def member_id(self) -> str:
        return self.consumer.memberid()

    def poll_once(self, timeout: float = 0.02) -> None:
        if self.closed:
            return
        msg = self.consumer.poll(timeout)
        if msg is None:
            return
        if msg.error() is not None:
            self.errors.append(msg.error())
            return
        if self.discarding:
            self.discarded += 1
            return
        self.processed.append((msg.partition(), msg.offset()))
        if self.commit:
            try:
                for tp in self.consumer.commit(message=msg, asynchronous=False) or []:
                    if tp.error is not None:
                        self.commit_failures.append(f"{tp.partition}@{msg.offset()}: {tp.error}")
            except KafkaException as exc:
                self.commit_failures.append(f"{msg.partition()}@{msg.offset()}: {exc}")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


def drive(
    members: list[Member], until: Callable[[], bool], timeout: float, what: str, tick: Callable[[], None] | None = None
) -> float:
    """Poll every member round-robin until ``until()``; returns the seconds it took."""
    start = time.monotonic()
    deadline = start + timeout
    while True:
        if tick is not None:
            tick()
        for m in members:
            m.poll_once()
        if until():
            return time.monotonic() - start
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what}: "
                + "; ".join(
                    f"{m.name}: partitions {m.partitions()} processed {len(m.processed)} "
                    f"errors {[str(e) for e in m.errors[-3:]]}"
                    for m in members
                )
            )


def drive_for(members: list[Member], seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for m in members:
            m.poll_once()


def split_is(members: list[Member], sizes: list[int]) -> bool:
    parts = [m.partitions() for m in members]
    flat = sorted(p for ps in parts for p in ps)
    return sorted(len(ps) for ps in parts) == sorted(sizes) and flat == list(range(PARTITIONS))


def settled(cluster: FakeCluster, gid: str, members: list[Member], sizes: list[int]) -> Callable[[], bool]:
    """The group is Stable with exactly these members and they split the partitions as ``sizes``."""

    def check() -> bool:
        view = group_view(cluster, gid)
        return view is not None and view[0] == "Stable" and len(view[2]) == len(members) and split_is(members, sizes)

    return check


def seen(members: list[Member]) -> Counter:
    return Counter(rec for m in members for rec in m.processed)


def duplicates(members: list[Member]) -> int:
    return sum(n - 1 for n in seen(members).values())


def close_all(members: list[Member]) -> None:
    for m in members:
        m.close()


# -- 1. eager and cooperative assignment -----------------------------------------------------------
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_consumers_split_six_partitions_and_read_each_record_once(cluster, strategy):
    gid = pick_group(cluster, f"split-{strategy}")
    assert cluster.coordinator(gid) != 0
    members = [
        Member(
            cluster,
            gid,
            f"{strategy}-{i}",
            commit=False,
            **{"partition.assignment.strategy": strategy, "enable.auto.commit": True, "auto.commit.interval.ms": 200},
        )
        for i in range(3)
    ]
    try:
        drive(members, settled(cluster, gid, members, [2, 2, 2]), 20, "a 2/2/2 split")
        state, generation, ids = group_view(cluster, gid)
        assert set(ids) == {m.member_id() for m in members}
        started = events_of(cluster, gid, "generation_started")
        assert started[-1].details["protocol"] == strategy and started[-1].details["members"] == 3
        # The members found the coordinator through FindCoordinator: every JoinGroup went there.
        joins = {e.broker for e in cluster.events if e.kind == "request_error" and e.details.get("api") == "JoinGroup"}
        assert joins == {cluster.coordinator(gid)}

        n = 600
        produce(cluster, n)
        want = stored(cluster)
        assert len(want) == n
        drive(members, lambda: len(seen(members)) == n, 20, f"{n} records")
        drive_for(members, 0.5)  # anything read twice would show up now
        counts = seen(members)
        assert set(counts) == want
        assert duplicates(members) == 0, [rec for rec, c in counts.items() if c > 1][:10]
        for m in members:  # each read only its own partitions
            assert {p for p, _ in m.processed} == set(m.partitions()), m.name
        assert group_view(cluster, gid)[:2] == ("Stable", generation), "no rebalance while consuming"
    finally:
        close_all(members)
    # Auto-commit committed everything by close(); the members left, the group is Empty.
    assert committed_offsets(cluster, gid) == {p: n // PARTITIONS for p in range(PARTITIONS)}
    assert group_view(cluster, gid)[0] == "Empty"


# -- 2. a member leaves, the others take over from its commits -----------------------------------------
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_member_leaves_and_survivors_resume_from_committed_offsets(cluster, strategy):
    gid = pick_group(cluster, f"leave-{strategy}")
    members = [Member(cluster, gid, f"leave-{i}", **{"partition.assignment.strategy": strategy}) for i in range(3)]
    a, b, c = members
    try:
        drive(members, settled(cluster, gid, members, [2, 2, 2]), 20, "a 2/2/2 split")
        produce(cluster, 300)
        drive(members, lambda: len(b.processed) >= 20, 20, "b to process 20 records")
        b_partitions = b.partitions()
        b_member = b.member_id()
        generation = group_view(cluster, gid)[1]
        revokes_before = {m.name: len(m.revokes) for m in (a, c)}
        mark = len(cluster.events)
        b.close()  # revokes, then LeaveGroup
        assert {p for p, _ in b.processed} <= set(b_partitions)
        b_done = {p: max(o for q, o in b.processed if q == p) + 1 for p in {p for p, _ in b.processed}}
        assert all(committed_offsets(cluster, gid)[p] == o for p, o in b_done.items()), "b committed what it processed"

        survivors = [a, c]
        drive(survivors, settled(cluster, gid, survivors, [3, 3]), 20, "a 3/3 split")
        assert set(b_partitions) <= set(a.partitions()) | set(c.partitions())
        if strategy == "cooperative-sticky":  # the survivors kept what they had
            assert all(not revoked for m in survivors for revoked in m.revokes[revokes_before[m.name] :])
        left = events_of(cluster, gid, "member_left", since=mark)
        assert [e.details["member"] for e in left] == [b_member]
        assert any(
            e.details["generation"] == generation + 1 and e.details["members"] == 2
            for e in events_of(cluster, gid, "generation_started", since=mark)
        )

        produce(cluster, 60, start=300)
        want = stored(cluster)
        drive(members, lambda: set(seen(members)) == want, 20, "every record")
        drive_for(survivors, 0.5)
        counts = seen(members)
        assert set(counts) == want, "no record lost"
        failures = [f for m in members for f in m.commit_failures]
        if strategy == "cooperative-sticky":
            # A commit racing the cooperative rebalance (the survivors keep consuming through it)
            # gets ILLEGAL_GENERATION, as from Kafka; the partition stays, so a later commit covers it.
            assert all("code=ILLEGAL_GENERATION" in f for f in failures), failures
        else:
            assert failures == []
        assert duplicates(members) == 0, [rec for rec, n in counts.items() if n > 1][:10]
        # b's partitions continued exactly at b's commits.
        for p, o in b_done.items():
            takers = [m for m in survivors if p in m.partitions()]
            assert min(off for q, off in takers[0].processed if q == p) == o
    finally:
        close_all(members)


# -- 3. a late joiner resumes at the committed offsets ----------------------------------------------------
def test_late_joiner_resumes_after_last_commit(cluster):
    gid = pick_group(cluster, "late")
    a, b = Member(cluster, gid, "late-a"), Member(cluster, gid, "late-b")
    c = None
    try:
        drive([a, b], settled(cluster, gid, [a, b], [3, 3]), 20, "a 3/3 split")
        produce(cluster, 120)  # 20 per partition, all processed and committed
        drive([a, b], lambda: len(seen([a, b])) == 120, 20, "the first 120 records")
        assert committed_offsets(cluster, gid) == {p: 20 for p in range(PARTITIONS)}

        # a and b now read but do not process (nor commit) what arrives: their positions run
        # ahead of the commits, so only the commits say where the next owner starts.
        a.discarding = b.discarding = True
        produce(cluster, 120, start=120)
        drive([a, b], lambda: a.discarded + b.discarded >= 60, 20, "a and b to read past their commits")

        at_assign: dict[str, dict[int, int]] = {}

        def on_assign(member: Member, partitions: list[int]) -> None:
            member.discarding = False  # the new assignment is processed from here on
            at_assign[member.name] = {p: o for p, o in committed_offsets(cluster, gid).items() if p in partitions}

        a.on_assign_hook = b.on_assign_hook = on_assign
        c = Member(cluster, gid, "late-c")
        c.on_assign_hook = on_assign
        members = [a, b, c]
        drive(members, settled(cluster, gid, members, [2, 2, 2]), 20, "a 2/2/2 split")
        assert not a.discarding and not b.discarding
        assert at_assign["late-c"] == {p: 20 for p in c.partitions()}

        want = stored(cluster)
        drive(members, lambda: set(seen(members)) == want, 20, "all 240 records")
        drive_for(members, 0.5)
        assert duplicates(members) == 0
        for m in members:
            for p in m.partitions():
                after = [o for q, o in m.processed if q == p and o >= 20]
                assert after[0] == 20 and after == list(range(20, 40)), (m.name, p, after[:5])
        assert not [f for m in members for f in m.commit_failures]
        assert committed_offsets(cluster, gid) == {p: 40 for p in range(PARTITIONS)}
    finally:
        close_all([a, b] + ([c] if c else []))


# -- 4. static membership -------------------------------------------------------------------------------
def test_static_member_restarts_within_session_timeout_without_rebalance(cluster):
    gid = pick_group(cluster, "static")
    s = Member(cluster, gid, "static-s", **{"group.instance.id": "instance-s"})
    d1, d2 = Member(cluster, gid, "static-d1"), Member(cluster, gid, "static-d2")
    members = [s, d1, d2]
    restarted = None
    try:
        drive(members, settled(cluster, gid, members, [2, 2, 2]), 20, "a 2/2/2 split")
        produce(cluster, 120)
        drive(members, lambda: len(seen(members)) == 120, 20, "the first 120 records")
        s_partitions, s_member = s.partitions(), s.member_id()
        before = {m.name: (m.partitions(), len(m.assigns), len(m.revokes)) for m in (d1, d2)}
        state, generation, _ = group_view(cluster, gid)
        mark = len(cluster.events)

        started = time.monotonic()
        s.close()  # a static member sends no LeaveGroup
        restarted = Member(cluster, gid, "static-s2", **{"group.instance.id": "instance-s"})
        members = [restarted, d1, d2]
        drive(members, lambda: restarted.partitions() == s_partitions, 10, "the restarted member's partitions")
        assert time.monotonic() - started < 6, "back within session.timeout.ms"

        assert (
            events_of(
                cluster, gid, "member_left", "member_removed", "generation_started", "rebalance_started", since=mark
            )
            == []
        )
        rejoined = events_of(cluster, gid, "static_member_rejoined", since=mark)
        assert [e.details["instance"] for e in rejoined] == ["instance-s"]
        assert rejoined[0].details["member"] == restarted.member_id() != s_member
        fenced = events_of(cluster, gid, "member_fenced", since=mark)
        assert [e.details["member"] for e in fenced] == [s_member]
        assert group_view(cluster, gid)[:2] == ("Stable", generation)

        produce(cluster, 120, start=120)
        want = stored(cluster)
        drive(members, lambda: set(seen([s] + members)) == want, 20, "all 240 records")
        drive_for(members, 0.3)
        assert duplicates([s] + members) == 0
        assert [o for p, o in restarted.processed if p == s_partitions[0]][0] == 20, "resumed at the commit"
        after = {m.name: (m.partitions(), len(m.assigns), len(m.revokes)) for m in (d1, d2)}
        assert after == before, "the others were not rebalanced"
        assert group_view(cluster, gid)[:2] == ("Stable", generation)
    finally:
        close_all([s, d1, d2] + ([restarted] if restarted else []))


# -- 5. a member stalls past max.poll.interval.ms ---------------------------------------------------------
def test_stalled_member_is_removed_and_others_take_its_partitions(cluster):
    gid = pick_group(cluster, "stall")
    timings = {"session.timeout.ms": 6000, "max.poll.interval.ms": 6000}  # librdkafka: max.poll >= session
    members = [Member(cluster, gid, f"stall-{i}", **timings) for i in range(3)]
    x, y, z = members
    try:
        drive(members, settled(cluster, gid, members, [2, 2, 2]), 20, "a 2/2/2 split")
        produce(cluster, 120)
        drive(members, lambda: len(seen(members)) == 120, 20, "the first 120 records")
        x_member, x_partitions = x.member_id(), x.partitions()
        mark = len(cluster.events)

        # x stops polling; y and z go on.
        took = drive([y, z], settled(cluster, gid, [y, z], [3, 3]), 15, "y and z to own all partitions")
        assert took > 5, f"x was dropped after {took:.1f}s, before max.poll.interval.ms"
        gone = events_of(cluster, gid, "member_left", "member_removed", "member_expired", since=mark)
        assert gone and {e.details["member"] for e in gone} == {x_member}
        assert set(x_partitions) <= set(y.partitions()) | set(z.partitions())

        produce(cluster, 120, start=120)
        want = stored(cluster)
        drive([y, z], lambda: set(seen(members)) == want, 20, "all 240 records")
        assert duplicates(members) == 0
        for p in x_partitions:
            assert min(o for m in (y, z) for q, o in m.processed if q == p) == 20, "took over at x's commit"

        # x finds out at its next poll, then rejoins as a new member.
        drive(members, lambda: bool(x.errors), 5, "x to see an error")
        assert x.errors[0].code() == KafkaError._MAX_POLL_EXCEEDED, x.errors
        drive(members, settled(cluster, gid, members, [2, 2, 2]), 20, "x back in a 2/2/2 split")
        assert x.member_id() != x_member
        assert duplicates(members) == 0
    finally:
        close_all(members)


# -- 6. the coordinator moves mid-stream --------------------------------------------------------------------
@pytest.mark.parametrize("cluster", [0, 500], indirect=True, ids=["instant-load", "load-500ms"])
def test_coordinator_moves_while_consuming(cluster):
    gid = pick_group(cluster, "move")
    members = [Member(cluster, gid, f"move-{i}") for i in range(3)]
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 2, **DEBUG})
    n = 600
    sent = 0
    moved_to = None
    old = cluster.coordinator(gid)
    try:
        drive(members, settled(cluster, gid, members, [2, 2, 2]), 20, "a 2/2/2 split")
        mark = len(cluster.events)

        def tick() -> None:
            nonlocal sent, moved_to
            for _ in range(min(6, n - sent)):
                producer.produce(TOPIC, key=b"k%d" % sent, value=b"v%d" % sent, partition=sent % PARTITIONS)
                sent += 1
            producer.poll(0)
            if moved_to is None and len(seen(members)) >= n // 3:
                moved_to = cluster.move_coordinator(gid)

        drive(members, lambda: len(seen(members)) == n, 40, f"{n} records", tick=tick)
        assert producer.flush(10) == 0
        drive_for(members, 0.5)
        assert moved_to is not None and moved_to != old and cluster.coordinator(gid) == moved_to
        want = stored(cluster)
        assert len(want) == n and set(seen(members)) == want, "no record lost"
        failures = [f for m in members for f in m.commit_failures]
        dups = duplicates(members)
        print(f"coordinator {old} -> {moved_to}: {dups} duplicates, {len(failures)} failed commits {failures[:5]}")
        assert dups <= len(failures), "only records whose commit failed may be read twice"
        loaded = events_of(cluster, gid, "group_loaded", since=mark)
        assert loaded and loaded[0].details["state"] == "Stable"
        # The new coordinator loaded the Stable group: members carried on, nobody rejoined.
        assert events_of(cluster, gid, "rebalance_started", "member_removed", "generation_started", since=mark) == []
        # The new coordinator took the commits from then on: the final offsets are all there.
        drive(
            members,
            lambda: committed_offsets(cluster, gid) == {p: n // PARTITIONS for p in range(PARTITIONS)},
            5,
            "the final commits",
        )
        assert group_view(cluster, gid)[0] == "Stable"
    finally:
        close_all(members)


# -- 7. AdminClient against the live group --------------------------------------------------------------------
def test_admin_lists_describes_offsets_and_deletes_groups(cluster):
    gid = pick_group(cluster, "admin")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **DEBUG})
    members = [Member(cluster, gid, f"admin-{i}") for i in range(3)]
    try:
        drive(members, settled(cluster, gid, members, [2, 2, 2]), 20, "a 2/2/2 split")
        produce(cluster, 60)
        drive(members, lambda: len(seen(members)) == 60, 20, "60 records")
        committed = committed_offsets(cluster, gid)
        assert committed == {p: 10 for p in range(PARTITIONS)}

        listed = admin.list_consumer_groups(request_timeout=10).result()
        assert not listed.errors
        ours = [g for g in listed.valid if g.group_id == gid]
        assert len(ours) == 1 and ours[0].state == ConsumerGroupState.STABLE and not ours[0].is_simple_consumer_group
        live = cluster.call(lambda: set(cluster.state.groups.classic.groups))
        assert {g.group_id for g in listed.valid} == live

        desc = admin.describe_consumer_groups([gid], request_timeout=10)[gid].result()
        assert desc.group_id == gid and desc.state == ConsumerGroupState.STABLE
        assert desc.partition_assignor == "range" and not desc.is_simple_consumer_group
        assert desc.coordinator.id == cluster.coordinator(gid) != 0
        by_id = {m.member_id: m for m in desc.members}
        assert set(by_id) == {m.member_id() for m in members}
        for m in members:
            d = by_id[m.member_id()]
            assert d.client_id == m.name
            assert d.host.endswith("127.0.0.1")
            assert d.group_instance_id is None
            assert sorted((tp.topic, tp.partition) for tp in d.assignment.topic_partitions) == [
                (TOPIC, p) for p in m.partitions()
            ]

        futures = admin.delete_consumer_groups([gid], request_timeout=10)
        with pytest.raises(KafkaException) as info:
            futures[gid].result()
        assert info.value.args[0].code() == KafkaError.NON_EMPTY_GROUP

        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(gid)], request_timeout=10)[
            gid
        ].result()
        assert {tp.partition: tp.offset for tp in offsets.topic_partitions if tp.topic == TOPIC} == committed
        some = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(gid, [TopicPartition(TOPIC, 1), TopicPartition(TOPIC, 4)])],
            request_timeout=10,
        )
        assert [(tp.partition, tp.offset) for tp in some[gid].result().topic_partitions] == [(1, 10), (4, 10)]
    finally:
        close_all(members)

    # Everyone left (dynamic members send LeaveGroup): Empty, still a "consumer" group (Kafka
    # keeps the protocol type of a group that empties), deletable.
    assert group_view(cluster, gid)[0] == "Empty"
    desc = admin.describe_consumer_groups([gid], request_timeout=10)[gid].result()
    assert desc.state == ConsumerGroupState.EMPTY and desc.members == []
    assert not desc.is_simple_consumer_group

    # A simple group: offsets committed by an assign()ed consumer, no membership.
    simple = pick_group(cluster, "admin-simple")
    loner = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": simple, "enable.auto.commit": False, **DEBUG}
    )
    try:
        loner.commit(offsets=[TopicPartition(TOPIC, 2, 7)], asynchronous=False)
    finally:
        loner.close()
    listed = {g.group_id: g for g in admin.list_consumer_groups(request_timeout=10).result().valid}
    assert set(listed) == {gid, simple}
    assert (listed[gid].state, listed[gid].is_simple_consumer_group) == (ConsumerGroupState.EMPTY, False)
    assert (listed[simple].state, listed[simple].is_simple_consumer_group) == (ConsumerGroupState.EMPTY, True)
    assert committed_offsets(cluster, simple) == {2: 7}

    assert admin.delete_consumer_groups([gid], request_timeout=10)[gid].result() is None
    assert group_view(cluster, gid) is None and committed_offsets(cluster, gid) == {}
    listed = admin.list_consumer_groups(request_timeout=10).result()
    assert {g.group_id for g in listed.valid} == {simple}
    gone = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(gid)], request_timeout=10)[gid].result()
    assert [tp for tp in gone.topic_partitions if tp.offset >= 0] == []
    with pytest.raises(KafkaException) as info:
        admin.delete_consumer_groups([gid], request_timeout=10)[gid].result()
    assert info.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
    del admin  # destroyed before the cluster stops

"""confluent-kafka (librdkafka) meets every fault kind and cluster action of fakebroker.

Each test injects one fault (``cluster.faults.add``) or runs one cluster action and asserts
what the client ends up with: delivery reports, records consumed, assignments, generations,
committed offsets, callbacks. The topic ``orders`` has 6 partitions and replication factor 3,
so a stopped broker's partitions move to another replica as they would in Kafka.

Everything runs from the test's thread (``run_in_thread``); every loop has a deadline.
Set ``FAKEBROKER_CGRP_DEBUG=1`` for librdkafka's debug log.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from fakebroker.cluster import FakeCluster
from fakebroker.control import conditions as cond

pytestmark = pytest.mark.clients

TOPIC = "orders"
PARTITIONS = 6
DEBUG = {"debug": "cgrp,consumer,protocol,broker", "log_level": 7} if os.environ.get("FAKEBROKER_CGRP_DEBUG") else {"log_level": 0}
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
        conf = {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 2, "enable.idempotence": True,
                "retry.backoff.ms": 50, "message.timeout.ms": 20000, **DEBUG, **config}
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
            self.producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=part,
                                  on_delivery=self._report)
            self.producer.poll(0)

    def flush(self, timeout: float = 15) -> None:
        left = self.producer.flush(timeout)
        assert left == 0, f"{left} records undelivered after {timeout}s"


class Member:
    """A group consumer polled from the test thread. It commits each record synchronously right
    after processing it, so a record is read twice only if its commit failed (counted). With
    ``assign`` it reads those partitions from offset 0 instead of joining the group."""

    def __init__(self, cluster: FakeCluster, gid: str, name: str, *, commit: bool = True, topics=(TOPIC,),
                 assign: list[int] | None = None, **config):
        self.name = name
        self.commit = commit
        self.got: list[tuple[int, int]] = []
        self.first_at: dict[int, float] = {}  # partition -> when its first record arrived (monotonic)
        self.errors: list[KafkaError] = []
        self.commit_failures: list[str] = []
        self.assigns: list[list[int]] = []
        conf = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": gid, "client.id": name,
                "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.wait.max.ms": 50,
                **GROUP, **DEBUG, **config}
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
            self.closed = True
            self.consumer.close()


def drive(members: list[Member], until: Callable[[], object], timeout: float, what: str,
          tick: Callable[[], None] | None = None) -> float:
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
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: " + "; ".join(
                f"{m.name}: partitions {m.partitions()} got {len(m.got)} errors {[str(e) for e in m.errors[-3:]]}"
                for m in members))


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
        return (sorted(p for ps in held for p in ps) == list(range(PARTITIONS))
                and all(sorted(by_client.get(m.name, [])) == ps for m, ps in zip(members, held)))

    return check


def close_all(members: list[Member]) -> None:
    for m in members:
        m.close()


def stored(cluster: FakeCluster) -> set[tuple[int, int]]:
    return {(p, o) for p, o, _, _ in cluster.records(TOPIC)}


# == fault kinds ===================================================================================

def test_error_heartbeat_rebalance_in_progress_three_times_rejoins_one_generation():
    """Heartbeat answers REBALANCE_IN_PROGRESS three times (no handling): every member rejoins,
    the group moves on by exactly one generation, and records flowing meanwhile all arrive."""
    with running() as cluster:
        gid = pick_group(cluster, "hb")
        members = [Member(cluster, gid, f"hb-{i}") for i in range(3)]
        producer = Producing(cluster)
        try:
            drive(members, stable_split(cluster, gid, members), 20, "a 2/2/2 split")
            before = cluster.group(gid)
            producer.send(120)
            producer.flush()
            drive(members, lambda: len(seen(members)) >= 120, 15, "120 records")
            mark = len(cluster.events)

            rule = cluster.faults.add(api="Heartbeat", group=gid, error="REBALANCE_IN_PROGRESS", times=3)

            def tick() -> None:
                if producer.sent < 480:
                    producer.send(6)

            drive(members, lambda: rule.fired == 3 and producer.sent >= 480 and stable_split(cluster, gid, members)()
                  and cluster.group(gid).generation > before.generation, 20, "the rejoin", tick=tick)
            producer.flush()
            want = stored(cluster)
            drive(members, lambda: set(seen(members)) >= want, 15, "every record")
            after = cluster.group(gid)
        finally:
            close_all(members)
        assert rule.fired == 3 and not rule.active
        assert after.generation == before.generation + 1, "three errors, one rebalance"
        assert {m.member_id for m in after.members} == {m.member_id for m in before.members}, "rejoined as themselves"
        assert {(d["api"], d["error"]) for d in fired(cluster, rule)} == {("Heartbeat", "REBALANCE_IN_PROGRESS")}
        started = [e.details for e in cluster.events[mark:] if e.kind == "generation_started" and e.group == gid]
        assert [(d["generation"], d["members"]) for d in started][:1] == [(before.generation + 1, 3)]
        assert len(want) == 480 and set(seen(members)) == want, "no record lost"
        failures = [f for m in members for f in m.commit_failures]
        dups = sum(n - 1 for n in seen(members).values())
        assert dups <= len(failures), "only records whose commit failed are read again"
        assert not producer.failed


def test_error_produce_not_leader_on_one_partition_is_retried_and_lands_once():
    """Produce answers NOT_LEADER_OR_FOLLOWER for partition 2 only, three times: the other
    partitions of the same requests are written, the idempotent producer retries partition 2,
    and every record lands once, in the order sent."""
    with running() as cluster:
        rule = cluster.faults.add(api="Produce", topic=TOPIC, partition=2, error="NOT_LEADER_OR_FOLLOWER", times=3)
        producer = Producing(cluster)
        producer.send(300)
        producer.flush()
        assert rule.fired == 3 and not producer.failed and len(producer.ok) == 300
        assert_once_in_order(cluster, 300)
        told = [e for e in cluster.events if e.kind == "fault_fired" and e.details["rule"] == rule.id]
        assert len(told) == 3 and {e.broker for e in told} == {cluster.leader(TOPIC, 2)}


@pytest.mark.parametrize("error", ["NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION"])
def test_error_fetch_partition_error_consumer_recovers(error):
    """Fetch answers an error for partition 0 three times: the consumer refreshes its metadata,
    fetches again and reads every record of every partition once, in order."""
    with running() as cluster:
        producer = Producing(cluster)
        producer.send(120)
        producer.flush()
        rule = cluster.faults.add(api="Fetch", topic=TOPIC, partition=0, error=error, times=3)
        reader = Member(cluster, "fetch-err", "reader", commit=False, assign=list(range(PARTITIONS)))
        try:
            drive([reader], lambda: len(reader.got) >= 120, 15, "120 records")
        finally:
            reader.close()
        got, errors = reader.got, reader.errors
        assert rule.fired == 3
        assert sorted(got) == sorted(stored(cluster)) and len(got) == 120, "every record once"
        for p in range(PARTITIONS):
            assert [o for q, o in got if q == p] == list(range(20)), "in order"
        print(f"{error}: the application saw {[e.str() for e in errors]}")
        assert errors == [], "librdkafka handles the error itself (metadata refresh, refetch)"


def test_replace_error_offset_commit_fails_for_the_client_but_the_broker_kept_it():
    """OffsetCommit is handled, then its answer says OFFSET_METADATA_TOO_LARGE. The client's
    synchronous commit fails with that error -- yet the broker stored the offset, and the next
    OffsetFetch (``committed()``) returns it. That is what Kafka clients see when a commit's
    answer is lost or mangled after the write: the failure is reported, the offset may stand."""
    with running() as cluster:
        gid = pick_group(cluster, "replace")
        rule = cluster.faults.add(api="OffsetCommit", group=gid, action="replace_error",
                                  error="OFFSET_METADATA_TOO_LARGE", times=1)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": gid,
                             "enable.auto.commit": False, **DEBUG})
        try:
            with pytest.raises(KafkaException) as failed:
                consumer.commit(offsets=[TopicPartition(TOPIC, 0, 5), TopicPartition(TOPIC, 1, 7)], asynchronous=False)
            assert failed.value.args[0].code() == KafkaError.OFFSET_METADATA_TOO_LARGE
            assert rule.fired == 1
            assert cluster.committed(gid) == {(TOPIC, 0): 5, (TOPIC, 1): 7}, "handled before the error was written"
            back = consumer.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], timeout=10)
            assert [(tp.partition, tp.offset, tp.error) for tp in back] == [(0, 5, None), (1, 7, None)]
            # The rule is spent: the next commit succeeds.
            done = consumer.commit(offsets=[TopicPartition(TOPIC, 0, 6)], asynchronous=False)
            assert [(tp.partition, tp.offset, tp.error) for tp in done] == [(0, 6, None)]
        finally:
            consumer.close()
        assert cluster.committed(gid)[(TOPIC, 0)] == 6


def test_delay_fetch_on_one_broker_holds_its_records_only():
    """Fetch answers from the leader of partition 0 are held 0.5 s: its record arrives no sooner
    than 0.5 s after it was produced, while a partition led elsewhere is served at once."""
    delay = 0.5
    with running() as cluster:
        slow = cluster.leader(TOPIC, 0)
        fast = next(p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) != slow)
        reader = Member(cluster, "delay", "reader", commit=False, assign=[0, fast], **{"fetch.wait.max.ms": 100})
        producer = Producing(cluster, **{"linger.ms": 0})
        try:
            drive_for([reader], 0.3)  # fetching from both brokers
            rule = cluster.faults.add(api="Fetch", broker=slow, delay=delay)
            drive_for([reader], 0.3)  # a Fetch parked before the rule came is answered as usual
            start = time.monotonic()
            producer.send(2, partition=lambda i: 0 if i == 0 else fast)
            producer.flush()
            drive([reader], lambda: len(reader.got) == 2, 10, "both records")
        finally:
            reader.close()
        arrived = {p: t - start for p, t in reader.first_at.items()}
        print(f"partition 0 (broker {slow}, delayed): {arrived[0]:.3f}s; partition {fast}: {arrived[fast]:.3f}s")
        assert arrived[0] >= delay and arrived[fast] < arrived[0]
        assert rule.fired >= 1 and {d["api"] for d in fired(cluster, rule)} == {"Fetch"}
        assert {e.broker for e in cluster.events if e.kind == "fault_fired"} == {slow}


def test_drop_sync_group_of_one_member_it_reconnects_and_the_group_settles():
    """The first SyncGroup of member drop-1 closes its connection before being handled: the
    member reconnects and rejoins, and the group ends Stable with all three members and every
    partition assigned once."""
    with running() as cluster:
        gid = pick_group(cluster, "drop")
        rule = cluster.faults.add(api="SyncGroup", group=gid, client_id="drop-1", action="drop", times=1)
        members = [Member(cluster, gid, f"drop-{i}") for i in range(3)]
        try:
            took = drive(members, lambda: rule.fired == 1 and stable_split(cluster, gid, members)(), 20, "a 2/2/2 split")
            view = cluster.group(gid)
        finally:
            close_all(members)
        print(f"settled in {took:.1f}s at generation {view.generation}")
        assert sorted(len(ps[TOPIC]) for ps in view.assignment.values()) == [2, 2, 2]
        assert view.assignment["drop-1"][TOPIC], "the dropped member got its share"
        closed = [e.details for e in cluster.events if e.kind == "connection_closed" and e.details.get("client_id") == "drop-1"]
        assert len(closed) == 1 and "drop before handling SyncGroup" in closed[0]["reason"]


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
def test_drop_after_produce_retry_is_deduplicated_by_idempotence(idempotent):
    """Produce is handled (written) and then the connection closes instead of answering, twice.
    The producer retries what it never heard back about: with idempotence the broker recognises
    the retried batches and each record is stored once; without it the retries are duplicates."""
    with running() as cluster:
        rule = cluster.faults.add(api="Produce", action="drop_after", times=2)
        producer = Producing(cluster, **{"enable.idempotence": idempotent, "acks": "all"})
        producer.send(300)
        producer.flush()
        stored_keys = keys_of(cluster)
        assert rule.fired == 2 and not producer.failed and len(producer.ok) == 300
        assert set(stored_keys) == {f"k{i}" for i in range(300)}, "nothing lost"
        dups = sum(stored_keys.values()) - 300
        print(f"idempotent={idempotent}: {dups} duplicates stored")
        if idempotent:
            assert_once_in_order(cluster, 300)
        else:
            assert dups > 0, "the retried batches were written twice"


def test_blackhole_sync_group_member_times_out_and_rejoins():
    """bh-1's first SyncGroup is swallowed and its connection is not read for 10 s. The
    coordinator expires bh-1 after its 1.5 s session and hands bh-0 all six partitions; bh-1's
    request times out (librdkafka gives SyncGroup the session timeout + 3 s), it rejoins on a new
    connection as a new member, and the group ends Stable with both, three partitions each."""
    timings = {"session.timeout.ms": 1500, "heartbeat.interval.ms": 100}
    with running() as cluster:
        gid = pick_group(cluster, "bh")
        first = Member(cluster, gid, "bh-0", **timings)
        members = [first]
        try:
            drive(members, stable_split(cluster, gid, members), 15, "bh-0 alone")
            rule = cluster.faults.add(api="SyncGroup", group=gid, client_id="bh-1", action="blackhole", duration=10, times=1)
            mark = len(cluster.events)
            second = Member(cluster, gid, "bh-1", **timings)
            members.append(second)
            drive(members, lambda: rule.fired == 1, 10, "the black hole")
            assigns_before = len(first.assigns)
            took = drive(members, stable_split(cluster, gid, members), 20, "a 3/3 split")
            view = cluster.group(gid)
        finally:
            close_all(members)
        events = [e for e in cluster.events[mark:] if e.group == gid]
        joined = [e for e in events if e.kind == "member_joined" and e.client_id == "bh-1"]
        expired = [e for e in events if e.kind == "member_expired"]
        swallowed = fired(cluster, rule)
        print(f"bh-1 rejoined {joined[-1].wall - joined[0].wall:.1f}s after its first join; settled {took:.1f}s "
              f"after the black hole, generation {view.generation}")
        assert len(swallowed) == 1 and swallowed[0]["api"] == "SyncGroup"
        assert [e.client_id for e in expired] == ["bh-1"] and expired[0].details["member"] == joined[0].details["member"]
        assert len(joined) == 2 and joined[1].details["member"] != joined[0].details["member"], "rejoined as a new member"
        assert joined[1].wall - expired[0].wall >= 2.0, "after its SyncGroup timed out, not at the expiry"
        assert list(range(PARTITIONS)) in first.assigns[assigns_before:], "bh-0 held every partition meanwhile"
        assert len(second.assigns) == 1, "bh-1 was never handed the assignment of the swallowed generation"
        assert sorted(len(a[TOPIC]) for a in view.assignment.values()) == [3, 3]


def test_throttle_produce_and_fetch_reported_by_throttle_cb():
    """throttle_time_ms is filled on Produce (300 ms, twice) and Fetch (200 ms, twice) answers of
    partition 0's leader: records still flow, and librdkafka reports each throttled answer
    through ``throttle_cb`` with that broker's id and the time."""
    with running() as cluster:
        leader = cluster.leader(TOPIC, 0)
        produce_rule = cluster.faults.add(api="Produce", broker=leader, throttle_ms=300, times=2)
        fetch_rule = cluster.faults.add(api="Fetch", broker=leader, throttle_ms=200, times=2)
        producer_events, consumer_events = [], []
        producer = Producing(cluster, throttle_cb=lambda ev: producer_events.append((ev.broker_id, ev.throttle_time)))
        producer.send(30, partition=lambda i: 0)
        producer.flush()
        producer.send(30, partition=lambda i: 0)
        producer.flush()
        reader = Member(cluster, "throttled", "reader", commit=False, assign=[0],
                        throttle_cb=lambda ev: consumer_events.append((ev.broker_id, ev.throttle_time)))
        try:  # until every record, both throttled answers, and an unthrottled answer after them
            drive([reader], lambda: len(reader.got) >= 60 and len(throttled(consumer_events)) == 2
                  and consumer_events[-1][1] == 0, 15, "60 records and the throttle callbacks")
        finally:
            reader.close()
        got = [o for _, o in reader.got]
        assert produce_rule.fired == 2 and fetch_rule.fired == 2
        assert len(producer.ok) == 60 and got == list(range(60))
        assert throttled(producer_events) == [(leader, 0.3), (leader, 0.3)]
        assert throttled(consumer_events) == [(leader, 0.2), (leader, 0.2)]
        # librdkafka also calls throttle_cb with 0 when an unthrottled answer follows a throttled one.
        assert consumer_events[-1][1] == 0.0


def throttled(events: list[tuple[int, float]]) -> list[tuple[int, float]]:
    return [(broker, t) for broker, t in events if t > 0]


def seeded_fires(seed: int, probability: float, draws: int) -> list[int]:
    """Which of ``draws`` matches a rule with this probability and seed fires on: the rule draws
    from ``random.Random(seed)`` once per match (documented; this is the reference model)."""
    rng = random.Random(seed)
    return [i for i in range(draws) if rng.random() < probability]


def one_request_each(cluster: FakeCluster, n: int) -> Producing:
    """n records to partition 0, each flushed alone: exactly one Produce request per record."""
    producer = Producing(cluster, **{"enable.idempotence": False, "acks": "all", "retries": 0})
    for _ in range(n):
        producer.send(1, partition=lambda i: 0)
        producer.flush()
    return producer


def test_probability_with_seed_fails_a_deterministic_set_of_records():
    """A Produce rule with probability 0.3 and seed 7, answering MESSAGE_TOO_LARGE (permanent
    for the client): exactly the records whose draw fell under 0.3 fail, as the seed dictates."""
    with running() as cluster:
        rule = cluster.faults.add(api="Produce", error="MESSAGE_TOO_LARGE", probability=0.3, seed=7)
        producer = one_request_each(cluster, 20)
        expected = seeded_fires(7, 0.3, 20)
        assert rule.matched == 20 and rule.fired == len(expected) and 0 < len(expected) < 20
        assert [k for k, _ in producer.failed] == [f"k{i}" for i in expected]
        assert {e.code() for _, e in producer.failed} == {KafkaError.MSG_SIZE_TOO_LARGE}
        assert [k.decode() for _, _, k, _ in cluster.records(TOPIC, 0)] == [f"k{i}" for i in range(20) if i not in expected]


def test_nth_fails_only_the_third_request():
    """``nth=3``: the third matching Produce request, and only it, gets the error."""
    with running() as cluster:
        rule = cluster.faults.add(api="Produce", error="MESSAGE_TOO_LARGE", nth=3)
        producer = one_request_each(cluster, 6)
        assert (rule.matched, rule.fired, rule.active) == (3, 1, False)
        assert [k for k, _ in producer.failed] == ["k2"]
        assert producer.ok == ["k0", "k1", "k3", "k4", "k5"]


# == cluster actions ===============================================================================

def test_stop_broker_while_producing_leaders_move_and_every_record_lands():
    """Broker 1 stops while an idempotent producer streams into all six partitions: its
    partitions get new leaders, the producer follows them, and every record lands once. After
    ``start_broker`` and ``elect_preferred_leaders`` the leaders are back and records still land."""
    with running() as cluster:
        preferred = {p: cluster.leader(TOPIC, p) for p in range(PARTITIONS)}
        victim = 1
        led = [p for p, b in preferred.items() if b == victim]
        assert led, "broker 1 leads some partitions"
        producer = Producing(cluster)
        producer.send(150)
        cluster.stop_broker(victim)
        producer.send(300)
        producer.flush()
        moved = {p: cluster.leader(TOPIC, p) for p in led}
        assert all(b not in (victim, -1) for b in moved.values()), moved
        assert not producer.failed and keys_of(cluster) == Counter(f"k{i}" for i in range(450))

        cluster.start_broker(victim)
        back = cluster.elect_preferred_leaders()
        assert back >= len(led)  # orders' partitions and the offsets topic's that broker 1 prefers
        assert {p: cluster.leader(TOPIC, p) for p in range(PARTITIONS)} == preferred
        producer.send(150)
        producer.flush()
        assert not producer.failed and len(producer.ok) == 600
        assert_once_in_order(cluster, 600)
        kinds = [e.kind for e in cluster.events]
        assert kinds.count("broker_stopped") == 1 and kinds.count("broker_started") == 4  # 3 at start, 1 restart


def stream(producer: Producing, members: list[Member], total: int, at: float, action: Callable[[], object],
           timeout: float = 30) -> object:
    """Produce ``total`` records, 6 per round, while the members consume; run ``action`` once
    when a fraction ``at`` of them has been consumed. Returns what the action returned."""
    result: list[object] = []

    def tick() -> None:
        if producer.sent < total:
            producer.send(min(6, total - producer.sent))
        if not result and len(seen(members)) >= total * at:
            result.append(action())

    drive(members, lambda: bool(result) and len(set(seen(members))) >= total, timeout, f"{total} records", tick=tick)
    return result[0]


def test_stop_coordinator_broker_mid_consumption_group_moves_and_keeps_offsets():
    """The broker coordinating the group stops while two members consume and commit: the
    coordinator moves, every record is consumed, and the committed offsets survive the move
    (the final ones are the partitions' ends; nothing is read again unless its commit failed)."""
    with running() as cluster:
        gid = pick_group(cluster, "coord-stop")
        old = cluster.coordinator(gid)
        members = [Member(cluster, gid, f"cs-{i}") for i in range(2)]
        producer = Producing(cluster)
        try:
            drive(members, stable_split(cluster, gid, members), 20, "a 3/3 split")
            kept = stream(producer, members, 600, 1 / 3, lambda: (cluster.committed(gid), cluster.stop_broker(old),
                                                                   cluster.committed(gid))[::2])
            producer.flush()
            new = cluster.coordinator(gid)
            drive(members, lambda: cluster.committed(gid) == {(TOPIC, p): 100 for p in range(PARTITIONS)}, 15,
                  "the final commits")
            view = cluster.group(gid)
        finally:
            close_all(members)
        assert new not in (old, -1) and view.coordinator == new
        before_stop, after_stop = kept
        assert before_stop and all(after_stop[tp] >= o for tp, o in before_stop.items()), "commits survived the stop"
        assert stored(cluster) == set(seen(members)) and len(stored(cluster)) == 600, "every record consumed"
        failures = [f for m in members for f in m.commit_failures]
        dups = sum(n - 1 for n in seen(members).values())
        print(f"coordinator {old} -> {new}: {dups} read twice, {len(failures)} failed commits {failures[:3]}")
        assert dups <= len(failures)
        assert view.state == "Stable" and len(view.members) == 2


def test_move_leader_mid_stream_producer_and_consumer_follow():
    """Partitions 0 and 1 get a new leader while records stream: the producer and the consumer
    are told NOT_LEADER_OR_FOLLOWER by the old leader, follow the new one, and every record
    is stored and consumed once, in order."""
    with running() as cluster:
        consumer = Member(cluster, "unused", "ml", commit=False, assign=list(range(PARTITIONS)))
        producer = Producing(cluster)
        old = {p: cluster.leader(TOPIC, p) for p in (0, 1)}

        def move() -> dict[int, int]:
            targets = {p: (b + 1) % 3 for p, b in old.items()}
            for p, b in targets.items():
                cluster.move_leader(TOPIC, p, b)
            return targets

        try:
            targets = stream(producer, [consumer], 600, 1 / 3, move)
            producer.flush()
            drive([consumer], lambda: len(consumer.got) >= 600, 10, "600 records")
        finally:
            consumer.close()
        assert {p: cluster.leader(TOPIC, p) for p in (0, 1)} == targets
        assert not producer.failed and keys_of(cluster) == Counter(f"k{i}" for i in range(600))
        assert sorted(consumer.got) == sorted(stored(cluster)), "consumed once each"
        for p in range(PARTITIONS):
            assert [o for q, o in consumer.got if q == p] == list(range(100)), "in order"
        told = [e for e in cluster.events if e.kind == "request_error" and e.details["error"] == "NOT_LEADER_OR_FOLLOWER"]
        print(f"moved {old} -> {targets}; NOT_LEADER_OR_FOLLOWER answers: "
              f"{Counter((e.broker, e.details['api']) for e in told)}")
        assert told and {e.broker for e in told} <= set(old.values())


def test_move_coordinator_with_load_time_mid_stream_loses_nothing():
    """The group's coordinator moves mid-stream and the new one "loads" for 500 ms, answering
    COORDINATOR_LOAD_IN_PROGRESS meanwhile: the members wait it out, carry on in the same
    generation, and every record is consumed with the final offsets committed."""
    with running() as cluster:
        gid = pick_group(cluster, "coord-move")
        old = cluster.coordinator(gid)
        members = [Member(cluster, gid, f"cm-{i}") for i in range(2)]
        producer = Producing(cluster)
        try:
            drive(members, stable_split(cluster, gid, members), 20, "a 3/3 split")
            generation = cluster.group(gid).generation
            mark = len(cluster.events)
            new = stream(producer, members, 600, 1 / 3, lambda: cluster.move_coordinator(gid, load_time_ms=500))
            producer.flush()
            drive(members, lambda: cluster.committed(gid) == {(TOPIC, p): 100 for p in range(PARTITIONS)}, 15,
                  "the final commits")
            view = cluster.group(gid)
        finally:
            close_all(members)
        assert new != old and view.coordinator == new and view.generation == generation
        assert stored(cluster) == set(seen(members)) and len(stored(cluster)) == 600, "no record lost"
        failures = [f for m in members for f in m.commit_failures]
        assert sum(n - 1 for n in seen(members).values()) <= len(failures)
        after = cluster.events[mark:]
        unloaded = next(e for e in after if e.kind == "group_unloaded" and e.group == gid)
        loaded = next(e for e in after if e.kind == "group_loaded" and e.group == gid)
        assert loaded.time_ms - unloaded.time_ms >= 500
        loading = [e for e in after if e.kind == "request_error" and e.details["error"] == "COORDINATOR_LOAD_IN_PROGRESS"]
        print(f"coordinator {old} -> {new}; load {loaded.time_ms - unloaded.time_ms} ms; "
              f"{len(loading)} COORDINATOR_LOAD_IN_PROGRESS answers; failed commits: {failures}")
        assert loading and {e.broker for e in loading} == {new}


def test_add_partitions_subscribed_group_rebalances_onto_the_new_ones():
    """``orders`` grows from 6 to 8 partitions: the members notice at their next metadata refresh
    (500 ms here), the group rebalances, and records produced to partitions 6 and 7 are consumed."""
    fast_metadata = {"topic.metadata.refresh.interval.ms": 500, "metadata.max.age.ms": 1000}
    with running() as cluster:
        gid = pick_group(cluster, "grow")
        members = [Member(cluster, gid, f"grow-{i}", **fast_metadata) for i in range(2)]
        try:
            drive(members, stable_split(cluster, gid, members), 20, "a 3/3 split")
            generation = cluster.group(gid).generation
            cluster.add_partitions(TOPIC, 8)

            def spread() -> bool:
                held = sorted(p for m in members for p in m.partitions())
                view = cluster.group(gid)
                return held == list(range(8)) and view.state == "Stable" and view.generation > generation

            took = drive(members, spread, 15, "8 partitions assigned")
            producer = Producing(cluster)
            producer.send(16, partition=lambda i: i % 8)
            producer.flush()
            drive(members, lambda: len(seen(members)) >= 16, 10, "16 records")
            view = cluster.group(gid)
        finally:
            close_all(members)
        print(f"rebalanced onto 8 partitions {took:.1f}s after add_partitions, generation {generation} -> {view.generation}")
        assert {p for p, _ in seen(members)} == set(range(8))
        assert sorted(p for a in view.assignment.values() for p in a[TOPIC]) == list(range(8))
        assert cluster.topics()[TOPIC] == 8


def test_delete_topic_consumer_and_producer_see_unknown_topic():
    """``doomed`` is deleted under a subscribed consumer and a producer (auto-creation off, so
    nothing recreates it): the consumer's poll reports UNKNOWN_TOPIC_OR_PART ("Subscribed topic
    not available"), and what the producer sends afterwards fails with an unknown-topic error
    once ``topic.metadata.propagation.max.ms`` has passed."""
    with running(config={"auto.create.topics.enable": False}) as cluster:
        cluster.create_topic("doomed", 2, replication_factor=3)
        gid = pick_group(cluster, "doomed")
        fast_metadata = {"topic.metadata.refresh.interval.ms": 500}
        member = Member(cluster, gid, "doomed-c", topics=("doomed",), commit=False, **fast_metadata)
        producer = Producing(cluster, **fast_metadata, **{"message.timeout.ms": 5000, "topic.metadata.propagation.max.ms": 300})
        try:
            producer.send(10, topic="doomed", partition=lambda i: i % 2)
            producer.flush()
            drive([member], lambda: len(member.got) >= 10, 15, "10 records")
            cluster.delete_topic("doomed")
            drive([member], lambda: member.errors, 10, "an error")
            time.sleep(1)  # the producer's next metadata refresh sees the topic gone
            producer.producer.poll(0)
            for i in range(10, 13):  # refused at once if librdkafka already dropped the topic
                try:
                    producer.send(1, topic="doomed", partition=lambda i: i % 2)
                except KafkaException as exc:
                    producer.failed.append((f"k{i}", exc.args[0]))
            producer.producer.flush(10)
        finally:
            member.close()
        print(f"consumer: {[e.str() for e in member.errors]}; producer: {[(k, e.str()) for k, e in producer.failed]}")
        assert member.errors[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        assert "doomed" not in cluster.topics()
        assert len(producer.ok) == 10 and [k for k, _ in producer.failed] == ["k10", "k11", "k12"]
        # Queued records fail with the broker's UNKNOWN_TOPIC_OR_PART; once librdkafka has dropped
        # the topic, produce() itself refuses with _UNKNOWN_TOPIC. With
        # topic.metadata.propagation.max.ms (default 30 s) longer than message.timeout.ms,
        # librdkafka would instead hold the records and fail them with _MSG_TIMED_OUT.
        assert {e.code() for _, e in producer.failed} <= {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC}


def test_cut_and_heal_client_loses_one_broker_until_healed():
    """Producer ``cut-me`` is cut off from broker 2: records for the partitions broker 2 leads
    wait (and are retried) while the rest are written; after ``heal`` they all land, once each."""
    with running() as cluster:
        victim = 2
        on_victim = {p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) == victim}
        producer = Producing(cluster, **{"client.id": "cut-me", "reconnect.backoff.ms": 50,
                                         "reconnect.backoff.max.ms": 200})
        producer.send(6)
        producer.flush()
        cluster.cut("cut-me", broker=victim)
        producer.send(120)
        deadline = time.monotonic() + 10
        while len(producer.ok) < 6 + 120 * (PARTITIONS - len(on_victim)) // PARTITIONS and time.monotonic() < deadline:
            producer.producer.poll(0.05)
        time.sleep(0.5)
        producer.producer.poll(0)
        during = keys_of(cluster)
        stuck = {f"k{i}" for i in range(6, 126) if i % PARTITIONS in on_victim}
        assert stuck and not stuck & set(during), "nothing reached the partitioned-off broker"
        assert set(during) == {f"k{i}" for i in range(126)} - stuck, "the other brokers got theirs"
        refused = [e for e in cluster.events if e.kind == "connection_closed" and "network partition" in e.details["reason"]]
        assert refused and {e.broker for e in refused} == {victim}
        cluster.heal("cut-me", victim)
        producer.flush()
        assert not producer.failed and keys_of(cluster) == Counter(f"k{i}" for i in range(126)), "all, once each"
        kinds = [e.kind for e in cluster.events]
        assert kinds.count("network_cut") == 1 and kinds.count("network_healed") == 1


# == virtual time ==================================================================================
# 45 s sessions on a virtual clock: the broker's session timers move only with clock.advance.
VT_GROUP = {"session.timeout.ms": 45000, "heartbeat.interval.ms": 100, "max.poll.interval.ms": 60000}


def test_virtual_time_stalled_member_expires_after_46s_in_a_second_and_survivors_rebalance():
    """Three members with 45 s sessions; vt-2's heartbeats are black-holed (it stalls). Virtual
    time moves 46 s in 10 s steps with 0.15 s real pauses, in which vt-0 and vt-1 heartbeat:
    vt-2's session expires at exactly +45 s, within a second of wall time, and the survivors
    rebalance into the next generation and take all six partitions."""
    with running(virtual_time=True) as cluster:
        gid = pick_group(cluster, "vt")
        members = [Member(cluster, gid, f"vt-{i}", commit=False, **VT_GROUP) for i in range(3)]
        survivors = members[:2]
        try:
            drive(members, stable_split(cluster, gid, members), 20, "a 2/2/2 split")
            before = cluster.group(gid)
            stalled_member = next(m.member_id for m in before.members if m.client_id == "vt-2")
            rule = cluster.faults.add(api="Heartbeat", group=gid, client_id="vt-2", action="blackhole")
            drive(members, lambda: rule.fired == 1, 5, "vt-2's heartbeat to be swallowed")
            mark = len(cluster.events)
            start_ms = cluster.clock.now_ms()

            began, began_wall = time.monotonic(), time.time()
            cluster.clock.advance(46, step=10, settle=0.15)
            wall = time.monotonic() - began

            expired = cluster.wait_for_sync(cond.member_expired(gid, "vt-2", since=mark), timeout=1)
            took = drive(survivors, stable_split(cluster, gid, survivors), 10, "the survivors' 3/3 split")
            after = cluster.group(gid)
            producer = Producing(cluster)
            producer.send(12)
            producer.flush()
            drive(survivors, lambda: len(seen(survivors)) >= 12, 10, "12 records")
        finally:
            cluster.faults.clear()  # ends the black hole so vt-2 can close
            close_all(members)
        print(f"advance(46, step=10, settle=0.15) took {wall:.2f}s of wall time, vt-2 expired "
              f"{expired.wall - began_wall:.2f}s into it; survivors settled {took:.2f}s later; "
              f"generation {before.generation} -> {after.generation}")
        assert wall < 2.0 and expired.wall - began_wall < 1.0
        assert expired.details["member"] == stalled_member
        assert expired.time_ms == start_ms + 45000, "at its own deadline, not at the end of a step"
        assert cluster.clock.now_ms() >= start_ms + 46000
        assert after.generation == before.generation + 1
        assert {m.client_id for m in after.members} == {"vt-0", "vt-1"}
        assert {m.member_id for m in after.members} < {m.member_id for m in before.members}, "survivors kept their ids"
        assert {p for p, _ in seen(survivors)} == set(range(PARTITIONS))
        others = [e for e in cluster.events[mark:] if e.kind == "member_expired" and e.group == gid]
        assert [e.client_id for e in others] == ["vt-2"], "nobody else expired"


def test_virtual_time_plain_jump_expires_every_silent_member_and_they_rejoin():
    """A single ``advance(46)`` jump has no pause for heartbeats: both members' sessions end
    inside it and both are expired (the group empties). Their next heartbeats get
    UNKNOWN_MEMBER_ID, they rejoin as new members, and the group is Stable again."""
    with running(virtual_time=True) as cluster:
        gid = pick_group(cluster, "vt-jump")
        members = [Member(cluster, gid, f"jump-{i}", commit=False, **VT_GROUP) for i in range(2)]
        try:
            drive(members, stable_split(cluster, gid, members), 20, "a 3/3 split")
            before = cluster.group(gid)
            mark = len(cluster.events)
            began = time.monotonic()
            cluster.clock.advance(46)
            wall = time.monotonic() - began
            emptied = cluster.wait_for_sync(cond.GroupState(gid, "Empty"), timeout=1)
            drive(members, stable_split(cluster, gid, members), 10, "the rejoin")
            after = cluster.group(gid)
        finally:
            close_all(members)
        expired = [e.client_id for e in cluster.events[mark:] if e.kind == "member_expired" and e.group == gid]
        print(f"jump took {wall:.3f}s; generations {before.generation} -> {emptied.generation} (Empty) -> {after.generation}")
        assert wall < 0.5 and sorted(expired) == ["jump-0", "jump-1"]
        assert emptied.generation == before.generation + 1 and not emptied.members
        # Each rejoins when its own heartbeat fails, so the group may pass a generation per member.
        assert before.generation + 2 <= after.generation <= before.generation + 3
        assert not {m.member_id for m in after.members} & {m.member_id for m in before.members}, "new member ids"

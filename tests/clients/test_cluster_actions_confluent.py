"""confluent-kafka (librdkafka) through fakebroker's cluster actions and virtual time: stopped
brokers, moved leaders and coordinators, added partitions, a deleted topic, a network cut,
and a member whose 45 s session expires in under a second of wall time.

The topic ``orders`` has 6 partitions and replication factor 3, so a stopped broker's
partitions move to another replica as they would in Kafka.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from fakebroker.cluster import conditions as cond

from .confluent_faults_support import (
    PARTITIONS,
    TOPIC,
    Member,
    Producing,
    assert_once_in_order,
    close_all,
    drive,
    keys_of,
    pick_group,
    running,
    seen,
    stable_split,
    stored,
)

pytestmark = pytest.mark.clients


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


def stream(
    producer: Producing, members: list[Member], total: int, at: float, action: Callable[[], object], timeout: float = 30
) -> object:
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
            kept = stream(
                producer,
                members,
                600,
                1 / 3,
                lambda: (cluster.committed(gid), cluster.stop_broker(old), cluster.committed(gid))[::2],
            )
            producer.flush()
            new = cluster.coordinator(gid)
            drive(
                members,
                lambda: cluster.committed(gid) == {(TOPIC, p): 100 for p in range(PARTITIONS)},
                15,
                "the final commits",
            )
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
    follow the new one (only the old leaders turn them away), and every record is stored and
    consumed once, in order."""
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
        # Clients learn of the move from the old leader's NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH
        # or from a metadata refresh that comes first (on a busy machine, sometimes the latter only).
        told = [
            e
            for e in cluster.events
            if e.kind == "request_error" and e.details["error"] in ("NOT_LEADER_OR_FOLLOWER", "FENCED_LEADER_EPOCH")
        ]
        print(
            f"moved {old} -> {targets}; leadership errors: "
            f"{Counter((e.broker, e.details['api'], e.details['error']) for e in told)}"
        )
        assert {e.broker for e in told} <= set(old.values()), "only the old leaders turn clients away"


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
            drive(
                members,
                lambda: cluster.committed(gid) == {(TOPIC, p): 100 for p in range(PARTITIONS)},
                15,
                "the final commits",
            )
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
        loading = [
            e for e in after if e.kind == "request_error" and e.details["error"] == "COORDINATOR_LOAD_IN_PROGRESS"
        ]
        print(
            f"coordinator {old} -> {new}; load {loaded.time_ms - unloaded.time_ms} ms; "
            f"{len(loading)} COORDINATOR_LOAD_IN_PROGRESS answers; failed commits: {failures}"
        )
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
        print(
            f"rebalanced onto 8 partitions {took:.1f}s after add_partitions, "
            f"generation {generation} -> {view.generation}"
        )
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
        producer = Producing(
            cluster, **fast_metadata, **{"message.timeout.ms": 5000, "topic.metadata.propagation.max.ms": 300}
        )
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
        producer = Producing(
            cluster, **{"client.id": "cut-me", "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200}
        )
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
        refused = [
            e for e in cluster.events if e.kind == "connection_closed" and "network partition" in e.details["reason"]
        ]
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
        print(
            f"advance(46, step=10, settle=0.15) took {wall:.2f}s of wall time, vt-2 expired "
            f"{expired.wall - began_wall:.2f}s into it; survivors settled {took:.2f}s later; "
            f"generation {before.generation} -> {after.generation}"
        )
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
        print(
            f"jump took {wall:.3f}s; generations {before.generation} -> {emptied.generation} (Empty) "
            f"-> {after.generation}"
        )
        assert wall < 0.5 and sorted(expired) == ["jump-0", "jump-1"]
        assert emptied.generation == before.generation + 1 and not emptied.members
        # Each rejoins when its own heartbeat fails, so the group may pass a generation per member.
        assert before.generation + 2 <= after.generation <= before.generation + 3
        assert not {m.member_id for m in after.members} & {m.member_id for m in before.members}, "new member ids"

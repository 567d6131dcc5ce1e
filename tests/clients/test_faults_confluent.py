"""confluent-kafka (librdkafka) meets every fault kind of fakebroker: error, replace_error,
delay, drop, drop_after, blackhole, throttle, and a rule's occurrence settings.

Each test injects one fault (``cluster.faults.add``) and asserts what the client ends up
with: delivery reports, records consumed, assignments, generations, committed offsets,
callbacks. Everything runs from the test's thread; every loop has a deadline.
"""

from __future__ import annotations

import random
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from fakebroker.cluster import FakeCluster

from .confluent_faults_support import (
    DEBUG,
    PARTITIONS,
    TOPIC,
    Member,
    Producing,
    assert_once_in_order,
    close_all,
    drive,
    drive_for,
    fired,
    keys_of,
    pick_group,
    running,
    seen,
    stable_split,
    stored,
)

pytestmark = pytest.mark.clients


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

            drive(
                members,
                lambda: (
                    rule.fired == 3
                    and producer.sent >= 480
                    and stable_split(cluster, gid, members)()
                    and cluster.group(gid).generation > before.generation
                ),
                20,
                "the rejoin",
                tick=tick,
            )
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
        rule = cluster.faults.add(
            api="OffsetCommit", group=gid, action="replace_error", error="OFFSET_METADATA_TOO_LARGE", times=1
        )
        consumer = Consumer(
            {"bootstrap.servers": cluster.bootstrap_servers, "group.id": gid, "enable.auto.commit": False, **DEBUG}
        )
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
            took = drive(
                members, lambda: rule.fired == 1 and stable_split(cluster, gid, members)(), 20, "a 2/2/2 split"
            )
            view = cluster.group(gid)
        finally:
            close_all(members)
        print(f"settled in {took:.1f}s at generation {view.generation}")
        assert sorted(len(ps[TOPIC]) for ps in view.assignment.values()) == [2, 2, 2]
        assert view.assignment["drop-1"][TOPIC], "the dropped member got its share"
        closed = [
            e.details
            for e in cluster.events
            if e.kind == "connection_closed" and e.details.get("client_id") == "drop-1"
        ]
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
            rule = cluster.faults.add(
                api="SyncGroup", group=gid, client_id="bh-1", action="blackhole", duration=10, times=1
            )
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
        print(
            f"bh-1 rejoined {joined[-1].wall - joined[0].wall:.1f}s after its first join; settled {took:.1f}s "
            f"after the black hole, generation {view.generation}"
        )
        assert len(swallowed) == 1 and swallowed[0]["api"] == "SyncGroup"
        assert [e.client_id for e in expired] == ["bh-1"] and expired[0].details["member"] == joined[0].details[
            "member"
        ]
        assert len(joined) == 2 and joined[1].details["member"] != joined[0].details["member"], (
            "rejoined as a new member"
        )
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
        reader = Member(
            cluster,
            "throttled",
            "reader",
            commit=False,
            assign=[0],
            throttle_cb=lambda ev: consumer_events.append((ev.broker_id, ev.throttle_time)),
        )
        try:  # until every record, both throttled answers, and an unthrottled answer after them
            drive(
                [reader],
                lambda: len(reader.got) >= 60 and len(throttled(consumer_events)) == 2 and consumer_events[-1][1] == 0,
                15,
                "60 records and the throttle callbacks",
            )
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
        assert [k.decode() for _, _, k, _ in cluster.records(TOPIC, 0)] == [
            f"k{i}" for i in range(20) if i not in expected
        ]


def test_nth_fails_only_the_third_request():
    """``nth=3``: the third matching Produce request, and only it, gets the error."""
    with running() as cluster:
        rule = cluster.faults.add(api="Produce", error="MESSAGE_TOO_LARGE", nth=3)
        producer = one_request_each(cluster, 6)
        assert (rule.matched, rule.fired, rule.active) == (3, 1, False)
        assert [k for k, _ in producer.failed] == ["k2"]
        assert producer.ok == ["k0", "k1", "k3", "k4", "k5"]


# == cluster actions ===============================================================================

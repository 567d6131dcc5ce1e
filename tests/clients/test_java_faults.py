"""The Java client (kafka-clients, classic group protocol) meets fault rules and cluster actions.

Each test drives one ``fakebroker.GroupScenarios`` JVM (see test_java_groups.py) and injects the
fault from Python: heartbeat errors, a stopped broker, a black-holed SyncGroup. Assertions are
about what the clients end up with: generations, assignments, every record consumed (and stored)
exactly once, committed offsets.
"""

from __future__ import annotations

import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.cluster import conditions as cond

from .group_state import events, group_off_first_broker, live_group, live_offsets
from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_groups import PARTITIONS, TOPIC, Driver, assert_no_loss, counts_of, start, wait_stable

pytestmark = [pytest.mark.clients, pytest.mark.java]


@pytest.fixture
def cluster(request):
    """3 brokers; ``orders`` has replication factor ``param`` (default 1) so that a stopped
    broker's partitions can move to another replica."""
    rf = getattr(request, "param", 1)
    topics = {TOPIC: {"partitions": PARTITIONS, "replication_factor": rf}}
    with FakeCluster(brokers=3, topics=topics).run_in_thread() as c:
        yield c


@pytest.fixture
def driver(java_client_jar, cluster):  # noqa: F811
    with Driver(java_client_jar, cluster) as d:
        yield d


def stored_exactly_once(cluster: FakeCluster, total: int) -> None:
    """The log holds key-0..key-(total-1) once each, key-i at partition i % 6, offset i // 6."""
    stored = cluster.records(TOPIC)
    keys = [k.decode() for _, _, k, _ in stored]
    assert len(keys) == total and set(keys) == {f"key-{i}" for i in range(total)}, (
        f"{len(keys)} stored for {total}, {len(set(keys))} distinct"
    )
    for p, offset, key, _ in stored:
        i = int(key.decode().split("-")[1])
        assert (p, offset) == (i % PARTITIONS, i // PARTITIONS), (p, offset, key)


def no_failures(cluster: FakeCluster, driver: Driver) -> None:
    """No broker handler failed and no consumer thread died."""
    assert not [e.describe() for e in cluster.events if e.kind == "handler_error"]
    assert not driver.of_type("consumer_failed"), driver.diagnostics()


def consumed_in_order(driver: Driver, total: int) -> list[list]:
    driver.call("waitConsumed", total=total, timeoutMs=30000, timeout=35)
    return driver.call("consumed")["records"]


def test_three_rebalance_in_progress_heartbeats_make_the_group_rejoin_once(cluster, driver):
    """Heartbeat answers REBALANCE_IN_PROGRESS three times: each member rejoins, the group
    moves on by exactly one generation, and records flowing meanwhile arrive exactly once."""
    gid = group_off_first_broker(cluster, "java-hb")
    got, group = start(driver, cluster, gid)
    gen = group["generation"]
    driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=300)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    notes_before = len(driver.drain())

    rule = cluster.faults.add(api="Heartbeat", group=gid, error="REBALANCE_IN_PROGRESS", times=3)
    driver.call("produceStream", topic=TOPIC, first=300, n=600, partitions=PARTITIONS, chunk=6, intervalMs=10)
    cluster.wait_for_sync(cond.generation_above(gid, gen), timeout=15)
    after = driver.call("waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS)
    regrouped = wait_stable(cluster, gid, after)
    assert rule.fired == 3 and not rule.active
    assert regrouped["generation"] == gen + 1 and set(after["generations"].values()) == {gen + 1}
    assert after["memberIds"] == got["memberIds"], "members rejoined under their member ids"

    fired = [e.details for e in cluster.events if e.kind == "fault_fired" and e.details["rule"] == rule.id]
    assert [(f["api"], f["error"], f["group"]) for f in fired] == [("Heartbeat", "REBALANCE_IN_PROGRESS", gid)] * 3
    assert {f["client_id"] for f in fired} == {f"fakebroker-java-{n}" for n in "abc"}, "each member met one error"
    later = driver.drain()[notes_before:]
    for name in "abc":
        assert [n["generation"] for n in later if n["type"] == "assigned" and n["name"] == name] == [gen + 1]
        assert [n for n in later if n["type"] == "revoked" and n["name"] == name], (
            f"{name} did not revoke (eager rejoin)"
        )

    driver.call("waitStream", timeoutMs=30000, timeout=35)
    records = consumed_in_order(driver, 900)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    assert assert_no_loss(records, 900) == 0 and len(records) == 900, "every record exactly once"
    assert live_offsets(cluster, gid) == {p: 150 for p in range(PARTITIONS)}
    time.sleep(1.0)  # a few more heartbeats: the rule is spent, no further rebalance
    g = live_group(cluster, gid)
    assert (g["state"], g["generation"]) == ("Stable", gen + 1)
    assert [e["generation"] for e in events(cluster, "generation_started", gid) if e["generation"] > gen] == [gen + 1]
    no_failures(cluster, driver)


@pytest.mark.parametrize("cluster", [3], indirect=True, ids=["rf3"])
def test_stopped_coordinator_and_leader_loses_no_record_of_an_idempotent_producer(cluster, driver):
    """The broker that coordinates the group and leads two partitions stops while an acks=all,
    idempotent producer streams: its partitions and the group move to other replicas, every
    record is stored exactly once and consumed; started again, leadership moves back on request."""
    gid = group_off_first_broker(cluster, "java-stop")
    victim = cluster.coordinator(gid)
    led = [p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) == victim]
    assert len(led) == 2
    got, group = start(driver, cluster, gid)
    total = 1200
    driver.call("produceStream", topic=TOPIC, n=total, partitions=PARTITIONS, chunk=6, intervalMs=10)
    driver.call("waitProduced", count=total // 3)
    committed_at_stop = live_offsets(cluster, gid)
    cluster.stop_broker(victim)
    assert driver.call("waitProduced", count=0)["produced"] < total, "stopped while records were still being produced"
    new_coordinator = cluster.coordinator(gid)
    assert new_coordinator != victim and all(cluster.leader(TOPIC, p) != victim for p in range(PARTITIONS))

    driver.call("waitStream", timeoutMs=40000, timeout=45)
    records = consumed_in_order(driver, total)
    driver.call("waitCommitted", group=gid, topic=TOPIC, timeoutMs=20000, timeout=30)
    stored_exactly_once(cluster, total)
    producer_ids = cluster.call(
        lambda: {b.producer_id for p in cluster.state.topics[TOPIC].partitions for b in p.log.batches}
    )
    assert len(producer_ids) == 1 and min(producer_ids) >= 0, f"one idempotent producer: {producer_ids}"
    duplicates = assert_no_loss(records, total)
    counts = counts_of(records)
    redelivered = sorted({(r[1], r[2]) for r in records if counts[r[3]] > 1})
    assert all(off >= committed_at_stop.get(p, 0) for p, off in redelivered), (committed_at_stop, redelivered[:20])
    assert duplicates <= total // 4, f"{duplicates} duplicates"
    assert live_offsets(cluster, gid) == {p: total // PARTITIONS for p in range(PARTITIONS)}
    g = live_group(cluster, gid)
    assert g["state"] == "Stable" and set(g["members"]) == set(got["memberIds"].values())
    assert g["generation"] == group["generation"], "the group changed coordinator without a rebalance"
    print(
        f"broker {victim} stopped (coordinator -> {new_coordinator}, partitions {led} moved): {len(records)} consumed "
        f"for {total}, {duplicates} duplicates, generation {group['generation']} -> {g['generation']}"
    )

    # back again: preferred leaders (and with them the group) return to it; records still flow
    cluster.start_broker(victim)
    assert cluster.elect_preferred_leaders() >= len(led)
    assert (
        cluster.coordinator(gid) == victim
        and [p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) == victim] == led
    )
    driver.call("produce", topic=TOPIC, first=total, n=300, partitions=PARTITIONS)
    records = consumed_in_order(driver, total + 300)
    driver.call("waitCommitted", group=gid, topic=TOPIC, timeoutMs=20000, timeout=30)
    stored_exactly_once(cluster, total + 300)
    assert assert_no_loss(records, total + 300) == duplicates, "nothing redelivered after the broker came back"
    assert live_offsets(cluster, gid) == {p: (total + 300) // PARTITIONS for p in range(PARTITIONS)}
    assert live_group(cluster, gid)["state"] == "Stable"
    no_failures(cluster, driver)


def test_black_holed_sync_group_times_out_and_the_member_rejoins(cluster, driver):
    """A third member's first SyncGroup is swallowed (the broker stops reading its connection
    for 4 s); with request.timeout.ms=2000 it gives up on it and rejoins under its member id.
    Its JoinGroup metadata now carries the generation it joined (the consumer protocol's
    generation_id), so, as with Kafka, the coordinator starts one more generation: c's
    first join is generation N+1, its rejoin N+2, and only then does c get partitions."""
    gid = group_off_first_broker(cluster, "java-sync")
    got, group = start(driver, cluster, gid, names=("a", "b"))
    rule = cluster.faults.add(
        api="SyncGroup", group=gid, client_id="fakebroker-java-c", action="blackhole", duration=4, times=1
    )
    started = time.monotonic()
    driver.call("start", name="c", group=gid, topic=TOPIC, requestTimeout=2000)
    after = driver.call(
        "waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS, timeoutMs=20000, timeout=25
    )
    waited = time.monotonic() - started
    g = wait_stable(cluster, gid, after)
    assert rule.fired == 1 and sorted(len(ps) for ps in after["assignments"].values()) == [2, 2, 2]
    member_c = after["memberIds"]["c"]
    gen = group["generation"]
    assert g["generation"] == gen + 2 and set(after["generations"].values()) == {gen + 2}
    assert [e["member"] for e in events(cluster, "member_joined", gid)].count(member_c) == 1, (
        "rejoined under the same id"
    )
    reasons = [
        (e["generation"], e["reason"]) for e in events(cluster, "rebalance_started", gid) if e["generation"] >= gen
    ]
    assert reasons == [(gen, f"member {member_c} joined"), (gen + 1, f"member {member_c} rejoined")]
    joined = next(e for e in cluster.events if e.kind == "member_joined" and e.details["member"] == member_c)
    delivered = [e for e in cluster.events if e.kind == "assignment_delivered" and e.details["member"] == member_c]
    assert [e.details["generation"] for e in delivered] == [gen + 2], (
        "the swallowed SyncGroup never reached the coordinator"
    )
    assert delivered[0].wall - joined.wall >= 2.0 and waited >= 2.0, "c waited out its request timeout"
    fired = [e.details for e in cluster.events if e.kind == "fault_fired" and e.details["rule"] == rule.id]
    assert [(f["api"], f["action"], f["client_id"]) for f in fired] == [("SyncGroup", "blackhole", "fakebroker-java-c")]

    driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS)
    records = consumed_in_order(driver, 300)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    assert assert_no_loss(records, 300) == 0 and len(records) == 300
    assert {p for n, p, _, _ in records if n == "c"} == set(after["assignments"]["c"])
    assert live_offsets(cluster, gid) == {p: 50 for p in range(PARTITIONS)}
    assert live_group(cluster, gid)["generation"] == g["generation"]
    print(f"c assigned {waited:.1f} s after it started; generation {g['generation']}")
    no_failures(cluster, driver)


def test_member_cut_off_across_a_coordinator_move_expires_and_rejoins_after_heal(cluster, driver):
    """c is cut off from every broker, then the group's coordinator moves: the new coordinator
    loads the group with c in it and must still expire c when its 6 s session runs out (it
    never hears from c), so a and b take over c's partitions. Healed, c rejoins and gets a share."""
    gid = group_off_first_broker(cluster, "java-cut")
    got, group = start(driver, cluster, gid)
    driver.call("produce", topic=TOPIC, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=120)
    driver.call("waitCommitted", group=gid, topic=TOPIC)

    cluster.cut("fakebroker-java-c")
    cut_at = time.monotonic()
    new = cluster.move_coordinator(gid)
    assert cluster.group(gid).state == "Stable" and len(cluster.group(gid).members) == 3, "loaded with c in it"
    expired = cluster.wait_for_sync(cond.member_expired(gid, "fakebroker-java-c"), timeout=15)
    assert expired.broker == new and expired.details["member"] == got["memberIds"]["c"]  # the new coordinator
    assert 5.0 <= time.monotonic() - cut_at <= 10.0, "expired when its session timeout ran out"
    after = driver.call(
        "waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, timeoutMs=15000, timeout=20
    )
    g = wait_stable(cluster, gid, after)
    assert g["generation"] == group["generation"] + 1 and sorted(len(ps) for ps in after["assignments"].values()) == [
        3,
        3,
    ]
    assert cluster.coordinator(gid) == new
    driver.call("produce", topic=TOPIC, first=120, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=240)
    assert not [r for r in driver.call("consumed")["records"] if r[0] == "c" and int(r[3].split("-")[1]) >= 120]

    cluster.heal("fakebroker-java-c")
    back = driver.call(
        "waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS, timeoutMs=20000, timeout=25
    )
    g = wait_stable(cluster, gid, back)
    assert back["memberIds"]["c"] != got["memberIds"]["c"], "c joined again under a new member id"
    driver.call("produce", topic=TOPIC, first=240, n=120, partitions=PARTITIONS)
    records = consumed_in_order(driver, 360)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    # Right after the heal, c may still fetch from the partitions it owned before the cut,
    # until a heartbeat tells it that it was expired (a zombie read, as with Kafka; its
    # commits fail). Those are the only second reads allowed.
    zombie = [r for r in records if r[0] == "c" and 120 <= int(r[3].split("-")[1]) < 240]
    assert {r[1] for r in zombie} <= set(got["assignments"]["c"])
    assert assert_no_loss([r for r in records if r not in zombie], 360) == 0, (
        "every record once: commits were synchronous"
    )
    assert {p for n, p, off, _ in records if n == "c" and off >= 40} == set(back["assignments"]["c"])
    assert live_offsets(cluster, gid) == {p: 60 for p in range(PARTITIONS)}
    print(f"c expired {expired.details}; generations {group['generation']} -> {g['generation']}")
    no_failures(cluster, driver)

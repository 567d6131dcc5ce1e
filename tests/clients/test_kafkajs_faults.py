"""kafkajs meets fault rules and cluster actions set from Python.

Each test drives one ``node tests/clients/js/groups.js`` process (see test_kafkajs_groups.py)
and injects the fault with ``cluster.faults.add`` or a cluster action: partition errors on
Produce, dropped group requests, a coordinator that moves in the middle of a rebalance. The
assertions are about what kafkajs ends up with and what the log holds.
"""

from __future__ import annotations

import collections
import concurrent.futures

import pytest

from fakebroker.cluster import FakeCluster

from .group_state import events, group_off_first_broker, live_group, live_offsets
from .test_kafkajs_groups import PARTITIONS, TOPIC, Driver, check_records_in_place, node, start_three, wait_stable  # noqa: F401

pytestmark = [pytest.mark.clients, pytest.mark.node]


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}).run_in_thread() as c:
        yield c


@pytest.fixture
def driver(node, cluster):  # noqa: F811
    d = Driver(node, cluster)
    try:
        yield d
    finally:
        d.close()


def stored_keys(cluster: FakeCluster) -> collections.Counter:
    """How often each key is in the log, checking that key-i only ever lands on partition i % 6."""
    stored = cluster.records(TOPIC)
    for p, _, key, _ in stored:
        assert int(key.decode().split("-")[1]) % PARTITIONS == p, (p, key)
    return collections.Counter(k.decode() for _, _, k, _ in stored)


def fired(cluster: FakeCluster, rule) -> list[dict]:
    return [e.details for e in cluster.events if e.kind == "fault_fired" and e.details["rule"] == rule.id]


def no_handler_errors(cluster: FakeCluster, driver: Driver) -> None:
    assert not [e.describe() for e in cluster.events if e.kind == "handler_error"]
    assert not [n for n in driver.drain() if n["type"] == "crash" and not n["restart"]], driver.diagnostics()


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
def test_not_leader_twice_on_one_partition_is_retried(cluster, driver, idempotent):
    """Partition 2 answers NOT_LEADER_OR_FOLLOWER to two Produce requests while the other
    partitions in the same requests are appended (as a Kafka leader would). kafkajs refreshes
    metadata and resends the whole request to that broker: the idempotent producer's resends of
    the partitions already written are recognised by their sequence numbers and stored once;
    a plain producer's are stored again, three times in all (the only duplicates)."""
    target = 2
    leader = cluster.leader(TOPIC, target)
    siblings = [p for p in range(PARTITIONS) if p != target and cluster.leader(TOPIC, p) == leader]
    assert siblings, "another partition shares the leader"
    rule = cluster.faults.add(api="Produce", topic=TOPIC, partition=target, error="NOT_LEADER_OR_FOLLOWER", times=2)
    total = 600
    sent = driver.call("produce", topic=TOPIC, n=total, partitions=PARTITIONS, idempotent=idempotent)["sent"]
    assert rule.fired == 2 and not rule.active
    assert [(f["api"], f["error"], f["topics"], f["client_id"]) for f in fired(cluster, rule)] == [
        ("Produce", "NOT_LEADER_OR_FOLLOWER", [TOPIC], "fakebroker-kafkajs-groups")
    ] * 2
    assert all(f.broker == leader for f in cluster.events if f.kind == "fault_fired")
    assert {s["partition"]: s["errorCode"] for s in sent} == {p: 0 for p in range(PARTITIONS)}

    counts = stored_keys(cluster)
    assert set(counts) == {f"key-{i}" for i in range(total)}, "no record lost"
    copies = 1 if idempotent else 3
    want = {f"key-{i}": copies if i % PARTITIONS in siblings else 1 for i in range(total)}
    assert counts == want, {p: cluster.offsets(TOPIC, p)[1] for p in range(PARTITIONS)}
    hw = {p: cluster.offsets(TOPIC, p)[1] for p in range(PARTITIONS)}
    assert hw == {p: total // PARTITIONS * (copies if p in siblings else 1) for p in range(PARTITIONS)}
    # kafkajs reports where the batch landed: for a deduplicated resend, where the first copy is
    base = {s["partition"]: s["baseOffset"] for s in sent}
    assert base == {p: (total // PARTITIONS * 2 if p in siblings and not idempotent else 0) for p in range(PARTITIONS)}
    if idempotent:
        producer_ids = cluster.call(
            lambda: {b.producer_id for p in cluster.state.topics[TOPIC].partitions for b in p.log.batches}
        )
        assert len(producer_ids) == 1 and min(producer_ids) >= 0
    check_in_place = [(p, off, k.decode()) for p, off, k, _ in cluster.records(TOPIC, target)]
    assert check_in_place == [(target, i, f"key-{i * PARTITIONS + target}") for i in range(total // PARTITIONS)]
    no_handler_errors(cluster, driver)


@pytest.mark.parametrize("api", ["JoinGroup", "SyncGroup"])
def test_dropped_group_request_makes_the_member_reconnect_and_join(cluster, driver, api):
    """A third consumer joins a Stable pair; the group's first JoinGroup (or SyncGroup) after
    that has its connection closed before it is handled. JoinGroup: that is c's first join,
    which never reached the coordinator; kafkajs reconnects and joins, one rebalance in all.
    SyncGroup: whichever member sent it never syncs (kafkajs does not retry a failed sync);
    after the rebalance timeout (3 s here) the coordinator removes it, as Kafka does, and it
    rejoins. Either way the group settles Stable with three members and every record is
    consumed exactly once."""
    gid = group_off_first_broker(cluster, f"js-drop-{api.lower()}")
    for name in "ab":
        driver.call("start", name=name, groupId=gid, topic=TOPIC, rebalanceTimeout=3000)
    got = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS)
    group = wait_stable(cluster, gid, got["assignments"], got["memberIds"])
    driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=300)
    driver.call("waitCommitted", groupId=gid, topic=TOPIC)

    rule = cluster.faults.add(api=api, group=gid, action="drop", nth=1)
    driver.call("start", name="c", groupId=gid, topic=TOPIC, rebalanceTimeout=3000)
    after = driver.call(
        "waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS, timeoutMs=25000, timeout=30
    )
    g = wait_stable(cluster, gid, after["assignments"], after["memberIds"])
    assert rule.fired == 1 and not rule.active
    [hit] = fired(cluster, rule)
    assert (hit["api"], hit["action"], hit["group"]) == (api, "drop", gid)
    closed = [
        e for e in cluster.events if e.kind == "connection_closed" and f"fault rule {rule.id}" in e.details["reason"]
    ]
    assert len(closed) == 1 and closed[0].broker == cluster.coordinator(gid)
    assert sorted(len(ps) for ps in after["assignments"].values()) == [2, 2, 2] and len(g["members"]) == 3
    removed = [e for e in events(cluster, "member_removed", gid)]
    if api == "JoinGroup":
        assert g["generation"] == group["generation"] + 1, "the dropped join never reached the coordinator"
        assert {after["memberIds"]["a"], after["memberIds"]["b"]} == set(got["memberIds"].values()), (
            "a and b kept their ids"
        )
        assert not removed
    else:
        # c's own dropped sync: kafkajs restarts c under a new member id and the old id misses
        # the next join; a's or b's: it keeps fetching its old partitions and never syncs.
        assert [e["reason"] for e in removed] in (["did not send SyncGroup in time"], ["did not rejoin in time"])
        assert removed[0]["member"] not in g["members"], "the member that never synced was removed"
        assert group["generation"] + 2 <= g["generation"] <= group["generation"] + 3, (
            group["generation"],
            g["generation"],
        )

    driver.call("produce", topic=TOPIC, first=300, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    driver.call("waitCommitted", groupId=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]
    check_records_in_place(records)
    counts = collections.Counter(r[3] for r in records)
    assert set(counts) == {f"key-{i}" for i in range(600)} and set(counts.values()) == {1}, "every record exactly once"
    later = [r for r in records if int(r[3].split("-")[1]) >= 300]
    assert {name: sorted({r[1] for r in later if r[0] == name}) for name in "abc"} == {
        name: sorted(ps) for name, ps in after["assignments"].items()
    }
    assert live_offsets(cluster, gid) == {p: 100 for p in range(PARTITIONS)}
    print(
        f"{api} dropped on broker {closed[0].broker}: generation {group['generation']} -> {g['generation']}, "
        f"removed: {[e['reason'] for e in removed]}"
    )
    no_handler_errors(cluster, driver)


def test_coordinator_moves_mid_rebalance_while_records_flow(cluster, driver):
    """While records stream, a third consumer joins and, the moment the group is rebalancing
    with all three members, its coordinator moves. The new coordinator loads the last Stable
    generation (a and b); c's parked JoinGroup gets NOT_COORDINATOR. Everyone finds the new
    coordinator, the group settles with three members, and no record is lost."""
    gid = group_off_first_broker(cluster, "js-move-rebalance")
    old = cluster.coordinator(gid)
    got, group = start_three(driver, cluster, gid, names=("a", "b"))
    total = 1200
    driver.call("produceStream", topic=TOPIC, n=total, partitions=PARTITIONS, chunk=6, intervalMs=15)
    driver.call("waitProduced", count=total // 4)

    def move_while_rebalancing(c: FakeCluster):
        """Checked on the cluster's loop after every event, so nothing happens between seeing
        the state and moving."""
        g = c.group(gid)
        if g is not None and g.state in ("PreparingRebalance", "CompletingRebalance") and len(g.members) == 3:
            committed = {p: o for (t, p), o in c.committed(gid).items() if t == TOPIC}
            return g.state, g.generation, committed, c.move_coordinator(gid)
        return None

    # kafkajs's run() returns once the consumer has joined, so the watcher runs beside it
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        watcher = pool.submit(cluster.wait_for_sync, move_while_rebalancing, 20)
        driver.call("start", name="c", groupId=gid, topic=TOPIC)
        state, generation, committed_at_move, new = watcher.result(25)
    produced_at_move = driver.call("waitProduced", count=0)["produced"]
    assert new != old and cluster.coordinator(gid) == new and produced_at_move < total
    loaded = events(cluster, "group_loaded", gid)
    assert loaded and (loaded[0]["state"], loaded[0]["generation"]) == ("Stable", group["generation"]), (
        "the new coordinator loaded the last Stable generation"
    )

    driver.call("waitStream", timeoutMs=40000, timeout=45)
    after = driver.call(
        "waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS, timeoutMs=25000, timeout=30
    )
    g = wait_stable(cluster, gid, after["assignments"], after["memberIds"])
    driver.call("waitConsumed", total=total, timeoutMs=30000, timeout=35)
    driver.call("waitCommitted", groupId=gid, topic=TOPIC, timeoutMs=20000, timeout=25)
    records = driver.call("consumed")["records"]
    check_records_in_place(records)
    counts = collections.Counter(r[3] for r in records)
    assert set(counts) == {f"key-{i}" for i in range(total)}, "no record lost"
    duplicates = sum(n - 1 for n in counts.values())
    redelivered = sorted({(r[1], r[2]) for r in records if counts[r[3]] > 1})
    assert all(off >= committed_at_move.get(p, 0) for p, off in redelivered), (committed_at_move, redelivered[:20])
    assert duplicates <= total // 4, f"{duplicates} duplicates"
    assert g["generation"] > group["generation"] and len(g["members"]) == 3 and cluster.coordinator(gid) == new
    assert live_offsets(cluster, gid) == {p: total // PARTITIONS for p in range(PARTITIONS)}
    refused = {
        e.broker for e in cluster.events if e.kind == "request_error" and e.details["error"] == "NOT_COORDINATOR"
    }
    assert refused == {old}, refused
    assert [e["group"] for e in events(cluster, "group_unloaded", gid)] == [gid]
    assert live_group(cluster, gid)["state"] == "Stable"
    print(
        f"moved {old} -> {new} in {state} (generation {generation}); {len(records)} consumed for {total}, "
        f"{duplicates} duplicates; generation {group['generation']} -> {g['generation']}"
    )
    no_handler_errors(cluster, driver)

"""The Java KafkaConsumer (kafka-clients, classic group protocol) against fakebroker's group coordinator.

One JVM per test runs ``fakebroker.GroupScenarios`` (tests/clients/java), which holds several
KafkaConsumers of one group, a thread each, and takes one command per stdin line
(``ID COMMAND key=value...``), answering each with one JSON line. Consumers commit with
``commitSync`` after every non-empty poll. Between commands the test checks the coordinator's
live state and events against what the consumers report.

Every cluster has 3 brokers and every group is chosen so that its coordinator is *not* the first
bootstrap broker. The jar is built by ``test_java_client.java_client_jar`` (Maven, cached).
Set ``FAKEBROKER_JAVA_LOG=debug`` for the client's DEBUG log in a failing test's message.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster

from .group_state import events, group_off_first_broker, live_group, live_offsets
from .jvm_driver import JvmDriver
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]

TOPIC, PARTITIONS = "orders", 6


class Driver(JvmDriver):
    """A running GroupScenarios JVM: ``call(cmd, **args)`` sends a command and returns its reply;
    other lines (assigned, revoked, stall_start, ...) are kept in ``notes``."""

    main_class = "fakebroker.GroupScenarios"
    lifetime = 80


@pytest.fixture
def cluster(request):
    """3 brokers; parametrized indirectly with how long a new coordinator loads (ms)."""
    load_ms = getattr(request, "param", 0)
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, coordinator_load_time_ms=load_ms).run_in_thread() as c:
        yield c


@pytest.fixture
def driver(java_client_jar, cluster):  # noqa: F811
    with Driver(java_client_jar, cluster) as d:
        yield d


# -- the coordinator's live state -----------------------------------------------------------------
def wait_stable(cluster: FakeCluster, gid: str, got: dict, timeout: float = 10) -> dict:
    """Until the coordinator holds a Stable generation whose members, generation and stored
    assignments are exactly what the consumers reported."""
    want = {got["memberIds"][n]: {TOPIC: sorted(ps)} for n, ps in got["assignments"].items()}
    generations = set(got["generations"].values())
    deadline = time.monotonic() + timeout
    while True:
        g = live_group(cluster, gid)
        have = g and {mid: {t: sorted(ps) for t, ps in m["assignment"].items()} for mid, m in g["members"].items()}
        if g and g["state"] == "Stable" and have == want and generations == {g["generation"]}:
            return g
        if time.monotonic() > deadline:
            raise AssertionError(f"group {gid} never became Stable with {want} at generation {generations}: {g}")
        time.sleep(0.05)


def wait_event(cluster: FakeCluster, kind: str, gid: str, timeout: float, **match: Any) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        found = [e for e in events(cluster, kind, gid) if all(e.get(k) == v for k, v in match.items())]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no {kind} {match} for {gid} within {timeout} s")
        time.sleep(0.05)


def start(driver: Driver, cluster: FakeCluster, gid: str, names=("a", "b", "c"), **props: Any) -> tuple[dict, dict]:
    for name in names:
        driver.call(
            "start",
            name=name,
            group=gid,
            topic=TOPIC,
            **{k: (v.format(name=name) if isinstance(v, str) else v) for k, v in props.items()},
        )
    got = driver.call("waitAssigned", names=list(names), topic=TOPIC, partitions=PARTITIONS)
    return got, wait_stable(cluster, gid, got)


def check_records_in_place(records: list[list]) -> None:
    for _, partition, offset, key in records:
        i = int(key.split("-")[1])
        assert (partition, offset) == (i % PARTITIONS, i // PARTITIONS), (partition, offset, key)


def counts_of(records: list[list]) -> collections.Counter:
    return collections.Counter(r[3] for r in records)


def assert_no_loss(records: list[list], total: int) -> int:
    """Every key-0..key-(total-1) consumed at least once; returns the number of duplicates."""
    check_records_in_place(records)
    counts = counts_of(records)
    assert set(counts) == {f"key-{i}" for i in range(total)}, (
        f"lost: {sorted(set(f'key-{i}' for i in range(total)) - set(counts))[:20]}"
    )
    return sum(n - 1 for n in counts.values())


def assert_healthy(cluster: FakeCluster, driver: Driver) -> None:
    bad = [e.describe() for e in cluster.events if e.kind in ("handler_error", "connection_closed")]
    assert not bad, "\n".join(bad)
    assert not driver.of_type("consumer_failed"), driver.diagnostics()


# -- tests --------------------------------------------------------------------------------------
def test_three_consumers_split_six_partitions_and_consume_each_record_once(cluster, driver):
    gid = group_off_first_broker(cluster, "java-split")
    coordinator = cluster.coordinator(gid)
    got, group = start(driver, cluster, gid)
    assert sorted(len(ps) for ps in got["assignments"].values()) == [2, 2, 2]
    assert (
        group["protocol_type"] == "consumer" and group["protocol"] == "range"
    )  # the first of Java's default assignors
    assert {m["client_id"] for m in group["members"].values()} == {f"fakebroker-java-{n}" for n in "abc"}
    assert {m["client_host"] for m in group["members"].values()} == {"/127.0.0.1"}

    driver.call("produce", topic=TOPIC, n=600, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]

    assert assert_no_loss(records, 600) == 0 and len(records) == 600, "every record exactly once"
    owner = {p: n for n, ps in got["assignments"].items() for p in ps}
    assert all(owner[p] == n for n, p, _, _ in records), "each record went to its partition's owner"
    assert collections.Counter(r[0] for r in records) == {"a": 200, "b": 200, "c": 200}
    assert live_offsets(cluster, gid) == {p: 100 for p in range(PARTITIONS)}
    assert cluster.coordinator(gid) == coordinator != 0
    assert live_group(cluster, gid)["generation"] == group["generation"], "no rebalance while consuming"
    assert not driver.of_type("commit_failed")
    assert_healthy(cluster, driver)


def test_member_closes_and_survivors_resume_from_its_commits(cluster, driver):
    gid = group_off_first_broker(cluster, "java-close")
    got, group = start(driver, cluster, gid)
    driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=300)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    assert live_offsets(cluster, gid) == {p: 50 for p in range(PARTITIONS)}

    leaving, orphaned = got["memberIds"]["c"], got["assignments"]["c"]
    driver.call("close", name="c")
    assert [e["member"] for e in events(cluster, "member_left", gid)] == [leaving], "close() sent LeaveGroup"
    after = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS)
    regrouped = wait_stable(cluster, gid, after)
    assert sorted(len(ps) for ps in after["assignments"].values()) == [3, 3]
    assert regrouped["generation"] > group["generation"] and leaving not in regrouped["members"]
    assert set(regrouped["members"]) == {got["memberIds"]["a"], got["memberIds"]["b"]}

    driver.call("produce", topic=TOPIC, first=300, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]
    assert assert_no_loss(records, 600) == 0, f"duplicates: {[k for k, n in counts_of(records).items() if n > 1][:20]}"
    for p in orphaned:
        taken = [off for name, part, off, _ in records if part == p and name != "c"]
        assert taken and min(taken) == 50, (
            f"partition {p} resumed at {min(taken) if taken else None}, c had committed 50"
        )
    assert live_offsets(cluster, gid) == {p: 100 for p in range(PARTITIONS)}
    assert_healthy(cluster, driver)


def test_static_member_restarts_within_session_timeout_without_rebalance(cluster, driver):
    gid = group_off_first_broker(cluster, "java-static")
    got, group = start(driver, cluster, gid, instance="instance-{name}", session=15000)
    assert group["static"] == {f"instance-{n}": got["memberIds"][n] for n in "abc"}
    driver.call("produce", topic=TOPIC, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=120)
    driver.call("waitCommitted", group=gid, topic=TOPIC)

    # restart a follower: close() of a static member sends no LeaveGroup, so it stays in the group
    name = next(n for n in "abc" if got["memberIds"][n] != group["leader"])
    old_id, its_partitions = got["memberIds"][name], got["assignments"][name]
    generations_before = len(events(cluster, "generation_started", gid))
    driver.call("close", name=name)
    assert not events(cluster, "member_left", gid)
    g = live_group(cluster, gid)
    assert g["state"] == "Stable" and old_id in g["members"]
    driver.drain()
    notes_before = len(driver.notes)

    driver.call("start", name=name + "2", group=gid, topic=TOPIC, instance=f"instance-{name}", session=15000)
    again = driver.call(
        "waitAssigned", names=sorted({"a", "b", "c"} - {name}) + [name + "2"], topic=TOPIC, partitions=PARTITIONS
    )
    new_id = again["memberIds"][name + "2"]
    assert new_id != old_id and new_id.startswith(f"instance-{name}-")
    assert again["assignments"][name + "2"] == its_partitions, "the same partitions again"
    assert again["generations"][name + "2"] == group["generation"], "joined the current generation"

    rejoined = wait_event(cluster, "static_member_rejoined", gid, 5)
    assert (rejoined["member"], rejoined["instance"]) == (new_id, f"instance-{name}")
    fenced = events(cluster, "member_fenced", gid)
    assert [(f["member"], f["replaced_by"]) for f in fenced] == [(old_id, new_id)]
    assert len(events(cluster, "generation_started", gid)) == generations_before, "no new generation"
    assert not [e for e in events(cluster, "rebalance_started", gid) if "static" in e["reason"]]
    g = live_group(cluster, gid)
    assert g["state"] == "Stable" and g["generation"] == group["generation"]
    assert g["static"][f"instance-{name}"] == new_id and old_id not in g["members"]
    assert g["members"][new_id]["assignment"] == {TOPIC: its_partitions}
    # the other members were not disturbed: no revocation or new assignment since the restart
    later = driver.drain()[notes_before:]
    assert not [n for n in later if n["type"] in ("revoked", "assigned", "lost") and n["name"] != name + "2"], later

    # and the restarted member continues from its predecessor's commits
    driver.call("produce", topic=TOPIC, first=120, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=240)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]
    assert assert_no_loss(records, 240) == 0
    mine = [off for n, p, off, _ in records if n == name + "2"]
    assert mine and min(mine) == 20 and {p for n, p, _, _ in records if n == name + "2"} == set(its_partitions)

    # now restart the leader: JoinGroup v9 answers it with skip_assignment, still no rebalance
    leader = next(n for n in "abc" if got["memberIds"][n] == group["leader"])
    leader_id, leader_partitions = got["memberIds"][leader], got["assignments"][leader]
    driver.call("close", name=leader)
    driver.drain()
    notes_before = len(driver.notes)
    driver.call("start", name=leader + "2", group=gid, topic=TOPIC, instance=f"instance-{leader}", session=15000)
    names = sorted({"a", "b", "c"} - {name, leader}) + [name + "2", leader + "2"]
    again = driver.call("waitAssigned", names=names, topic=TOPIC, partitions=PARTITIONS)
    new_leader = again["memberIds"][leader + "2"]
    assert again["assignments"][leader + "2"] == leader_partitions
    assert [e["member"] for e in events(cluster, "static_member_rejoined", gid)] == [new_id, new_leader]
    g = live_group(cluster, gid)
    assert (g["state"], g["generation"], g["leader"]) == ("Stable", group["generation"], new_leader), (
        "leadership was inherited"
    )
    assert leader_id not in g["members"] and g["static"][f"instance-{leader}"] == new_leader
    assert len(events(cluster, "generation_started", gid)) == generations_before and not events(
        cluster, "member_left", gid
    )
    later = driver.drain()[notes_before:]
    assert not [n for n in later if n["type"] in ("revoked", "assigned", "lost") and n["name"] != leader + "2"], later
    driver.call("produce", topic=TOPIC, first=240, n=60, partitions=PARTITIONS)
    driver.call("waitConsumed", total=300)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]
    assert assert_no_loss(records, 300) == 0
    assert {p for n, p, _, _ in records if n == leader + "2"} == set(leader_partitions)
    assert_healthy(cluster, driver)


def test_member_stalling_past_max_poll_interval_is_removed_and_others_take_over(cluster, driver):
    gid = group_off_first_broker(cluster, "java-stall")
    got, group = start(driver, cluster, gid, maxPoll=4000)
    driver.call("produce", topic=TOPIC, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=120)
    driver.call("waitCommitted", group=gid, topic=TOPIC)

    stalled = got["memberIds"]["c"]
    driver.call("stall", name="c", ms=9000)
    # after max.poll.interval.ms the client's heartbeat thread leaves the group
    removed = wait_event(cluster, "member_removed", gid, 9, member=stalled)
    assert removed["reason"] == "left the group"
    after = driver.call(
        "waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, timeout=15, timeoutMs=10000
    )
    g = wait_stable(cluster, gid, after)
    assert stalled not in g["members"] and g["generation"] > group["generation"]
    assert sorted(len(ps) for ps in after["assignments"].values()) == [3, 3]
    assert driver.of_type("stall_start", name="c") and not driver.of_type("stall_end", name="c"), "still stalled"

    driver.call("produce", topic=TOPIC, first=120, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=240)
    during = driver.call("consumed")["records"]
    assert not [r for r in during if r[0] == "c" and int(r[3].split("-")[1]) >= 120], (
        "the stalled member consumed nothing new"
    )
    assert {r[1] for r in during if int(r[3].split("-")[1]) >= 120} == set(range(PARTITIONS))

    # the stall ends: c finds itself out of the group, rejoins, and the group splits 2/2/2 again
    back = driver.call(
        "waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS, timeout=25, timeoutMs=20000
    )
    wait_stable(cluster, gid, back)
    assert back["memberIds"]["c"] != stalled, "c rejoined as a new member"
    driver.call("produce", topic=TOPIC, first=240, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=360)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]
    duplicates = assert_no_loss(records, 360)
    assert duplicates <= 60, f"{duplicates} duplicates"
    assert live_offsets(cluster, gid) == {p: 60 for p in range(PARTITIONS)}
    assert_healthy(cluster, driver)


def test_static_member_stalling_is_expired_by_the_coordinator_and_others_take_over(cluster, driver):
    """A static member does not leave when its poll interval runs out (KIP-345): it just stops
    heartbeating, so here it is the coordinator's session timer that removes it."""
    gid = group_off_first_broker(cluster, "java-expire")
    for name in "ab":
        driver.call("start", name=name, group=gid, topic=TOPIC)
    driver.call("start", name="c", group=gid, topic=TOPIC, instance="instance-c", maxPoll=1000)
    got = driver.call("waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS)
    group = wait_stable(cluster, gid, got)
    driver.call("produce", topic=TOPIC, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=120)
    driver.call("waitCommitted", group=gid, topic=TOPIC)

    stalled = got["memberIds"]["c"]
    driver.call("stall", name="c", ms=12000)
    expired = wait_event(cluster, "member_expired", gid, 10, member=stalled)
    assert expired["session_timeout_ms"] == 6000
    assert not events(cluster, "member_left", gid), "a static member sends no LeaveGroup"
    removed = wait_event(cluster, "member_removed", gid, 1, member=stalled)
    assert "session expired" in removed["reason"]
    after = driver.call(
        "waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS, timeout=15, timeoutMs=10000
    )
    g = wait_stable(cluster, gid, after)
    assert stalled not in g["members"] and "instance-c" not in g["static"] and g["generation"] > group["generation"]
    driver.call("produce", topic=TOPIC, first=120, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=240)
    assert not driver.of_type("stall_end", name="c"), "still stalled while the others took over"

    back = driver.call(
        "waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS, timeout=25, timeoutMs=20000
    )
    g = wait_stable(cluster, gid, back)
    assert g["static"] == {"instance-c": back["memberIds"]["c"]} and back["memberIds"]["c"] != stalled
    driver.call("produce", topic=TOPIC, first=240, n=120, partitions=PARTITIONS)
    driver.call("waitConsumed", total=360)
    driver.call("waitCommitted", group=gid, topic=TOPIC)
    duplicates = assert_no_loss(driver.call("consumed")["records"], 360)
    assert duplicates <= 60, f"{duplicates} duplicates"
    assert_healthy(cluster, driver)


@pytest.mark.parametrize("cluster", [0, 500], indirect=True, ids=["instant-load", "load-500ms"])
def test_coordinator_moves_mid_stream_without_loss(cluster, driver):
    """The group's offsets partition gets a new leader while records flow; with a load time the
    new coordinator first answers COORDINATOR_LOAD_IN_PROGRESS (Heartbeat: NONE) for 500 ms."""
    gid = group_off_first_broker(cluster, "java-move")
    old = cluster.coordinator(gid)
    start(driver, cluster, gid)
    total = 1200
    driver.call("produceStream", topic=TOPIC, n=total, partitions=PARTITIONS, chunk=6, intervalMs=15)
    driver.call("waitProduced", count=total // 3)
    consumed_at_move = len(driver.call("consumed")["records"])
    committed_at_move = live_offsets(cluster, gid)
    new = cluster.move_coordinator(gid)
    assert new != old and cluster.coordinator(gid) == new
    assert driver.call("waitProduced", count=0)["produced"] < total, "moved while records were still being produced"
    driver.call("waitStream", timeoutMs=40000, timeout=45)
    driver.call("waitConsumed", total=total, timeoutMs=30000, timeout=35)
    driver.call("waitCommitted", group=gid, topic=TOPIC, timeoutMs=20000, timeout=30)
    records = driver.call("consumed")["records"]

    duplicates = assert_no_loss(records, total)
    # only records not yet committed when the coordinator moved may come again, never older ones
    counts = counts_of(records)
    redelivered = sorted({(r[1], r[2]) for r in records if counts[r[3]] > 1})
    assert all(off >= committed_at_move.get(p, 0) for p, off in redelivered), (committed_at_move, redelivered[:20])
    assert duplicates <= total // 4, f"{duplicates} duplicates"
    assert 0 < consumed_at_move < len(records)
    kinds = [e.kind for e in cluster.events if e.details.get("group") == gid]
    loaded = kinds.index("group_loaded")
    assert kinds.index("group_unloaded") < loaded and "offset_committed" in kinds[loaded:]
    assert live_offsets(cluster, gid) == {p: total // PARTITIONS for p in range(PARTITIONS)}
    refused = {
        e.broker for e in cluster.events if e.kind == "request_error" and e.details["error"] == "NOT_COORDINATOR"
    }
    assert refused <= {old}
    loading = {
        e.broker
        for e in cluster.events
        if e.kind == "request_error" and e.details["error"] == "COORDINATOR_LOAD_IN_PROGRESS"
    }
    assert loading == ({new} if cluster.coordinator_load_time_ms else set()), loading
    g = live_group(cluster, gid)
    assert g["state"] == "Stable" and len(g["members"]) == 3
    print(
        f"coordinator {old} -> {new}: {len(records)} consumed for {total}, {duplicates} duplicates, "
        f"{len(driver.of_type('commit_failed'))} failed commits"
    )
    assert_healthy(cluster, driver)


def test_admin_list_describe_and_delete_consumer_groups(cluster, driver):
    gid = group_off_first_broker(cluster, "java-admin")
    coordinator = cluster.coordinator(gid)
    got, _ = start(driver, cluster, gid)
    driver.call("produce", topic=TOPIC, n=60, partitions=PARTITIONS)
    driver.call("waitConsumed", total=60)
    driver.call("waitCommitted", group=gid, topic=TOPIC)

    listed = [g for g in driver.call("listGroups")["groups"] if g["group"] == gid]
    assert listed == [{"group": gid, "simple": False, "state": "Stable", "groupType": "Classic"}]

    described = driver.call("describeGroup", group=gid)
    live = live_group(cluster, gid)
    assert (
        (
            described["state"],
            described["groupType"],
            described["assignor"],
            described["simple"],
            described["coordinator"],
        )
        == ("Stable", "Classic", live["protocol"], False, coordinator)
        == ("Stable", "Classic", "range", False, cluster.coordinator(gid))
    )
    assert {m["memberId"] for m in described["members"]} == set(live["members"]) == set(got["memberIds"].values())
    for m in described["members"]:
        mine = live["members"][m["memberId"]]
        assert (m["clientId"], m["host"], m["instance"]) == (mine["client_id"], mine["client_host"], None)
        assert m["partitions"] == mine["assignment"][TOPIC]

    refused = driver.call("deleteGroup", group=gid)
    assert (refused["deleted"], refused["exception"]) == (False, "GroupNotEmptyException")
    assert live_group(cluster, gid)["state"] == "Stable"
    assert driver.call("fetchOffsets", group=gid)["offsets"] == {f"{TOPIC}:{p}": 10 for p in range(PARTITIONS)}
    assert live_offsets(cluster, gid) == {p: 10 for p in range(PARTITIONS)}

    for name in "abc":
        driver.call("close", name=name)
    assert live_group(cluster, gid)["state"] == "Empty"
    described = driver.call("describeGroup", group=gid)
    assert (described["state"], described["members"]) == ("Empty", [])
    assert [g for g in driver.call("listGroups")["groups"] if g["group"] == gid] == [
        {"group": gid, "simple": False, "state": "Empty", "groupType": "Classic"}
    ]

    assert driver.call("deleteGroup", group=gid)["deleted"] is True
    assert live_group(cluster, gid) is None and live_offsets(cluster, gid) == {}
    assert [e["group"] for e in events(cluster, "group_deleted", gid)] == [gid]
    assert not [g for g in driver.call("listGroups")["groups"] if g["group"] == gid]
    assert driver.call("fetchOffsets", group=gid)["offsets"] == {}
    again = driver.call("deleteGroup", group=gid)
    assert (again["deleted"], again["exception"]) == (False, "GroupIdNotFoundException")
    assert_healthy(cluster, driver)

"""kafkajs consumer groups against fakebroker's classic group coordinator.

One ``node tests/clients/js/groups.js`` process per test runs several kafkajs consumers of one
group at once; the test drives it with one JSON command per line on stdin and gets one reply per
command (see groups.js). Between commands the test checks the coordinator's live state
(``cluster.state.groups``, ``cluster.state.groups.offsets``) and its events against what kafkajs saw.

Every cluster has 3 brokers and every group is chosen so that its coordinator is *not* the first
bootstrap broker, so the clients must really follow FindCoordinator.
"""

from __future__ import annotations

import collections
import time

import pytest

from fakebroker.cluster import FakeCluster

from . import test_kafkajs
from .group_state import events, group_off_first_broker, live_group, live_offsets
from .node_driver import NodeDriver

pytestmark = [pytest.mark.clients, pytest.mark.node]

TOPIC, PARTITIONS = "orders", 6


# -- the driver ---------------------------------------------------------------------------------
node = test_kafkajs.node  # the session fixture: the node binary, with js/node_modules installed


class Driver(NodeDriver):
    """A running groups.js: ``call(cmd, **args)`` sends one command and returns its reply;
    other lines (joined, rebalancing, crash, ...) are kept in ``notes``."""

    script = "groups.js"
    name = "groups.js"
    process_timeout = 80


@pytest.fixture
def cluster(request):
    """3 brokers; parametrized indirectly with how long a new coordinator loads (ms)."""
    load_ms = getattr(request, "param", 0)
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, coordinator_load_time_ms=load_ms).run_in_thread() as c:
        yield c


@pytest.fixture
def driver(node, cluster):
    with Driver(node, cluster) as d:
        yield d


# -- the coordinator's live state -----------------------------------------------------------------
def wait_stable(
    cluster: FakeCluster, gid: str, assignments: dict[str, list[int]], member_ids: dict[str, str], timeout: float = 10
) -> dict:
    """Until the coordinator holds a Stable generation whose members and stored assignments are
    exactly what the consumers reported."""
    want = {member_ids[name]: {TOPIC: sorted(parts)} for name, parts in assignments.items()}
    deadline = time.monotonic() + timeout
    while True:
        g = live_group(cluster, gid)
        got = g and {mid: {t: sorted(ps) for t, ps in m["assignment"].items()} for mid, m in g["members"].items()}
        if g and g["state"] == "Stable" and got == want:
            return g
        if time.monotonic() > deadline:
            raise AssertionError(f"group {gid} never became Stable with {want}: {g}")
        time.sleep(0.05)


def start_three(driver: Driver, cluster: FakeCluster, gid: str, names=("a", "b", "c")) -> tuple[dict, dict]:
    for name in names:
        driver.call("start", name=name, groupId=gid, topic=TOPIC)
    got = driver.call("waitAssigned", names=list(names), topic=TOPIC, partitions=PARTITIONS)
    group = wait_stable(cluster, gid, got["assignments"], got["memberIds"])
    return got, group


def key_index(key: str) -> int:
    return int(key.split("-")[1])


def check_records_in_place(records: list[list]) -> None:
    """Every consumed record is key-i at partition i % 6, offset i // 6 (nothing garbled)."""
    for _, partition, offset, key in records:
        i = key_index(key)
        assert (partition, offset) == (i % PARTITIONS, i // PARTITIONS), (partition, offset, key)


def assert_healthy(cluster: FakeCluster) -> None:
    bad = [e.describe() for e in cluster.events if e.kind in ("handler_error", "connection_closed")]
    assert not bad, "\n".join(bad)


# -- tests --------------------------------------------------------------------------------------
def test_three_consumers_split_six_partitions_and_consume_each_record_once(cluster, driver):
    gid = group_off_first_broker(cluster, "js-split")
    coordinator = cluster.coordinator(gid)
    got, group = start_three(driver, cluster, gid)

    assert sorted(len(p) for p in got["assignments"].values()) == [2, 2, 2]
    assert sorted(p for ps in got["assignments"].values() for p in ps) == list(range(PARTITIONS))
    assert set(group["members"]) == set(got["memberIds"].values())
    assert group["protocol_type"] == "consumer" and group["protocol"] == "RoundRobinAssigner"
    assert all(
        m["client_id"] == "fakebroker-kafkajs-groups" and m["client_host"] == "/127.0.0.1"
        for m in group["members"].values()
    )
    leaders = {n["leaderId"] for n in driver.drain() if n["type"] == "joined" and n["memberId"] in group["members"]}
    assert group["leader"] in group["members"] and leaders >= {group["leader"]}

    driver.call("produce", topic=TOPIC, n=600, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    committed = driver.call("waitCommitted", groupId=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]

    check_records_in_place(records)
    keys = collections.Counter(r[3] for r in records)
    assert len(records) == 600 and set(keys.values()) == {1}, "every record exactly once"
    owner = {p: name for name, ps in got["assignments"].items() for p in ps}
    assert all(owner[p] == name for name, p, _, _ in records), "each record went to its partition's owner"
    assert {name: sum(1 for r in records if r[0] == name) for name in "abc"} == {"a": 200, "b": 200, "c": 200}
    assert {int(p): o for p, o in committed["committed"].items()} == {p: 100 for p in range(PARTITIONS)}
    assert live_offsets(cluster, gid) == {p: 100 for p in range(PARTITIONS)}

    # the coordinator stayed put, the final generation has three members and no later one started
    assert cluster.coordinator(gid) == coordinator != 0
    gens = events(cluster, "generation_started", gid)
    assert gens[-1]["members"] == 3 and gens[-1]["generation"] == live_group(cluster, gid)["generation"]
    assert not [n for n in driver.drain() if n["type"] == "crash"]
    assert_healthy(cluster)


def test_member_leaves_and_survivors_resume_from_its_commits(cluster, driver):
    gid = group_off_first_broker(cluster, "js-leave")
    got, _ = start_three(driver, cluster, gid)
    driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=300)
    driver.call("waitCommitted", groupId=gid, topic=TOPIC)
    assert live_offsets(cluster, gid) == {p: 50 for p in range(PARTITIONS)}
    generation_before = live_group(cluster, gid)["generation"]

    leaving = got["memberIds"]["c"]
    orphaned = sorted(got["assignments"]["c"])
    driver.call("stop", name="c")
    assert [e["member"] for e in events(cluster, "member_left", gid)] == [leaving]
    assert leaving not in live_group(cluster, gid)["members"]

    after = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS)
    group = wait_stable(cluster, gid, after["assignments"], after["memberIds"])
    assert sorted(len(p) for p in after["assignments"].values()) == [3, 3]
    assert group["generation"] > generation_before
    assert set(group["members"]) == {got["memberIds"]["a"], got["memberIds"]["b"]}, "survivors kept their member ids"

    driver.call("produce", topic=TOPIC, first=300, n=300, partitions=PARTITIONS)
    driver.call("waitConsumed", total=600)
    driver.call("waitCommitted", groupId=gid, topic=TOPIC)
    records = driver.call("consumed")["records"]

    check_records_in_place(records)
    counts = collections.Counter(r[3] for r in records)
    assert set(counts) == {f"key-{i}" for i in range(600)}, "no record lost"
    assert set(counts.values()) == {1}, f"duplicates: {[k for k, n in counts.items() if n > 1][:20]}"
    # the survivors started c's partitions exactly at c's committed offsets (50), not from the beginning
    for p in orphaned:
        taken = [(name, off) for name, part, off, _ in records if part == p and name != "c"]
        assert taken and min(off for _, off in taken) == 50, (p, taken[:5])
        assert {name for name, _ in taken} <= {"a", "b"}
    assert not [r for r in records if r[0] == "c" and key_index(r[3]) >= 300], "c consumed nothing after leaving"
    assert live_offsets(cluster, gid) == {p: 100 for p in range(PARTITIONS)}
    assert_healthy(cluster)


@pytest.mark.parametrize("cluster", [0, 500], indirect=True, ids=["instant-load", "load-500ms"])
def test_coordinator_moves_mid_stream_without_loss(cluster, driver):
    """The group's offsets partition gets a new leader while records flow; with a load time the
    new coordinator first answers COORDINATOR_LOAD_IN_PROGRESS (Heartbeat: NONE) for 500 ms."""
    gid = group_off_first_broker(cluster, "js-move")
    old = cluster.coordinator(gid)
    start_three(driver, cluster, gid)
    total = 1200
    driver.call("produceStream", topic=TOPIC, n=total, partitions=PARTITIONS, chunk=6, intervalMs=20)
    driver.call("waitProduced", count=total // 3)
    consumed_at_move = len(driver.call("consumed")["records"])
    committed_at_move = live_offsets(cluster, gid)
    new = cluster.move_coordinator(gid)
    assert new != old and cluster.coordinator(gid) == new
    produced_at_move = driver.call("waitProduced", count=0)["produced"]
    assert produced_at_move < total, "the move happened while records were still being produced"
    driver.call("waitStream", timeoutMs=40000, timeout=45)
    driver.call("waitConsumed", total=total, timeoutMs=30000, timeout=35)
    driver.call("waitCommitted", groupId=gid, topic=TOPIC, timeoutMs=20000)
    records = driver.call("consumed")["records"]

    check_records_in_place(records)
    counts = collections.Counter(r[3] for r in records)
    assert set(counts) == {f"key-{i}" for i in range(total)}, "no record lost"
    duplicates = sum(n - 1 for n in counts.values())
    # Only records not yet committed when the coordinator moved may come again (the members
    # rejoin, partitions change hands, commits fail during the load window), never older ones.
    redelivered = sorted({(r[1], r[2]) for r in records if counts[r[3]] > 1})
    assert all(off >= committed_at_move.get(p, 0) for p, off in redelivered), (committed_at_move, redelivered[:20])
    assert duplicates <= total // 4, f"{duplicates} duplicates"
    assert 0 < consumed_at_move < total and len(records) > consumed_at_move

    # the broker side: the group moved, and its new coordinator accepted the later commits
    kinds = [(e.kind, e.details) for e in cluster.events if e.details.get("group") == gid]
    unloaded = next(i for i, (k, _) in enumerate(kinds) if k == "group_unloaded")
    loaded = next(i for i, (k, _) in enumerate(kinds) if k == "group_loaded")
    assert unloaded < loaded
    assert any(k == "offset_committed" for k, _ in kinds[loaded:]), "commits reached the new coordinator"
    assert live_offsets(cluster, gid) == {p: total // PARTITIONS for p in range(PARTITIONS)}
    not_coordinator = [
        e for e in cluster.events if e.kind == "request_error" and e.details["error"] == "NOT_COORDINATOR"
    ]
    assert not_coordinator and {e.broker for e in not_coordinator} == {old}, "only the old coordinator refused"
    loading = {
        e.broker
        for e in cluster.events
        if e.kind == "request_error" and e.details["error"] == "COORDINATOR_LOAD_IN_PROGRESS"
    }
    assert loading == ({new} if cluster.coordinator_load_time_ms else set()), loading
    g = live_group(cluster, gid)
    assert g["state"] == "Stable" and len(g["members"]) == 3
    print(f"coordinator {old} -> {new}: {len(records)} records consumed for {total} produced, {duplicates} duplicates")
    assert_healthy(cluster)


def test_admin_list_describe_delete_and_fetch_offsets(cluster, driver):
    gid = group_off_first_broker(cluster, "js-admin")
    got, _ = start_three(driver, cluster, gid)
    driver.call("produce", topic=TOPIC, n=60, partitions=PARTITIONS)
    driver.call("waitConsumed", total=60)
    driver.call("waitCommitted", groupId=gid, topic=TOPIC)

    # listGroups asks every broker; only the coordinator lists the group
    listed = driver.call("listGroups")["groups"]
    assert [g for g in listed if g["groupId"] == gid] == [{"groupId": gid, "protocolType": "consumer"}]

    # describeGroups, against the live group
    [described] = driver.call("describeGroups", groupIds=[gid])["groups"]
    live = live_group(cluster, gid)
    assert (
        (described["errorCode"], described["state"], described["protocolType"], described["protocol"])
        == (0, "Stable", "consumer", live["protocol"])
        == (0, live["state"], live["protocol_type"], "RoundRobinAssigner")
    )
    assert {m["memberId"] for m in described["members"]} == set(live["members"]) == set(got["memberIds"].values())
    for m in described["members"]:
        mine = live["members"][m["memberId"]]
        assert (
            (m["clientId"], m["clientHost"])
            == (mine["client_id"], mine["client_host"])
            == ("fakebroker-kafkajs-groups", "/127.0.0.1")
        )
        assert {t: sorted(ps) for t, ps in m["assignment"].items()} == {
            t: sorted(ps) for t, ps in mine["assignment"].items()
        }
        assert m["metadata"]["topics"] == [TOPIC]
    by_member = {m["memberId"]: sorted(m["assignment"][TOPIC]) for m in described["members"]}
    assert by_member == {got["memberIds"][n]: sorted(ps) for n, ps in got["assignments"].items()}

    # deleteGroups while members are active: NON_EMPTY_GROUP (68), nothing deleted
    refused = driver.call("deleteGroups", groupIds=[gid])
    assert refused["failed"] == "KafkaJSDeleteGroupsError", refused
    assert refused["groups"] == [{"groupId": gid, "errorCode": 68, "type": "NON_EMPTY_GROUP"}]
    assert live_group(cluster, gid)["state"] == "Stable" and live_offsets(cluster, gid)

    # fetchOffsets = the committed offsets the coordinator holds
    [fetched] = driver.call("fetchOffsets", groupId=gid, topics=[TOPIC])["offsets"]
    assert fetched["topic"] == TOPIC
    assert (
        {p["partition"]: p["offset"] for p in fetched["partitions"]}
        == live_offsets(cluster, gid)
        == {p: 10 for p in range(PARTITIONS)}
    )

    # everyone leaves: the group is Empty but keeps its offsets
    for name in "abc":
        driver.call("stop", name=name)
    live = live_group(cluster, gid)
    assert (live["state"], live["members"]) == ("Empty", {})
    [described] = driver.call("describeGroups", groupIds=[gid])["groups"]
    assert (described["errorCode"], described["state"], described["members"]) == (0, "Empty", [])
    assert [g for g in driver.call("listGroups")["groups"] if g["groupId"] == gid] == [
        {"groupId": gid, "protocolType": "consumer"}
    ]
    [fetched] = driver.call("fetchOffsets", groupId=gid, topics=[TOPIC])["offsets"]
    assert {p["partition"]: p["offset"] for p in fetched["partitions"]} == {p: 10 for p in range(PARTITIONS)}

    # now deleteGroups succeeds, and the group and its offsets are gone
    assert driver.call("deleteGroups", groupIds=[gid])["results"] == [{"groupId": gid, "errorCode": 0}]
    assert live_group(cluster, gid) is None and live_offsets(cluster, gid) == {}
    assert [e["group"] for e in events(cluster, "group_deleted", gid)] == [gid]
    assert not [g for g in driver.call("listGroups")["groups"] if g["groupId"] == gid]
    [described] = driver.call("describeGroups", groupIds=[gid])["groups"]
    assert (described["state"], described["members"]) == ("Dead", [])  # kafkajs uses DescribeGroups v0-2: no error
    [fetched] = driver.call("fetchOffsets", groupId=gid, topics=[TOPIC])["offsets"]
    assert {p["partition"]: p["offset"] for p in fetched["partitions"]} == {p: -1 for p in range(PARTITIONS)}
    # a second delete: GROUP_ID_NOT_FOUND (69)
    again = driver.call("deleteGroups", groupIds=[gid])
    assert again["groups"] == [{"groupId": gid, "errorCode": 69, "type": "GROUP_ID_NOT_FOUND"}], again
    assert_healthy(cluster)

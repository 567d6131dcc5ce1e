"""Streams groups (KIP-1071) are kept as Kafka keeps their records in ``__consumer_offsets``
(STREAMS-GROUPS.md §8): a group read back is the group that was written (topology with internal
topics, members with standbys, a member mid-revocation); after a restart on the same directory a
member that outlived it heartbeats on at its epoch with its tasks, without being fenced or
rejoining, while one that does not come back is fenced after its session; the group's committed
offsets stay; damaged records refuse the directory with one line. Members are driven with
StreamsGroupHeartbeat requests as tests/apis and tests/cluster drive them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.groups.streams.coordinator import rebalance_key, session_key
from fakebroker.core.groups.streams.model import MemberState
from fakebroker.storage import DataDirError, streams_group_state
from fakebroker.storage.metadata import JOURNAL_FILE, META_FILE
from fakebroker.storage.snapshot import problem

from ..apis.support import call
from ..apis.test_group_apis import commit
from ..apis.test_streams_group_apis import (
    CHANGELOG,
    DELETE_GROUPS,
    REPARTITION,
    STREAMS_ON,
    G,
    beat,
    join,
    streams_cluster,
    word_count,
)
from ..cluster.test_streams_views import settle
from .test_journal import crashed_copy, journal_lines

STANDBY = {"group.streams.num.standby.replicas": 1}
SESSION_MS = 45_000  # group.streams.session.timeout.ms (and its minimum)
# on a cluster's clock (not 0) the assignment interval would delay the settling heartbeats
CONFIG = {**STREAMS_ON, **STANDBY, "group.streams.assignment.interval.ms": 0}


def topology() -> dict:
    """§10's word count with an all-repartition copartition group, so every part is kept."""
    t = word_count()
    t["subtopologies"][1]["copartition_groups"] = [{"source_topics": [], "repartition_source_topics": [0]}]
    return t


def wire(tasks: frozenset) -> list[dict[str, Any]]:
    by_sub: dict[str, list[int]] = {}
    for sub, p in sorted(tasks):
        by_sub.setdefault(sub, []).append(p)
    return [{"subtopology_id": s, "partitions": ps} for s, ps in by_sub.items()]


def owned(state: ClusterState, member: str) -> dict[str, Any]:
    """The three task lists a member that did what it was told says it owns."""
    m = state.groups.streams.groups[G].members[member]
    held = m.assigned.union(m.revoking)
    return {"active_tasks": wire(held.active), "standby_tasks": wire(held.standby), "warmup_tasks": wire(held.warmup)}


def joined(state: ClusterState, member: str, now: int = 0, **fields) -> int:
    answer = join(member, state=state, now=now, topology=topology(), **fields)
    assert answer.error_code == 0, answer
    return answer.member_epoch


def stable_two(state: ClusterState, now: int = 0) -> dict[str, int]:
    """m-a (dynamic, an endpoint, a rack, tags) and m-b (static): Stable with standbys."""
    epochs = {
        "m-a": joined(
            state,
            "m-a",
            now,
            rack_id="rack-a",
            user_endpoint={"host": "app-a", "port": 7070},
            client_tags=[{"key": "zone", "value": "a"}],
        ),
        "m-b": joined(state, "m-b", now, instance_id="i-b"),
    }
    epochs = settle(state, epochs, now=now)
    assert state.groups.streams.groups[G].state.value == "Stable"
    return epochs


def kept(state: ClusterState) -> dict[str, Any]:
    """The groups as the data directory's JSON holds them."""
    entries = json.loads(json.dumps(streams_group_state.group_entries(state)))
    assert streams_group_state.problem(entries) is None
    return entries


def restored(entries: dict[str, Any], topics: dict[str, int], now: int = 0) -> ClusterState:
    """A new cluster with ``topics`` (what the snapshot brings back first) and the groups."""
    state = streams_cluster(**STANDBY)
    for name, count in topics.items():
        if name in state.topics:
            if len(state.topics[name].partitions) != count:
                state.create_partitions(name, count)
        else:
            state.create_topic(name, count)
    streams_group_state.restore(state, entries, now)
    return state


KEPT = ("group_epoch", "assignment_epoch", "assignment_timestamp_ms", "target", "topology", "configured")
KEPT += ("metadata_hash", "validated_topology_epoch", "assignment_configs", "members")


def test_a_group_mid_revocation_with_standbys_and_internal_topics_reads_back_as_it_was():
    state = streams_cluster(**STANDBY)
    epochs = stable_two(state)
    epochs["m-c"] = joined(state, "m-c", process_id="process-m-a")  # a second thread of m-a's process
    answer = beat(state, "m-a", epochs["m-a"], **owned(state, "m-a"))
    assert answer.error_code == 0
    old = state.groups.streams.groups[G]
    a = old.members["m-a"]
    assert a.state == MemberState.UNREVOKED_TASKS and a.revoking.active  # it still owns what it must give up
    assert old.state.value == "Reconciling" and any(m.assigned.standby for m in old.members.values())
    entries = kept(state)
    entry = entries[G]
    assert entry["metadata"] == {CHANGELOG: 6, REPARTITION: 6, "wc-input": 6}
    [changelog] = entry["topology"]["subtopologies"][1]["state_changelog_topics"]
    assert changelog == {
        "name": CHANGELOG,
        "partitions": 0,
        "replication_factor": -1,
        "configs": [["cleanup.policy", "compact"]],
    }
    assert entry["topology"]["subtopologies"][1]["copartition_groups"] == [[[], [0]]]
    by_id = {m["member_id"]: m for m in entry["members"]}
    assert by_id["m-a"]["user_endpoint"] == ["app-a", 7070] and by_id["m-a"]["client_tags"] == {"zone": "a"}
    assert (by_id["m-a"]["rack_id"], by_id["m-b"]["instance_id"]) == ("rack-a", "i-b")
    assert by_id["m-a"]["state"] == "UNREVOKED_TASKS" and by_id["m-a"]["revoking"]["active"]

    fresh = restored(entries, {"wc-input": 6, REPARTITION: 6, CHANGELOG: 6}, now=5)
    new = fresh.groups.streams.groups[G]
    for name in KEPT:
        assert getattr(new, name) == getattr(old, name), name
    assert new.state == old.state and streams_group_state.group_entries(fresh) == entries
    coordinator = fresh.groups.streams
    assert all(coordinator.timers.deadline(session_key(G, m)) == 5 + SESSION_MS for m in epochs)
    assert coordinator.timers.deadline(rebalance_key(G, "m-a")) == 5 + 300_000  # its revocation's timeout runs again
    assert coordinator.timers.deadline(rebalance_key(G, "m-b")) is None
    loaded = [e for e in fresh.events.since(0) if e.kind == "group_loaded"]
    assert [(e.group, e.details["state"], e.details["generation"]) for e in loaded] == [
        (G, "Reconciling", old.group_epoch)
    ]

    # the same heartbeats from here take both to the same place
    settle(state, dict(epochs), now=10)
    settle(fresh, dict(epochs), now=10)
    after = streams_group_state.group_entries(state)
    assert after == streams_group_state.group_entries(fresh) and after != entries
    assert state.groups.streams.groups[G].state.value == "Stable"


def test_a_group_written_before_its_internal_topics_existed_reads_back_waiting_for_them():
    state = streams_cluster(**STANDBY)
    joined(state, "m-a")  # the API layer created the internal topics after answering
    entries = kept(state)
    assert entries[G]["metadata"] == {CHANGELOG: -1, REPARTITION: -1, "wc-input": 6}
    old = state.groups.streams.groups[G]
    fresh = restored(entries, {"wc-input": 6, REPARTITION: 6, CHANGELOG: 6})
    new = fresh.groups.streams.groups[G]
    assert (new.state.value, new.configured, new.metadata_hash) == ("NotReady", old.configured, old.metadata_hash)
    answers = [beat(s, "m-a", 2, now=10, active_tasks=[], standby_tasks=[], warmup_tasks=[]) for s in (state, fresh)]
    assert answers[0] == answers[1] and answers[0].member_epoch == 3  # the topics' creation bumped both


@pytest.mark.parametrize("written", ["before", "after"])
def test_a_topic_change_the_group_had_not_seen_bumps_its_epoch_after_the_restart_as_before(written):
    state = streams_cluster(**STANDBY)
    epochs = stable_two(state)
    before = kept(state)  # the group's last line
    state.create_partitions("wc-input", 8)  # no heartbeat has seen it yet
    entries = kept(state) if written == "after" else before
    assert entries[G]["metadata"] == (None if written == "after" else before[G]["metadata"])
    fresh = restored(entries, {"wc-input": 8, REPARTITION: 6, CHANGELOG: 6})
    if written == "before":
        assert fresh.groups.streams.groups[G].configured == state.groups.streams.groups[G].configured
        assert fresh.groups.streams.groups[G].state.value == "Stable"  # as the group was
    answers = [beat(s, "m-a", epochs["m-a"], now=10, **owned(s, "m-a")) for s in (state, fresh)]
    assert [(x.error_code, x.member_epoch, [s.status_code for s in x.status]) for x in answers] == [
        (0, epochs["m-a"], [2])
    ] * 2
    assert [s.groups.streams.groups[G].group_epoch for s in (state, fresh)] == [before[G]["group_epoch"] + 1] * 2


def on_loop(c: FakeCluster, act):
    """Run ``act`` on the cluster's loop and settle it, as the server does after a request."""

    def run():
        try:
            return act()
        finally:
            c.runtime.settle()

    return c.call(run)


def start(c: FakeCluster) -> dict[str, int]:
    return on_loop(c, lambda: stable_two(c.state, c.clock.now_ms()))


def beat_on(c: FakeCluster, member: str, epoch: int):
    def act():
        return beat(c.state, member, epoch, now=c.clock.now_ms(), **owned(c.state, member))

    answer = on_loop(c, act)
    assert answer.error_code == 0, answer
    return answer


def test_a_member_that_outlives_the_restart_heartbeats_on_at_its_epoch_with_its_tasks(tmp_path):
    data = tmp_path / "data"
    config = CONFIG
    with FakeCluster(data_dir=data, topics={"wc-input": 6}, config=config, virtual_time=True).run_in_thread() as c:
        epochs = start(c)
        before = c.streams_group(G)
        answer = on_loop(
            c, lambda: commit(c.state, G, member="m-a", generation=epochs["m-a"], version=9, topic="wc-input")
        )
        assert [p.error_code for t in answer.topics for p in t.partitions] == [0]
        [*_, last] = journal_lines(data, "stgroup", G)
        assert last[2]["group_epoch"] == before.group_epoch and len(last[2]["members"]) == 2
        copy = crashed_copy(data, tmp_path / "copy")
    with FakeCluster(data_dir=copy, config=config, virtual_time=True).run_in_thread() as c:
        view = c.streams_group(G)
        assert (view.state, view.group_epoch, view.assignment_epoch) == (
            "Stable",
            before.group_epoch,
            before.assignment_epoch,
        )
        assert view.members == before.members  # ids, epochs, tasks, targets, endpoints, tags
        assert c.committed(G) == {("wc-input", 0): 42}
        mark = c.event_count
        for _ in range(4):  # more than a session: the heartbeats keep both members
            for m in ("m-a", "m-b"):
                quiet = beat_on(c, m, epochs[m])
                assert (quiet.member_epoch, quiet.active_tasks, quiet.status) == (epochs[m], None, [])
            c.clock.advance(SESSION_MS / 3000)
        assert c.streams_group(G).members == before.members
        again = on_loop(
            c,
            lambda: commit(
                c.state, G, member="m-a", generation=epochs["m-a"], version=9, topic="wc-input", offsets={0: 43}
            ),
        )
        assert [p.error_code for t in again.topics for p in t.partitions] == [0]  # its epoch still commits
        kinds = {e.kind for e in c.events_since(mark)}
        assert not kinds & {"member_joined", "member_expired", "member_left", "group_epoch_bumped"}, kinds
        # m-b does not come back: fenced after its session, its tasks go to m-a
        for _ in range(4):
            beat_on(c, "m-a", epochs["m-a"])
            c.clock.advance(SESSION_MS / 3000)
        expired = [e.details["member"] for e in c.events_since(mark) if e.kind == "member_expired"]
        assert expired == ["m-b"]
        epochs = on_loop(c, lambda: settle(c.state, {"m-a": epochs["m-a"]}, now=c.clock.now_ms()))
        view = c.streams_group(G)
        assert view.state == "Stable" and view.group_epoch > before.group_epoch
        [a] = view.members
        assert len(a.tasks.active) == 12 and a.member_epoch == epochs["m-a"]


def test_a_deleted_streams_group_and_its_offsets_stay_deleted(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"wc-input": 6}, config=CONFIG, virtual_time=True).run_in_thread() as c:
        epochs = start(c)
        on_loop(c, lambda: commit(c.state, G, member="m-a", generation=epochs["m-a"], version=9, topic="wc-input"))
        assert c.committed(G) == {("wc-input", 0): 42}
        for m, instance in (("m-a", None), ("m-b", "i-b")):
            left = on_loop(c, lambda m=m, i=instance: beat(c.state, m, -1, now=c.clock.now_ms(), instance_id=i))
            assert left.error_code == 0, left
        assert c.streams_group(G).state == "Empty"
        assert journal_lines(data, "stgroup", G)[-1][2]["members"] == []  # Empty is kept too
        deleted = on_loop(c, lambda: call(c.state, DELETE_GROUPS, 2, groups_names=[G])[0])
        assert deleted.results[0].error_code == 0
        assert journal_lines(data, "stgroup", G)[-1] == ["stgroup", G, None]
        copy = crashed_copy(data, tmp_path / "copy")
    with FakeCluster(data_dir=copy, config=CONFIG, virtual_time=True).run_in_thread() as c:
        assert c.streams_group(G) is None and c.committed(G) == {}
        assert CHANGELOG in c.topics()  # its internal topics stay, as in Kafka
        rejoined = on_loop(c, lambda: join("m-a", state=c.state, now=c.clock.now_ms(), topology=topology()))
        assert (rejoined.error_code, rejoined.member_epoch) == (0, 2)  # a new group


def test_a_damaged_streams_group_refuses_the_directory(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"wc-input": 6}, config=CONFIG, virtual_time=True).run_in_thread() as c:
        start(c)
        [*_, line] = journal_lines(data, "stgroup", G)
    meta = json.loads((data / META_FILE).read_text())  # the clean stop's snapshot
    assert problem(meta) is None and meta["streams_groups"][G]["members"]
    entry = meta["streams_groups"][G]
    damaged = {**meta, "streams_groups": {G: {**entry, "members": [{"state": "x"}]}}}
    why = "a member's ids, client, process or state is not a string it can be"
    assert problem(damaged) == f"streams_groups {G}: {why}"
    (data / META_FILE).write_text(json.dumps(damaged))
    with pytest.raises(DataDirError, match=f"streams_groups {G}: a member's ids"):
        FakeCluster(data_dir=data)
    (data / META_FILE).write_text(json.dumps(meta))
    journal = f'["journal",1,{meta["journal"]}]\n{json.dumps(["stgroup", G, {**line[2], "target": []}])}\n["pid",5]\n'
    (data / JOURNAL_FILE).write_text(journal)
    with pytest.raises(DataDirError, match=f"line 2 cannot be applied .*streams group '{G}': target is not"):
        FakeCluster(data_dir=data)

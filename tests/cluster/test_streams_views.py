"""Streams group snapshots (``cluster.streams_group``), ``cluster.group`` of a streams group, the
``streams_group_stable`` condition and the tasks a member_reconciled event carries, on a core
cluster driven by StreamsGroupHeartbeat requests without sockets (tests/apis' word count: 6
input partitions, two subtopologies, 12 active tasks; the stateful one's 6 have standbys)."""

from __future__ import annotations

from typing import Any

from fakebroker.cluster import conditions
from fakebroker.cluster.streams import StreamsGroupView, streams_group_view
from fakebroker.cluster.views import group_view
from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.events import Event
from fakebroker.timeline.lanes import swimlanes

from ..apis.test_streams_group_apis import CHANGELOG, REPARTITION, G, beat, join, streams_cluster


class CoreCluster:
    """What conditions read of a cluster, answered from a core ``ClusterState``."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def group(self, group_id: str) -> Any:
        return group_view(self.state, group_id)

    def streams_group(self, group_id: str) -> StreamsGroupView | None:
        return streams_group_view(self.state, group_id)

    def events_since(self, count: int) -> list[Event]:
        return self.state.events.since(count)


def tasks(answer: Any) -> dict[str, list[str]]:
    def names(entries: Any) -> list[str]:
        return sorted(f"{t.subtopology_id}_{p}" for t in entries or [] for p in t.partitions)

    return {"active": names(answer.active_tasks), "standby": names(answer.standby_tasks)}


def settle(state: ClusterState, members: dict[str, int], rounds: int = 6, now: int = 0) -> dict[str, int]:
    """Heartbeats from each member, owning what it was last told, until none changes epoch."""
    owned: dict[str, Any] = {}
    for _ in range(rounds):
        for m, epoch in list(members.items()):
            given = owned.get(m, {"active_tasks": [], "standby_tasks": [], "warmup_tasks": []})
            answer = beat(state, m, epoch, now=now, **given)
            assert answer.error_code == 0, answer
            members[m] = answer.member_epoch
            if answer.active_tasks is not None:
                owned[m] = {
                    "active_tasks": answer.active_tasks,
                    "standby_tasks": answer.standby_tasks,
                    "warmup_tasks": answer.warmup_tasks,
                }
    return members


def two_members() -> ClusterState:
    state = streams_cluster(**{"group.streams.num.standby.replicas": 1})
    epochs = {}
    for m in ("m-a", "m-b"):
        answer = join(m, state=state)
        assert answer.error_code == 0, answer
        epochs[m] = answer.member_epoch
    settle(state, epochs)
    return state


def test_a_streams_group_view_holds_topology_members_and_their_tasks():
    state = two_members()
    view = streams_group_view(state, G)
    assert view is not None and (view.state, view.settled, view.status) == ("Stable", True, None)
    assert view.num_standby_replicas == 1 and view.topology_epoch == 0
    assert [
        (s.subtopology_id, s.tasks, s.changelog_topics, s.repartition_source_topics) for s in view.subtopologies
    ] == [
        ("0", 6, (), ()),
        ("1", 6, (CHANGELOG,), (REPARTITION,)),
    ]
    a, b = view.member("m-a"), view.member("m-b")
    assert a is not None and b is not None
    assert (a.process_id, a.state, a.member_epoch) == ("process-m-a", "STABLE", view.assignment_epoch)
    every = {f"{s}_{p}" for s in "01" for p in range(6)}
    assert set(a.tasks.active) | set(b.tasks.active) == every and not set(a.tasks.active) & set(b.tasks.active)
    assert len(a.tasks.active) == len(b.tasks.active) == 6
    # one standby of each stateful task, never beside its active
    for task in (f"1_{p}" for p in range(6)):
        owner, (holder,) = view.owner(task), view.standby_holders(task)
        assert owner is not None and owner.process_id != holder.process_id
    assert a.tasks == a.target and not a.revoking
    assert view.by_process()["process-m-a"] == a.tasks
    as_dict = view.to_dict()
    assert (as_dict["group_type"], as_dict["state"], as_dict["members"][0]["tasks"]["active"]) == (
        "streams",
        "Stable",
        list(view.members[0].tasks.active),
    )
    # the general group view reads streams groups too: active tasks by subtopology
    general = group_view(state, G)
    assert general is not None and (general.group_type, general.state) == ("streams", "Stable")
    by_member = {m.member_id: m.assignment for m in general.members}
    assert sorted(f"{s}_{p}" for s, ps in by_member["m-a"].items() for p in ps) == sorted(a.tasks.active)


def test_a_group_missing_its_source_topic_shows_the_status():
    state = streams_cluster()
    from ..apis.test_streams_group_apis import word_count

    assert join("m-a", state=state, topology=word_count(source="nope")).error_code == 0
    view = streams_group_view(state, G)
    assert view is not None and view.state == "NotReady"
    assert view.status is not None and view.status[0] == "MISSING_SOURCE_TOPICS" and "nope" in view.status[1]
    assert streams_group_view(state, "no-such-group") is None


def test_streams_group_stable_waits_for_every_member_at_its_target_tasks():
    state = streams_cluster()
    c = CoreCluster(state)
    cond = conditions.streams_group_stable(G, members=2)
    assert not cond(c) and cond.last_seen is None
    first = join("m-a", state=state)
    epochs = settle(state, {"m-a": first.member_epoch})
    assert not cond(c) and cond.last_seen.startswith("Stable") and cond.last_seen.endswith("1 members")
    second = join("m-b", state=state)
    epochs["m-b"] = second.member_epoch
    assert not cond(c) and "not at the target yet" in cond.last_seen
    settle(state, epochs)
    view = cond(c)
    assert isinstance(view, StreamsGroupView) and len(view.members) == 2
    assert conditions.GroupState(G, "Stable", members=2)(c)  # the general one reads streams groups too
    assert cond.wakes_on() == [(None, "group", G)]
    assert conditions.describe(cond) == (
        "streams group 'wc' is Stable with 2 members, every member at its target tasks"
        " (last seen: Stable, epoch 4 (assignment epoch 4), 2 members)"
    )


def test_member_reconciled_carries_standby_tasks_and_the_timeline_shows_them():
    state = two_members()
    reconciled = [e for e in state.events.since(0) if e.kind == "member_reconciled" and e.group == G]
    last = {e.details["member"]: e.details for e in reconciled}
    view = streams_group_view(state, G)
    assert view is not None
    for m in view.members:
        d = last[m.member_id]
        assert sorted(f"{s}_{p}" for s, ps in d["assignment"].items() for p in ps) == list(m.tasks.active)
        assert sorted(f"{s}_{p}" for s, ps in (d.get("standby") or {}).items() for p in ps) == list(m.tasks.standby)
    lanes = swimlanes(state.events.since(0), group=G)
    labels = [seg.assignment for lane in lanes.lanes for seg in lane.segments if seg.assignment]
    assert any(any(k.startswith("standby ") for k in a) for a in labels), labels

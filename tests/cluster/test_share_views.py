"""Share group snapshots (``cluster.share_group``) and the share conditions, on a core cluster
driven without sockets: members, epochs and assignments; per share partition the start offset
and the records in flight with state, delivery count and owner, from memory when loaded and
from the share coordinator's store when not; and what each condition waits for."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.cluster import conditions
from fakebroker.cluster.shares import ShareGroupView, share_group_view
from fakebroker.cluster.views import group_view
from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.events import Event
from fakebroker.core.groups.share.coordinator import ShareHeartbeatRequest
from fakebroker.core.groups.share.records import AckBatch, AckType

from ..apis.support import cluster, produce_records

G, T = "workers", "jobs"
M1, M2 = "member-one-0000000000", "member-two-0000000000"


def join(state: ClusterState, member: str, client: str, now: int = 0) -> None:
    result = state.groups.share_heartbeat(
        now, 0, ShareHeartbeatRequest(G, member, 0, subscribed_names=[T], client_id=client)
    )
    assert result.error == 0, result


def acquire(state: ClusterState, member: str, client: str, now: int = 0, partition: int = 0, limit: int = 500):
    shares = state.groups.shares
    sp = shares.load(G, T, partition, now)
    assert sp is not None
    return shares.acquire(G, member, client, sp, limit, limit, now)


def ack(state: ClusterState, member: str, first: int, last: int, kind: AckType, now: int = 0) -> None:
    error, _ = state.groups.shares.acknowledge(G, member, None, T, 0, [AckBatch(first, last, (int(kind),))], now)
    assert error == 0


@pytest.fixture
def state() -> ClusterState:
    s = cluster()
    s.create_topic(T, 2)
    s.group_configs.overrides[G] = {"share.auto.offset.reset": "earliest", "share.assignment.interval.ms": "0"}
    produce_records(s, T, 0, *(b"r%d" % i for i in range(10)))
    return s


def test_a_share_group_view_holds_members_assignments_and_the_records_in_flight(state):
    join(state, M1, "c1")
    join(state, M2, "c2")
    join(state, M1, "c1")  # m1 heartbeats again: it reaches the new target
    acquire(state, M1, "c1")  # 0-9 to c1
    ack(state, M1, 0, 2, AckType.ACCEPT)  # the start offset moves to 3
    ack(state, M1, 5, 5, AckType.RELEASE)  # back, delivered once
    ack(state, M1, 6, 6, AckType.REJECT)  # archived
    view = share_group_view(state, G)
    assert isinstance(view, ShareGroupView)
    assert (view.state, view.group_epoch, view.assignment_epoch, view.coordinator) == ("Stable", 3, 3, 0)
    assert (view.delivery_count_limit, view.record_lock_duration_ms) == (5, 30000)
    assert view.settled
    assert view.assignment == {"c1": {T: [0]}, "c2": {T: [1]}}  # two partitions, two members: one each
    assert {m.client_id: m.acquired for m in view.members} == {"c1": 5, "c2": 0}
    sp = view.partition(T, 0)
    assert (sp.start_offset, sp.end_offset, sp.loaded) == (3, 10, True)
    runs = [(r.first, r.last, r.state, r.delivery_count, r.client_id) for r in sp.in_flight]
    assert runs == [
        (3, 4, "acquired", 1, "c1"),
        (5, 5, "available", 1, None),
        (6, 6, "archived", 1, None),
        (7, 9, "acquired", 1, "c1"),
    ]
    assert [sp.state_of(o) for o in (0, 3, 5, 6, 10)] == ["done", "acquired", "available", "archived", "new"]
    assert (sp.delivery_count(5), sp.delivery_count(11)) == (1, 0)
    assert (sp.offsets("archived"), sp.count("acquired")) == ([6], 5)
    with pytest.raises(ValueError, match="unknown record state 'acked'; the states are available, acquired"):
        sp.count("acked")
    assert view.partition(T, 1) is not None and view.partition(T, 1).in_flight == ()
    assert view.partition(T, 7) is None
    out = view.to_dict()
    assert (out["group_type"], out["generation"], out["group_epoch"]) == ("share", 3, 3)
    assert out["partitions"][0]["in_flight"][0] == {
        "first": 3,
        "last": 4,
        "state": "acquired",
        "delivery_count": 1,
        "member": M1,
        "client_id": "c1",
    }
    assert out["members"][0]["assignment"] == {T: [0]}


def test_any_group_view_shows_a_share_group_with_its_type_and_epochs(state):
    join(state, M1, "c1")
    view = group_view(state, G)
    assert view is not None
    assert (view.group_type, view.state, view.generation, view.assignment_epoch) == ("share", "Stable", 2, 2)
    assert (view.protocol_type, view.protocol) == ("share", "simple")
    assert view.assignment == {"c1": {T: [0, 1]}}
    assert view.members[0].member_epoch == 2
    assert share_group_view(state, "nobody") is None


def test_a_share_partition_no_leader_holds_is_read_from_the_store(state):
    join(state, M1, "c1")
    acquire(state, M1, "c1", limit=4)
    ack(state, M1, 0, 9, AckType.RELEASE)
    state.groups.shares.unload(G, T, 0)
    sp = share_group_view(state, G).partition(T, 0)
    assert sp.loaded is False
    assert [(r.first, r.last, r.state, r.delivery_count, r.member) for r in sp.in_flight] == [
        (0, 9, "available", 1, None)
    ]
    assert (sp.start_offset, sp.end_offset) == (0, 10)
    untouched = share_group_view(state, G).partition(T, 1)
    assert (untouched.loaded, untouched.start_offset, untouched.in_flight) == (False, -1, ())


# -- conditions ------------------------------------------------------------------------------------
class CoreCluster:
    """What conditions read of a cluster, answered from a core ``ClusterState``."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def group(self, group_id: str) -> Any:
        return group_view(self.state, group_id)

    def share_group(self, group_id: str) -> ShareGroupView | None:
        return share_group_view(self.state, group_id)

    def offsets(self, topic: str, partition: int) -> tuple[int, int]:
        p = self.state.partition(topic, partition)
        if p is None:
            raise ValueError(f"no partition {topic}-{partition}")
        return p.log.log_start_offset, p.log.high_watermark

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        return {}

    def events_since(self, count: int) -> list[Event]:
        return self.state.events.since(count)


def test_share_group_stable_waits_for_every_member_at_the_target(state):
    c = CoreCluster(state)
    cond = conditions.share_group_stable(G, members=2)
    assert not cond(c) and cond.last_seen is None
    join(state, M1, "c1")
    assert not cond(c) and cond.last_seen == "Stable, epoch 2 (assignment epoch 2), 1 members"
    join(state, M2, "c2")
    assert not cond(c) and cond.last_seen.endswith("2 members, 1 not at the target yet")
    join(state, M1, "c1")
    assert cond(c).group_epoch == 3
    assert conditions.share_group_stable(G)(c)
    assert conditions.GroupState(G, "Stable", members=2)(c)  # the general one reads share groups too
    assert cond.wakes_on() == [(None, "group", G)]
    assert conditions.describe(cond).startswith("share group 'workers' is Stable with 2 members, every member")


def test_share_start_offset_waits_for_records_done(state):
    c = CoreCluster(state)
    cond = conditions.share_start_offset(G, T, 0)  # every record produced so far
    join(state, M1, "c1")
    assert not cond(c)
    acquire(state, M1, "c1")
    assert not cond(c) and cond.last_seen == "start offset 0 (target 10), 10 acquired in flight"
    ack(state, M1, 0, 4, AckType.ACCEPT)
    assert conditions.share_start_offset(G, T, 0, 5)(c).start_offset == 5
    ack(state, M1, 5, 8, AckType.ACCEPT)
    ack(state, M1, 9, 9, AckType.REJECT)
    assert cond(c).start_offset == 10
    produce_records(state, T, 0, b"late")
    assert not cond(c)  # the high watermark moved on
    missing = conditions.share_start_offset(G, "nothing", 0)
    assert not missing(c) and missing.last_seen == "no partition nothing-0"
    assert conditions.describe(cond).startswith(
        "share group 'workers' on jobs-0: every record produced acknowledged or archived (last seen: start offset 10"
    )


def test_record_delivered_and_record_archived_read_the_share_events(state):
    c = CoreCluster(state)
    join(state, M1, "c1")
    state.group_configs.overrides[G]["share.delivery.count.limit"] = "2"
    delivered_twice = conditions.record_delivered(G, T, 0, 4, times=2)
    archived = conditions.record_archived(G, T, 0, 4, reason="delivery limit")
    rejected = conditions.record_archived(G, T, 0, reason="rejected")
    acquire(state, M1, "c1")
    assert conditions.record_delivered(G, T, 0, 4)(c).delivery_count == 1
    assert not delivered_twice(c)
    ack(state, M1, 4, 4, AckType.RELEASE)
    acquire(state, M1, "c1")
    assert delivered_twice(c).details["first"] == 4
    assert not archived(c)
    ack(state, M1, 4, 4, AckType.RELEASE)  # its second delivery was its last
    found = archived(c)
    assert (found.first, found.last, found.reason) == (4, 4, "delivery limit")
    assert not rejected(c)
    ack(state, M1, 7, 7, AckType.REJECT)
    assert rejected(c).first == 7
    assert archived.wakes_on() == [("share_records_archived", "group", G)]
    assert archived.describe() == "share group 'workers': jobs-0 offset 4 archived (delivery limit)"
    assert delivered_twice.describe() == "share group 'workers': jobs-0 offset 4 delivered 2 time(s)"

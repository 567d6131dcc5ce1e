"""Timer keys are tuples: one group's timers never catch another's whose name starts alike.

Before keys were tuples, unloading group ``orders`` cancelled ``heartbeat-orders-eu-*`` too (its
members could then never expire), and forgetting ``g`` cancelled ``join-g2``/``sync-g2``.
"""

from __future__ import annotations

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.groups.classic.coordinator import GroupCoordinator, join_key
from fakebroker.core.groups.classic.model import GroupState
from fakebroker.core.groups.requests import HeartbeatRequest, JoinRequest, SyncRequest
from fakebroker.core.timers import Timers
from fakebroker.protocol import data
from fakebroker.protocol.error_codes import ErrorCode as E

SUB = data.encode_subscription(["orders"])


def join(c: GroupCoordinator, now: int, group: str, member_id: str = "", session: int = 10_000):
    return c.join(
        now,
        JoinRequest(
            group_id=group,
            member_id=member_id,
            group_instance_id=None,
            client_id="c",
            client_host="/127.0.0.1",
            session_timeout_ms=session,
            rebalance_timeout_ms=30_000,
            protocol_type="consumer",
            protocols=[("range", SUB)],
            version=5,
        ),
    )


def stable(c: GroupCoordinator, group: str, now: int = 0) -> str:
    member = join(c, now, group).member_id
    join(c, now, group, member)
    c.sync(
        now,
        SyncRequest(
            group_id=group,
            member_id=member,
            group_instance_id=None,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            assignments={member: b""},
            version=3,
        ),
    )
    assert c.groups[group].state == GroupState.STABLE
    return member


def coordinator(**config) -> GroupCoordinator:
    return GroupCoordinator(BrokerConfig({"group.initial.rebalance.delay.ms": 0, **config}))


def test_unloading_a_group_keeps_the_sessions_of_a_group_whose_name_extends_it():
    c = coordinator()
    stable(c, "orders")
    survivor = stable(c, "orders-eu")
    c.unload(["orders"], 1_000)
    c.timers.fire_due(20_000)  # orders-eu's member sent no heartbeat: its 10 s session is over
    assert survivor not in c.groups["orders-eu"].members
    assert any(e.kind == "member_expired" and e.group == "orders-eu" for e in c.events)


def test_forgetting_a_group_keeps_the_rebalance_timers_of_a_group_whose_name_extends_it():
    c = coordinator(**{"group.initial.rebalance.delay.ms": 3_000})
    for group in ("g2", "g"):  # both wait out their initial rebalance delay
        join(c, 0, group, join(c, 0, group).member_id)
    assert c.timers.deadline(join_key("g")) == c.timers.deadline(join_key("g2")) == 3_000
    c.forget(["g"])
    assert "g" not in c.groups and c.timers.deadline(join_key("g2")) == 3_000
    c.timers.fire_due(3_000)
    assert c.groups["g2"].state == GroupState.COMPLETING_REBALANCE


def test_cancel_under_compares_whole_items():
    timers = Timers()
    fired = []
    for key in [("heartbeat", "orders", "m1"), ("heartbeat", "orders-eu", "m2"), ("join", "orders")]:
        timers.schedule(key, 10, lambda t, key=key: fired.append(key))
    assert timers.cancel_under(("heartbeat", "orders")) == 1
    timers.fire_due(10)
    assert fired == [("heartbeat", "orders-eu", "m2"), ("join", "orders")]


def test_unload_enters_dead_and_the_dead_group_answers_coordinator_not_available():
    c = coordinator()
    member = stable(c, "orders")
    c.unload(["orders"], 500)
    group = c.groups["orders"]
    assert group.state == GroupState.DEAD
    assert [(e.old, e.new) for e in c.events if e.kind == "group_state_changed"][-1] == ("Stable", "Dead")
    assert join(c, 600, "orders").error == E.COORDINATOR_NOT_AVAILABLE
    assert join(c, 600, "orders", member).error == E.COORDINATOR_NOT_AVAILABLE
    assert (
        c.heartbeat(600, HeartbeatRequest(group_id="orders", member_id=member, group_instance_id=None, generation_id=1))
        == E.COORDINATOR_NOT_AVAILABLE
    )
    c.load(["orders"], 1_000)  # the new coordinator reads the group's record back
    assert c.groups["orders"].state == GroupState.STABLE and member in c.groups["orders"].members


def test_a_coordinator_move_reloads_after_the_load_time_on_the_core_clock():
    state = ClusterState(
        "cluster", BrokerConfig({"group.initial.rebalance.delay.ms": 0}), coordinator_load_time_ms=2_000
    )
    for node in (0, 1):
        state.broker_started(node, "127.0.0.1", 9092 + node, 0)
    partition = state.offsets_topic().partitions[state.groups.partition_of("orders")]
    stable(state.groups.classic, "orders")
    other = 1 - partition.leader
    state.move_leader(partition, other, 10_000, reason="test")
    assert (
        state.groups.coordinator_of("orders") == other
        and state.groups.classic.groups["orders"].state == GroupState.DEAD
    )
    unloaded = [e for e in state.events if e.kind == "group_unloaded"]
    assert [e.broker for e in unloaded] == [1 - other]  # the coordinator that lost the group, not the new one
    assert state.next_deadline() == 12_000
    state.tick(12_000)
    assert (
        state.groups.classic.groups["orders"].state == GroupState.STABLE
        and partition.index not in state.groups.placement.loading_until_ms
    )


def test_cancelled_and_rescheduled_timers_leave_no_pile_in_the_heap():
    """Issue 33: a cancelled or rescheduled timer's heap entry (its key, a member id) stayed
    until its deadline; 5,000 members that joined and left kept theirs for 5 minutes."""
    timers = Timers()
    fired = []
    for i in range(5_000):  # members join (a 5-minute join timeout each) and leave
        timers.schedule(("heartbeat", "g", f"m{i}"), 300_000, lambda t: fired.append("stale"))
        timers.cancel(("heartbeat", "g", f"m{i}"))
    assert len(timers._heap) <= 64
    for beat in range(1_000):  # one member heartbeats: each beat moves its session deadline
        timers.schedule(("heartbeat", "g", "live"), 10_000 + beat, lambda t, beat=beat: fired.append(beat))
    timers.schedule(("join", "g"), 5_000, lambda t: fired.append("join"))
    assert len(timers._heap) <= 2 * 2 + 64
    assert timers.fire_due(20_000) == 2
    assert fired == ["join", 999]

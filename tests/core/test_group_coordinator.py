"""The classic group coordinator's rules, driven directly with explicit time (no sockets)."""

from __future__ import annotations

from dataclasses import astuple

import pytest

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.groups.classic.coordinator import GroupCoordinator
from fakebroker.core.groups.classic.model import ClassicGroup, GroupState, IllegalTransition
from fakebroker.core.groups.placement import partition_for
from fakebroker.core.groups.requests import CommitRequest, HeartbeatRequest, JoinRequest, LeaveRequest, SyncRequest
from fakebroker.core.groups.results import JoinedMember, JoinResult, SyncResult
from fakebroker.core.groups.service import GroupService
from fakebroker.core.timers import Pending
from fakebroker.protocol import data
from fakebroker.protocol.error_codes import ErrorCode as E

SUB = data.encode_subscription(["orders"])
G = "g"


def coordinator(**config) -> GroupCoordinator:
    return GroupCoordinator(BrokerConfig({"group.initial.rebalance.delay.ms": 0, **config}))


def service(**config) -> tuple[GroupService, GroupCoordinator]:
    """The group service of a one-broker cluster (broker 0 coordinates every group) and its
    classic coordinator."""
    state = ClusterState("c", BrokerConfig({"group.initial.rebalance.delay.ms": 0, **config}))
    state.broker_started(0, "127.0.0.1", 9092, 0)
    return state.groups, state.groups.classic


def commit_error(groups: GroupService, group_id, member_id, generation_id, version=8):
    return groups.commit_error(0, 0, CommitRequest(group_id, member_id, None, generation_id, version))


def join(
    c: GroupCoordinator,
    now: int,
    member_id: str = "",
    *,
    version: int = 5,
    instance: str | None = None,
    session: int = 10_000,
    rebalance: int = 30_000,
    protocols=(("range", SUB),),
    client_id: str = "c",
):
    return c.join(
        now,
        JoinRequest(
            group_id=G,
            member_id=member_id,
            group_instance_id=instance,
            client_id=client_id,
            client_host="/127.0.0.1",
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            protocol_type="consumer",
            protocols=list(protocols),
            version=version,
        ),
    )


def join_new(c: GroupCoordinator, now: int, **kw):
    """The KIP-394 two-step join: MEMBER_ID_REQUIRED, then join with the given id."""
    first = join(c, now, **kw)
    assert first.error == E.MEMBER_ID_REQUIRED and first.member_id
    return first.member_id, join(c, now, first.member_id, **kw)


def sync(c: GroupCoordinator, now: int, member_id: str, generation: int, assignments=None, instance=None, version=3):
    return c.sync(
        now,
        SyncRequest(
            group_id=G,
            member_id=member_id,
            group_instance_id=instance,
            generation_id=generation,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments or {},
            version=version,
        ),
    )


def value(result):
    """The answer of a request: immediate (a dict) or parked and completed since (a Pending)."""
    if isinstance(result, (JoinResult, SyncResult)):
        return result
    assert isinstance(result, Pending), result
    assert result.done, "still parked"
    return result.value


def stable_group_of_one(c: GroupCoordinator, now: int = 0) -> str:
    member, pending = join_new(c, now)
    answer = value(pending)
    assert answer.generation_id == 1 and answer.leader == member
    value(sync(c, now, member, 1, {member: data.encode_assignment({"orders": [0, 1]})}))
    assert c.groups[G].state == GroupState.STABLE
    return member


def test_state_table_refuses_illegal_transitions():
    group = ClassicGroup("x")
    with pytest.raises(IllegalTransition):
        group.transition_to(GroupState.STABLE, 0)  # Empty -> Stable is not a Kafka transition
    group.transition_to(GroupState.PREPARING_REBALANCE, 0)
    group.transition_to(GroupState.COMPLETING_REBALANCE, 0)
    group.transition_to(GroupState.STABLE, 0)


def test_member_id_required_then_join_completes_and_leader_gets_members():
    c = coordinator()
    member, pending = join_new(c, 0, client_id="svc")
    answer = value(pending)
    assert member.startswith("svc-")
    assert answer.members == (JoinedMember(member, None, SUB),)
    assert answer.protocol_name == "range" and c.groups[G].state == GroupState.COMPLETING_REBALANCE


def test_v3_joins_without_member_id_round():
    c = coordinator()
    answer = value(join(c, 0, version=3))
    assert answer.error == E.NONE and answer.member_id


def test_session_timeout_bounds_and_group_id():
    c = coordinator()
    assert join(c, 0, session=5999).error == E.INVALID_SESSION_TIMEOUT
    assert join(c, 0, session=1_800_001).error == E.INVALID_SESSION_TIMEOUT
    assert (
        c.join(
            0,
            JoinRequest(
                group_id="",
                member_id="",
                group_instance_id=None,
                client_id="c",
                client_host="",
                session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000,
                protocol_type="consumer",
                protocols=[("range", SUB)],
                version=5,
            ),
        ).error
        == E.INVALID_GROUP_ID
    )


def test_unknown_member_of_missing_group():
    assert join(coordinator(), 0, "ghost").error == E.UNKNOWN_MEMBER_ID


def test_follower_waits_for_leader_sync_and_gets_its_assignment():
    c = coordinator()
    leader = stable_group_of_one(c)
    follower, parked_follower = join_new(c, 10)
    assert not parked_follower.done  # a rebalance started: waits for the leader
    assert (
        c.heartbeat(10, HeartbeatRequest(group_id=G, member_id=leader, group_instance_id=None, generation_id=1))
        == E.REBALANCE_IN_PROGRESS
    )
    parked_leader = join(c, 20, leader)
    gen = value(parked_leader).generation_id
    assert gen == 2 and value(parked_follower).members == ()  # followers get no member list
    follower_sync = sync(c, 30, follower, gen)
    assert not follower_sync.done
    assignments = {leader: data.encode_assignment({"orders": [0]}), follower: data.encode_assignment({"orders": [1]})}
    value(sync(c, 40, leader, gen, assignments))
    assert data.assignment_dict(value(follower_sync).assignment) == {"orders": [1]}


def test_strategy_with_most_first_choice_votes_wins():
    c = coordinator()
    a, pa = join_new(c, 0, protocols=(("roundrobin", SUB), ("range", SUB)))
    value(pa)
    value(sync(c, 0, a, 1))
    b, pb = join_new(c, 0, protocols=(("range", SUB), ("roundrobin", SUB)))
    d, pd = join_new(c, 0, protocols=(("range", SUB),))
    value(join(c, 0, a, protocols=(("roundrobin", SUB), ("range", SUB))))
    assert value(pb).protocol_name == "range"  # only range is supported by all


def test_inconsistent_protocol():
    c = coordinator()
    stable_group_of_one(c)
    first = join(c, 0, protocols=(("sticky", SUB),))
    assert first.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size():
    c = coordinator(**{"group.max.size": 1})
    stable_group_of_one(c)
    member_id = join(c, 0).member_id
    assert join(c, 0, member_id).error == E.GROUP_MAX_SIZE_REACHED


def test_members_who_do_not_rejoin_are_removed_at_the_rebalance_timeout():
    c = coordinator()
    leader = stable_group_of_one(c)
    newcomer, parked = join_new(c, 100, rebalance=5_000)
    assert not parked.done
    # The leader is busy (KIP-62): its heartbeat thread keeps it alive but it does not rejoin.
    for t in range(5_000, 30_000, 5_000):
        c.timers.fire_due(t)
        assert (
            c.heartbeat(t, HeartbeatRequest(group_id=G, member_id=leader, group_instance_id=None, generation_id=1))
            == E.REBALANCE_IN_PROGRESS
        )
    c.timers.fire_due(100 + 29_999)  # the group's rebalance timeout is the largest: 30 s
    assert not parked.done
    c.timers.fire_due(100 + 30_000)
    answer = value(parked)
    assert answer.generation_id == 2 and answer.leader == newcomer
    assert list(c.groups[G].members) == [newcomer]
    assert (
        c.heartbeat(30_200, HeartbeatRequest(group_id=G, member_id=leader, group_instance_id=None, generation_id=1))
        == E.UNKNOWN_MEMBER_ID
    )


def test_session_expiry_removes_member_and_rebalances():
    c = coordinator()
    a = stable_group_of_one(c)
    b, pb = join_new(c, 0)
    value(join(c, 0, a))
    value(sync(c, 0, a, 2))
    value(sync(c, 0, b, 2))
    assert (
        c.heartbeat(5_000, HeartbeatRequest(group_id=G, member_id=a, group_instance_id=None, generation_id=2)) == E.NONE
    )
    c.timers.fire_due(10_001)  # b's session (10 s) ran out; a heartbeated at 5 s
    assert b not in c.groups[G].members
    assert c.groups[G].state == GroupState.PREPARING_REBALANCE
    assert any(e.kind == "member_expired" and e.member == b for e in c.events)


def test_a_member_waiting_in_join_is_not_expired():
    c = coordinator()
    a = stable_group_of_one(c)  # session 10 s, rebalance timeout 30 s
    b, parked_b = join_new(c, 1_000)  # b's JoinGroup waits for a to rejoin
    assert not parked_b.done
    c.timers.fire_due(9_999)
    assert not parked_b.done
    # At 10 s a's session (no heartbeat, no rejoin) expires; b, parked far past its own 10 s
    # session, is not expired: the join completes with b alone, as leader.
    c.timers.fire_due(25_000)
    answer = value(parked_b)
    assert answer.leader == b and list(c.groups[G].members) == [b]
    assert any(e.kind == "member_expired" and e.member == a for e in c.events)


def test_sync_errors():
    c = coordinator()
    a = stable_group_of_one(c)
    assert sync(c, 0, a, 99).error == E.ILLEGAL_GENERATION
    assert sync(c, 0, "nobody", 1).error == E.UNKNOWN_MEMBER_ID
    assert (
        c.sync(
            0,
            SyncRequest(
                group_id=G,
                member_id=a,
                group_instance_id=None,
                generation_id=1,
                protocol_type=None,
                protocol_name=None,
                assignments={},
                version=5,
            ),
        ).error
        == E.INCONSISTENT_GROUP_PROTOCOL
    )
    join_new(c, 0)
    assert sync(c, 0, a, 1).error == E.REBALANCE_IN_PROGRESS


def test_leader_missing_member_assignment_gives_empty_bytes():
    c = coordinator()
    a = stable_group_of_one(c)
    b, pb = join_new(c, 0)
    value(join(c, 0, a))
    parked_b = sync(c, 0, b, 2)
    value(sync(c, 0, a, 2, {a: data.encode_assignment({"orders": [0, 1]})}))
    assert value(parked_b).assignment == b""


def test_leave_triggers_rebalance_and_leadership_moves():
    c = coordinator()
    a = stable_group_of_one(c)
    b, pb = join_new(c, 0)
    value(join(c, 0, a))
    top, errors = astuple(c.leave(0, LeaveRequest(group_id=G, members=[(a, None)])))
    assert (top, errors) == (E.NONE, [E.NONE])
    assert c.groups[G].leader_id == b
    top, errors = astuple(c.leave(0, LeaveRequest(group_id=G, members=[("ghost", None)])))
    assert errors == [E.UNKNOWN_MEMBER_ID]


def test_last_member_leaving_empties_the_group_and_bumps_the_generation():
    c = coordinator()
    a = stable_group_of_one(c)
    c.leave(0, LeaveRequest(group_id=G, members=[(a, None)]))
    group = c.groups[G]
    assert group.state == GroupState.EMPTY and group.generation_id == 2 and group.protocol_name is None


def test_static_member_restart_keeps_assignment_without_rebalance():
    c = coordinator()
    first = join(c, 0, instance="i-1")  # static members skip MEMBER_ID_REQUIRED
    old = value(first).member_id
    value(sync(c, 0, old, 1, {old: data.encode_assignment({"orders": [0, 1]})}, instance="i-1"))
    again = join(c, 5_000, instance="i-1")
    answer = again if isinstance(again, dict) else value(again)
    assert answer.error == E.NONE and answer.generation_id == 1 and answer.member_id != old
    assert c.groups[G].state == GroupState.STABLE
    assert data.assignment_dict(value(sync(c, 5_000, answer.member_id, 1, instance="i-1")).assignment) == {
        "orders": [0, 1]
    }
    # The old id is fenced.
    assert (
        c.heartbeat(5_000, HeartbeatRequest(group_id=G, member_id=old, group_instance_id="i-1", generation_id=1))
        == E.FENCED_INSTANCE_ID
    )
    assert not any(e.kind == "generation_started" and e.generation == 2 for e in c.events)


def test_static_leave_by_instance_id():
    c = coordinator()
    value(join(c, 0, instance="i-1"))
    top, errors = astuple(c.leave(0, LeaveRequest(group_id=G, members=[("", "i-1")])))
    assert errors == [E.NONE] and c.groups[G].state == GroupState.EMPTY


def test_offset_commit_rules():
    groups, c = service()
    store = groups.offsets
    a = stable_group_of_one(c)
    assert commit_error(groups, G, a, 1) == E.NONE
    assert commit_error(groups, G, a, 0) == E.ILLEGAL_GENERATION
    assert commit_error(groups, G, "", -1, 8) == E.UNKNOWN_MEMBER_ID
    join_new(c, 0)
    value(join(c, 0, a)) if False else None
    # A simple (generation -1) commit to a missing group creates an Empty group.
    assert commit_error(groups, "simple", "", -1, 8) == E.NONE
    assert c.groups["simple"].state == GroupState.EMPTY
    assert commit_error(groups, "nope", "m", 3, 9) == E.GROUP_ID_NOT_FOUND
    assert commit_error(groups, "nope", "m", 3, 8) == E.ILLEGAL_GENERATION
    assert store.commit(0, G, "orders", 0, 42, -1, "m" * 4097) == E.OFFSET_METADATA_TOO_LARGE
    assert store.commit(0, G, "orders", 0, 42, 3, "meta") == E.NONE
    [(_, _, committed)] = store.fetch(G, [("orders", 0)])
    assert (committed.offset, committed.leader_epoch, committed.metadata) == (42, 3, "meta")
    assert store.fetch("missing-group", [("orders", 0)]) == [("orders", 0, None)]


def test_commit_during_completing_rebalance_is_refused():
    groups, c = service()
    a = stable_group_of_one(c)
    b, pb = join_new(c, 0)
    value(join(c, 0, a))  # generation 2, CompletingRebalance
    assert commit_error(groups, G, a, 2, 8) == E.REBALANCE_IN_PROGRESS
    assert commit_error(groups, G, a, 1, 8) == E.ILLEGAL_GENERATION


def test_describe_list_and_delete():
    groups, c = service()
    a = stable_group_of_one(c)
    described = groups.describe(0, G)
    assert described.state == "Stable" and described.protocol_data == "range"
    assert described.members[0].client_host == "/127.0.0.1"
    assert [g.group_id for g in groups.list_groups(0, ["stable"])[1]] == [G]
    assert groups.list_groups(0, ["Empty"]) == (E.NONE, [])
    assert groups.delete_group(0, G) == E.NON_EMPTY_GROUP
    c.leave(0, LeaveRequest(group_id=G, members=[(a, None)]))
    assert groups.delete_group(0, G) == E.NONE and G not in c.groups
    assert groups.describe(0, G).state == "Dead"


def test_unload_answers_parked_with_not_coordinator_and_load_restores_stable():
    c = coordinator()
    a = stable_group_of_one(c)
    b, parked = join_new(c, 0)
    c.unload([G], 1_000)
    assert value(parked).error == E.NOT_COORDINATOR
    c.load([G], 1_000)
    group = c.groups[G]
    assert group.state == GroupState.STABLE and group.generation_id == 1 and list(group.members) == [a]
    assert (
        c.heartbeat(1_000, HeartbeatRequest(group_id=G, member_id=a, group_instance_id=None, generation_id=1)) == E.NONE
    )


def test_placement_matches_kafka():
    assert [partition_for(g, 50) for g in ("my-group", "test", "console-consumer-12345", "groupé", "😀g")] == [
        12,
        48,
        6,
        6,
        22,
    ]


def test_initial_rebalance_delay_waits_for_more_members():
    c = coordinator(**{"group.initial.rebalance.delay.ms": 3_000})
    a, pa = join_new(c, 0)
    assert not pa.done
    b, pb = join_new(c, 1_000)
    c.timers.fire_due(3_000)
    c.timers.fire_due(6_000)
    assert value(pa).generation_id == 1 and len(value(pa).members) == 2


def test_offsets_expire_after_retention():
    groups, c = service(**{"offsets.retention.minutes": 1})
    store = groups.offsets
    assert commit_error(groups, "simple", "", -1, 8) == E.NONE
    store.commit(0, "simple", "orders", 0, 5, -1, "")
    a = stable_group_of_one(c)
    store.commit(0, G, "orders", 0, 7, -1, "")
    assert groups.expire_offsets(59_999) == 0
    assert groups.expire_offsets(60_000) == 1  # the simple group's offset: a minute after its commit
    assert store.fetch(G, [("orders", 0)])[0][2].offset == 7  # a Stable group's offsets stay
    c.leave(100_000, LeaveRequest(group_id=G, members=[(a, None)]))
    assert groups.expire_offsets(159_999) == 0
    assert groups.expire_offsets(160_000) == 1  # a minute after the group became Empty


def test_move_mid_sync_returns_to_the_last_persisted_generation():
    c = coordinator()
    a = stable_group_of_one(c)  # generation 1 persisted by the leader's SyncGroup
    b, pb = join_new(c, 0)
    value(join(c, 0, a))  # generation 2 completes its join: CompletingRebalance, nothing persisted yet
    assert value(pb).generation_id == 2
    c.unload([G], 1_000)
    c.load([G], 1_000)
    group = c.groups[G]
    assert (group.state, group.generation_id, list(group.members)) == (GroupState.STABLE, 1, [a])
    # Members holding the newer generation learn it and rejoin, as on Kafka.
    assert (
        c.heartbeat(1_000, HeartbeatRequest(group_id=G, member_id=a, group_instance_id=None, generation_id=2))
        == E.ILLEGAL_GENERATION
    )
    assert (
        c.heartbeat(1_000, HeartbeatRequest(group_id=G, member_id=b, group_instance_id=None, generation_id=2))
        == E.UNKNOWN_MEMBER_ID
    )

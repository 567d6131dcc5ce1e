"""KIP-848 consumer groups in the pure core, with explicit time: epochs, the server-side
assignment, revoke-before-assign, fencing, leaving, static members, regexes and offsets."""

from __future__ import annotations

import pytest

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.groups.consumer.model import ConsumerGroupState, MemberState
from fakebroker.core.groups.requests import (
    CommitRequest,
    ConsumerHeartbeatRequest,
    HeartbeatRequest,
    JoinRequest,
    SyncRequest,
)
from fakebroker.protocol.error_codes import ErrorCode as E

G = "orders-app"
# A classic (JoinGroup) consumer's settings, for the classic members of these tests
CLASSIC_MEMBER = dict(
    client_id="old",
    client_host="/h",
    session_timeout_ms=6_000,
    rebalance_timeout_ms=6_000,
    protocol_type="consumer",
    version=5,
)


def cluster(**config) -> ClusterState:
    state = ClusterState("c", BrokerConfig({"group.consumer.session.timeout.ms": 45_000, **config}))
    state.broker_started(0, "127.0.0.1", 9092, 0)
    state.create_topic("orders", 6)
    return state


def beat(
    state: ClusterState,
    now: int,
    member: str,
    epoch: int,
    *,
    topics=("orders",),
    owned=None,
    group=G,
    version: int = 1,
    **fields,
):
    """A heartbeat as a client sends it: the full form when joining, the short one after."""
    joining = epoch == 0
    args = dict(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30_000 if joining else -1,
        subscribed_names=list(topics) if joining else None,
        subscribed_regex=None,
        server_assignor=None,
        owned={} if joining and owned is None else owned,
        client_id=member,
        client_host="/127.0.0.1",
        version=version,
    )
    args.update(fields)
    return state.groups.consumer.heartbeat(now, ConsumerHeartbeatRequest(**args))


def owned_of(result) -> dict[str, set[int]]:
    return {t: set(ps) for t, ps in (result.assignment or {}).items()}


def settle(state: ClusterState, now: int, epochs: dict[str, int], owned: dict[str, dict]) -> None:
    """Every member heartbeats, reporting what it owns, until nothing changes."""
    for _ in range(10):
        before = {m: (epochs[m], {t: set(p) for t, p in owned[m].items()}) for m in epochs}
        for member in sorted(epochs):
            result = beat(state, now, member, epochs[member], owned=owned[member])
            assert result.error == E.NONE, result
            epochs[member] = result.member_epoch
            if result.assignment is not None:
                owned[member] = owned_of(result)
        if before == {m: (epochs[m], owned[m]) for m in epochs}:
            return
    raise AssertionError("the group did not settle")


def never_shared(state: ClusterState) -> None:
    seen: dict[tuple[str, int], str] = {}
    for member in state.groups.consumer.groups[G].members.values():
        for tp in member.owns():
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {member.member_id}"
            seen[tp] = member.member_id


def join_three(state: ClusterState) -> tuple[dict[str, int], dict[str, dict]]:
    epochs, owned = {}, {}
    for member in ("a", "b", "c"):
        result = beat(state, 0, member, 0)
        assert result.error == E.NONE and result.member_id == member
        epochs[member], owned[member] = result.member_epoch, owned_of(result)
        never_shared(state)
    settle(state, 0, epochs, owned)
    return epochs, owned


def test_three_members_split_six_partitions_two_each_and_revoke_before_assign():
    state = cluster()
    first = beat(state, 0, "a", 0)
    assert (first.member_epoch, owned_of(first)) == (2, {"orders": set(range(6))})
    assert first.heartbeat_interval_ms == 5_000
    second = beat(state, 0, "b", 0)
    assert second.member_epoch == 3 and owned_of(second) == {}  # its partitions are still a's
    group = state.groups.consumer.groups[G]
    assert group.members["b"].state == MemberState.UNRELEASED_PARTITIONS
    assert group.state == ConsumerGroupState.RECONCILING
    revoke = beat(state, 0, "a", 2, owned={"orders": set(range(6))})
    assert revoke.member_epoch == 2 and len(owned_of(revoke)["orders"]) == 3  # keep three, revoke three first
    still = beat(state, 0, "a", 2, owned={"orders": set(range(6))})
    assert still.member_epoch == 2 and still.assignment is None  # still owns the revoked ones: nothing new
    done = beat(state, 0, "a", 2, owned=owned_of(revoke))
    assert done.member_epoch == 3
    got = beat(state, 0, "b", 3, owned={})
    assert got.member_epoch == 3 and len(owned_of(got)["orders"]) == 3
    assert owned_of(got)["orders"].isdisjoint(owned_of(revoke)["orders"])
    state2 = cluster()
    epochs, owned = join_three(state2)
    assert sorted(len(o["orders"]) for o in owned.values()) == [2, 2, 2] and set(epochs.values()) == {4}
    assert state2.groups.consumer.groups[G].state == ConsumerGroupState.STABLE
    assert sorted(p for o in owned.values() for p in o["orders"]) == list(range(6))


def test_epochs_are_checked_and_a_lost_response_is_forgiven():
    state = cluster()
    epochs, owned = join_three(state)
    assert beat(state, 0, "a", epochs["a"] + 1, owned=owned["a"]).error == E.FENCED_MEMBER_EPOCH
    assert beat(state, 0, "ghost", 3, owned={}).error == E.UNKNOWN_MEMBER_ID
    assert beat(state, 0, "a", 3, owned={}, group="nope").error == E.GROUP_ID_NOT_FOUND
    member = state.groups.consumer.groups[G].members["a"]
    assert member.previous_epoch in (2, 3)
    # the previous epoch is accepted when what the member owns is still its own (a response was lost)
    lost = beat(state, 0, "a", member.previous_epoch, owned=owned["a"])
    assert lost.error == E.NONE and lost.member_epoch == epochs["a"]
    assert beat(state, 0, "a", member.previous_epoch, owned={"orders": set(range(6))}).error == E.FENCED_MEMBER_EPOCH
    assert beat(state, 0, "a", 0 if member.previous_epoch else -3, owned={}).error in (E.NONE, E.INVALID_REQUEST)


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"member_id": ""}, E.INVALID_REQUEST),
        ({"group_id": " "}, E.INVALID_REQUEST),
        ({"instance_id": ""}, E.INVALID_REQUEST),
        ({"rack_id": " "}, E.INVALID_REQUEST),
        ({"rebalance_timeout_ms": -1}, E.INVALID_REQUEST),
        ({"owned": {"orders": {1}}}, E.INVALID_REQUEST),
        ({"subscribed_names": None}, E.INVALID_REQUEST),
        ({"member_epoch": -3}, E.INVALID_REQUEST),
        ({"server_assignor": "sticky"}, E.UNSUPPORTED_ASSIGNOR),
        ({"subscribed_regex": "orders[", "subscribed_names": None}, E.INVALID_REGULAR_EXPRESSION),
        (
            {"subscribed_regex": "(?<=x)orders", "subscribed_names": None},
            E.INVALID_REGULAR_EXPRESSION,
        ),  # no look-behind
        ({"subscribed_regex": r"(o)\1rders", "subscribed_names": None}, E.INVALID_REGULAR_EXPRESSION),  # nor back-refs
    ],
)
def test_requests_are_validated_in_kafkas_order(fields, error):
    state = cluster()
    result = beat(state, 0, "a", fields.pop("member_epoch", 0), **fields)
    assert result.error == error and result.message
    assert G not in state.groups.consumer.groups or error == E.NONE


def test_version_0_gets_a_member_id_from_the_server():
    result = beat(cluster(), 0, "", 0, version=0)
    assert result.error == E.NONE and len(result.member_id) == 22


def test_a_silent_member_is_fenced_at_the_session_timeout_and_its_partitions_move():
    state = cluster()
    epochs, owned = join_three(state)
    for now in (20_000, 40_000):  # a and b heartbeat; c falls silent after t=0
        for member in ("a", "b"):
            beat(state, now, member, epochs[member], owned=owned[member])
    state.tick(44_999)
    assert "c" in state.groups.consumer.groups[G].members
    state.tick(45_000)
    assert "c" not in state.groups.consumer.groups[G].members
    assert any(e.kind == "member_expired" and e.member == "c" for e in state.events)
    del epochs["c"], owned["c"]
    settle(state, 45_000, epochs, owned)
    assert sorted(p for o in owned.values() for p in o["orders"]) == list(range(6)) and set(epochs.values()) == {5}


def test_a_member_that_never_revokes_is_fenced_at_its_rebalance_timeout():
    state = cluster()
    a = beat(state, 0, "a", 0)
    beat(state, 0, "b", 0)
    revoking = beat(state, 0, "a", 2, owned=owned_of(a))  # a must give three up...
    assert state.groups.consumer.groups[G].members["a"].state == MemberState.UNREVOKED_PARTITIONS
    beat(state, 20_000, "a", 2, owned=owned_of(a))  # ...keeps heartbeating while still owning them...
    state.tick(29_999)
    assert "a" in state.groups.consumer.groups[G].members
    state.tick(30_000)  # ...and is fenced when its 30 s rebalance timeout runs out
    assert "a" not in state.groups.consumer.groups[G].members
    assert revoking.member_epoch == 2
    took = beat(state, 30_000, "b", 3, owned={})
    assert owned_of(took) == {"orders": set(range(6))} and took.member_epoch == 4


def test_leaving_moves_the_partitions_and_bumps_the_epoch():
    state = cluster()
    epochs, owned = join_three(state)
    left = beat(state, 0, "b", -1, owned=None)
    assert (left.error, left.member_epoch) == (E.NONE, -1)
    assert state.groups.consumer.groups[G].group_epoch == 5
    del epochs["b"], owned["b"]
    settle(state, 0, epochs, owned)
    assert sorted(len(o["orders"]) for o in owned.values()) == [3, 3]
    kinds = [e.kind for e in state.events if e.group == G]
    assert "member_left" in kinds and "member_removed" in kinds


def test_a_static_member_keeps_its_partitions_across_a_restart_without_a_rebalance():
    state = cluster()
    first = beat(state, 0, "s1", 0, instance_id="box-1")
    beat(state, 0, "other", 0)
    epochs, owned = {"s1": first.member_epoch, "other": 3}, {"s1": owned_of(first), "other": {}}
    settle(state, 0, epochs, owned)
    mine, epoch_before = owned["s1"], state.groups.consumer.groups[G].group_epoch
    assert beat(state, 500, "x", 0, instance_id="box-1").error == E.UNRELEASED_INSTANCE_ID  # s1 still holds it
    gone = beat(state, 1_000, "s1", -2, owned=mine, instance_id="box-1")
    assert gone.member_epoch == -2 and state.groups.consumer.groups[G].members["s1"].assigned == mine
    back = beat(state, 2_000, "s1-new", 0, instance_id="box-1")
    assert back.error == E.NONE and owned_of(back) == mine and back.member_epoch == epochs["s1"]
    assert "s1" not in state.groups.consumer.groups[G].members
    assert beat(state, 2_000, "s1", 5, owned={}, instance_id="box-1").error == E.FENCED_INSTANCE_ID
    assert any(e.kind == "member_fenced" and e.replaced_by == "s1-new" for e in state.events)
    assert state.groups.consumer.groups[G].group_epoch == epoch_before  # a static restart is no rebalance


def test_added_partitions_and_new_topics_matching_a_regex_are_assigned_without_rejoining():
    state = cluster()
    epochs, owned = join_three(state)
    state.create_partitions("orders", 9)
    settle(state, 0, epochs, owned)
    assert sorted(p for o in owned.values() for p in o["orders"]) == list(range(9)) and set(epochs.values()) == {5}
    regex = beat(state, 0, "r", 0, group="by-regex", topics=(), subscribed_names=None, subscribed_regex="pay-.*")
    assert regex.error == E.NONE and owned_of(regex) == {}
    state.create_topic("pay-eu", 2)
    state.create_topic("payroll", 2)  # does not match the whole name
    again = beat(state, 0, "r", regex.member_epoch, group="by-regex", owned={})
    assert owned_of(again) == {"pay-eu": {0, 1}} and again.member_epoch == regex.member_epoch + 1


def test_the_range_assignor_is_chosen_per_group():
    state = cluster()
    result = beat(state, 0, "a", 0, server_assignor="range")
    beat(state, 0, "b", 0, server_assignor="range")
    settle(state, 0, {"a": result.member_epoch, "b": 3}, {"a": owned_of(result), "b": {}})
    group = state.groups.consumer.groups[G]
    assert {m: sorted(a["orders"]) for m, a in group.target.items()} == {"a": [0, 1, 2], "b": [3, 4, 5]}


def test_members_commit_offsets_with_their_current_epoch():
    state = cluster()
    epochs, owned = join_three(state)

    def commit(member, epoch, version=9):
        return state.groups.commit_error(0, 0, CommitRequest(G, member, None, epoch, version))

    assert commit("a", epochs["a"]) == E.NONE
    assert commit("a", epochs["a"] + 1) == E.STALE_MEMBER_EPOCH  # from the future
    # an older epoch (a commit racing a reconciliation) passes the group check and is judged per
    # partition: fine for a partition held since that epoch, stale for one assigned later
    assert commit("a", epochs["a"] - 1) == E.NONE
    member = state.groups.consumer.groups[G].members["a"]
    held = sorted(member.assignment_epochs.items(), key=lambda kv: kv[1])
    (topic, partition), since = held[0]

    def per(group_id, member, epoch, topic, partition):
        return state.groups.partition_commit_error(CommitRequest(group_id, member, None, epoch, 9), topic, partition)

    assert per(G, "a", since, topic, partition) == E.NONE
    assert per(G, "a", since - 1, topic, partition) == E.STALE_MEMBER_EPOCH
    assert per(G, "a", epochs["a"] - 1, "orders", 99) == E.STALE_MEMBER_EPOCH  # not the member's
    assert commit("a", epochs["a"], version=8) == E.UNSUPPORTED_VERSION
    assert commit("ghost", 3) == E.UNKNOWN_MEMBER_ID
    beat(state, 0, "a", -1, owned=None)
    assert commit("a", epochs["a"]) == E.UNKNOWN_MEMBER_ID  # a fenced or gone member commits nothing


def test_members_fetch_offsets_with_their_current_epoch():
    state = cluster()
    epochs, _ = join_three(state)
    group = state.groups.consumer.groups[G]
    fetch = state.groups.consumer.validate_fetch
    assert fetch(group, "", -1) == E.NONE  # an admin client
    assert fetch(group, "a", epochs["a"]) == E.NONE
    assert fetch(group, "a", epochs["a"] - 1) == E.STALE_MEMBER_EPOCH
    assert fetch(group, "ghost", 1) == E.UNKNOWN_MEMBER_ID


def test_admin_views_list_describe_and_delete():
    state = cluster()
    join_three(state)
    state.offsets_topic()  # broker 0 leads its partitions: it coordinates every group
    _, found = state.groups.list_groups(0, types=["consumer"])
    assert [(g.group_id, g.group_state, g.group_type) for g in found] == [(G, "Stable", "consumer")]
    assert state.groups.list_groups(0, types=["classic"]) == (E.NONE, [])
    assert state.groups.delete_group(0, G) == E.NON_EMPTY_GROUP
    for member in ("a", "b", "c"):
        beat(state, 0, member, -1, owned=None)
    assert state.groups.consumer.groups[G].state == ConsumerGroupState.EMPTY
    assert state.groups.delete_group(0, G) == E.NONE and G not in state.groups.consumer.groups


def test_the_protocol_can_be_turned_off():
    state = cluster(**{"group.coordinator.rebalance.protocols": "classic"})
    assert not state.groups.consumer.enabled()
    assert cluster().groups.consumer.enabled()


def test_a_classic_member_joins_a_consumer_group_and_gets_the_servers_assignment():
    from fakebroker.protocol import data

    state = cluster()
    first = beat(state, 0, "new", 0)
    group = state.groups.consumer.groups[G]
    classic = state.groups.consumer
    meta = data.encode_subscription(["orders"], version=1)

    def join(member_id, owned=None):
        metadata = data.encode_subscription(["orders"], owned_partitions=owned, version=1) if owned else meta
        return classic.classic_join(
            0,
            group,
            JoinRequest(G, member_id, None, protocols=[("range", metadata)], **CLASSIC_MEMBER),
        )

    required = join("")
    assert required.error == E.MEMBER_ID_REQUIRED and len(required.member_id) == 22
    joined = join(required.member_id)
    assert (joined.error, joined.leader, joined.members, joined.protocol_name) == (E.NONE, "", (), "range")
    assert joined.generation_id == group.group_epoch == 3  # every classic member is a follower
    old = required.member_id
    sync = classic.classic_sync(
        0,
        group,
        SyncRequest(G, old, None, joined.generation_id, "consumer", "range", {}, 5),
    )
    assert sync.error == E.NONE and data.assignment_dict(sync.assignment) == {}  # still the other's
    assert (
        classic.classic_heartbeat(0, group, HeartbeatRequest(G, old, None, joined.generation_id))
        == E.REBALANCE_IN_PROGRESS
    )
    assert classic.classic_heartbeat(0, group, HeartbeatRequest(G, old, None, 99)) == E.ILLEGAL_GENERATION
    revoked = beat(state, 0, "new", first.member_epoch, owned=owned_of(first))  # new gives three up
    beat(state, 0, "new", first.member_epoch, owned=owned_of(revoked))
    again = join(old)
    sync = classic.classic_sync(
        0,
        group,
        SyncRequest(G, old, None, again.generation_id, "consumer", "range", {}, 5),
    )
    got = data.assignment_dict(sync.assignment)
    assert len(got["orders"]) == 3 and set(got["orders"]).isdisjoint(owned_of(revoked)["orders"])
    assert classic.classic_heartbeat(0, group, HeartbeatRequest(G, old, None, again.generation_id)) == E.NONE

    def commit(generation):
        return state.groups.commit_error(0, 0, CommitRequest(G, old, None, generation, 7))

    assert commit(again.generation_id) == E.NONE  # a classic member commits with its generation, at any version
    # an older generation passes the group check and fails per partition: none was held since epoch 1
    assert commit(1) == E.NONE
    assert state.groups.partition_commit_error(CommitRequest(G, old, None, 1, 7), "orders", 0) == E.ILLEGAL_GENERATION
    newer = again.generation_id + 1
    assert commit(newer) == E.ILLEGAL_GENERATION
    left = classic.classic_leave(0, group, [(old, None)])
    assert left.members == [E.NONE] and old not in group.members
    state.tick(60_000)  # and the consumer-protocol member, silent since t=0, is fenced at 45 s
    assert "new" not in group.members and group.members == {}


def classic_stable_group(state: ClusterState, group: str = G) -> str:
    """A classic consumer group of one member owning every partition of ``orders``."""
    from fakebroker.protocol import data

    meta = data.encode_subscription(["orders"], version=1)

    def join(member_id=""):
        return state.groups.classic.join(
            0,
            JoinRequest(
                group_id=group,
                member_id=member_id,
                group_instance_id=None,
                protocols=[("range", meta)],
                **CLASSIC_MEMBER,
            ),
        )

    member = join().member_id
    join(member)
    state.groups.classic.sync(
        0,
        SyncRequest(
            group_id=group,
            member_id=member,
            group_instance_id=None,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            assignments={member: data.encode_assignment({"orders": list(range(6))})},
            version=5,
        ),
    )
    return member


def upgrade(state: ClusterState) -> bool:
    """A KIP-848 member's first heartbeat to the classic group: True when the group became a
    consumer group (the policy and the group's state allow it)."""
    from fakebroker.core.groups import migration

    return migration.upgrade(state.groups.classic, state.groups.consumer, G, 0)


def test_a_classic_group_upgrades_online_when_a_consumer_protocol_member_joins_and_downgrades_when_it_leaves():
    from fakebroker.core.groups.classic.model import GroupState

    state = cluster()
    old = classic_stable_group(state)
    assert upgrade(state)
    assert G not in state.groups.classic.groups
    group = state.groups.consumer.groups[G]
    member = group.members[old]
    assert member.is_classic and member.member_epoch == 1 and member.assigned == {"orders": set(range(6))}
    joined = beat(state, 0, "new", 0)
    assert joined.error == E.NONE and group.group_epoch == 2 and owned_of(joined) == {}  # old still owns them
    assert (
        state.groups.consumer.classic_heartbeat(0, group, HeartbeatRequest(G, old, None, 1)) == E.REBALANCE_IN_PROGRESS
    )
    left = beat(state, 0, "new", joined.member_epoch, owned={}, member_epoch=-1)
    assert left.member_epoch == -1
    assert G not in state.groups.consumer.groups  # only a classic member left: back to classic
    classic = state.groups.classic.groups[G]
    assert classic.state == GroupState.PREPARING_REBALANCE and list(classic.members) == [old]
    assert [(e.kind, e.to) for e in state.events if e.kind == "group_converted"] == [
        ("group_converted", "consumer"),
        ("group_converted", "classic"),
    ]


@pytest.mark.parametrize(
    "policy, upgrades", [("bidirectional", True), ("upgrade", True), ("downgrade", False), ("disabled", False)]
)
def test_the_migration_policy_decides(policy, upgrades):
    state = cluster(**{"group.consumer.migration.policy": policy})
    classic_stable_group(state)
    assert upgrade(state) is upgrades


def test_a_coordinator_move_stops_the_sessions_until_the_new_coordinator_has_loaded_the_group():
    state = cluster(**{"offsets.topic.num.partitions": 3})
    state.broker_started(1, "127.0.0.1", 9093, 0)
    state.coordinator_load_time_ms = 20_000
    epochs, _ = join_three(state)
    partition = state.offsets_topic().partitions[state.groups.partition_of(G)]
    state.move_leader(partition, 1 - partition.leader, 30_000)
    state.tick(45_000)  # 45 s after the last heartbeats, but the group is still loading
    assert sorted(state.groups.consumer.groups[G].members) == ["a", "b", "c"]
    state.tick(50_000)  # loaded: the sessions run again from here
    assert any(e.kind == "group_loaded" and e.group == G for e in state.events)
    state.tick(94_999)
    assert sorted(state.groups.consumer.groups[G].members) == ["a", "b", "c"]
    state.tick(95_000)  # 45 s after the load: nobody heartbeated since
    assert state.groups.consumer.groups[G].members == {}


def test_a_full_group_refuses_a_new_member():
    state = cluster(**{"group.consumer.max.size": 2})
    beat(state, 0, "a", 0)
    beat(state, 0, "b", 0)
    full = beat(state, 0, "c", 0)
    assert full.error == E.GROUP_MAX_SIZE_REACHED and "c" not in state.groups.consumer.groups[G].members


def test_a_deleted_topic_leaves_the_target_at_the_next_heartbeat():
    state = cluster()
    state.create_topic("payments", 2)
    first = beat(state, 0, "a", 0, topics=("orders", "payments"))
    assert owned_of(first) == {"orders": set(range(6)), "payments": {0, 1}}
    state.delete_topic("payments")
    after = beat(state, 0, "a", first.member_epoch, owned=owned_of(first))
    # it must give payments up first: told to keep only orders, at its old epoch
    assert after.member_epoch == first.member_epoch and owned_of(after) == {"orders": set(range(6))}
    done = beat(state, 0, "a", first.member_epoch, owned={"orders": set(range(6))})
    assert done.member_epoch == first.member_epoch + 1 and done.assignment is None  # nothing new to tell


def test_a_static_member_that_never_comes_back_is_removed_at_the_session_timeout():
    state = cluster()
    joined = beat(state, 0, "s", 0, instance_id="box")
    beat(state, 1_000, "s", -2, owned=owned_of(joined), instance_id="box")
    state.tick(45_999)
    assert "s" in state.groups.consumer.groups[G].members  # its place and partitions are kept...
    state.tick(46_000)
    assert state.groups.consumer.groups[G].members == {}  # ...until its session runs out


def test_offset_delete_refuses_subscribed_topics_of_a_live_consumer_group():
    state = cluster()
    state.create_topic("old-topic", 1)
    join_three(state)
    for topic in ("orders", "old-topic"):
        state.groups.offsets.commit(0, G, topic, 0, 5, -1, "")
    error, per = state.groups.delete_offsets(0, G, [("orders", 0), ("old-topic", 0)])
    assert error == E.NONE and per == {("orders", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("old-topic", 0): E.NONE}
    assert [(t, p) for t, p, _ in state.groups.offsets.fetch(G, None)] == [("orders", 0)]

"""The classic group APIs, called directly: FindCoordinator (10), JoinGroup (11), Heartbeat (12),
LeaveGroup (13), SyncGroup (14), OffsetCommit (8), OffsetFetch (9), DescribeGroups (15),
ListGroups (16) and DeleteGroups (42). Expected answers follow
shared/kafka-protocol/GROUP-COORDINATOR.md (Kafka 4.x)."""

from __future__ import annotations

import pytest

from fakebroker.apis.context import Parked
from fakebroker.core.groups.placement import OFFSETS_TOPIC, partition_for
from fakebroker.protocol import data
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import FIRST_PORT, HOST, call, cluster, kinds_after

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP = 8, 9, 10, 11, 12, 13
SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 14, 15, 16, 42
GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
SUBSCRIPTION = data.encode_subscription(["orders"])
ASSIGNMENT = data.encode_assignment({"orders": [0]})


def coordinator(state, group: str) -> int:
    """The leader of the group's __consumer_offsets partition, computed without the handlers."""
    offsets = state.offsets_topic()
    return offsets.partitions[partition_for(group, len(offsets.partitions))].leader


def other_than(state, broker: int) -> int:
    return next(b.node_id for b in state.alive_brokers() if b.node_id != broker)


def join(
    state,
    group="g",
    member_id="",
    *,
    version=9,
    broker=None,
    session_timeout_ms=10_000,
    now_ms=0,
    instance=None,
    protocols=None,
):
    protocols = protocols if protocols is not None else [{"name": "range", "metadata": SUBSCRIPTION}]
    return call(
        state,
        JOIN_GROUP,
        version,
        broker=coordinator(state, group) if broker is None else broker,
        now_ms=now_ms,
        group_id=group,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=protocols,
    )


def joined(state, group="g", **kwargs) -> tuple[str, object]:
    """A new member's two JoinGroups (v4+: MEMBER_ID_REQUIRED first): its id and its answer."""
    required, _ = join(state, group, **kwargs)
    assert required.error_code == E.MEMBER_ID_REQUIRED
    parked, _ = join(state, group, required.member_id, **kwargs)
    assert isinstance(parked, Parked) and parked.pending.done
    return required.member_id, parked.respond(parked.pending.value)


def sync(
    state,
    member_id,
    generation=1,
    group="g",
    *,
    version=5,
    broker=None,
    assignments=None,
    protocol_type="consumer",
    protocol_name="range",
):
    return call(
        state,
        SYNC_GROUP,
        version,
        broker=coordinator(state, group) if broker is None else broker,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignments=assignments if assignments is not None else [],
    )


def stable(state, group="g") -> str:
    """A one-member group, Stable at generation 1 with ``ASSIGNMENT``: the member id."""
    member, _ = joined(state, group)
    parked, _ = sync(state, member, group=group, assignments=[{"member_id": member, "assignment": ASSIGNMENT}])
    assert parked.pending.done and parked.respond(parked.pending.value).error_code == E.NONE
    return member


def heartbeat(state, member_id, generation=1, group="g", *, broker=None, version=4):
    response, _ = call(
        state,
        HEARTBEAT,
        version,
        broker=coordinator(state, group) if broker is None else broker,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
    )
    return response.error_code


def start_loading(state, group="g", load_time_ms=5_000) -> int:
    """Move the group's offsets partition to another broker, which loads it for ``load_time_ms``:
    the new coordinator."""
    state.coordinator_load_time_ms = load_time_ms
    partition = state.offsets_topic().partitions[state.groups.partition_of(group)]
    new = other_than(state, partition.leader)
    state.move_leader(partition, new, 0)
    assert partition.index in state.groups.placement.loading_until_ms
    return new


# -- FindCoordinator ---------------------------------------------------------------------------


def test_find_coordinator_names_the_leader_of_the_groups_offsets_partition():
    state = cluster(3)
    groups = ["my-group", "test", "console-consumer-12345", "groupé", "😀g", "orders", "shipping"]
    response, _ = call(state, FIND_COORDINATOR, 4, key_type=GROUP_KEY, coordinator_keys=groups)
    offsets = state.topics[OFFSETS_TOPIC].partitions
    assert len(offsets) == 50
    expected = []
    for group in groups:
        leader = offsets[partition_for(group, 50)].leader
        expected.append(
            {
                "key": group,
                "node_id": leader,
                "host": HOST,
                "port": FIRST_PORT + leader,
                "error_code": E.NONE,
                "error_message": "",  # as Kafka 4.4 answers (probed side by side)
            }
        )
    assert [c.to_dict() for c in response.coordinators] == expected
    assert {c["node_id"] for c in expected} == {0, 1, 2}  # the groups are spread over every broker


def test_find_coordinator_follows_a_moved_offsets_partition():
    state = cluster(3)
    partition = state.offsets_topic().partitions[partition_for("my-group", 50)]
    new = other_than(state, partition.leader)
    state.move_leader(partition, new, 0)
    response, _ = call(state, FIND_COORDINATOR, 3, key_type=GROUP_KEY, key="my-group")
    assert (response.error_code, response.error_message, response.node_id, response.host, response.port) == (
        E.NONE,
        "NONE",
        new,
        HOST,
        FIRST_PORT + new,
    )


def test_find_coordinator_v0_has_one_group_key():
    state = cluster(2)
    response, _ = call(state, FIND_COORDINATOR, 0, key="g")
    assert (response.error_code, response.node_id, response.port) == (
        E.NONE,
        coordinator(state, "g"),
        FIRST_PORT + coordinator(state, "g"),
    )


def test_find_coordinator_places_transactional_ids_on_their_partition():
    state = cluster(3)
    response, _ = call(state, FIND_COORDINATOR, 4, key_type=TRANSACTION_KEY, coordinator_keys=["tx-1"])
    # on __transaction_state, created by the first lookup as Kafka creates it
    leader = state.topics["__transaction_state"].partitions[partition_for("tx-1", 50)].leader
    assert [(c.key, c.node_id, c.error_code) for c in response.coordinators] == [("tx-1", leader, E.NONE)]


def test_share_keys_need_find_coordinator_v6():
    state = cluster(1)
    response, _ = call(state, FIND_COORDINATOR, 5, key_type=SHARE_KEY, coordinator_keys=["s"])
    assert [(c.error_code, c.node_id, c.host, c.port) for c in response.coordinators] == [
        (E.INVALID_REQUEST, -1, "", -1)
    ]


def test_find_coordinator_without_a_live_leader_is_coordinator_not_available():
    state = cluster(1)
    state.offsets_topic()
    state.broker_stopped(0, 0)
    response, _ = call(state, FIND_COORDINATOR, 4, key_type=GROUP_KEY, coordinator_keys=["g"])
    assert [(c.error_code, c.node_id, c.host, c.port) for c in response.coordinators] == [
        (E.COORDINATOR_NOT_AVAILABLE, -1, "", -1)
    ]


# -- JoinGroup -----------------------------------------------------------------------------------


def test_join_v4_plus_asks_for_a_member_id_then_completes_the_join():
    state = cluster(2)
    mark = len(state.events)
    required, _ = join(state)
    assert required.to_dict() | {"member_id": ""} == {
        "throttle_time_ms": 0,
        "error_code": E.MEMBER_ID_REQUIRED,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "skip_assignment": False,
        "member_id": "",
        "members": [],
    }
    member = required.member_id
    assert member.startswith("tester-")  # <client id>-<uuid>
    assert kinds_after(state, mark) == ["group_created", "member_id_required"]
    assert state.groups.classic.groups["g"].state.value == "Empty"  # MEMBER_ID_REQUIRED does not leave Empty

    mark = len(state.events)
    parked, _ = join(state, member_id=member)
    assert isinstance(parked, Parked) and parked.pending.done
    answer = parked.respond(parked.pending.value)
    assert answer.to_dict() == {
        "throttle_time_ms": 0,
        "error_code": E.NONE,
        "generation_id": 1,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "leader": member,
        "skip_assignment": False,
        "member_id": member,
        "members": [{"member_id": member, "group_instance_id": None, "metadata": SUBSCRIPTION}],
    }
    assert kinds_after(state, mark) == [
        "member_joined",
        "group_state_changed",
        "rebalance_started",
        "group_state_changed",
        "generation_started",
    ]
    assert state.groups.classic.groups["g"].state.value == "CompletingRebalance"


def test_join_v3_needs_no_member_id_round():
    state = cluster(1)
    parked, _ = join(state, version=3)
    answer = parked.respond(parked.pending.value)
    assert (answer.error_code, answer.generation_id, answer.leader == answer.member_id) == (E.NONE, 1, True)
    assert answer.member_id.startswith("tester-") and len(answer.members) == 1


def test_a_second_member_waits_for_the_leader_and_only_the_leader_gets_the_member_list():
    state = cluster(1)
    leader = stable(state)
    required, _ = join(state)
    newcomer = required.member_id
    follower_parked, _ = join(state, member_id=newcomer)
    assert isinstance(follower_parked, Parked) and not follower_parked.pending.done  # the leader must rejoin
    assert heartbeat(state, leader) == E.REBALANCE_IN_PROGRESS

    leader_parked, _ = join(state, member_id=leader)
    assert leader_parked.pending.done and follower_parked.pending.done
    as_leader = leader_parked.respond(leader_parked.pending.value)
    as_follower = follower_parked.respond(follower_parked.pending.value)
    assert (as_leader.generation_id, as_leader.leader) == (2, leader)
    assert sorted(m.member_id for m in as_leader.members) == sorted([leader, newcomer])
    assert (as_follower.error_code, as_follower.generation_id, as_follower.leader, as_follower.members) == (
        E.NONE,
        2,
        leader,
        [],
    )


def test_join_on_another_broker_is_not_coordinator_without_a_member_id():
    state = cluster(2)
    mark = len(state.events)
    answer, _ = join(state, member_id="someone", broker=other_than(state, coordinator(state, "g")))
    assert (answer.error_code, answer.member_id, answer.generation_id, answer.protocol_name) == (
        E.NOT_COORDINATOR,
        "",
        -1,
        None,
    )
    assert "g" not in state.groups.classic.groups and kinds_after(state, mark) == []


@pytest.mark.parametrize("version", [6, 7])
def test_join_errors_carry_kafkas_empty_protocol_fields(version):
    state = cluster(2)
    answer, _ = join(state, version=version, broker=other_than(state, coordinator(state, "g")))
    assert answer.error_code == E.NOT_COORDINATOR
    assert answer.protocol_name == ("" if version < 7 else None)


def test_join_while_the_offsets_partition_loads_is_coordinator_load_in_progress():
    state = cluster(2)
    old = coordinator(state, "g")
    new = start_loading(state)
    answer, _ = join(state, broker=new)
    assert (answer.error_code, answer.member_id) == (E.COORDINATOR_LOAD_IN_PROGRESS, "")
    assert join(state, broker=old)[0].error_code == E.NOT_COORDINATOR
    assert "g" not in state.groups.classic.groups

    state.tick(5_000)  # the load has run
    assert not state.groups.placement.loading_until_ms
    assert join(state, broker=new, now_ms=5_000)[0].error_code == E.MEMBER_ID_REQUIRED


@pytest.mark.parametrize("session_timeout_ms", [5_999, 1_800_001])
def test_invalid_session_timeout_is_checked_before_coordinator_placement(session_timeout_ms):
    state = cluster(2)
    wrong = other_than(state, coordinator(state, "g"))
    answer, _ = join(state, member_id="m-1", broker=wrong, session_timeout_ms=session_timeout_ms)
    assert (answer.error_code, answer.member_id) == (E.INVALID_SESSION_TIMEOUT, "m-1")  # the id is echoed
    loading = start_loading(state)
    answer, _ = join(state, broker=loading, session_timeout_ms=session_timeout_ms)
    assert answer.error_code == E.INVALID_SESSION_TIMEOUT


def test_join_with_an_empty_group_id_is_invalid_group_id():
    state = cluster(1)
    answer, _ = join(state, group="", broker=0, session_timeout_ms=1)
    assert answer.error_code == E.INVALID_GROUP_ID


def test_join_with_an_unknown_member_id_to_a_missing_group_is_unknown_member_id():
    state = cluster(1)
    answer, _ = join(state, member_id="ghost")
    assert (answer.error_code, answer.member_id) == (E.UNKNOWN_MEMBER_ID, "ghost")


# -- SyncGroup -----------------------------------------------------------------------------------


def test_the_leaders_sync_hands_out_the_assignment():
    state = cluster(2)
    member, _ = joined(state)
    mark = len(state.events)
    parked, _ = sync(state, member, assignments=[{"member_id": member, "assignment": ASSIGNMENT}])
    assert isinstance(parked, Parked) and parked.pending.done
    assert parked.respond(parked.pending.value).to_dict() == {
        "throttle_time_ms": 0,
        "error_code": E.NONE,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignment": ASSIGNMENT,
    }
    assert kinds_after(state, mark) == ["group_state_changed", "leader_assigned", "assignment_delivered"]
    assert state.events[-1].assignment == {"orders": [0]}
    assert state.groups.classic.groups["g"].state.value == "Stable"
    # Once Stable, a SyncGroup is answered at once with the stored assignment.
    again, _ = sync(state, member)
    assert (again.error_code, again.assignment) == (E.NONE, ASSIGNMENT)


def test_sync_errors():
    state = cluster(2)
    member = stable(state)
    assert sync(state, member, generation=2)[0].error_code == E.ILLEGAL_GENERATION
    assert sync(state, "ghost")[0].error_code == E.UNKNOWN_MEMBER_ID
    assert sync(state, member, protocol_name="roundrobin")[0].error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert sync(state, member, group="nope")[0].error_code == E.UNKNOWN_MEMBER_ID
    wrong = other_than(state, coordinator(state, "g"))
    answer, _ = sync(state, member, broker=wrong)
    assert answer.to_dict() == {
        "throttle_time_ms": 0,
        "error_code": E.NOT_COORDINATOR,
        "protocol_type": None,
        "protocol_name": None,
        "assignment": b"",
    }


def test_sync_v5_without_protocol_fields_is_inconsistent_before_coordinator_checks():
    state = cluster(2)
    wrong = other_than(state, coordinator(state, "g"))
    answer, _ = sync(state, "m", broker=wrong, protocol_type=None)
    assert answer.error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_sync_while_loading_is_coordinator_load_in_progress():
    state = cluster(2)
    member = stable(state)
    new = start_loading(state)
    assert sync(state, member, broker=new)[0].error_code == E.COORDINATOR_LOAD_IN_PROGRESS


# -- Heartbeat -----------------------------------------------------------------------------------


def test_heartbeat_answers():
    state = cluster(2)
    member = stable(state)
    assert heartbeat(state, member) == E.NONE
    assert heartbeat(state, member, generation=7) == E.ILLEGAL_GENERATION
    assert heartbeat(state, "ghost") == E.UNKNOWN_MEMBER_ID
    assert heartbeat(state, member, group="nope") == E.UNKNOWN_MEMBER_ID
    assert heartbeat(state, member, broker=other_than(state, coordinator(state, "g"))) == E.NOT_COORDINATOR
    assert heartbeat(state, member, group="") == E.INVALID_GROUP_ID


def test_heartbeat_in_completing_rebalance_is_none():
    state = cluster(1)
    member, _ = joined(state)
    assert state.groups.classic.groups["g"].state.value == "CompletingRebalance"
    assert heartbeat(state, member) == E.NONE


def test_heartbeat_while_loading_is_none():
    state = cluster(2)
    member = stable(state)
    new = start_loading(state)
    assert heartbeat(state, member, broker=new) == E.NONE
    assert heartbeat(state, "anyone", broker=new) == E.NONE
    assert heartbeat(state, member, broker=other_than(state, new)) == E.NOT_COORDINATOR


# -- LeaveGroup ------------------------------------------------------------------------------------


def test_leave_group_v3_answers_per_member_and_empties_the_group():
    state = cluster(2)
    member = stable(state)
    mark = len(state.events)
    response, _ = call(
        state,
        LEAVE_GROUP,
        5,
        broker=coordinator(state, "g"),
        group_id="g",
        members=[{"member_id": member}, {"member_id": "ghost"}],
    )
    assert response.to_dict() == {
        "throttle_time_ms": 0,
        "error_code": E.NONE,
        "members": [
            {"member_id": member, "group_instance_id": None, "error_code": E.NONE},
            {"member_id": "ghost", "group_instance_id": None, "error_code": E.UNKNOWN_MEMBER_ID},
        ],
    }
    assert "member_left" in kinds_after(state, mark)
    group = state.groups.classic.groups["g"]
    assert (group.state.value, group.generation_id) == ("Empty", 2)  # the generation rises as the group empties


def test_leave_group_v0_to_v2_fold_the_member_error_into_the_top_level():
    state = cluster(1)
    stable(state)
    response, _ = call(state, LEAVE_GROUP, 2, group_id="g", member_id="ghost")
    assert response.error_code == E.UNKNOWN_MEMBER_ID


def test_leave_group_of_a_missing_group_is_none_with_unknown_members():
    state = cluster(1)
    response, _ = call(state, LEAVE_GROUP, 4, group_id="nope", members=[{"member_id": "m"}])
    assert (response.error_code, [(m.member_id, m.error_code) for m in response.members]) == (
        E.NONE,
        [("m", E.UNKNOWN_MEMBER_ID)],
    )


def test_leave_group_on_another_broker_is_not_coordinator():
    state = cluster(2)
    member = stable(state)
    response, _ = call(
        state,
        LEAVE_GROUP,
        4,
        broker=other_than(state, coordinator(state, "g")),
        group_id="g",
        members=[{"member_id": member}],
    )
    assert (response.error_code, response.members) == (E.NOT_COORDINATOR, [])
    assert member in state.groups.classic.groups["g"].members


# -- OffsetCommit and OffsetFetch ------------------------------------------------------------------


def commit(state, group="g", *, member="", generation=-1, offsets=None, version=8, broker=None, topic="orders"):
    offsets = offsets if offsets is not None else {0: 42}
    return call(
        state,
        OFFSET_COMMIT,
        version,
        broker=coordinator(state, group) if broker is None else broker,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": o,
                        "committed_leader_epoch": 3,
                        "committed_metadata": f"m{p}",
                    }
                    for p, o in offsets.items()
                ],
            }
        ],
    )[0]


def committed(response) -> list[tuple[str, int, int]]:
    return [(t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions]


def test_offset_commit_and_fetch_round_trip():
    state = cluster(2)
    state.create_topic("orders", 3)
    member = stable(state)
    mark = len(state.events)
    response = commit(state, member=member, generation=1, offsets={0: 42, 2: 7})
    assert committed(response) == [("orders", 0, E.NONE), ("orders", 2, E.NONE)]
    assert [(e.kind, e.topic, e.partition, e.offset) for e in state.events[mark:]] == [
        ("offset_committed", "orders", 0, 42),
        ("offset_committed", "orders", 2, 7),
    ]

    fetched, _ = call(
        state,
        OFFSET_FETCH,
        8,
        broker=coordinator(state, "g"),
        groups=[{"group_id": "g", "topics": [{"name": "orders", "partition_indexes": [0, 1, 2]}]}],
    )
    [group] = fetched.groups
    assert (group.group_id, group.error_code) == ("g", E.NONE)
    assert [p.to_dict() for t in group.topics for p in t.partitions] == [
        {
            "partition_index": 0,
            "committed_offset": 42,
            "committed_leader_epoch": 3,
            "metadata": "m0",
            "error_code": E.NONE,
        },
        {
            "partition_index": 1,
            "committed_offset": -1,
            "committed_leader_epoch": -1,
            "metadata": "",
            "error_code": E.NONE,
        },
        {
            "partition_index": 2,
            "committed_offset": 7,
            "committed_leader_epoch": 3,
            "metadata": "m2",
            "error_code": E.NONE,
        },
    ]
    # v7 and below: one group, the error at the top level; null topics = everything committed.
    everything, _ = call(state, OFFSET_FETCH, 7, broker=coordinator(state, "g"), group_id="g", topics=None)
    assert everything.error_code == E.NONE
    assert [(t.name, p.partition_index, p.committed_offset) for t in everything.topics for p in t.partitions] == [
        ("orders", 0, 42),
        ("orders", 2, 7),
    ]


def test_a_commit_with_no_generation_to_an_unknown_group_makes_a_simple_group():
    state = cluster(1)
    state.create_topic("orders", 1)
    mark = len(state.events)
    assert committed(commit(state, group="simple")) == [("orders", 0, E.NONE)]
    assert [(e.kind, e.details.get("simple")) for e in state.events[mark:]] == [
        ("group_created", True),
        ("offset_committed", None),
    ]
    assert state.groups.classic.groups["simple"].state.value == "Empty"


@pytest.mark.parametrize(("version", "error"), [(8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND)])
def test_a_commit_with_a_generation_to_an_unknown_group(version, error):
    state = cluster(1)
    state.create_topic("orders", 1)
    assert committed(commit(state, group="nope", member="m", generation=1, version=version)) == [("orders", 0, error)]
    assert "nope" not in state.groups.classic.groups


def test_offset_commit_member_checks():
    state = cluster(1)
    state.create_topic("orders", 1)
    member = stable(state)
    assert committed(commit(state, member=member, generation=2)) == [("orders", 0, E.ILLEGAL_GENERATION)]
    assert committed(commit(state, member="ghost", generation=1)) == [("orders", 0, E.UNKNOWN_MEMBER_ID)]
    assert committed(commit(state)) == [("orders", 0, E.UNKNOWN_MEMBER_ID)]  # anonymous, group not Empty


def test_offset_commit_to_unknown_partitions_and_on_another_broker():
    state = cluster(2)
    state.create_topic("orders", 1)
    mark = len(state.events)
    assert committed(commit(state, offsets={5: 1})) == [("orders", 5, E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert committed(commit(state, topic="nope")) == [("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION)]
    wrong = other_than(state, coordinator(state, "g"))
    assert committed(commit(state, broker=wrong)) == [("orders", 0, E.NOT_COORDINATOR)]
    assert kinds_after(state, mark) == []


def test_offset_fetch_of_a_missing_group_is_no_error():
    state = cluster(1)
    response, _ = call(
        state,
        OFFSET_FETCH,
        8,
        groups=[
            {"group_id": "nope", "topics": [{"name": "orders", "partition_indexes": [0]}]},
            {"group_id": "none-at-all", "topics": None},
        ],
    )
    assert [(g.group_id, g.error_code) for g in response.groups] == [("nope", E.NONE), ("none-at-all", E.NONE)]
    assert [(p.committed_offset, p.metadata) for p in response.groups[0].topics[0].partitions] == [(-1, "")]
    assert response.groups[1].topics == []


def test_offset_fetch_group_errors_by_version():
    state = cluster(2)
    wrong = other_than(state, coordinator(state, "g"))
    v1, _ = call(
        state, OFFSET_FETCH, 1, broker=wrong, group_id="g", topics=[{"name": "orders", "partition_indexes": [0]}]
    )
    assert [p.error_code for t in v1.topics for p in t.partitions] == [E.NOT_COORDINATOR]  # folded into partitions
    v5, _ = call(
        state, OFFSET_FETCH, 5, broker=wrong, group_id="g", topics=[{"name": "orders", "partition_indexes": [0]}]
    )
    assert v5.error_code == E.NOT_COORDINATOR
    v8, _ = call(state, OFFSET_FETCH, 8, broker=wrong, groups=[{"group_id": "g", "topics": None}])
    assert [(g.error_code, g.topics) for g in v8.groups] == [(E.NOT_COORDINATOR, [])]
    loading = start_loading(state)
    v8, _ = call(state, OFFSET_FETCH, 8, broker=loading, groups=[{"group_id": "g", "topics": None}])
    assert [g.error_code for g in v8.groups] == [E.COORDINATOR_LOAD_IN_PROGRESS]


# -- DescribeGroups, ListGroups, DeleteGroups --------------------------------------------------------


def test_describe_groups_of_a_stable_group():
    state = cluster(2)
    member = stable(state)
    response, _ = call(
        state, DESCRIBE_GROUPS, 5, broker=coordinator(state, "g"), groups=["g"], include_authorized_operations=True
    )
    assert [g.to_dict() for g in response.groups] == [
        {
            "error_code": E.NONE,
            "error_message": None,
            "group_id": "g",
            "group_state": "Stable",
            "protocol_type": "consumer",
            "protocol_data": "range",
            "members": [
                {
                    "member_id": member,
                    "group_instance_id": None,
                    "client_id": "tester",
                    "client_host": "/127.0.0.1",
                    "member_metadata": SUBSCRIPTION,
                    "member_assignment": ASSIGNMENT,
                }
            ],
            "authorized_operations": 3400,  # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS as Kafka 4.4
        }
    ]  # READ, DELETE, DESCRIBE


@pytest.mark.parametrize(("version", "error"), [(5, E.NONE), (6, E.GROUP_ID_NOT_FOUND)])
def test_describe_groups_of_a_missing_group_is_dead(version, error):
    state = cluster(1)
    response, _ = call(state, DESCRIBE_GROUPS, version, groups=["nope"])
    [group] = response.groups
    assert (group.error_code, group.group_state, group.protocol_type, group.members) == (error, "Dead", "", [])
    assert group.authorized_operations == -(2**31)


def test_describe_groups_on_another_broker_is_not_coordinator():
    state = cluster(2)
    stable(state)
    response, _ = call(state, DESCRIBE_GROUPS, 5, broker=other_than(state, coordinator(state, "g")), groups=["g"])
    assert [(g.group_id, g.error_code, g.members) for g in response.groups] == [("g", E.NOT_COORDINATOR, [])]


def test_list_groups_lists_the_groups_this_broker_coordinates():
    state = cluster(2)
    stable(state)
    here = coordinator(state, "g")
    response, _ = call(state, LIST_GROUPS, 5, broker=here)
    assert (response.error_code, [g.to_dict() for g in response.groups]) == (
        E.NONE,
        [{"group_id": "g", "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"}],
    )
    elsewhere, _ = call(state, LIST_GROUPS, 5, broker=other_than(state, here))
    assert (elsewhere.error_code, elsewhere.groups) == (E.NONE, [])


def test_list_groups_filters_by_state_and_type():
    state = cluster(1)
    stable(state)

    def listed(**filters):
        return [g.group_id for g in call(state, LIST_GROUPS, 5, **filters)[0].groups]

    assert listed(states_filter=["stable"]) == ["g"]  # case-insensitive
    assert listed(states_filter=["Empty"]) == []
    assert listed(types_filter=["Classic"]) == ["g"]
    assert listed(types_filter=["consumer"]) == []


def test_list_groups_while_a_hosted_partition_loads_is_coordinator_load_in_progress():
    state = cluster(2)
    stable(state)
    new = start_loading(state)
    response, _ = call(state, LIST_GROUPS, 4, broker=new)
    assert (response.error_code, response.groups) == (E.COORDINATOR_LOAD_IN_PROGRESS, [])


def test_delete_groups_results():
    state = cluster(1)
    state.create_topic("orders", 1)
    member = stable(state)
    commit(state, group="simple")
    response, _ = call(state, DELETE_GROUPS, 2, groups_names=["g", "nope", "simple", "g"])
    assert [(r.group_id, r.error_code) for r in response.results] == [
        ("g", E.NON_EMPTY_GROUP),
        ("nope", E.GROUP_ID_NOT_FOUND),
        ("simple", E.NONE),
    ]  # duplicates dropped
    assert "simple" not in state.groups.classic.groups and "simple" not in state.groups.offsets.offsets

    call(state, LEAVE_GROUP, 4, group_id="g", members=[{"member_id": member}])
    mark = len(state.events)
    response, _ = call(state, DELETE_GROUPS, 2, groups_names=["g"])
    assert [(r.group_id, r.error_code) for r in response.results] == [("g", E.NONE)]
    assert kinds_after(state, mark) == ["group_deleted"]
    fetched, _ = call(state, OFFSET_FETCH, 8, groups=[{"group_id": "g", "topics": None}])
    assert fetched.groups[0].topics == []


def test_delete_groups_on_another_broker_is_not_coordinator():
    state = cluster(2)
    response, _ = call(state, DELETE_GROUPS, 2, broker=other_than(state, coordinator(state, "g")), groups_names=["g"])
    assert [(r.group_id, r.error_code) for r in response.results] == [("g", E.NOT_COORDINATOR)]

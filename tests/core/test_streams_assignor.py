"""Kafka 4.4's ``sticky`` streams task assignor (``core/groups/streams/assignor.py``).

Concrete vectors: Kafka's own ``StickyTaskAssignorTest`` cases (4.4 branch; the test's name is
cited in each), STREAMS-GROUPS.md §10 and cases worked out by hand from the algorithm; then the
Java orders the result depends on; then hypothesis properties (coverage, exclusivity, standby
counts, balance bounds, stickiness, determinism).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.core.groups.streams.assignor import (
    NAME,
    AssignmentConfigs,
    MemberAssignment,
    MemberSpec,
    Subtopology,
    TaskAssignorError,
    _JavaHeap,
    assign,
    java_hash_map_order,
    java_string_hash,
    tasks_by_subtopology,
)

M = MemberSpec
S = "test-subtopology"


def run(
    members: Mapping[str, MemberSpec], subs: Mapping[str, Subtopology], standbys: int = 0
) -> dict[str, MemberAssignment]:
    """As Kafka's unit tests call it: members in the given (LinkedHashMap) order."""
    return assign(members, subs, AssignmentConfigs(standbys), member_order="given")


def one(num_tasks: int, stateful: bool = False, *names: str) -> dict[str, Subtopology]:
    return {name: Subtopology(num_tasks, stateful) for name in (names or (S,))}


def active(result: Mapping[str, MemberAssignment], *mids: str) -> set[tuple[str, int]]:
    return {(s, p) for m in mids for s, ps in result[m].active.items() for p in ps}


def standby(result: Mapping[str, MemberAssignment], *mids: str) -> set[tuple[str, int]]:
    return {(s, p) for m in mids for s, ps in result[m].standby.items() for p in ps}


def count(result: Mapping[str, MemberAssignment], *mids: str) -> int:
    return sum(len(ps) for m in mids for ps in result[m].active.values())


# --- Kafka's StickyTaskAssignorTest ----------------------------------------------------------


def test_name():
    assert NAME == "sticky"  # testToStringReturnsName


def test_one_active_task_to_each_process_when_task_count_same_as_process_count():
    # shouldAssignOneActiveTaskToEachProcessWhenTaskCountSameAsProcessCount
    result = run({f"member{i}": M(f"process{i}") for i in (1, 2, 3)}, one(3))
    assert [count(result, m) for m in result] == [1, 1, 1]
    assert active(result, *result) == {(S, 0), (S, 1), (S, 2)}


@pytest.mark.parametrize("standbys", [0, 1])
def test_topic_group_evenly_across_clients(standbys):
    # shouldAssignTopicGroupIdEvenlyAcrossClientsWithNoStandByTasks / ...WithStandByTasks
    members = {f"member{p}_{i}": M(f"process{p}") for p in (1, 2, 3) for i in (1, 2)}
    subs = one(3, standbys > 0, "test-subtopology1", "test-subtopology2")
    result = run(members, subs, standbys)
    assert all(count(result, m) == 1 for m in members)
    assert active(result, *members) == {(s, p) for s in subs for p in range(3)}


def test_should_not_migrate_active_task_to_other_process():
    # shouldNotMigrateActiveTaskToOtherProcess
    members = {"member1": M("process1", active_tasks={S: {0}}), "member2": M("process2", active_tasks={S: {1}})}
    result = run(members, one(3))
    assert (S, 0) in active(result, "member1") and (S, 1) in active(result, "member2")
    assert count(result, "member1", "member2") == 3
    members = {"member2": M("process2", active_tasks={S: {1}}), "member3": M("process1", active_tasks={S: {2}})}
    result = run(members, one(3))
    assert (S, 1) in active(result, "member2") and (S, 2) in active(result, "member3")


def test_migrate_active_tasks_to_new_process_without_changing_all_assignments():
    # shouldMigrateActiveTasksToNewProcessWithoutChangingAllAssignments
    members = {
        "member1": M("process1", active_tasks={S: {0, 2}}),
        "member2": M("process2", active_tasks={S: {1}}),
        "member3": M("process3"),
    }
    result = run(members, one(3))
    assert result["member2"].active == {S: (1,)}
    assert {result["member1"].active[S], result["member3"].active[S]} == {(0,), (2,)}


def test_tasks_evenly_with_unequal_topic_group_sizes():
    # shouldAssignTasksEvenlyWithUnequalTopicGroupSizes
    prev = {"test-subtopology1": {0, 1, 2, 3, 4, 5}, "test-subtopology2": {0}}
    members = {"member1": M("process1", active_tasks=prev), "member2": M("process2")}
    subs = {"test-subtopology1": Subtopology(6), "test-subtopology2": Subtopology(1)}
    result = run(members, subs)
    assert (count(result, "member1"), count(result, "member2")) == (4, 3)
    assert active(result, "member1", "member2") == {(s, p) for s, ps in prev.items() for p in ps}


def test_keep_active_task_stickiness_when_more_clients_than_active_tasks():
    # shouldKeepActiveTaskStickinessWhenMoreClientThanActiveTasks
    prev = {1: {0}, 2: {2}, 3: {1}}
    members = {f"member{i}": M(f"process{i}", active_tasks={S: prev[i]} if i in prev else {}) for i in range(1, 6)}
    result = run(members, one(3))
    assert [result[f"member{i}"].active for i in range(1, 6)] == [{S: (0,)}, {S: (2,)}, {S: (1,)}, {}, {}]
    prev = {2: {0}, 4: {2}, 5: {1}}
    members = {f"member{i}": M(f"process{i}", active_tasks={S: prev[i]} if i in prev else {}) for i in range(1, 6)}
    result = run(members, one(3))
    assert [result[f"member{i}"].active for i in range(1, 6)] == [{}, {S: (0,)}, {}, {S: (2,)}, {S: (1,)}]


def test_tasks_to_client_with_previous_standby_tasks():
    # shouldAssignTasksToClientWithPreviousStandbyTasks
    members = {f"member{i}": M(f"process{i}", standby_tasks={S: {3 - i}}) for i in (1, 2, 3)}
    result = run(members, one(3))
    assert [result[f"member{i}"].active for i in (1, 2, 3)] == [{S: (2,)}, {S: (1,)}, {S: (0,)}]


def test_no_standby_to_client_with_previous_standby_and_current_active():
    # shouldNotAssignStandbyTasksToClientWithPreviousStandbyTasksAndCurrentActiveTasks
    members = {"member1": M("process1", standby_tasks={S: {0}}), "member2": M("process2", standby_tasks={S: {1}})}
    result = run(members, one(2, True), 1)
    assert result["member1"] == MemberAssignment({S: (0,)}, {S: (1,)})
    assert result["member2"] == MemberAssignment({S: (1,)}, {S: (0,)})


def test_based_on_capacity_when_multiple_clients_have_standby_tasks():
    # shouldAssignBasedOnCapacityWhenMultipleClientHaveStandbyTasks
    members = {
        "member1": M("process1", active_tasks={S: {0}}, standby_tasks={S: {1}}),
        "member2_1": M("process2", active_tasks={S: {2}}, standby_tasks={S: {1}}),
        "member2_2": M("process2"),
    }
    result = run(members, one(3))
    assert [result[m].active for m in members] == [{S: (0,)}, {S: (2,)}, {S: (1,)}]


def test_standby_tasks_on_other_clients_than_their_actives():
    # shouldAssignStandbyTasksToDifferentClientThanCorrespondingActiveTaskIsAssignedTo
    members = {f"member{i + 1}": M(f"process{i + 1}", active_tasks={S: {i}}) for i in range(4)}
    result = run(members, one(4, True), 1)
    for i in range(4):
        mid = f"member{i + 1}"
        assert (S, i) not in standby(result, mid) and len(standby(result, mid)) <= 2
    assert sum(1 for m in members if standby(result, m)) >= 3
    assert standby(result, *members) == {(S, p) for p in range(4)}


def test_multiple_replicas_of_standby_task():
    # shouldAssignMultipleReplicasOfStandbyTask
    members = {f"member{i + 1}": M(f"process{i + 1}", active_tasks={S: {i}}) for i in range(3)}
    result = run(members, one(3, True), 2)
    assert [result[m].standby for m in members] == [{S: (1, 2)}, {S: (0, 2)}, {S: (0, 1)}]


def test_no_standby_replicas_when_no_other_client():
    # shouldNotAssignStandbyTaskReplicasWhenNoClientAvailableWithoutHavingTheTaskAssigned,
    # shouldHandleEdgeCaseWithSingleClientAndMultipleStandbyReplicas
    assert run({"member1": M("process1")}, one(1, True), 1)["member1"] == MemberAssignment({S: (0,)})
    assert run({"member1": M("process1")}, one(10, True), 3)["member1"] == MemberAssignment({S: tuple(range(10))})


def test_at_least_one_task_to_each_client_if_possible():
    # shouldAssignAtLeastOneTaskToEachClientIfPossible
    members = {"member1_1": M("process1"), "member1_2": M("process1"), "member1_3": M("process1")}
    members |= {"member2": M("process2"), "member3": M("process3")}
    result = run(members, one(3))
    assert count(result, "member1_1", "member1_2", "member1_3") == count(result, "member2") == count(result, "member3")


def test_more_tasks_to_client_with_more_capacity():
    # shouldAssignMoreTasksToClientWithMoreCapacity
    members = {"member1": M("process1"), "member2_1": M("process2"), "member2_2": M("process2")}
    result = run(members, one(3, False, *(f"test-subtopology{i}" for i in range(4))))
    assert (count(result, "member2_1", "member2_2"), count(result, "member1")) == (8, 4)


@pytest.mark.parametrize(
    ("members", "tasks", "expected"),
    [
        (  # shouldReBalanceTasksAcrossAllClientsWhenCapacityAndTaskCountTheSame
            {
                "member1": M("process1"),
                "member2": M("process2"),
                "member3": M("process3", active_tasks={S: {0, 1, 2, 3}}),
            }
            | {"member4": M("process4")},
            4,
            {"member1": 1, "member2": 1, "member3": 1, "member4": 1},
        ),
        (  # shouldReBalanceTasksAcrossClientsWhenCapacityLessThanTaskCount
            {
                "member1": M("process1"),
                "member2": M("process2"),
                "member3": M("process3", active_tasks={S: {0, 1, 2, 3}}),
            },
            4,
            {"member1": 1, "member2": 1, "member3": 2},
        ),
        (  # shouldAssignTasksToNewClient
            {"member1": M("process1", active_tasks={S: {1, 2}}), "member2": M("process2")},
            2,
            {"member1": 1, "member2": 1},
        ),
    ],
)
def test_rebalance_counts(members, tasks, expected):
    result = run(members, one(tasks))
    assert {m: count(result, m) for m in members} == expected


def test_rebalance_to_clients_based_on_capacity():
    # shouldRebalanceTasksToClientsBasedOnCapacity
    members = {"member2": M("process2", active_tasks={S: {0, 3, 2}}), "member3_1": M("process3")}
    members["member3_2"] = M("process3")
    result = run(members, one(3))
    assert count(result, "member2") == 1 and count(result, "member3_1", "member3_2") == 2


def test_move_minimal_number_of_tasks_when_new_client_added():
    # shouldMoveMinimalNumberOfTasksWhenPreviouslyAboveCapacityAndNewClientAdded
    members = {
        "member1": M("process1", active_tasks={S: {0, 2}}),
        "member2": M("process2", active_tasks={S: {1, 3}}),
        "member3": M("process3"),
    }
    result = run(members, one(4))
    # worked out: quota 2; member1 reaches it with 0 and 2, which re-divides the 2 tasks left over
    # the 2 members left (quota 1): member2 keeps 1, task 3 goes to the new member
    assert [result[m].active for m in members] == [{S: (0, 2)}, {S: (1,)}, {S: (3,)}]


def test_new_tasks_do_not_move_existing_ones():
    # shouldNotMoveAnyTasksWhenNewTasksAdded, shouldAssignNewTasksToNewClientWhenPreviousTasksAssignedToOldClients
    result = run(
        {"member1": M("process1", active_tasks={S: {0, 1}}), "member2": M("process2", active_tasks={S: {2, 3}})}, one(6)
    )
    assert active(result, "member1") >= {(S, 0), (S, 1)} and active(result, "member2") >= {(S, 2), (S, 3)}
    members = {
        "member1": M("process1", active_tasks={S: {2, 1}}),
        "member2": M("process2", active_tasks={S: {0, 3}}),
        "member3": M("process3"),
    }
    result = run(members, one(6))
    assert [result[m].active for m in members] == [{S: (1, 2)}, {S: (0, 3)}, {S: (4, 5)}]


def _not_previously_active_members(new_members: dict[str, MemberSpec]) -> dict[str, MemberSpec]:
    s0, s1, s2 = (f"test-subtopology{i}" for i in range(3))
    return {
        "member1": M("process1", active_tasks={s0: {1}, s1: {2, 3}}, standby_tasks={s0: {0}, s1: {1}, s2: {0, 1, 3}}),
        "member2": M(
            "process2",
            active_tasks={s0: {0}, s1: {1}, s2: {2}},
            standby_tasks={s0: {1, 2, 3}, s1: {0, 2, 3}, s2: {0, 1, 3}},
        ),
    } | new_members


def test_tasks_not_previously_active_to_new_clients():
    # shouldAssignTasksNotPreviouslyActiveToMultipleNewClients
    s0, s1, s2 = (f"test-subtopology{i}" for i in range(3))
    members = _not_previously_active_members(
        {
            "bounce_member1": M("bounce1", standby_tasks={s2: {0, 1, 3}}),
            "bounce_member2": M("bounce2", standby_tasks={s0: {2, 3}, s1: {0}}),
        }
    )
    result = run(members, one(4, False, s0, s1, s2))
    assert result["member1"].active == {s0: (1,), s1: (2, 3)}
    assert result["member2"].active == {s0: (0,), s1: (1,), s2: (2,)}
    assert result["bounce_member1"].active == {s2: (0, 1, 3)}
    assert result["bounce_member2"].active == {s0: (2, 3), s1: (0,)}


def test_tasks_not_previously_active_to_new_client():
    # shouldAssignTasksNotPreviouslyActiveToNewClient
    s0, s1, s2 = (f"test-subtopology{i}" for i in range(3))
    members = _not_previously_active_members(
        {
            "member3": M("process3", active_tasks={s2: {0, 1, 3}}, standby_tasks={s0: {2}, s1: {2}}),
            "newMember": M("process4", standby_tasks={s: {0, 1, 2, 3} for s in (s0, s1, s2)}),
        }
    )
    result = run(members, one(4, False, s0, s1, s2))
    assert result["member1"].active == {s0: (1,), s1: (2, 3)}
    assert result["member2"].active == {s0: (0,), s1: (1,), s2: (2,)}
    assert result["member3"].active == {s2: (0, 1, 3)}
    assert result["newMember"].active == {s0: (2, 3), s1: (0,)}


@pytest.mark.parametrize(
    ("prev1", "standby2", "tasks", "kept1"),
    [
        ({0, 1, 2}, None, 6, 2),  # shouldAssignTasksToNewClientWithoutFlippingAssignmentBetweenExistingClients
        ({0, 1, 2, 6}, {3, 4, 5}, 7, 3),  # ...BetweenExistingAndBouncedClients
    ],
)
def test_no_flipping_between_existing_clients(prev1, standby2, tasks, kept1):
    member2 = M("process2", standby_tasks={S: standby2}) if standby2 else M("process2", active_tasks={S: {3, 4, 5}})
    members = {"member1": M("process1", active_tasks={S: prev1}), "member2": member2, "newMember": M("process3")}
    result = run(members, one(tasks))
    assert not active(result, "member1") & {(S, 3), (S, 4), (S, 5)} and count(result, "member1") == kept1
    assert not active(result, "member2") & {(S, 0), (S, 1), (S, 2)} and count(result, "member2") == 2
    assert count(result, "newMember") == 2


def test_reassign_when_new_node_joins_with_active_and_standby():
    # shouldReassignTasksWhenNewNodeJoinsWithExistingActiveAndStandbyAssignments
    members = {
        "member1": M("process1", active_tasks={S: {0, 1}}, standby_tasks={S: {2, 3}}),
        "member2": M("process2", active_tasks={S: {2, 3}}, standby_tasks={S: {0, 1}}),
        "member3": M("process3"),
    }
    result = run(members, one(4, True), 1)
    # worked out: active quota 2 keeps member1 {0,1}, then 1: member2 keeps 2, task 3 goes to
    # member3; standbys (quota 3, tasks 3..0): 3 to its previous active owner member2, 2 and 1
    # to their previous standbys, 0 (member2 now full) to the least-loaded process, member3's
    assert [result[m].active for m in members] == [{S: (0, 1)}, {S: (2,)}, {S: (3,)}]
    assert [result[m].standby for m in members] == [{S: (2,)}, {S: (1, 3)}, {S: (0,)}]


@pytest.mark.parametrize("prev", [{"test-subtopology1": {0, 1}, "test-subtopology2": {0, 1}}, {}])
def test_range_assign(prev):
    # shouldRangeAssignTasksWhenScalingUp / shouldRangeAssignTasksWhenStartingEmpty
    members = {"member1": M("process1", active_tasks=prev), "member2": M("process2")}
    result = run(members, one(2, True, "test-subtopology1", "test-subtopology2"), 1)
    for m in members:
        assert {s: len(ps) for s, ps in result[m].active.items()} == {"test-subtopology1": 1, "test-subtopology2": 1}
        assert {s: len(ps) for s, ps in result[m].standby.items()} == {"test-subtopology1": 1, "test-subtopology2": 1}


def test_standby_to_previous_owner_below_quota():
    # shouldAssignStandbyTaskToPreviousOwnerBasedOnBelowQuotaCondition
    members = {
        "member1": M("process1", active_tasks={S: {0}}, standby_tasks={S: {1}}),
        "member2": M("process2", active_tasks={S: {1}}),
        "member3": M("process3"),
    }
    result = run(members, one(2, True), 1)
    assert result["member1"] == MemberAssignment({S: (0,)}, {S: (1,)})


def test_standby_to_previous_standby_not_holding_the_active():
    # shouldAssignStandbyToPreviousStandbyThatDoesNotHoldTheActiveTask: Kafka's comment gives the
    # result "based on the concrete implementation" as member3 [0], member4 [1] (invariant 0)
    members = {
        "member1": M("process1", standby_tasks={S: {2}}),
        "member2": M("process2", active_tasks={S: {0}}, standby_tasks={S: {2}}),
        "member3": M("process3", active_tasks={S: {1}}),
        "member4": M("process4"),
    }
    result = run(members, one(3, True), 1)
    assert result == {
        "member1": MemberAssignment({S: (2,)}),
        "member2": MemberAssignment({S: (0,)}, {S: (2,)}),
        "member3": MemberAssignment({S: (1,)}, {S: (0,)}),
        "member4": MemberAssignment({}, {S: (1,)}),
    }


def test_cold_start_follows_reported_task_offsets():
    # shouldAssignTasksToMembersReportingTaskOffsetsOnColdStart
    members = {
        "member1": M("process1", task_offsets={S: {0: 100, 1: 100}}),
        "member2": M("process2", task_offsets={S: {2: 100, 3: 100}}),
    }
    result = run(members, one(4, True))
    assert (result["member1"].active, result["member2"].active) == ({S: (0, 1)}, {S: (2, 3)})
    # ...WithMultipleMembersPerProcess
    members = {
        f"member{p}_{i}": M(f"process{p}", task_offsets={S: {2 * p - 2: 100, 2 * p - 1: 100}})
        for p in (1, 2)
        for i in (1, 2)
    }
    result = run(members, one(4, True))
    assert active(result, "member1_1", "member1_2") == {(S, 0), (S, 1)}
    assert active(result, "member2_1", "member2_2") == {(S, 2), (S, 3)}


def test_current_owners_rank_ahead_of_reported_offsets():
    # shouldRankCurrentOwnersAheadOfReportedTaskOffsetsAndMostCaughtUpFirst
    members = {
        "member1": M("process1", active_tasks={S: {0}}),
        "member2": M("process2", standby_tasks={S: {0, 1}}),
        "member3": M("process3", task_offsets={S: {0: 1_000_000, 1: 1_000_000, 2: 100}}),
        "member4": M("process4", task_offsets={S: {2: 50}}),
    }
    result = run(members, one(4, True))
    assert [result[f"member{i}"].active for i in range(1, 5)] == [{S: (0,)}, {S: (1,)}, {S: (2,)}, {S: (3,)}]


def test_standbys_away_from_process_holding_state_on_cold_start():
    # shouldAssignStandbysAwayFromProcessHoldingStateOnColdStart
    members = {
        "member1": M("process1", task_offsets={S: {0: 100}}),
        "member2": M("process2", task_offsets={S: {1: 100}}),
    }
    result = run(members, one(2, True), 1)
    assert result == {
        "member1": MemberAssignment({S: (0,)}, {S: (1,)}),
        "member2": MemberAssignment({S: (1,)}, {S: (0,)}),
    }


@pytest.mark.parametrize(
    ("clients", "tasks", "standbys", "standby_total"),
    [
        (5, 100, 2, 200),  # shouldHandleLargeNumberOfTasksWithStandbyAssignment
        (7, 14, 1, 14),  # shouldHandleOddNumberOfClientsWithStandbyTasks
        (3, 6, 5, 12),  # shouldHandleHighStandbyReplicaCount
        (2, 4, 5, 4),  # shouldHandleEdgeCaseWithMoreStandbyReplicasThanAvailableClients
    ],
)
def test_many_tasks_with_standbys(clients, tasks, standbys, standby_total):
    members = {f"member{i}": M(f"process{i}") for i in range(clients)}
    result = assign(members, one(tasks, True), AssignmentConfigs(standbys))  # Kafka: a HashMap
    assert active(result, *members) == {(S, p) for p in range(tasks)}
    assert {count(result, m) for m in members} <= {tasks // clients, -(-tasks // clients)}
    assert sum(len(standby(result, m)) for m in members) == standby_total
    assert all(not active(result, m) & standby(result, m) for m in members)


def test_large_number_of_subtopologies_with_standbys():
    # shouldHandleLargeNumberOfSubtopologiesWithStandbyTasks
    members = {f"member{i}": M(f"process{i}") for i in range(4)}
    subs = one(5, True, *(f"subtopology-{i}" for i in range(10)))
    result = assign(members, subs, AssignmentConfigs(1))
    assert {s for m in members for s in result[m].active} == set(subs)
    assert {s for m in members for s in result[m].standby} == set(subs)


# --- STREAMS-GROUPS.md §10 and worked vectors --------------------------------------------------


def _word_count() -> dict[str, Subtopology]:
    return {"0": Subtopology(6, stateful=False), "1": Subtopology(6, stateful=True)}


def test_streams_groups_10_two_processes_then_a_third():
    # two fresh processes: the first in HashMap order of process ids gets the even partitions
    members = {"a": M("A-process"), "b": M("B-process")}
    first, second = java_hash_map_order(["A-process", "B-process"], 2)
    by_process = {members[m].process_id: m for m in members}
    result = assign(members, _word_count(), AssignmentConfigs(1))
    evens, odds = (0, 2, 4), (1, 3, 5)
    assert result[by_process[first]] == MemberAssignment({"0": evens, "1": evens}, {"1": odds})
    assert result[by_process[second]] == MemberAssignment({"0": odds, "1": odds}, {"1": evens})
    # the table of §10, with A holding the odd and B the even partitions; C joins
    members = {
        "A": M("pA", active_tasks={"0": {1, 3, 5}, "1": {1, 3, 5}}, standby_tasks={"1": {0, 2, 4}}),
        "B": M("pB", active_tasks={"0": {0, 2, 4}, "1": {0, 2, 4}}, standby_tasks={"1": {1, 3, 5}}),
        "C": M("pC"),
    }
    for order in ("kafka", "given"):
        result = assign(members, _word_count(), AssignmentConfigs(1), member_order=order)  # type: ignore[arg-type]
        assert result == {
            "A": MemberAssignment({"0": (1, 3), "1": (1, 3)}, {"1": (2, 5)}),
            "B": MemberAssignment({"0": (0, 2), "1": (0, 2)}, {"1": (3, 4)}),
            "C": MemberAssignment({"0": (4, 5), "1": (4, 5)}, {"1": (0, 1)}),
        }


def test_fresh_group_interleaves_partitions_over_processes():
    # worked out: pass 3 takes tasks by (subtopology, partition) and the heap alternates between
    # the two equally loaded processes, so each gets every other partition of *every* subtopology
    members = {"m1": M("p1"), "m2": M("p2")}
    first = {members[m].process_id: m for m in members}[java_hash_map_order(["p1", "p2"], 2)[0]]
    result = assign(members, {"x": Subtopology(3), "y": Subtopology(3)})
    # x0 x1 x2 y0 y1 y2 -> first, second, first, second, ...
    assert result[first].active == {"x": (0, 2), "y": (1,)}


def test_member_of_two_member_process_gets_half_the_load():
    # worked out: process loads are tasks per member, so a process with two members takes twice
    # the tasks of a process with one
    members = {"a1": M("A"), "a2": M("A"), "b": M("B")}
    result = assign(members, {"s": Subtopology(6)})
    assert sorted(count(result, m) for m in members) == [2, 2, 2]


def test_warmups_do_not_count_as_previous_standbys_in_4_4():
    # 4.4's collectStandbyCandidates reads standbys and task offsets, not warm-ups
    base = {"m1": M("p1", active_tasks={S: {0, 1, 2}}), "m2": M("p2"), "m3": M("p3")}
    for mid, pid in (("m2", "p2"), ("m3", "p3")):
        assert run(base | {mid: M(pid, warmup_tasks={S: {1}})}, one(3)) == run(base, one(3))
        assert run(base | {mid: M(pid, standby_tasks={S: {1}})}, one(3))[mid].active == {S: (1,)}


def test_last_member_claiming_an_active_task_wins():
    # activeTaskToPrevMember is a map filled in member order: the later claim replaces the earlier
    members = {"m1": M("p1", active_tasks={S: {0}}), "m2": M("p2", active_tasks={S: {0}})}
    assert run(members, one(1))["m2"].active == {S: (0,)}
    assert run(dict(reversed(members.items())), one(1))["m1"].active == {S: (0,)}


def test_stateless_subtopologies_get_no_standbys_and_warmups_are_never_assigned():
    members = {f"m{i}": M(f"p{i}") for i in range(3)}
    result = assign(members, {"stateless": Subtopology(4), "stateful": Subtopology(2, True)}, AssignmentConfigs(2))
    assert {s for a in result.values() for s in a.standby} == {"stateful"}
    assert all(not a.warmup for a in result.values())


def test_no_members():
    assert assign({}, {}) == {}
    assert assign({}, {"s": Subtopology(0)}) == {}
    with pytest.raises(TaskAssignorError, match="No process available to assign active task s_0"):
        assign({}, {"s": Subtopology(1)})


def test_members_with_nothing_get_empty_assignments():
    result = assign({"m1": M("p1"), "m2": M("p2")}, {"s": Subtopology(1)})
    assert sorted(result) == ["m1", "m2"] and MemberAssignment() in result.values()


def test_tasks_by_subtopology():
    assert tasks_by_subtopology([("a", 1), ("a", 0), ("b", 2)]) == {"a": frozenset({0, 1}), "b": frozenset({2})}


# --- Java's orders --------------------------------------------------------------------------


def test_java_string_hash():
    assert java_string_hash("") == 0
    assert java_string_hash("abc") == 96354
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Hello World") == (-862545276) % 2**32
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("\U0001f600") == (0xD83D * 31 + 0xDE00)  # UTF-16 code units


def test_java_hash_map_order():
    assert java_hash_map_order(["c", "b", "a"]) == ["a", "b", "c"]  # buckets 97, 98, 99 & 15
    assert java_hash_map_order(["BB", "Aa"]) == ["BB", "Aa"]  # one bucket: insertion order
    assert java_hash_map_order(["Aa", "BB"]) == ["Aa", "BB"]
    # "q" (113) and "a" (97) share bucket 1 of 16 but not of 32: the 13th key grows the table
    keys = ["q", "a"] + [chr(c) for c in range(ord("b"), ord("m"))]
    assert java_hash_map_order(keys)[:2] == ["a", "b"]
    assert java_hash_map_order(keys[:12])[:2] == ["q", "a"]
    # new HashMap<>(4) holds 3 keys in 4 buckets; new HashMap<>(1) grows 1 -> 2 -> 4 for them
    assert java_hash_map_order(["c", "b", "e"], 4) == ["e", "b", "c"]  # 101, 98, 99 & 3
    assert java_hash_map_order(["c", "b", "e"], 1) == ["e", "b", "c"]
    assert java_hash_map_order(["c", "b", "e"]) == ["b", "c", "e"]  # & 15
    assert java_hash_map_order(["b", "a"], 0) == ["a", "b"]
    assert java_hash_map_order([]) == []


def test_java_priority_queue_ties():
    # java.util.PriorityQueue: offer a, b, c with equal keys, poll -> a, c, b
    heap: _JavaHeap[str] = _JavaHeap(lambda _: 0.0)
    for x in "abc":
        heap.offer(x)
    assert [heap.poll(), heap.poll(), heap.poll(), heap.poll()] == ["a", "c", "b", None]
    heap = _JavaHeap(float)
    for x in (5, 3, 8, 1, 9, 2):
        heap.offer(x)
    assert [heap.poll() for _ in range(6)] == [1, 2, 3, 5, 8, 9]


# --- properties ----------------------------------------------------------------------------


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, MemberSpec], dict[str, Subtopology], AssignmentConfigs]:
    subs = {f"s{i}": Subtopology(draw(st.integers(0, 8)), draw(st.booleans())) for i in range(draw(st.integers(1, 3)))}
    n_processes = draw(st.integers(1, 5))
    mids = [f"m{i}" for i in range(draw(st.integers(1, 8)))]
    tasks = [(s, p) for s, sub in subs.items() for p in range(sub.num_tasks + 1)]  # one stale task each
    owner = {t: draw(st.sampled_from([None, *mids])) for t in tasks}
    members = {}
    for mid in mids:
        members[mid] = M(
            f"p{draw(st.integers(0, n_processes - 1))}",
            active_tasks=tasks_by_subtopology(t for t in tasks if owner[t] == mid),
            standby_tasks=tasks_by_subtopology(draw(st.lists(st.sampled_from(tasks), max_size=4)) if tasks else []),
            warmup_tasks=tasks_by_subtopology(draw(st.lists(st.sampled_from(tasks), max_size=2)) if tasks else []),
            task_offsets={
                s: {p: draw(st.integers(0, 50))} for s, p in draw(st.lists(st.sampled_from(tasks), max_size=3))
            }
            if tasks
            else {},
        )
    return members, subs, AssignmentConfigs(draw(st.integers(0, 3)))


def _all_tasks(subs: Mapping[str, Subtopology]) -> set[tuple[str, int]]:
    return {(s, p) for s, sub in subs.items() for p in range(sub.num_tasks)}


@settings(max_examples=300, deadline=None)
@given(groups(), st.sampled_from(["kafka", "given"]))
def test_assignment_invariants(group, order):
    members, subs, configs = group
    result = assign(members, subs, configs, member_order=order)
    assert set(result) == set(members)
    tasks = _all_tasks(subs)
    # every active task exactly once
    owned = [t for m in members for t in active(result, m)]
    assert sorted(owned) == sorted(tasks)
    # a process never holds a task twice (so no member has a task as active and standby)
    held: dict[str, list[tuple[str, int]]] = {}
    for m, spec in members.items():
        held.setdefault(spec.process_id, []).extend(active(result, m) | standby(result, m))
        assert not active(result, m) & standby(result, m)
        assert not result[m].warmup
    for ts in held.values():
        assert len(ts) == len(set(ts))
    # standbys: stateful only, min(num.standby.replicas, processes - 1) copies each
    copies = min(configs.num_standby_replicas, len(held) - 1)
    standbys = [t for m in members for t in standby(result, m)]
    for t in tasks:
        assert standbys.count(t) == (copies if subs[t[0]].stateful else 0)
    assert set(standbys) <= tasks
    # active balance: never above ceil(#active / #members)
    assert all(count(result, m) <= math.ceil(len(tasks) / len(members)) for m in members)
    # partitions sorted, no empty subtopology entries
    for a in result.values():
        for role in (a.active, a.standby):
            assert all(ps and list(ps) == sorted(set(ps)) for ps in role.values())
    # same input, same output
    assert assign(members, subs, configs, member_order=order) == result


@settings(max_examples=200, deadline=None)
@given(groups())
def test_fresh_group_is_balanced_and_stable(group):
    members, subs, configs = group
    fresh = {m: M(spec.process_id) for m, spec in members.items()}
    result = assign(fresh, subs, configs)
    counts = [count(result, m) for m in fresh]
    assert max(counts) - min(counts) <= 1
    # fed back as the current assignment, every active task stays where it is
    again = {m: M(fresh[m].process_id, active_tasks=result[m].active, standby_tasks=result[m].standby) for m in fresh}
    second = assign(again, subs, configs)
    assert all(second[m].active == result[m].active for m in fresh)


@settings(max_examples=200, deadline=None)
@given(groups())
def test_stickiness_within_the_fair_share(group):
    members, subs, configs = group
    tasks = _all_tasks(subs)
    fair = len(tasks) // len(members)
    claims: dict[tuple[str, int], int] = {}
    for spec in members.values():
        for s, ps in spec.active_tasks.items():
            for p in ps:
                claims[(s, p)] = claims.get((s, p), 0) + 1
    result = assign(members, subs, configs)
    for m, spec in members.items():
        mine = {(s, p) for s, ps in spec.active_tasks.items() for p in ps if (s, p) in tasks}
        if len(mine) <= fair and all(claims[t] == 1 for t in mine):
            assert mine <= active(result, m)


def test_speed_1000_members_1000_tasks():
    members = {f"member-{i:04d}": M(f"process-{i // 4:03d}") for i in range(1000)}
    subs = {f"{i}": Subtopology(100, stateful=i % 2 == 0) for i in range(10)}
    start = time.perf_counter()
    first = assign(members, subs, AssignmentConfigs(1))
    again = {m: M(members[m].process_id, active_tasks=first[m].active, standby_tasks=first[m].standby) for m in members}
    assign(again | {f"new-{i}": M(f"new-process-{i}") for i in range(50)}, subs, AssignmentConfigs(1))
    assert time.perf_counter() - start < 10  # ~0.05 s each here; generous for loaded CI machines

"""Streams groups (KIP-1071) in the pure core, with explicit time: the topology from the first
member, the configured topology (internal topics, statuses), epochs and revoke-before-assign
with several processes, leaving, session and rebalance timeouts, offsets, describe and list.
Numbers follow STREAMS-GROUPS.md (Kafka 4.4), §10's word count where it fits."""

from __future__ import annotations

import pytest

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.groups.requests import CommitRequest
from fakebroker.core.groups.service import OffsetToCommit
from fakebroker.core.groups.streams.heartbeat import StreamsHeartbeatRequest
from fakebroker.core.groups.streams.model import GroupState, MemberState
from fakebroker.core.groups.streams.topology import (
    CopartitionGroup,
    InvalidTopology,
    Status,
    Subtopology,
    TopicInfo,
    Topology,
    configure,
)
from fakebroker.protocol.error_codes import ErrorCode as E

G = "wordcount"
REPARTITION = "wordcount-count-repartition"
CHANGELOG = "wordcount-count-changelog"
REPARTITION_CONFIGS = (
    ("cleanup.policy", "delete"),
    ("message.timestamp.type", "CreateTime"),
    ("retention.ms", "-1"),
    ("segment.bytes", "52428800"),
)
CHANGELOG_CONFIGS = (("cleanup.policy", "compact"), ("message.timestamp.type", "CreateTime"))

# §10's word count: "0" reads the input and writes the repartition topic, "1" counts (stateful)
WORD_COUNT = Topology(
    0,
    (
        Subtopology("0", source_topics=("words",), repartition_sink_topics=(REPARTITION,)),
        Subtopology(
            "1",
            repartition_source_topics=(TopicInfo(REPARTITION, configs=REPARTITION_CONFIGS),),
            state_changelog_topics=(TopicInfo(CHANGELOG, configs=CHANGELOG_CONFIGS),),
        ),
    ),
)


def cluster(delay: int = 0, **config) -> ClusterState:
    settings = {
        "group.coordinator.rebalance.protocols": "classic,consumer,streams",
        "group.streams.initial.rebalance.delay.ms": delay,
        **config,
    }
    state = ClusterState("c", BrokerConfig(settings))
    state.broker_started(0, "127.0.0.1", 9092, 0)
    state.create_topic("words", 6)
    return state


def beat(state: ClusterState, now: int, member: str, epoch: int, *, owned=None, process=None, **fields):
    """A heartbeat as the 4.4 client sends it: the full join, then owned lists or nothing."""
    joining = epoch == 0
    args: dict = dict(
        group_id=G,
        member_id=member,
        member_epoch=epoch,
        endpoint_information_epoch=-1,
        rebalance_timeout_ms=300_000 if joining else -1,
        topology=WORD_COUNT if joining else None,
        process_id=(process or f"process-{member}") if joining else None,
        client_tags={} if joining else None,
        client_id=f"client-{member}",
        client_host="/127.0.0.1",
    )
    if joining:
        args.update(active_tasks=frozenset(), standby_tasks=frozenset(), warmup_tasks=frozenset())
    elif owned is not None:
        args.update(active_tasks=owned[0], standby_tasks=owned[1], warmup_tasks=owned[2])
    args.update(fields)
    return state.groups.streams_heartbeat(now, 0, StreamsHeartbeatRequest(**args))


def create_internal(state: ClusterState, result) -> None:
    """What the API layer does after the answer: create the topics the coordinator asked for."""
    for topic in result.to_create:
        state.create_topic(topic.name, topic.partitions, topic.replication_factor, dict(topic.configs))


def owned_of(state: ClusterState, member: str):
    m = state.groups.streams.groups[G].members[member]
    return (m.assigned.active, m.assigned.standby, m.assigned.warmup)


def tasks(*pairs) -> frozenset:
    return frozenset((s, p) for s, ps in pairs for p in ps)


# -- the configured topology ------------------------------------------------------------------------


def test_configure_word_count_decides_internal_counts():
    configured = configure(WORD_COUNT, {"words": 6})
    assert configured.tasks == {"0": 6, "1": 6}
    assert [(t.name, t.partitions, t.replication_factor, t.configs) for t in configured.to_create] == [
        (CHANGELOG, 6, -1, CHANGELOG_CONFIGS),
        (REPARTITION, 6, -1, REPARTITION_CONFIGS),
    ]
    assert configured.status == (
        Status.MISSING_INTERNAL_TOPICS,
        f"Internal topics are missing: {REPARTITION}, {CHANGELOG}",  # Java HashMap order
    )
    ready = configure(WORD_COUNT, {"words": 6, REPARTITION: 6, CHANGELOG: 6})
    assert ready.ready and ready.to_create == ()


def test_configure_missing_sources_and_wrong_internal_count():
    topology = Topology(0, (Subtopology("0", source_topics=("b", "a", "c", "d")),))
    configured = configure(topology, {})
    assert configured.status == (
        Status.MISSING_SOURCE_TOPICS,
        "Source topics a, b, c and 1 additional topics are missing.",
    )
    assert configured.tasks == {} and not configured.ready
    wrong = configure(WORD_COUNT, {"words": 6, REPARTITION: 4})
    assert wrong.status == (
        Status.INCORRECTLY_PARTITIONED_TOPICS,
        f"Existing topic {REPARTITION} has different number of partitions: expected 6, found 4",
    )


def test_configure_copartitioned_sources_must_agree():
    joined = Subtopology("0", source_topics=("wc-input", "wc-other4"), copartition_groups=(CopartitionGroup((0, 1)),))
    configured = configure(Topology(0, (joined,)), {"wc-input": 6, "wc-other4": 4})
    assert configured.status == (
        Status.INCORRECTLY_PARTITIONED_TOPICS,
        "Following topics do not have the same number of partitions: [{wc-input=6, wc-other4=4}]",
    )
    plain = Subtopology("0", source_topics=("wc-input", "wc-other4"))
    assert configure(Topology(0, (plain,)), {"wc-input": 6, "wc-other4": 4}).tasks == {"0": 6}


def test_configure_fixed_repartition_count_and_unresolvable_loop():
    fixed = Topology(
        0,
        (
            Subtopology("0", source_topics=("words",), repartition_sink_topics=("r",)),
            Subtopology("1", repartition_source_topics=(TopicInfo("r", partitions=3),)),
        ),
    )
    assert configure(fixed, {"words": 6}).tasks == {"0": 6, "1": 3}
    never_written = Topology(0, (Subtopology("1", repartition_source_topics=(TopicInfo("r"),)),))
    with pytest.raises(InvalidTopology, match="Failed to compute number of partitions"):
        configure(never_written, {})


# -- joining, the topology, statuses ----------------------------------------------------------------


def test_first_join_sets_topology_and_asks_for_internal_topics():
    state = cluster()
    result = beat(state, 0, "a", 0)
    group = state.groups.streams.groups[G]
    assert result.error == E.NONE and result.member_id == "a"
    # not ready: the target is empty, computed at the group epoch (2), the member follows
    assert (group.group_epoch, group.assignment_epoch, result.member_epoch) == (2, 2, 2)
    assert result.statuses == (
        (
            Status.MISSING_INTERNAL_TOPICS,
            f"Internal topics are missing: {REPARTITION}, {CHANGELOG}",
        ),  # Java HashMap order
    )
    assert result.tasks is not None and result.tasks.is_empty()
    assert [t.name for t in result.to_create] == [CHANGELOG, REPARTITION]
    assert (result.heartbeat_interval_ms, result.task_offset_interval_ms, result.acceptable_recovery_lag) == (
        5000,
        60000,
        10000,
    )
    assert group.state == GroupState.NOT_READY
    create_internal(state, result)
    again = beat(state, 100, "a", 2, owned=(frozenset(), frozenset(), frozenset()))
    # the topics exist: the metadata changed, the group epoch moves, all 12 tasks go to "a"
    assert again.statuses == ()
    assert (group.group_epoch, again.member_epoch) == (3, 3)  # one bump per heartbeat
    assert again.tasks is not None and again.tasks.active == tasks(("0", range(6)), ("1", range(6)))
    assert state.groups.streams.groups[G].state == GroupState.STABLE


def ready_group(delay: int = 0, **config) -> ClusterState:
    """A word-count group whose internal topics exist, and no member yet."""
    state = cluster(delay, **config)
    for name in (REPARTITION, CHANGELOG):
        state.create_topic(name, 6)
    return state


def settle(state: ClusterState, now: int, members: list[str]) -> None:
    """Every member heartbeats with what it owns until nothing moves."""
    for _ in range(6):
        for m in members:
            member = state.groups.streams.groups[G].members[m]
            beat(state, now, m, member.member_epoch, owned=owned_of(state, m))


def test_initial_delay_then_two_processes_split_with_standbys():
    state = ready_group(delay=3000, **{"group.streams.num.standby.replicas": 1})
    a = beat(state, 0, "a", 0)
    assert a.member_epoch == 1 and a.statuses == (
        (Status.ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay."),
    )
    b = beat(state, 100, "b", 0)
    assert b.member_epoch == 1 and [s for s, _ in b.statuses] == [Status.ASSIGNMENT_DELAYED]
    group = state.groups.streams.groups[G]
    assert (group.group_epoch, group.assignment_epoch, group.state) == (3, 1, GroupState.ASSIGNING)
    state.tick(3000)  # the delay's timer computes the target at the group epoch of that moment
    assert group.assignment_epoch == 3
    settle(state, 3100, ["a", "b"])
    ma, mb = group.members["a"], group.members["b"]
    assert (ma.member_epoch, mb.member_epoch, group.state) == (3, 3, GroupState.STABLE)
    assert len(ma.assigned.active) == len(mb.assigned.active) == 6
    assert ma.assigned.active | mb.assigned.active == tasks(("0", range(6)), ("1", range(6)))
    # one standby of each stateful task, never on the process holding it active
    assert ma.assigned.standby | mb.assigned.standby == tasks(("1", range(6)))
    assert not ma.assigned.standby & ma.assigned.active and not mb.assigned.standby & mb.assigned.active


def test_third_member_waits_for_revocation_before_taking_tasks():
    state = ready_group()
    beat(state, 0, "a", 0)
    beat(state, 0, "b", 0)
    settle(state, 0, ["a", "b"])
    group = state.groups.streams.groups[G]
    epoch = group.assignment_epoch
    c = beat(state, 2000, "c", 0)  # assignment interval (1 s) elapsed: computed now
    assert group.assignment_epoch == epoch + 1 == c.member_epoch
    # everything c is given is still owned: it gets nothing yet
    assert c.tasks is not None and c.tasks.active == frozenset()
    assert group.members["c"].state == MemberState.UNRELEASED_TASKS
    a = beat(state, 2100, "a", epoch)  # no owned lists: a keeps its epoch, told what to keep
    member_a = group.members["a"]
    assert (a.member_epoch, member_a.state) == (epoch, MemberState.UNREVOKED_TASKS)
    assert a.tasks is not None and a.tasks.active == member_a.assigned.active and member_a.revoking.active
    revoked = member_a.revoking.active
    assert ("streams-rebalance", G, "a") in state.timers.keys()
    a = beat(state, 2200, "a", epoch, owned=owned_of(state, "a"))
    # revoked: a moves to the new epoch (UNRELEASED_TASKS if its target holds a task b has not
    # released yet)
    assert a.member_epoch == epoch + 1 and member_a.state != MemberState.UNREVOKED_TASKS
    assert ("streams-rebalance", G, "a") not in state.timers.keys()
    assert not revoked & member_a.assigned.active
    settle(state, 2400, ["a", "b", "c"])
    sizes = sorted(len(m.assigned.active) for m in group.members.values())
    assert sizes == [4, 4, 4] and group.state == GroupState.STABLE
    every = [t for m in group.members.values() for t in m.assigned.active]
    assert len(every) == len(set(every)) == 12


def test_leave_and_session_timeout_bump_the_epoch():
    state = ready_group()
    beat(state, 0, "a", 0)
    beat(state, 0, "b", 0)
    group = state.groups.streams.groups[G]
    epoch = group.group_epoch
    left = beat(state, 10, "b", -1)
    assert (left.member_epoch, left.member_id, group.group_epoch) == (-1, "b", epoch + 1)
    assert "b" not in group.members
    state.tick(45_000 - 1)
    assert "a" in group.members
    state.tick(45_000)  # streams.session.timeout.ms (45 s) after a's last heartbeat
    assert "a" not in group.members and group.state == GroupState.EMPTY
    assert group.assignment_epoch == group.group_epoch == epoch + 2


def test_rebalance_timeout_fences_a_member_that_never_revokes():
    state = ready_group()
    beat(state, 0, "a", 0, rebalance_timeout_ms=5000)
    settle(state, 0, ["a"])
    beat(state, 2000, "b", 0)
    group = state.groups.streams.groups[G]
    beat(state, 2100, "a", group.members["a"].member_epoch)
    assert group.members["a"].state == MemberState.UNREVOKED_TASKS
    state.tick(7100)
    assert "a" not in group.members


def test_static_leave_keeps_the_member_and_its_tasks():
    state = ready_group()
    beat(state, 0, "a", 0, instance_id="i-a")
    settle(state, 0, ["a"])
    group = state.groups.streams.groups[G]
    epoch, active = group.group_epoch, group.members["a"].assigned.active
    result = beat(state, 10, "a", -2, instance_id="i-a")
    assert (result.error, result.member_epoch, group.group_epoch) == (E.NONE, -2, epoch)
    rejoined = beat(state, 20, "a2", 0, instance_id="i-a", process="process-a")
    assert rejoined.error == E.NONE and "a" not in group.members
    assert group.members["a2"].assigned.active == active


def test_stale_topology_status_for_an_older_epoch():
    state = ready_group()
    newer = Topology(1, WORD_COUNT.subtopologies)
    beat(state, 0, "a", 0, topology=newer)
    older = beat(state, 0, "b", 0)
    assert older.statuses[0] == (
        Status.STALE_TOPOLOGY,
        "The member's topology epoch 0 is behind the group's topology epoch 1.",
    )


def test_owned_tasks_are_checked_against_the_topology():
    state = ready_group()
    first = beat(state, 0, "a", 0)
    bad = beat(state, 10, "a", first.member_epoch, owned=(frozenset({("0", 99)}), frozenset(), frozenset()))
    assert (bad.error, bad.message) == (
        E.INVALID_REQUEST,
        "Task 99 for subtopology 0 is invalid. Number of tasks for this subtopology: 6",
    )
    bad = beat(state, 10, "a", first.member_epoch, owned=(frozenset({("9", 0)}), frozenset(), frozenset()))
    assert (bad.error, bad.message) == (E.INVALID_REQUEST, "Subtopology 9 does not exist in the topology.")


def commit(state, now, member, epoch, topic="words", partition=0, version=9, transactional=False, precise=False):
    req = CommitRequest(G, member, None, epoch, version, transactional=transactional, precise_errors=precise)
    offsets = [OffsetToCommit(topic, partition, 5, -1, None)]
    if transactional:
        return state.groups.commit_in_txn(now, 0, req, 1, offsets, lambda: E.NONE)
    return state.groups.commit(now, 0, req, offsets)


def test_offset_commits_of_streams_members():
    state = ready_group()
    beat(state, 0, "a", 0)
    settle(state, 0, ["a"])
    epoch = state.groups.streams.groups[G].members["a"].member_epoch
    assert commit(state, 10, "a", epoch) == [E.NONE]
    assert commit(state, 10, "a", epoch, version=8) == [E.UNSUPPORTED_VERSION]
    assert commit(state, 10, "a", epoch + 1) == [E.STALE_MEMBER_EPOCH]
    assert commit(state, 10, "x", epoch) == [E.UNKNOWN_MEMBER_ID]
    # an older epoch: only for an active task granted at or before it
    assert commit(state, 10, "a", epoch - 1) == [E.STALE_MEMBER_EPOCH]
    # EOS v2: the producer commits with the consumer's group metadata; v0-5 say ILLEGAL_GENERATION
    assert commit(state, 10, "a", epoch, transactional=True) == [E.NONE]
    assert commit(state, 10, "a", epoch + 1, transactional=True) == [E.ILLEGAL_GENERATION]
    assert commit(state, 10, "a", epoch + 1, transactional=True, precise=True) == [E.STALE_MEMBER_EPOCH]


def test_a_join_with_an_endpoint_while_the_topology_is_not_ready_is_an_unknown_server_error():
    """Kafka 4.4 (STREAMS-GROUPS.md §9.11, observed on a real broker): a joiner gets
    PartitionsByUserEndpoint, which EndpointToPartitionsManager builds from the configured
    subtopologies, absent when configuring the topics failed (MISSING_SOURCE_TOPICS,
    INCORRECTLY_PARTITIONED_TOPICS; not MISSING_INTERNAL_TOPICS): a join carrying a UserEndpoint
    then fails with UNKNOWN_SERVER_ERROR (no message) and leaves no trace. Without an endpoint
    the join gets MISSING_SOURCE_TOPICS."""
    state = cluster()
    internal = beat(state, 0, "x", 0, user_endpoint=("localhost", 8081))  # only the internal topics missing
    assert internal.error == E.NONE and internal.statuses[0][0] == Status.MISSING_INTERNAL_TOPICS
    state.groups.streams.delete(G)
    missing = Topology(0, (Subtopology("0", source_topics=("no-such-topic",)),))
    endpoint = ("localhost", 8080)
    first = beat(state, 0, "a", 0, topology=missing, user_endpoint=endpoint)
    assert (first.error, first.message) == (E.UNKNOWN_SERVER_ERROR, None)
    assert G not in state.groups.streams.groups  # not even created
    plain = beat(state, 10, "b", 0, topology=missing)
    assert plain.error == E.NONE
    assert plain.statuses == ((Status.MISSING_SOURCE_TOPICS, "Source topics no-such-topic are missing."),)
    group = state.groups.streams.groups[G]
    epochs = (group.group_epoch, group.assignment_epoch, group.endpoint_epoch)
    again = beat(state, 20, "a", 0, topology=missing, user_endpoint=endpoint)
    assert (again.error, again.message) == (E.UNKNOWN_SERVER_ERROR, None)
    assert set(group.members) == {"b"} and (group.group_epoch, group.assignment_epoch, group.endpoint_epoch) == epochs
    state.create_topic("no-such-topic", 2)  # the topology can be ready: the same join succeeds
    ok = beat(state, 5000, "a", 0, topology=missing, user_endpoint=endpoint)
    assert ok.error == E.NONE and ok.statuses == ()
    assert ok.endpoints is not None and [e[0] for e in ok.endpoints] == [endpoint]

"""Partition admin APIs, called directly on clusters of several brokers (what a single-node
differential probe cannot show): DescribeTopicPartitions (75), ElectLeaders (43), DescribeLogDirs
(35), AlterPartitionReassignments (45) and ListPartitionReassignments (46)."""

from __future__ import annotations

import pytest

from fakebroker.apis.describe_log_dirs import TOTAL_BYTES, log_dir
from fakebroker.apis.describe_topic_partitions import TOPIC_OPERATIONS
from fakebroker.core.events import LeaderMoved
from fakebroker.core.topics.reassignments import PartitionReassigned
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import call, cluster, events_after, produce_records

DESCRIBE_LOG_DIRS, ELECT_LEADERS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 35, 43, 45, 46
DESCRIBE_TOPIC_PARTITIONS = 75
PREFERRED, UNCLEAN = 0, 1


def describe(state, *topics, limit=2000, cursor=None):
    body = {
        "topics": [{"name": t} for t in topics],
        "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]},
    }
    response, _ = call(state, DESCRIBE_TOPIC_PARTITIONS, 0, **body)
    return response


def elect(state, partitions, election_type=PREFERRED, version=2):
    topics = None if partitions is None else [{"topic": t, "partitions": ps} for t, ps in partitions.items()]
    response, ctx = call(state, ELECT_LEADERS, version, election_type=election_type, topic_partitions=topics)
    return response, ctx


def results(response):
    return {
        (r.topic, p.partition_id): p.error_code for r in response.replica_election_results for p in r.partition_result
    }


def alter(state, partitions, version=1, allow=True):
    topics = {}
    for (topic, index), replicas in partitions.items():
        topics.setdefault(topic, []).append({"partition_index": index, "replicas": replicas})
    response, _ = call(
        state,
        ALTER_REASSIGNMENTS,
        version,
        timeout_ms=10000,
        allow_replication_factor_change=allow,
        topics=[{"name": n, "partitions": ps} for n, ps in topics.items()],
    )
    return response


def alter_errors(response):
    return {(t.name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}


def listing(state, topics=None):
    body = None if topics is None else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]
    response, _ = call(state, LIST_REASSIGNMENTS, 0, timeout_ms=10000, topics=body)
    return {
        (t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
        for t in response.topics
        for p in t.partitions
    }


# -- DescribeTopicPartitions ---------------------------------------------------------------------------


def test_describe_topic_partitions_shows_replicas_leaders_and_offline_brokers():
    state = cluster(3)
    state.create_topic("t", 3, 2)
    state.broker_stopped(1, 0)
    [topic] = describe(state, "t").topics
    assert topic.error_code == E.NONE and topic.topic_id == state.topics["t"].topic_id
    assert topic.topic_authorized_operations == TOPIC_OPERATIONS
    for answered, partition in zip(topic.partitions, state.topics["t"].partitions):
        assert answered.replica_nodes == partition.replicas
        assert answered.leader_id == partition.leader != 1
        assert answered.isr_nodes == [r for r in partition.replicas if r != 1]
        assert answered.offline_replicas == [r for r in partition.replicas if r == 1]
        assert (answered.eligible_leader_replicas, answered.last_known_elr) == ([], [])


def test_describe_topic_partitions_pages_through_many_partitions_with_the_cursor():
    state = cluster(3)
    state.create_topic("big", 25, 3)
    state.create_topic("small", 2, 1)
    seen, cursor, pages = [], None, 0
    while True:
        response = describe(state, "small", "big", limit=10, cursor=cursor)
        seen += [(t.name, p.partition_index) for t in response.topics for p in t.partitions]
        pages += 1
        if response.next_cursor is None:
            break
        cursor = (response.next_cursor.topic_name, response.next_cursor.partition_index)
    assert seen == [("big", i) for i in range(25)] + [("small", 0), ("small", 1)]
    assert pages == 3


def test_describe_topic_partitions_of_a_partition_without_a_leader():
    state = cluster(2)
    state.create_topic("t", 1, 1, assignments=None)
    only = state.topics["t"].partitions[0].replicas[0]
    state.broker_stopped(only, 0)
    [partition] = describe(state, "t").topics[0].partitions
    assert (partition.error_code, partition.leader_id, partition.isr_nodes, partition.offline_replicas) == (
        E.NONE,
        -1,
        [],
        [only],
    )


# -- ElectLeaders --------------------------------------------------------------------------------------


def test_preferred_election_gives_a_moved_leader_back_to_the_preferred_replica():
    state = cluster(3)
    state.create_topic("t", 2, 3)
    partition = state.topics["t"].partitions[0]
    preferred = partition.replicas[0]
    other = partition.replicas[1]
    state.move_leader(partition, other, 0)
    epoch = partition.leader_epoch
    mark = len(state.events)
    response, ctx = elect(state, {"t": [0, 1]})
    assert response.error_code == E.NONE
    assert results(response) == {("t", 0): E.NONE, ("t", 1): E.ELECTION_NOT_NEEDED}
    assert (partition.leader, partition.leader_epoch) == (preferred, epoch + 1)
    [moved] = events_after(state, mark)
    assert isinstance(moved, LeaderMoved)
    assert (moved.topic, moved.partition, moved.leader, moved.reason) == ("t", 0, preferred, "preferred election")
    assert ctx.effects.data_changed


def test_preferred_election_when_the_preferred_replica_is_down():
    state = cluster(3)
    state.create_topic("t", 1, 2)
    partition = state.topics["t"].partitions[0]
    state.broker_stopped(partition.replicas[0], 0)
    assert partition.leader == partition.replicas[1]
    response, _ = elect(state, {"t": [0]})
    assert results(response) == {("t", 0): E.PREFERRED_LEADER_NOT_AVAILABLE}
    assert response.replica_election_results[0].partition_result[0].error_message


def test_election_for_every_partition_reports_only_those_that_needed_one():
    state = cluster(3)
    state.create_topic("a", 3, 3)
    state.create_topic("b", 1, 3)
    moved = state.topics["a"].partitions[2]
    state.move_leader(moved, moved.replicas[2], 0)
    for version in (0, 1, 2):
        response, _ = elect(state, None, version=version)
        assert {r.topic: len(r.partition_result) for r in response.replica_election_results} == {
            "a": 1 if version == 0 else 0,
            "b": 0,
        }
    assert moved.leader == moved.replicas[0]


def test_unclean_election_only_for_a_partition_without_a_leader():
    state = cluster(2)
    state.create_topic("t", 1, 2)
    response, _ = elect(state, {"t": [0]}, UNCLEAN)
    assert results(response) == {("t", 0): E.ELECTION_NOT_NEEDED}
    state.broker_stopped(0, 0)
    state.broker_stopped(1, 0)
    response, _ = elect(state, {"t": [0]}, UNCLEAN)
    assert results(response) == {("t", 0): E.ELIGIBLE_LEADERS_NOT_AVAILABLE}


def test_elect_leaders_unknown_partitions_and_election_type():
    state = cluster(1)
    state.create_topic("t", 1, 1)
    response, _ = elect(state, {"t": [3], "nope": [0]}, version=0)
    assert results(response) == {("t", 3): E.UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    response, _ = elect(state, {"t": [0]}, election_type=7, version=1)
    assert response.error_code == E.INVALID_REQUEST
    assert results(response) == {("t", 0): E.INVALID_REQUEST}


# -- DescribeLogDirs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 4, 5])
def test_describe_log_dirs_sizes_of_the_partitions_a_broker_holds(version):
    state = cluster(2)
    state.create_topic("t", 2, 1, assignments=None)
    on_0 = [p for p in state.topics["t"].partitions if p.replicas == [0]]
    [p0] = on_0
    produce_records(state, "t", p0.index, b"hello", b"world")
    assert p0.log.size_bytes > 0
    response, _ = call(state, DESCRIBE_LOG_DIRS, version, broker=0, topics=None)
    [result] = response.results
    assert (result.error_code, result.log_dir) == (E.NONE, log_dir(0))
    held = {
        (t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
        for t in result.topics
        for p in t.partitions
    }
    assert held[("t", p0.index)] == (p0.log.size_bytes, 0, False)
    assert ("t", 1 - p0.index) not in held  # on broker 1
    if version >= 4:
        assert (result.total_bytes, result.usable_bytes) == (TOTAL_BYTES, TOTAL_BYTES - p0.log.size_bytes)
    named, _ = call(state, DESCRIBE_LOG_DIRS, version, broker=1, topics=[{"topic": "t", "partitions": [0, 1]}])
    [on_1] = named.results
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in on_1.topics] == [("t", [1 - p0.index])]
    assert on_1.log_dir == log_dir(1)


# -- AlterPartitionReassignments, ListPartitionReassignments ----------------------------------------------


def test_a_reassignment_to_live_brokers_completes_at_once_and_moves_the_leader():
    state = cluster(3)
    state.create_topic("t", 1, 1, assignments=None)
    partition = state.topics["t"].partitions[0]
    old = partition.replicas[0]
    target = [b for b in (0, 1, 2) if b != old]
    mark = len(state.events)
    response = alter(state, {("t", 0): target})
    assert (response.error_code, response.error_message) == (E.NONE, None)
    assert alter_errors(response) == {("t", 0): E.NONE}
    assert (partition.replicas, partition.leader) == (target, target[0])
    kinds = [(e.kind, getattr(e, "state", None)) for e in events_after(state, mark)]
    assert kinds == [
        ("partition_reassigned", "started"),
        ("leader_moved", None),
        ("partition_reassigned", "completed"),
    ]
    assert listing(state) == {}


def test_a_new_order_of_the_same_replicas_keeps_the_leader():
    state = cluster(3)
    state.create_topic("t", 1, 3)
    partition = state.topics["t"].partitions[0]
    leader = partition.leader
    reordered = list(reversed(partition.replicas))
    assert alter_errors(alter(state, {("t", 0): reordered})) == {("t", 0): E.NONE}
    assert (partition.replicas, partition.leader) == (reordered, leader)
    response, _ = elect(state, {"t": [0]})  # now the preferred replica is another one
    assert results(response) == {("t", 0): E.NONE} and partition.leader == reordered[0]


def test_a_reassignment_to_a_stopped_broker_waits_for_it_and_can_be_cancelled():
    state = cluster(3)
    state.create_topic("t", assignments={0: [0], 1: [0]})
    state.broker_stopped(2, 0)
    response = alter(state, {("t", 0): [2, 1], ("t", 1): [2]})
    assert alter_errors(response) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    p0, p1 = state.topics["t"].partitions
    assert (p0.replicas, p0.leader) == ([2, 1, 0], 0)  # target + removing, the leader stays
    assert listing(state) == {("t", 0): ([2, 1, 0], [1, 2], [0]), ("t", 1): ([2, 0], [2], [0])}
    assert listing(state, {"t": [1, 7], "nope": [0]}) == {("t", 1): ([2, 0], [2], [0])}
    assert alter_errors(alter(state, {("t", 1): None})) == {("t", 1): E.NONE}  # cancelled
    assert (p1.replicas, p1.leader) == ([0], 0)
    state.broker_started(2, "127.0.0.1", 9094, 0)
    assert (p0.replicas, p0.leader) == ([2, 1], 2)
    assert listing(state) == {}
    assert alter_errors(alter(state, {("t", 0): None})) == {("t", 0): E.NO_REASSIGNMENT_IN_PROGRESS}


def test_reassignment_errors_in_kafkas_order():
    state = cluster(3)
    state.create_topic("t", 1, 2)
    errors = alter_errors(
        alter(
            state,
            {("t", 0): [9, 1, 1], ("nope", 0): [0]},
        )
    )
    assert errors == {("t", 0): E.INVALID_REPLICA_ASSIGNMENT, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    # broker ids in order: 1 twice is found before the unknown 9
    response = alter(state, {("t", 0): [9, 1, 1]})
    assert "more than once" in response.responses[0].partitions[0].error_message
    response = alter(state, {("t", 0): [0, 1, 2]}, allow=False)
    assert alter_errors(response) == {("t", 0): E.INVALID_REPLICATION_FACTOR}
    assert response.allow_replication_factor_change is False
    assert alter_errors(alter(state, {("t", 0): [0, 1, 2]}, version=0, allow=False)) == {("t", 0): E.NONE}
    assert len(state.topics["t"].partitions[0].replicas) == 3


def test_deleting_a_topic_drops_its_reassignments():
    state = cluster(2)
    state.create_topic("t", 1, 1, assignments=None)
    state.broker_stopped(1, 0)
    alter(state, {("t", 0): [1]})
    assert listing(state)
    state.delete_topic("t")
    assert listing(state) == {} and state.reassignments == {}


def test_partition_reassigned_event_describes_itself():
    event = PartitionReassigned(topic="t", partition=0, state="completed", replicas=(1, 2))
    assert (
        event.describe()
        == "partition_reassigned topic=t partition=0 state=completed replicas=(1, 2) adding=() removing=()"
    )


def test_describe_log_dirs_keeps_deleted_records_bytes_until_retention():
    state = cluster(1)
    state.create_topic("t", 1, 1)
    partition = state.topics["t"].partitions[0]
    produce_records(state, "t", 0, b"a", b"b")
    size = partition.log.size_bytes
    state.delete_records(partition, 2)
    assert partition.log.log_start_offset == 2 and partition.log.size_bytes == size  # the segment stays

    def answered():
        response, _ = call(state, DESCRIBE_LOG_DIRS, 4, topics=[{"topic": "t", "partitions": [0]}])
        [result] = response.results
        return result.topics[0].partitions[0].partition_size, result.usable_bytes

    assert answered() == (size, TOTAL_BYTES - size)  # Kafka's active segment still holds them
    produce_records(state, "t", 0, b"c")
    state.topics["t"].config.overrides["retention.ms"] = "0"
    assert state.apply_retention(10**13) == 2  # the one segment, holding both batches, expires whole
    assert answered() == (0, TOTAL_BYTES)

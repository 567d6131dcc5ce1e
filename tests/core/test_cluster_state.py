"""The cluster's core state with explicit time: topics, leaders, brokers stopping and starting,
coordinator moves, periodic checks, and the events each change records."""

from __future__ import annotations

import pytest

from fakebroker.core.cluster_state import ClusterState, TopicError
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.groups.requests import CommitRequest
from fakebroker.core.groups.service import OffsetToCommit
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E


def cluster(brokers: int = 3, **config) -> ClusterState:
    state = ClusterState("c", BrokerConfig({"group.initial.rebalance.delay.ms": 0, **config}))
    for node in range(brokers):
        state.broker_started(node, "127.0.0.1", 9092 + node, 0)
    return state


def kinds(state: ClusterState) -> list[str]:
    return [e.kind for e in state.events]


def test_topics_are_created_with_kafkas_checks_and_spread_over_brokers():
    state = cluster()
    topic = state.create_topic("orders", 6, 2)
    assert [p.replicas for p in topic.partitions][:3] == [[0, 1], [1, 2], [2, 0]]
    assert [p.leader for p in topic.partitions] == [0, 1, 2, 0, 1, 2]
    assert state.topics_by_id[topic.topic_id] is topic
    with pytest.raises(TopicError) as exists:
        state.create_topic("orders", 1)
    assert exists.value.code == E.TOPIC_ALREADY_EXISTS
    with pytest.raises(TopicError) as too_many:
        state.create_topic("wide", 1, 4)
    assert too_many.value.code == E.INVALID_REPLICATION_FACTOR
    with pytest.raises(TopicError) as bad_name:
        state.create_topic("a/b")
    assert bad_name.value.code == E.INVALID_TOPIC_EXCEPTION
    state.create_topic("dry", 1, validate_only=True)
    assert "dry" not in state.topics
    assert [e.describe() for e in state.events if e.kind == "topic_created"] == [
        "topic_created topic=orders partitions=6"
    ]


def test_partitions_grow_and_topics_go_with_events():
    state = cluster()
    state.create_topic("t", 2)
    with pytest.raises(TopicError) as fewer:
        state.create_partitions("t", 1)
    assert fewer.value.code == E.INVALID_PARTITIONS
    state.create_partitions("t", 4)
    assert len(state.topics["t"].partitions) == 4
    deleted = state.delete_topic("t")
    assert "t" not in state.topics and deleted.topic_id not in state.topics_by_id
    assert kinds(state)[-2:] == ["partitions_created", "topic_deleted"]


def test_a_stopped_broker_hands_leadership_to_the_next_replica_or_takes_the_partition_offline():
    state = cluster()
    replicated = state.create_topic("r", 3, 2)
    single = state.create_topic("s", 3, 1)
    led_by_1 = [p.index for p in replicated.partitions if p.leader == 1]
    assert state.broker_stopped(1, 1_000) is True and state.broker_stopped(1, 1_000) is False
    assert all(p.leader != 1 for p in replicated.partitions)
    assert all(replicated.partitions[i].leader_epoch == 1 for i in led_by_1)
    offline = [p for p in single.partitions if p.replicas == [1]]
    assert offline and all(p.leader == -1 for p in offline)
    assert [b.node_id for b in state.alive_brokers()] == [0, 2]
    state.broker_started(1, "127.0.0.1", 9093, 2_000)  # back: offline partitions return to it, moved ones stay moved
    assert all(p.leader == 1 for p in offline)
    assert all(replicated.partitions[i].leader != 1 for i in led_by_1)
    assert state.elect_preferred_leaders(3_000) == len(led_by_1)
    assert all(p.leader == p.replicas[0] for p in replicated.partitions)
    reasons = [e.reason for e in state.events if e.kind == "leader_moved"]
    assert "broker 1 stopped" in reasons and "replica back" in reasons and "preferred" in reasons


def test_the_coordinator_is_the_leader_of_the_groups_offsets_partition():
    state = cluster(**{"offsets.topic.num.partitions": 5})
    offsets = state.offsets_topic()
    assert offsets.internal and len(offsets.partitions) == 5 and "__consumer_offsets" not in kinds(state)
    partition = offsets.partitions[state.groups.partition_of("my-group")]
    assert state.groups.coordinator_of("my-group") == partition.leader
    state.broker_stopped(partition.leader, 0)
    assert state.groups.coordinator_of("my-group") == partition.leader != -1  # moved with the leadership


def test_appends_validate_dedupe_and_record_rejections():
    state = cluster(1)
    partition = state.create_topic("t", 1).partitions[0]
    batch = rec.build_batch([(b"k", b"v", [], 5)], producer_id=7, producer_epoch=0, base_sequence=0)
    first = state.append(partition, batch, produce_version=9, transactional_id=None, now_ms=10)
    again = state.append(partition, batch, produce_version=9, transactional_id=None, now_ms=11)
    assert (first.error, first.base_offset, first.appended) == (E.NONE, 0, True)
    assert (again.error, again.base_offset) == (E.NONE, 0) and partition.log.high_watermark == 1  # a retry: no copy
    broken = bytearray(rec.build_batch([(b"k", b"v", [], 5)]))
    broken[-1] ^= 0xFF  # the CRC no longer matches
    bad = state.append(partition, bytes(broken), produce_version=9, transactional_id=None, now_ms=12)
    assert bad.error == E.CORRUPT_MESSAGE and not bad.appended
    assert [e.kind for e in state.events][-1] == "produce_rejected"


def test_periodic_checks_are_timers_of_the_core():
    state = cluster(1, **{"log.retention.check.interval.ms": 1_000, "offsets.retention.check.interval.ms": 5_000})
    # segment.ms 5 s: the second batch, 10 s younger than the first, rolls a new segment
    topic = state.create_topic("t", 1, configs={"retention.ms": "100", "segment.ms": "5000"})
    partition = topic.partitions[0]
    state.append(
        partition, rec.build_batch([(None, b"old", [], 0)]), produce_version=9, transactional_id=None, now_ms=0
    )
    state.append(
        partition, rec.build_batch([(None, b"new", [], 10_000)]), produce_version=9, transactional_id=None, now_ms=0
    )
    state.start_periodic_checks(0)
    assert state.next_deadline() == 1_000
    state.tick(1_000)  # the first segment's newest record is older than 100 ms: deleted
    assert partition.log.log_start_offset == 1 and state.next_deadline() == 2_000
    assert [e.batches_dropped for e in state.events if e.kind == "retention_applied"] == [1]


def test_forgetting_groups_drops_offsets_too():
    state = cluster(1)
    commit = CommitRequest("g", "", None, -1, 8)
    assert state.groups.commit(0, state.groups.coordinator_of("g"), commit, [OffsetToCommit("t", 0, 5, -1, "")]) == [
        E.NONE
    ]
    state.groups.forget(["g"])
    assert "g" not in state.groups.classic.groups and state.groups.offsets.fetch("g", None) == []
    assert kinds(state)[-1] == "group_forgotten"


def test_the_controller_is_a_live_broker():
    state = ClusterState("c")
    for node in range(3):
        state.broker_started(node, "127.0.0.1", 9092 + node, 0)
    assert state.controller_id == 0
    state.broker_stopped(0, 1)
    assert state.controller_id == 1  # Metadata's controller_id names a live node, as a KRaft broker's does
    state.broker_stopped(1, 2)
    state.broker_stopped(2, 3)
    assert state.controller_id == 2  # nobody left to name
    state.broker_started(0, "127.0.0.1", 9092, 4)
    assert state.controller_id == 0

"""Cluster and admin APIs, called directly: ApiVersions (18), CreateTopics (19), DeleteTopics (20),
CreatePartitions (37), DeleteRecords (21), Metadata (3), InitProducerId (22) and
IncrementalAlterConfigs (44)."""

from __future__ import annotations

import uuid

import pytest

from fakebroker.apis import REGISTRY
from fakebroker.apis.api_versions import unsupported_version_response
from fakebroker.core.configs import SOURCE_DEFAULT, SOURCE_TOPIC
from fakebroker.core.events import ProducerId
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.primitives import ZERO_UUID
from fakebroker.protocol.specs import release_windows

from .support import CLUSTER_ID, FIRST_PORT, HOST, call, cluster, events_after, kinds_after, produce_records

METADATA, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, INIT_PRODUCER_ID = 3, 18, 19, 20, 21, 22
CREATE_PARTITIONS, INCREMENTAL_ALTER_CONFIGS = 37, 44
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET, DELETE, APPEND = 0, 1, 2


# -- ApiVersions -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 3, 4, 5])
def test_api_versions_lists_every_declared_api_cut_to_the_release_window(version):
    state = cluster(1)
    response, _ = call(state, API_VERSIONS, version, client_software_name="tests", client_software_version="1")
    assert response.error_code == E.NONE
    window = release_windows("4.4")
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (a.key, max(a.min_version, window[a.key][0]), min(a.max_version, window[a.key][1]))
        for a in sorted(REGISTRY.values(), key=lambda a: a.key)
    ]


def test_a_too_new_api_versions_is_answered_with_our_api_versions_range_only():
    assert unsupported_version_response() == {
        "error_code": E.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": API_VERSIONS, "min_version": 0, "max_version": 5}],
    }
    assert unsupported_version_response("4.3")["api_keys"] == [
        {"api_key": API_VERSIONS, "min_version": 0, "max_version": 4}
    ]


# -- CreateTopics ----------------------------------------------------------------------------------


def creatable(name, partitions=-1, replication=-1, configs=None, assignments=None):
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication,
        "assignments": assignments or [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def create_topics(state, *topics, version=7, validate_only=False):
    return call(state, CREATE_TOPICS, version, topics=list(topics), timeout_ms=30_000, validate_only=validate_only)


def test_create_topics_creates_and_describes_the_topic():
    state = cluster(3)
    mark = len(state.events)
    response, _ = create_topics(state, creatable("orders", 3, 2, {"retention.ms": "1000"}))
    [result] = response.topics
    topic = state.topics["orders"]
    assert (result.name, result.error_code, result.error_message, result.topic_id) == (
        "orders",
        E.NONE,
        None,
        topic.topic_id,
    )
    assert (result.num_partitions, result.replication_factor) == (3, 2)
    configs = {c.name: (c.value, c.config_source) for c in result.configs}
    assert configs["retention.ms"] == ("1000", SOURCE_TOPIC)
    assert configs["cleanup.policy"] == ("delete", SOURCE_DEFAULT)
    assert [len(p.replicas) for p in topic.partitions] == [2, 2, 2]
    assert {p.leader for p in topic.partitions} == {0, 1, 2}
    [event] = events_after(state, mark)
    assert (event.kind, event.topic, event.partitions, event.auto) == ("topic_created", "orders", 3, None)


def test_create_topics_with_broker_defaults_and_explicit_assignments():
    state = cluster(2)
    response, _ = create_topics(
        state,
        creatable("defaults"),
        creatable(
            "placed",
            assignments=[{"partition_index": 0, "broker_ids": [1, 0]}, {"partition_index": 1, "broker_ids": [0, 1]}],
        ),
    )
    assert [(t.name, t.error_code, t.num_partitions, t.replication_factor) for t in response.topics] == [
        ("defaults", E.NONE, 1, 1),
        ("placed", E.NONE, 2, 2),
    ]
    assert [(p.replicas, p.leader) for p in state.topics["placed"].partitions] == [([1, 0], 1), ([0, 1], 0)]


def test_create_topics_refusals():
    state = cluster(1)
    state.create_topic("exists", 1)
    mark = len(state.events)
    response, _ = create_topics(
        state,
        creatable("exists"),
        creatable("too-replicated", 1, 2),
        creatable("no-partitions", 0, 1),
        creatable("bad name!"),
    )
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("exists", E.TOPIC_ALREADY_EXISTS),
        ("too-replicated", E.INVALID_REPLICATION_FACTOR),
        ("no-partitions", E.INVALID_PARTITIONS),
        ("bad name!", E.INVALID_TOPIC_EXCEPTION),
    ]
    assert all(
        (t.num_partitions, t.replication_factor, t.configs, t.topic_id) == (-1, -1, [], ZERO_UUID)
        for t in response.topics
    )
    assert kinds_after(state, mark) == []


def test_a_name_differing_only_by_dot_and_underscore_collides():
    # Kafka refuses it: '.' and '_' map to the same metric name
    state = cluster(1)
    state.create_topic("orders.eu", 1)
    response, _ = create_topics(state, creatable("orders_eu"), creatable("orders-eu"))
    assert [(t.name, t.error_code, t.error_message) for t in response.topics] == [
        ("orders_eu", E.INVALID_TOPIC_EXCEPTION, "Topic 'orders_eu' collides with existing topic: orders.eu"),
        ("orders-eu", E.NONE, None),
    ]
    assert "orders_eu" not in state.topics


def test_a_name_given_twice_is_invalid_request_and_creates_nothing_of_that_name():
    state = cluster(1)
    mark = len(state.events)
    response, _ = create_topics(state, creatable("dup"), creatable("ok"), creatable("dup"))
    by_name = {}
    for t in response.topics:
        by_name.setdefault(t.name, set()).add(t.error_code)
    assert by_name == {"dup": {E.INVALID_REQUEST}, "ok": {E.NONE}}
    assert "dup" not in state.topics and "ok" in state.topics
    assert [(e.kind, e.topic) for e in events_after(state, mark)] == [("topic_created", "ok")]


def test_a_name_given_twice_is_answered_once_as_kafka_does():
    state = cluster(1)
    response, _ = create_topics(state, creatable("dup"), creatable("ok"), creatable("dup"))
    assert sorted((t.name, t.error_code, t.error_message) for t in response.topics) == [
        ("dup", E.INVALID_REQUEST, "Duplicate topic name."),
        ("ok", E.NONE, None),
    ]


@pytest.mark.parametrize("configs", [{"retention.ms": "soon"}, {"no.such.config": "1"}, {"cleanup.policy": "shred"}])
def test_an_invalid_config_is_invalid_config_and_creates_nothing(configs):
    state = cluster(1)
    mark = len(state.events)
    response, ctx = create_topics(state, creatable("t", 1, 1, configs))
    [result] = response.topics
    assert (result.error_code, result.num_partitions, result.configs) == (E.INVALID_CONFIG, -1, [])
    assert list(configs)[0] in result.error_message
    assert "t" not in state.topics and kinds_after(state, mark) == [] and not ctx.effects.data_changed


def test_validate_only_answers_as_for_a_creation_but_creates_nothing():
    state = cluster(2)
    mark = len(state.events)
    response, ctx = create_topics(state, creatable("t", 3, 2), validate_only=True)
    [result] = response.topics
    assert (result.name, result.error_code, result.num_partitions, result.replication_factor) == ("t", E.NONE, 3, 2)
    assert "t" not in state.topics and not state.topics_by_id
    assert kinds_after(state, mark) == [] and not ctx.effects.data_changed
    # and the name is still free
    assert create_topics(state, creatable("t", 3, 2))[0].topics[0].error_code == E.NONE


def test_create_topics_reports_changed_data():
    state = cluster(1)
    _, ctx = create_topics(state, creatable("t", 1, 1))
    assert ctx.effects.data_changed


# -- DeleteTopics ----------------------------------------------------------------------------------


def test_delete_topics_by_name():
    state = cluster(1)
    topic = state.create_topic("t", 1)
    mark = len(state.events)
    response, ctx = call(state, DELETE_TOPICS, 5, topic_names=["t", "nope"], timeout_ms=30_000)
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("t", E.NONE),
        ("nope", E.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert "t" not in state.topics and topic.topic_id not in state.topics_by_id
    assert [(e.kind, e.topic) for e in events_after(state, mark)] == [("topic_deleted", "t")]
    assert ctx.effects.data_changed


def test_delete_topics_by_id():
    state = cluster(1)
    topic = state.create_topic("t", 1)
    unknown = uuid.UUID(int=7)
    mark = len(state.events)
    response, ctx = call(
        state,
        DELETE_TOPICS,
        6,
        timeout_ms=30_000,
        topics=[{"name": None, "topic_id": topic.topic_id}, {"name": None, "topic_id": unknown}],
    )
    assert [(r.name, r.topic_id, r.error_code) for r in response.responses] == [
        ("t", topic.topic_id, E.NONE),
        (None, unknown, E.UNKNOWN_TOPIC_ID),
    ]
    assert "t" not in state.topics and ctx.effects.data_changed
    assert [(e.kind, e.topic) for e in events_after(state, mark)] == [("topic_deleted", "t")]


def test_delete_topics_v6_by_name():
    state = cluster(1)
    topic = state.create_topic("t", 1)
    response, _ = call(state, DELETE_TOPICS, 6, timeout_ms=30_000, topics=[{"name": "t", "topic_id": ZERO_UUID}])
    assert [(r.name, r.topic_id, r.error_code) for r in response.responses] == [("t", topic.topic_id, E.NONE)]


@pytest.mark.parametrize("named", ["neither", "both"])
def test_delete_topics_v6_with_neither_or_both_as_kafka_answers(named):
    state = cluster(1)
    topic = state.create_topic("t", 1)
    entry = {"name": None, "topic_id": ZERO_UUID} if named == "neither" else {"name": "t", "topic_id": topic.topic_id}
    response, _ = call(state, DELETE_TOPICS, 6, timeout_ms=30_000, topics=[entry])
    message = (
        "Neither topic name nor id were specified."
        if named == "neither"
        else "You may not specify both topic name and topic id."
    )
    assert [(r.error_code, r.error_message) for r in response.responses] == [(E.INVALID_REQUEST, message)]
    assert "t" in state.topics


# -- CreatePartitions ------------------------------------------------------------------------------


def create_partitions(state, name, count, *, validate_only=False, assignments=None):
    return call(
        state,
        CREATE_PARTITIONS,
        3,
        timeout_ms=30_000,
        validate_only=validate_only,
        topics=[{"name": name, "count": count, "assignments": assignments}],
    )


def test_create_partitions_adds_partitions():
    state = cluster(2)
    state.create_topic("t", 1, 2)
    mark = len(state.events)
    response, ctx = create_partitions(state, "t", 3)
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [("t", E.NONE, None)]
    assert [p.index for p in state.topics["t"].partitions] == [0, 1, 2]
    assert all(len(p.replicas) == 2 for p in state.topics["t"].partitions)
    assert [(e.kind, e.topic, e.count) for e in events_after(state, mark)] == [("partitions_created", "t", 3)]
    assert ctx.effects.data_changed


def test_create_partitions_refusals_and_validate_only():
    state = cluster(1)
    state.create_topic("t", 2)
    mark = len(state.events)
    assert create_partitions(state, "t", 1)[0].results[0].error_code == E.INVALID_PARTITIONS
    assert create_partitions(state, "t", 2)[0].results[0].error_code == E.INVALID_PARTITIONS
    assert create_partitions(state, "nope", 3)[0].results[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    response, ctx = create_partitions(state, "t", 4, validate_only=True)
    assert response.results[0].error_code == E.NONE and not ctx.effects.data_changed
    assert len(state.topics["t"].partitions) == 2 and kinds_after(state, mark) == []


# -- DeleteRecords ---------------------------------------------------------------------------------


def delete_records(state, offset, *, topic="t", partition=0, broker=None):
    if broker is None:
        known = state.partition(topic, partition)
        broker = known.leader if known is not None else 0
    response, ctx = call(
        state,
        DELETE_RECORDS,
        2,
        broker=broker,
        timeout_ms=30_000,
        topics=[{"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}],
    )
    [answer] = response.topics[0].partitions
    return answer, ctx


def test_delete_records_moves_the_low_watermark():
    state = cluster(1)
    state.create_topic("t", 1)
    for value in (b"a", b"b", b"c"):
        produce_records(state, "t", 0, value)
    mark = len(state.events)
    answer, ctx = delete_records(state, 2)
    assert (answer.partition_index, answer.error_code, answer.low_watermark) == (0, E.NONE, 2)
    assert state.partition("t", 0).log.log_start_offset == 2 and ctx.effects.data_changed
    [event] = events_after(state, mark)
    assert (event.kind, event.topic, event.partition, event.before) == ("records_deleted", "t", 0, 2)

    answer, _ = delete_records(state, -1)  # up to the high watermark
    assert (answer.error_code, answer.low_watermark) == (E.NONE, 3)


def test_delete_records_refusals():
    state = cluster(2)
    state.create_topic("t", 1)
    produce_records(state, "t", 0, b"a")
    mark = len(state.events)
    answer, ctx = delete_records(state, 5)
    assert (answer.error_code, answer.low_watermark) == (E.OFFSET_OUT_OF_RANGE, -1)
    assert not ctx.effects.data_changed
    wrong = 1 - state.partition("t", 0).leader
    assert delete_records(state, 1, broker=wrong)[0].error_code == E.NOT_LEADER_OR_FOLLOWER
    assert delete_records(state, 1, partition=4)[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert delete_records(state, 1, topic="nope")[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert kinds_after(state, mark) == [] and state.partition("t", 0).log.log_start_offset == 0


# -- Metadata --------------------------------------------------------------------------------------


def metadata(state, *names, version=12, allow_auto_topic_creation=True):
    topics = None if names == (None,) else [{"name": n} for n in names]
    return call(
        state,
        METADATA,
        version,
        topics=topics,
        allow_auto_topic_creation=allow_auto_topic_creation,
        include_topic_authorized_operations=False,
    )[0]


def test_metadata_describes_brokers_and_topics():
    state = cluster(2)
    topic = state.create_topic("t", 2, 2)
    response = metadata(state, None)
    assert [b.to_dict() for b in response.brokers] == [
        {"node_id": n, "host": HOST, "port": FIRST_PORT + n, "rack": None} for n in (0, 1)
    ]
    assert (response.cluster_id, response.controller_id) == (CLUSTER_ID, 0)
    [described] = response.topics
    assert (described.name, described.error_code, described.topic_id, described.is_internal) == (
        "t",
        E.NONE,
        topic.topic_id,
        False,
    )
    assert [
        (p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) for p in described.partitions
    ] == [(p.index, p.leader, 0, p.replicas, p.replicas) for p in topic.partitions]


def test_metadata_auto_creates_a_missing_topic():
    state = cluster(1)
    mark = len(state.events)
    response = metadata(state, "fresh")
    [described] = response.topics
    # Kafka 4.4 answers the request that starts the creation UNKNOWN_TOPIC_OR_PARTITION ...
    assert (described.name, described.error_code, described.partitions) == ("fresh", E.UNKNOWN_TOPIC_OR_PARTITION, [])
    [event] = events_after(state, mark)
    assert (event.kind, event.topic, event.partitions, event.auto) == ("topic_created", "fresh", 1, True)
    # ... and describes the topic from the next request on
    [described] = metadata(state, "fresh").topics
    assert (described.error_code, len(described.partitions)) == (E.NONE, 1)
    assert described.topic_id == state.topics["fresh"].topic_id


@pytest.mark.parametrize(
    ("config", "allow", "version"),
    [
        ({"auto.create.topics.enable": False}, True, 12),  # disabled on the broker
        ({}, False, 12),  # not allowed by the request (v4+)
    ],
)
def test_metadata_does_not_auto_create_when_disabled(config, allow, version):
    state = cluster(1, config)
    mark = len(state.events)
    [described] = metadata(state, "fresh", version=version, allow_auto_topic_creation=allow).topics
    assert (described.name, described.error_code) == ("fresh", E.UNKNOWN_TOPIC_OR_PARTITION)
    assert "fresh" not in state.topics and kinds_after(state, mark) == []


def test_metadata_v3_always_allows_auto_creation():
    state = cluster(1)
    [described] = metadata(state, "fresh", version=3, allow_auto_topic_creation=False).topics
    assert described.error_code == E.UNKNOWN_TOPIC_OR_PARTITION and "fresh" in state.topics


def test_metadata_of_an_invalid_name_is_invalid_topic_exception():
    state = cluster(1)
    mark = len(state.events)
    [described] = metadata(state, "no spaces allowed").topics
    assert described.error_code == E.INVALID_TOPIC_EXCEPTION and kinds_after(state, mark) == []


def test_metadata_by_unknown_topic_id_is_unknown_topic_id():
    state = cluster(1)
    unknown = uuid.UUID(int=9)
    response, _ = call(
        state, METADATA, 12, topics=[{"name": None, "topic_id": unknown}], allow_auto_topic_creation=True
    )
    assert [(t.error_code, t.name, t.topic_id) for t in response.topics] == [(E.UNKNOWN_TOPIC_ID, None, unknown)]


@pytest.mark.parametrize("name", [None, ""])
def test_metadata_by_topic_id_with_a_null_or_empty_name(name):
    # The Java client asks for topics it knows only by id (from a KIP-848 assignment) with name ""
    state = cluster(1)
    topic = state.create_topic("pay-eu", 2)
    response, _ = call(
        state, METADATA, 12, topics=[{"name": name, "topic_id": topic.topic_id}], allow_auto_topic_creation=False
    )
    assert [(t.error_code, t.name, t.topic_id, len(t.partitions)) for t in response.topics] == [
        (E.NONE, "pay-eu", topic.topic_id, 2)
    ]


def test_metadata_marks_partitions_of_a_stopped_leader():
    state = cluster(1)
    state.create_topic("t", 1)
    state.broker_stopped(0, 0)
    [described] = metadata(state, "t").topics
    [partition] = described.partitions
    assert (partition.error_code, partition.leader_id, partition.offline_replicas) == (E.LEADER_NOT_AVAILABLE, -1, [0])


# -- InitProducerId --------------------------------------------------------------------------------


def init_producer_id(state, transactional_id=None, producer_id=-1, producer_epoch=-1, version=5):
    return call(
        state,
        INIT_PRODUCER_ID,
        version,
        transactional_id=transactional_id,
        transaction_timeout_ms=60_000,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )[0]


def test_init_producer_id_hands_out_ids_and_records_them():
    state = cluster(1)
    mark = len(state.events)
    first, second = init_producer_id(state), init_producer_id(state)
    assert [(r.error_code, r.producer_epoch) for r in (first, second)] == [(E.NONE, 0), (E.NONE, 0)]
    assert second.producer_id == first.producer_id + 1
    assert [(e.kind, e.producer_id, e.epoch, e.transactional_id) for e in events_after(state, mark)] == [
        ("producer_id", first.producer_id, 0, None),
        ("producer_id", second.producer_id, 0, None),
    ]


def test_init_producer_id_of_a_transactional_id_bumps_its_epoch():
    state = cluster(1)
    first = init_producer_id(state, "tx")
    again = init_producer_id(state, "tx")
    assert (again.error_code, again.producer_id, again.producer_epoch) == (E.NONE, first.producer_id, 1)
    assert [(e.producer_id, e.epoch, e.transactional_id) for e in state.events.of_kind(ProducerId)] == [
        (first.producer_id, 0, "tx"),
        (first.producer_id, 1, "tx"),
    ]


# -- IncrementalAlterConfigs -----------------------------------------------------------------------


def alter(state, resource_type, name, *ops, validate_only=False):
    configs = [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]
    response, _ = call(
        state,
        INCREMENTAL_ALTER_CONFIGS,
        1,
        validate_only=validate_only,
        resources=[{"resource_type": resource_type, "resource_name": name, "configs": configs}],
    )
    [answer] = response.responses
    return answer


def test_incremental_alter_configs_sets_and_records_the_change():
    state = cluster(1)
    topic = state.create_topic("t", 1)
    mark = len(state.events)
    answer = alter(state, TOPIC_RESOURCE, "t", ("retention.ms", SET, "5000"), ("cleanup.policy", APPEND, "compact"))
    assert (answer.error_code, answer.error_message, answer.resource_type, answer.resource_name) == (
        E.NONE,
        None,
        TOPIC_RESOURCE,
        "t",
    )
    assert topic.config.overrides == {"retention.ms": "5000", "cleanup.policy": "delete,compact"}
    [event] = events_after(state, mark)
    assert (event.kind, event.resource, event.configs) == (
        "configs_altered",
        "t",
        {"retention.ms": "5000", "cleanup.policy": "delete,compact"},
    )

    alter(state, TOPIC_RESOURCE, "t", ("retention.ms", DELETE, ""))
    assert topic.config.overrides == {"cleanup.policy": "delete,compact"}
    assert state.events[-1].configs == {"cleanup.policy": "delete,compact"}


def test_incremental_alter_configs_of_the_brokers():
    state = cluster(1)
    mark = len(state.events)
    answer = alter(state, BROKER_RESOURCE, "", ("log.retention.ms", SET, "1000"))
    assert answer.error_code == E.NONE and state.config.get("log.retention.ms") == "1000"
    assert [(e.kind, e.resource) for e in events_after(state, mark)] == [("configs_altered", "(cluster)")]


def test_incremental_alter_configs_refusals_change_nothing():
    state = cluster(1)
    topic = state.create_topic("t", 1)
    mark = len(state.events)
    assert alter(state, TOPIC_RESOURCE, "t", ("retention.ms", SET, "soon")).error_code == E.INVALID_CONFIG
    assert alter(state, TOPIC_RESOURCE, "t", ("retention.ms", APPEND, "1")).error_code == E.INVALID_CONFIG
    # as Kafka (probe incremental_alter_configs): it fails decoding the operation
    assert alter(state, TOPIC_RESOURCE, "t", ("retention.ms", 9, "1")).error_code == E.UNKNOWN_SERVER_ERROR
    assert alter(state, TOPIC_RESOURCE, "nope", ("retention.ms", SET, "1")).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    validated = alter(state, TOPIC_RESOURCE, "t", ("retention.ms", SET, "1"), validate_only=True)
    assert validated.error_code == E.NONE
    assert topic.config.overrides == {} and kinds_after(state, mark) == []

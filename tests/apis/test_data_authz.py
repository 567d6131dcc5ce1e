"""Kafka's authorization checks in the data, transaction and admin handlers (issue 37), through
the handlers with Kafka 4.4's StandardAuthorizer configured: which operation on which resource
each API asks, in Kafka's order (KafkaApis, ControllerApis), and the shape of each refusal.
Every answer is encoded at the version asked. Without an authorizer nothing changes: the rest
of tests/apis runs without one. The decisions themselves are tested in tests/core."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakebroker.apis import RequestContext, dispatch
from fakebroker.apis.context import CloseInstead, Steps, Wait
from fakebroker.core.configs import STANDARD_AUTHORIZER
from fakebroker.core.security.acls import CLUSTER_NAME, Acl, PatternType, Permission
from fakebroker.core.security.acls import Operation as O  # noqa: N817
from fakebroker.core.security.acls import ResourceType as R  # noqa: N817
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import Message, request_type
from fakebroker.protocol.primitives import ZERO_UUID

from .support import batch, cluster, encodes

ON = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
ALICE, ADMIN = "User:alice", "User:admin"
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, INIT_PRODUCER_ID = 19, 20, 21, 22
OFFSET_FOR_LEADER_EPOCH, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 23, 24, 25, 26, 28
DESCRIBE_CONFIGS, ALTER_CONFIGS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS = 32, 33, 35, 37
ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 43, 44, 45, 46
DESCRIBE_QUOTAS, ALTER_QUOTAS, DESCRIBE_SCRAM, ALTER_SCRAM = 48, 49, 50, 51
DESCRIBE_QUORUM, UPDATE_FEATURES, DESCRIBE_CLUSTER, DESCRIBE_PRODUCERS = 55, 57, 60, 61
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS, LIST_CONFIG_RESOURCES, DESCRIBE_TOPIC_PARTITIONS = 65, 66, 74, 75
TOPIC_OPS = 3576  # READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS
CLUSTER_OPS = 8096
OMITTED = -(2**31)


def state_with(*acls: tuple, topics: dict[str, int] | None = None, **config: Any):
    """A one-broker cluster with the authorizer on, the topics created, and ACLs given as
    (principal, operation, resource type, name[, pattern[, permission]])."""
    state = cluster(config={**ON, **{k.replace("_", "."): v for k, v in config.items()}})
    for name, partitions in (topics or {"orders": 2}).items():
        state.create_topic(name, partitions)
    grant(state, *acls)
    return state


def grant(state, *acls: tuple) -> None:
    made = []
    for principal, op, rt, name, *rest in acls:
        pattern = rest[0] if rest else PatternType.LITERAL
        permission = rest[1] if len(rest) > 1 else Permission.ALLOW
        made.append(Acl(rt, name, pattern, principal, "*", op, permission))
    assert all(code == E.NONE for code, _ in state.authorizer.create(made, 0))


def call(state, api_key: int, version: int, principal: str = ALICE, now_ms: int = 0, **fields: Any):
    """Answer one request as ``principal``: the answer (run to the end), or what the handler returned."""
    kind = request_type(api_key)
    request = kind.decode(kind.encode(kind.new(**fields), version), version)
    ctx = RequestContext(
        state, 0, api_key, version, correlation_id=7, client_id="t", now_ms=now_ms, principal=principal
    )
    result = dispatch(ctx, request)
    if isinstance(result, Steps):
        result = result.finish()
    if isinstance(result, Wait):
        result = result.poll(now_ms, True)
    if isinstance(result, (Message, dict)):
        encodes(api_key, version, result)
    return result


# -- Produce, Fetch, ListOffsets ---------------------------------------------------------------


def produce(state, topics: dict[str, list[int]], principal=ALICE, version=9, acks=-1, tid=None, records=None):
    data = records or batch(b"v")
    response = call(
        state,
        PRODUCE,
        version,
        principal,
        acks=acks,
        timeout_ms=1000,
        transactional_id=tid,
        topic_data=[
            {"name": t, "partition_data": [{"index": i, "records": data} for i in ps]} for t, ps in topics.items()
        ],
    )
    if not isinstance(response, Message):
        return response
    return {(t.name, p.index): p.error_code for t in response.responses for p in t.partition_responses}


def test_produce_needs_write_on_each_topic_before_its_existence():
    state = state_with((ALICE, O.WRITE, R.TOPIC, "orders"), topics={"orders": 2, "audit": 1})
    assert produce(state, {"orders": [0, 1], "audit": [0], "ghost": [0]}) == {
        ("orders", 0): E.NONE,
        ("orders", 1): E.NONE,
        ("audit", 0): E.TOPIC_AUTHORIZATION_FAILED,
        ("ghost", 0): E.TOPIC_AUTHORIZATION_FAILED,  # existence not told
    }
    assert state.partition("audit", 0).log.log_end_offset == 0
    # ALL allows WRITE; a super user needs no ACL; an unknown topic allowed is unknown
    grant(state, (ALICE, O.ALL, R.TOPIC, "gh", PatternType.PREFIXED))
    assert produce(state, {"ghost": [0]}) == {("ghost", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert produce(state, {"audit": [0]}, principal=ADMIN) == {("audit", 0): E.NONE}


def test_produce_by_topic_id_answers_an_unknown_id_before_authorization():
    state = state_with(topics={"orders": 1})
    known = state.topics["orders"].topic_id
    response = call(
        state,
        PRODUCE,
        13,
        acks=-1,
        timeout_ms=1000,
        transactional_id=None,
        topic_data=[
            {"topic_id": known, "partition_data": [{"index": 0, "records": batch(b"v")}]},
            {"topic_id": ZERO_UUID, "partition_data": [{"index": 0, "records": batch(b"v")}]},
        ],
    )
    assert [(t.topic_id, t.partition_responses[0].error_code) for t in response.responses] == [
        (known, E.TOPIC_AUTHORIZATION_FAILED),
        (ZERO_UUID, E.UNKNOWN_TOPIC_ID),
    ]


def test_a_transactional_produce_needs_write_on_its_transactional_id_first():
    state = state_with((ALICE, O.WRITE, R.TOPIC, "orders"))
    txn = batch(b"v", producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    # every partition, the allowed topic's too, and no partition checked further
    assert produce(state, {"orders": [0, 1], "ghost": [0]}, tid="tx", records=txn) == {
        ("orders", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("orders", 1): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("ghost", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
    # granted, the batch goes on to the topic checks and the coordinator's
    grant(state, (ALICE, O.WRITE, R.TRANSACTIONAL_ID, "tx"))
    got = produce(state, {"orders": [0], "audit": [0]}, tid="tx", records=txn)
    assert got[("audit", 0)] == E.TOPIC_AUTHORIZATION_FAILED
    assert got[("orders", 0)] != E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # a plain (idempotent) batch asks nothing of the transactional id
    assert produce(state, {"orders": [0]}, tid="other") == {("orders", 0): E.NONE}


def test_an_unacknowledged_produce_refused_closes_the_connection():
    state = state_with((ALICE, O.WRITE, R.TOPIC, "orders"), topics={"orders": 1, "audit": 1})
    assert produce(state, {"orders": [0]}, acks=0).__class__.__name__ == "_NoResponse"
    assert isinstance(produce(state, {"audit": [0]}, acks=0), CloseInstead)
    txn = batch(b"v", producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    assert isinstance(produce(state, {"orders": [0]}, acks=0, tid="tx", records=txn), CloseInstead)


def fetch(state, topics: dict[str, list[int]], principal=ALICE, version=12, replica_id=-1):
    response = call(
        state,
        FETCH,
        version,
        principal,
        replica_id=replica_id,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": t,
                "partitions": [{"partition": i, "fetch_offset": 0, "partition_max_bytes": 1 << 20} for i in ps],
            }
            for t, ps in topics.items()
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    return {
        (t.topic, p.partition_index): (p.error_code, len(p.records or b""))
        for t in response.responses
        for p in t.partitions
    }


def test_fetch_needs_read_on_each_topic_before_its_existence():
    state = state_with(
        (ALICE, O.READ, R.TOPIC, "orders"), (ALICE, O.WRITE, R.TOPIC, "*"), topics={"orders": 1, "audit": 1}
    )
    produce(state, {"orders": [0], "audit": [0]})
    got = fetch(state, {"orders": [0], "audit": [0], "ghost": [0]})
    assert got[("orders", 0)][0] == E.NONE and got[("orders", 0)][1] > 0
    assert got[("audit", 0)] == (E.TOPIC_AUTHORIZATION_FAILED, 0)
    assert got[("ghost", 0)] == (E.TOPIC_AUTHORIZATION_FAILED, 0)
    # WRITE does not imply READ; DESCRIBE is implied by READ, not the other way round
    grant(state, (ALICE, O.DESCRIBE, R.TOPIC, "audit"))
    assert fetch(state, {"audit": [0]})[("audit", 0)][0] == E.TOPIC_AUTHORIZATION_FAILED


def test_a_follower_fetch_needs_cluster_action():
    state = state_with((ALICE, O.READ, R.TOPIC, "orders"), topics={"orders": 1})
    assert fetch(state, {"orders": [0]}, replica_id=1)[("orders", 0)][0] == E.TOPIC_AUTHORIZATION_FAILED
    grant(state, ("User:replica", O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME))
    assert fetch(state, {"orders": [0]}, principal="User:replica", replica_id=1)[("orders", 0)][0] != (
        E.TOPIC_AUTHORIZATION_FAILED
    )


def test_list_offsets_needs_describe_and_answers_the_refused_last():
    state = state_with((ALICE, O.DESCRIBE, R.TOPIC, "orders"), topics={"audit": 1, "orders": 1})
    response = call(
        state,
        LIST_OFFSETS,
        7,
        replica_id=-1,
        isolation_level=0,
        topics=[
            {"name": n, "partitions": [{"partition_index": 0, "timestamp": -1}]} for n in ("audit", "orders", "ghost")
        ],
    )
    assert [(t.name, [(p.error_code, p.offset, p.timestamp) for p in t.partitions]) for t in response.topics] == [
        ("orders", [(E.NONE, 0, -1)]),
        ("audit", [(E.TOPIC_AUTHORIZATION_FAILED, -1, -1)]),
        ("ghost", [(E.TOPIC_AUTHORIZATION_FAILED, -1, -1)]),
    ]


# -- Metadata, DescribeTopicPartitions ---------------------------------------------------------


def metadata(state, names=None, principal=ALICE, version=12, auto_create=False, **fields):
    topics = None if names is None else [{"name": n} for n in names]
    return call(
        state,
        METADATA,
        version,
        principal,
        topics=topics,
        allow_auto_topic_creation=auto_create,
        include_topic_authorized_operations=fields.pop("topic_ops", False),
        **fields,
    )


def test_metadata_leaves_out_of_all_topics_what_the_principal_may_not_describe():
    state = state_with((ALICE, O.READ, R.TOPIC, "orders"), topics={"audit": 1, "orders": 2})
    assert [t.name for t in metadata(state).topics] == ["orders"]
    assert [t.name for t in metadata(state, principal=ADMIN).topics] == ["audit", "orders"]
    assert [t.name for t in metadata(state, [], version=0).topics] == ["orders"]  # v0: [] is every topic


def test_metadata_refuses_named_topics_without_telling_whether_they_exist():
    state = state_with((ALICE, O.DESCRIBE, R.TOPIC, "orders"), topics={"audit": 1, "orders": 2})
    got = {t.name: t for t in metadata(state, ["orders", "audit", "ghost"], topic_ops=True).topics}
    for name in ("audit", "ghost"):
        t = got[name]
        assert (t.error_code, t.topic_id, t.is_internal, t.partitions) == (
            E.TOPIC_AUTHORIZATION_FAILED,
            ZERO_UUID,
            False,
            [],
        )
        assert t.topic_authorized_operations == OMITTED
    assert got["orders"].error_code == E.NONE and len(got["orders"].partitions) == 2
    assert got["orders"].topic_authorized_operations == 1 << O.DESCRIBE  # DESCRIBE alone


def test_metadata_answers_named_topics_described_then_refused_create_then_refused_describe():
    """Kafka 4.4's KafkaApis (seen by the secured conformance probes): ``unknownTopicIdsTopicMetadata
    ++ topicMetadata ++ unauthorizedForCreateTopicMetadata ++ unauthorizedForDescribeTopicMetadata``,
    each group in the order asked."""
    state = state_with(
        (ALICE, O.DESCRIBE, R.TOPIC, "orders"),
        (ALICE, O.DESCRIBE, R.TOPIC, "new", PatternType.PREFIXED),
        topics={"audit": 1, "orders": 2, "zeta": 1},
        auto_create_topics_enable="true",
    )
    grant(state, (ALICE, O.DESCRIBE, R.TOPIC, "zeta"))
    answer = metadata(state, ["audit", "new-a", "orders", "hidden", "zeta"], auto_create=True).topics
    assert [(t.name, t.error_code) for t in answer] == [
        ("orders", E.NONE),
        ("zeta", E.NONE),
        ("new-a", E.TOPIC_AUTHORIZATION_FAILED),  # may describe, may not create
        ("audit", E.TOPIC_AUTHORIZATION_FAILED),  # may not describe
        ("hidden", E.TOPIC_AUTHORIZATION_FAILED),
    ]
    # by id: the ids nobody knows first
    ids = [state.topics["audit"].topic_id, uuid.UUID(int=7), state.topics["orders"].topic_id]
    topics = [{"name": None, "topic_id": i} for i in ids]
    by_id = call(state, METADATA, 12, topics=topics, allow_auto_topic_creation=False).topics
    assert [(t.name, t.topic_id, t.error_code) for t in by_id] == [
        (None, uuid.UUID(int=7), E.UNKNOWN_TOPIC_ID),
        ("orders", ids[2], E.NONE),
        (None, ids[0], E.TOPIC_AUTHORIZATION_FAILED),
    ]


def test_metadata_by_topic_id_refused_keeps_the_id_not_the_name():
    state = state_with(topics={"audit": 1})
    audit = state.topics["audit"].topic_id
    [t] = call(state, METADATA, 12, topics=[{"name": None, "topic_id": audit}], allow_auto_topic_creation=False).topics
    assert (t.error_code, t.name, t.topic_id, t.partitions) == (E.TOPIC_AUTHORIZATION_FAILED, None, audit, [])


def test_metadata_auto_creation_needs_create_on_the_cluster_or_the_topic():
    state = state_with((ALICE, O.DESCRIBE, R.TOPIC, "new", PatternType.PREFIXED), auto_create_topics_enable="true")
    [t] = metadata(state, ["new-a"], auto_create=True).topics
    assert (t.name, t.error_code, t.topic_id) == ("new-a", E.TOPIC_AUTHORIZATION_FAILED, ZERO_UUID)
    assert "new-a" not in state.topics
    grant(state, (ALICE, O.CREATE, R.TOPIC, "new-b"))
    assert metadata(state, ["new-b"], auto_create=True).topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert "new-b" in state.topics
    grant(state, (ALICE, O.CREATE, R.CLUSTER, CLUSTER_NAME))
    metadata(state, ["new-c"], auto_create=True)
    assert "new-c" in state.topics
    # a topic it may not describe is refused as any other, and not created
    metadata(state, ["other"], auto_create=True)
    assert "other" not in state.topics


def test_metadata_authorized_operations_are_the_principals():
    state = state_with((ALICE, O.READ, R.TOPIC, "orders"), (ALICE, O.ALTER, R.CLUSTER, CLUSTER_NAME))
    response = metadata(state, ["orders"], version=10, topic_ops=True, include_cluster_authorized_operations=True)
    assert response.topics[0].topic_authorized_operations == (1 << O.READ) | (1 << O.DESCRIBE)
    # ALTER implies DESCRIBE, so the cluster's operations are told
    assert response.cluster_authorized_operations == (1 << O.ALTER) | (1 << O.DESCRIBE)
    refused = metadata(state_with(), ["orders"], version=10, include_cluster_authorized_operations=True)
    assert refused.cluster_authorized_operations == 0
    admin = metadata(state, ["orders"], ADMIN, version=10, topic_ops=True, include_cluster_authorized_operations=True)
    assert (admin.topics[0].topic_authorized_operations, admin.cluster_authorized_operations) == (
        TOPIC_OPS,
        CLUSTER_OPS,
    )


def test_describe_topic_partitions_as_metadata():
    state = state_with((ALICE, O.READ, R.TOPIC, "b"), topics={"a": 1, "b": 2, "c": 1})

    def describe(names, limit=2000, cursor=None):
        return call(
            state,
            DESCRIBE_TOPIC_PARTITIONS,
            0,
            topics=[{"name": n} for n in names],
            response_partition_limit=limit,
            cursor=cursor,
        )

    assert [t.name for t in describe([]).topics] == ["b"]
    got = describe(["c", "b", "ghost"])
    assert [(t.name, t.error_code, t.topic_authorized_operations) for t in got.topics] == [
        ("b", E.NONE, (1 << O.READ) | (1 << O.DESCRIBE)),
        ("c", E.TOPIC_AUTHORIZATION_FAILED, OMITTED),
        ("ghost", E.TOPIC_AUTHORIZATION_FAILED, OMITTED),
    ]
    # the cursor stops at the next topic that may be described
    paged = describe([], limit=1)
    assert [t.name for t in paged.topics] == ["b"] and paged.next_cursor.topic_name == "b"


def test_offset_for_leader_epoch_needs_describe_or_cluster_action():
    state = state_with((ALICE, O.DESCRIBE, R.TOPIC, "orders"), topics={"audit": 1, "orders": 1})

    def ask(principal=ALICE):
        response = call(
            state,
            OFFSET_FOR_LEADER_EPOCH,
            4,
            principal,
            replica_id=-1,
            topics=[
                {"topic": n, "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}
                for n in ("audit", "orders")
            ],
        )
        return [(t.topic, t.partitions[0].error_code, t.partitions[0].end_offset) for t in response.topics]

    assert ask() == [("orders", E.NONE, 0), ("audit", E.TOPIC_AUTHORIZATION_FAILED, -1)]
    grant(state, ("User:replica", O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME))
    assert ask("User:replica") == [("audit", E.NONE, 0), ("orders", E.NONE, 0)]


def test_delete_records_needs_delete_on_the_topic():
    state = state_with(
        (ALICE, O.DELETE, R.TOPIC, "orders"), (ADMIN, O.ALL, R.TOPIC, "*"), topics={"audit": 1, "orders": 1}
    )
    produce(state, {"orders": [0], "audit": [0]}, principal=ADMIN)
    response = call(
        state,
        DELETE_RECORDS,
        2,
        timeout_ms=1000,
        topics=[
            {"name": n, "partitions": [{"partition_index": 0, "offset": -1}]} for n in ("orders", "audit", "ghost")
        ],
    )
    assert [(t.name, t.partitions[0].error_code, t.partitions[0].low_watermark) for t in response.topics] == [
        ("orders", E.NONE, 1),
        ("audit", E.TOPIC_AUTHORIZATION_FAILED, -1),
        ("ghost", E.TOPIC_AUTHORIZATION_FAILED, -1),
    ]


def test_describe_producers_needs_read_and_says_so():
    state = state_with((ALICE, O.READ, R.TOPIC, "orders"), topics={"audit": 1, "orders": 1})
    response = call(
        state,
        DESCRIBE_PRODUCERS,
        0,
        topics=[{"name": n, "partition_indexes": [0]} for n in ("orders", "audit")],
    )
    assert [(t.name, t.partitions[0].error_code, t.partitions[0].error_message) for t in response.topics] == [
        ("orders", E.NONE, None),
        ("audit", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
    ]


# -- topic admin --------------------------------------------------------------------------------


def create_topics(state, *names, principal=ALICE, validate_only=False):
    response = call(
        state,
        CREATE_TOPICS,
        7,
        principal,
        timeout_ms=1000,
        validate_only=validate_only,
        topics=[
            {"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []} for n in names
        ],
    )
    return {t.name: t for t in response.topics}


def test_create_topics_needs_create_on_the_cluster_or_the_topic():
    state = state_with((ALICE, O.CREATE, R.TOPIC, "ok-", PatternType.PREFIXED), topics={})
    got = create_topics(state, "no", "ok-1", "no")  # "no" twice: a duplicate first
    assert (got["no"].error_code, got["no"].error_message) == (E.INVALID_REQUEST, "Duplicate topic name.")
    got = create_topics(state, "nope", "ok-2")
    assert list(got) == ["ok-2", "nope"]  # the refused last
    assert (got["nope"].error_code, got["nope"].error_message) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        "Authorization failed.",
    )
    assert "nope" not in state.topics and "ok-2" in state.topics
    # created, but without DESCRIBE_CONFIGS its configs are not shown
    ok = got["ok-2"]
    assert (ok.error_code, ok.topic_config_error_code, ok.configs, ok.num_partitions) == (
        E.NONE,
        E.TOPIC_AUTHORIZATION_FAILED,
        [],
        -1,
    )
    assert ok.topic_id != ZERO_UUID
    grant(state, (ALICE, O.CREATE, R.CLUSTER, CLUSTER_NAME), (ALICE, O.ALTER_CONFIGS, R.TOPIC, "*"))
    got = create_topics(state, "any")["any"]
    assert (got.error_code, got.topic_config_error_code, got.num_partitions) == (E.NONE, E.NONE, 1)
    assert got.configs  # ALTER_CONFIGS implies DESCRIBE_CONFIGS


def test_the_metadata_topic_is_never_created_nor_authorized():
    for state in (cluster(), state_with(topics={})):
        got = create_topics(state, "__cluster_metadata", "x", principal=ADMIN)
        assert list(got) == ["x", "__cluster_metadata"]
        assert (got["__cluster_metadata"].error_code, got["__cluster_metadata"].error_message) == (
            E.INVALID_REQUEST,
            "Creation of internal topic __cluster_metadata is prohibited.",
        )
        assert "__cluster_metadata" not in state.topics
    refused = create_topics(state_with(topics={}), "__cluster_metadata")["__cluster_metadata"]
    assert refused.error_code == E.INVALID_REQUEST  # not TOPIC_AUTHORIZATION_FAILED


def test_delete_topics_needs_describe_and_delete():
    state = state_with(
        (ALICE, O.DESCRIBE, R.TOPIC, "seen"),
        (ALICE, O.DELETE, R.TOPIC, "gone"),
        topics={"seen": 1, "gone": 1, "hidden": 1},
    )

    def delete(*wanted, version=6):
        response = call(state, DELETE_TOPICS, version, timeout_ms=1000, topics=list(wanted))
        return [(t.name, t.topic_id, t.error_code, t.error_message) for t in response.responses]

    seen, hidden = state.topics["seen"].topic_id, state.topics["hidden"].topic_id
    denied = (E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    assert delete({"name": "seen"}, {"name": "hidden"}, {"name": "ghost"}) == [
        ("seen", ZERO_UUID, *denied),
        ("hidden", ZERO_UUID, *denied),
        ("ghost", ZERO_UUID, *denied),  # existence not told
    ]
    assert delete({"name": None, "topic_id": seen}, {"name": None, "topic_id": hidden}) == [
        ("seen", seen, *denied),
        (None, hidden, *denied),  # no name for a topic it may not describe
    ]
    gone = state.topics["gone"].topic_id
    assert delete({"name": "gone"}) == [("gone", gone, E.NONE, None)]  # DELETE implies DESCRIBE
    grant(state, (ALICE, O.DELETE, R.CLUSTER, CLUSTER_NAME))
    assert delete({"name": "hidden"})[0][2] == E.NONE
    assert delete({"name": "ghost"})[0][2] == E.UNKNOWN_TOPIC_OR_PARTITION


def test_create_partitions_needs_alter_on_the_topic():
    state = state_with((ALICE, O.ALTER, R.TOPIC, "orders"), topics={"orders": 1, "audit": 1})
    response = call(
        state,
        CREATE_PARTITIONS,
        3,
        timeout_ms=1000,
        validate_only=False,
        topics=[{"name": n, "count": 2, "assignments": None} for n in ("orders", "audit")],
    )
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [
        ("audit", E.TOPIC_AUTHORIZATION_FAILED, None),
        ("orders", E.NONE, None),
    ]
    assert len(state.topics["orders"].partitions) == 2 and len(state.topics["audit"].partitions) == 1


# -- configs ------------------------------------------------------------------------------------

TOPIC_RES, BROKER_RES, LOGGER_RES, GROUP_RES = 2, 4, 8, 32


def test_describe_configs_per_resource_type():
    state = state_with((ALICE, O.DESCRIBE_CONFIGS, R.TOPIC, "orders"), topics={"orders": 1, "audit": 1})
    wanted = [(TOPIC_RES, "audit"), (BROKER_RES, "0"), (TOPIC_RES, "orders"), (GROUP_RES, "g"), (LOGGER_RES, "0")]
    response = call(
        state,
        DESCRIBE_CONFIGS,
        4,
        include_synonyms=False,
        include_documentation=False,
        resources=[{"resource_type": t, "resource_name": n, "configuration_keys": None} for t, n in wanted],
    )
    got = [(r.resource_type, r.resource_name, r.error_code, r.error_message, bool(r.configs)) for r in response.results]
    assert got == [
        (TOPIC_RES, "orders", E.NONE, "", True),
        (TOPIC_RES, "audit", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.", False),
        (BROKER_RES, "0", E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", False),
        (GROUP_RES, "g", E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.", False),
        (LOGGER_RES, "0", E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", False),
    ]


def test_alter_configs_need_alter_configs_after_the_brokers_own_checks():
    state = state_with((ALICE, O.ALTER_CONFIGS, R.TOPIC, "orders"), topics={"orders": 1, "audit": 1})

    def incremental(*resources):
        response = call(state, INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=list(resources))
        return [(r.resource_name, r.error_code, r.error_message) for r in response.responses]

    def res(kind, name, *configs):
        return {"resource_type": kind, "resource_name": name, "configs": list(configs)}

    retention = {"name": "retention.ms", "config_operation": 0, "value": "1000"}
    assert incremental(
        res(TOPIC_RES, "orders", retention),
        res(TOPIC_RES, "audit", retention),
        res(TOPIC_RES, "ghost", retention),
        res(BROKER_RES, "0", {"name": "log.retention.ms", "config_operation": 0, "value": "1000"}),
        res(GROUP_RES, "g", {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "45000"}),
        res(LOGGER_RES, "0", {"name": "root", "config_operation": 0, "value": "INFO"}),
        # the broker's own checks come first: a key twice, a null value, another broker's id
        res(TOPIC_RES, "audit", retention, retention),
        res(TOPIC_RES, "audit", {"name": "retention.ms", "config_operation": 0, "value": None}),
        res(BROKER_RES, "5", {"name": "log.retention.ms", "config_operation": 0, "value": "1000"}),
    ) == [
        ("orders", E.NONE, None),
        ("audit", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        ("ghost", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        ("0", E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
        ("g", E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."),
        ("0", E.CLUSTER_AUTHORIZATION_FAILED, None),  # the broker's own refusal carries no text
        ("audit", E.INVALID_REQUEST, "Error due to duplicate config keys"),
        ("audit", E.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        ("5", E.INVALID_REQUEST, "Unexpected broker id, expected 0 or empty string, but received 5"),
    ]
    assert state.topics["orders"].config.overrides == {"retention.ms": "1000"}
    response = call(
        state,
        ALTER_CONFIGS,
        2,
        validate_only=False,
        resources=[
            {"resource_type": TOPIC_RES, "resource_name": n, "configs": [{"name": "retention.ms", "value": "5"}]}
            for n in ("audit", "orders")
        ],
    )
    assert [(r.resource_name, r.error_code) for r in response.responses] == [
        ("audit", E.TOPIC_AUTHORIZATION_FAILED),
        ("orders", E.NONE),
    ]


# -- producer ids and transactions ------------------------------------------------------------


def init_producer_id(state, tid=None, principal=ALICE):
    response = call(
        state,
        INIT_PRODUCER_ID,
        5,
        principal,
        transactional_id=tid,
        transaction_timeout_ms=60_000,
        producer_id=-1,
        producer_epoch=-1,
    )
    return response.error_code, response.producer_id, response.producer_epoch


def test_init_producer_id_for_a_transactional_id_needs_write_on_it():
    state = state_with((ALICE, O.WRITE, R.TOPIC, "*"))
    assert init_producer_id(state, "tx") == (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    grant(state, (ALICE, O.DESCRIBE, R.TRANSACTIONAL_ID, "tx"))  # DESCRIBE is not enough
    assert init_producer_id(state, "tx")[0] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(state, (ALICE, O.WRITE, R.TRANSACTIONAL_ID, "tx"))
    assert init_producer_id(state, "tx")[0] == E.NONE


def test_an_idempotent_producer_needs_idempotent_write_or_some_topic_write():
    state = state_with((ALICE, O.READ, R.TOPIC, "*"))
    assert init_producer_id(state) == (E.CLUSTER_AUTHORIZATION_FAILED, -1, -1)
    assert init_producer_id(state, principal=ADMIN)[0] == E.NONE
    grant(state, (ALICE, O.WRITE, R.TOPIC, "orders-", PatternType.PREFIXED))
    assert init_producer_id(state)[0] == E.NONE
    bob = state_with(("User:bob", O.IDEMPOTENT_WRITE, R.CLUSTER, CLUSTER_NAME))
    assert init_producer_id(bob, principal="User:bob")[0] == E.NONE


def add_partitions(state, topics, tid="tx", version=3, pid=0, epoch=0):
    response = call(
        state,
        ADD_PARTITIONS,
        version,
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def test_add_partitions_to_txn_needs_write_on_the_id_then_each_topic():
    state = state_with((ALICE, O.WRITE, R.TOPIC, "orders"), topics={"orders": 2, "audit": 1})
    assert add_partitions(state, {"orders": [0], "audit": [0]}) == {
        ("orders", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ("audit", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
    grant(state, (ALICE, O.WRITE, R.TRANSACTIONAL_ID, "tx"))
    _, pid, epoch = init_producer_id(state, "tx")
    assert add_partitions(state, {"orders": [0, 1], "audit": [0], "ghost": [0]}, pid=pid, epoch=epoch) == {
        ("orders", 0): E.OPERATION_NOT_ATTEMPTED,
        ("orders", 1): E.OPERATION_NOT_ATTEMPTED,
        ("audit", 0): E.TOPIC_AUTHORIZATION_FAILED,
        ("ghost", 0): E.TOPIC_AUTHORIZATION_FAILED,
    }
    assert add_partitions(state, {"orders": [0, 1]}, pid=pid, epoch=epoch) == {
        ("orders", 0): E.NONE,
        ("orders", 1): E.NONE,
    }


def test_add_partitions_to_txn_v4_is_for_brokers_only():
    state = state_with((ALICE, O.WRITE, R.TRANSACTIONAL_ID, "*"), (ALICE, O.WRITE, R.TOPIC, "*"))
    response = call(state, ADD_PARTITIONS, 5, transactions=[])
    assert (response.error_code, response.results_by_transaction) == (E.CLUSTER_AUTHORIZATION_FAILED, [])


def test_add_offsets_end_txn_and_txn_offset_commit_check_the_id_then_the_group():
    state = state_with((ALICE, O.WRITE, R.TOPIC, "orders"), (ALICE, O.READ, R.TOPIC, "orders"))

    def add_offsets(pid=0, epoch=0):
        return call(
            state, ADD_OFFSETS, 4, transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g"
        ).error_code

    def end(pid=0, epoch=0):
        response = call(state, END_TXN, 4, transactional_id="tx", producer_id=pid, producer_epoch=epoch, committed=True)
        return response.error_code, response.producer_id

    def commit(pid=0, epoch=0, topics=("orders",)):
        response = call(
            state,
            TXN_OFFSET_COMMIT,
            4,
            transactional_id="tx",
            group_id="g",
            producer_id=pid,
            producer_epoch=epoch,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}
                for t in topics
            ],
        )
        return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}

    txn_denied = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert (add_offsets(), end(), commit()) == (txn_denied, (txn_denied, -1), {("orders", 0): txn_denied})
    grant(state, (ALICE, O.WRITE, R.TRANSACTIONAL_ID, "tx"))
    _, pid, epoch = init_producer_id(state, "tx")
    assert add_offsets(pid, epoch) == E.GROUP_AUTHORIZATION_FAILED
    assert commit(pid, epoch) == {("orders", 0): E.GROUP_AUTHORIZATION_FAILED}
    grant(state, (ALICE, O.READ, R.GROUP, "g"))
    assert add_offsets(pid, epoch) == E.NONE
    assert commit(pid, epoch, ("orders", "audit")) == {
        ("orders", 0): E.NONE,
        ("audit", 0): E.TOPIC_AUTHORIZATION_FAILED,  # READ on each topic, before its existence
    }
    assert end(pid, epoch)[0] == E.NONE


def test_describe_and_list_transactions_show_only_what_may_be_described():
    state = state_with(
        (ALICE, O.WRITE, R.TRANSACTIONAL_ID, "*"),
        (ALICE, O.WRITE, R.TOPIC, "*"),
        topics={"orders": 1, "audit": 1},
    )
    _, pid, epoch = init_producer_id(state, "tx")
    init_producer_id(state, "other")
    assert add_partitions(state, {"orders": [0], "audit": [0]}, pid=pid, epoch=epoch) == {
        ("orders", 0): E.NONE,
        ("audit", 0): E.NONE,
    }
    bob = "User:bob"
    grant(state, (bob, O.DESCRIBE, R.TRANSACTIONAL_ID, "tx"), (bob, O.DESCRIBE, R.TOPIC, "orders"))
    response = call(state, DESCRIBE_TRANSACTIONS, 0, bob, transactional_ids=["tx", "other"])
    assert [(s.transactional_id, s.error_code, [t.topic for t in s.topics]) for s in response.transaction_states] == [
        ("tx", E.NONE, ["orders"]),  # the partitions of topics it may not describe left out
        ("other", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, []),
    ]
    listed = call(state, LIST_TRANSACTIONS, 1, bob, state_filters=[], producer_id_filters=[], duration_filter=-1)
    assert [s.transactional_id for s in listed.transaction_states] == ["tx"]
    listed = call(state, LIST_TRANSACTIONS, 1, ADMIN, state_filters=[], producer_id_filters=[], duration_filter=-1)
    assert [s.transactional_id for s in listed.transaction_states] == ["other", "tx"]


# -- cluster ------------------------------------------------------------------------------------


def test_describe_cluster_tells_the_principals_cluster_operations():
    state = state_with(
        (ALICE, O.DESCRIBE, R.CLUSTER, CLUSTER_NAME), (ALICE, O.IDEMPOTENT_WRITE, R.CLUSTER, CLUSTER_NAME)
    )

    def ops(principal):
        return call(
            state, DESCRIBE_CLUSTER, 1, principal, include_cluster_authorized_operations=True, endpoint_type=1
        ).cluster_authorized_operations

    assert ops(ALICE) == (1 << O.DESCRIBE) | (1 << O.IDEMPOTENT_WRITE)
    assert ops("User:bob") == 0  # the request needs nothing; the operations need DESCRIBE
    assert ops(ADMIN) == CLUSTER_OPS
    response = call(
        state, DESCRIBE_CLUSTER, 1, "User:bob", include_cluster_authorized_operations=False, endpoint_type=1
    )
    assert (response.error_code, response.cluster_authorized_operations) == (E.NONE, OMITTED)


def test_scram_credentials_need_describe_and_alter_on_the_cluster():
    state = state_with()
    described = call(state, DESCRIBE_SCRAM, 0, users=[{"name": "alice"}, {"name": "bob"}])
    assert (described.error_code, described.error_message) == (E.CLUSTER_AUTHORIZATION_FAILED, None)
    assert [(r.user, r.error_code) for r in described.results] == [("", E.CLUSTER_AUTHORIZATION_FAILED)] * 2
    altered = call(
        state,
        ALTER_SCRAM,
        0,
        deletions=[{"name": "zed", "mechanism": 1}, {"name": "amy", "mechanism": 1}],
        upsertions=[],
    )
    assert [(r.user, r.error_code) for r in altered.results] == [
        ("amy", E.CLUSTER_AUTHORIZATION_FAILED),
        ("zed", E.CLUSTER_AUTHORIZATION_FAILED),
    ]
    assert altered.results[0].error_message.endswith("needs ALTER permission.")
    grant(state, (ALICE, O.ALTER, R.CLUSTER, CLUSTER_NAME))  # ALTER implies DESCRIBE
    assert call(state, DESCRIBE_SCRAM, 0, users=[]).error_code == E.NONE
    altered = call(state, ALTER_SCRAM, 0, deletions=[{"name": "amy", "mechanism": 1}], upsertions=[])
    assert altered.results[0].error_code == E.RESOURCE_NOT_FOUND


# (api key, version, fields, operation it needs on the cluster, how to read the refusal)
CLUSTER_APIS = [
    (
        ELECT_LEADERS,
        2,
        {"election_type": 0, "topic_partitions": [{"topic": "orders", "partitions": [0]}], "timeout_ms": 1},
        O.ALTER,
        lambda r: (r.error_code, r.replica_election_results[0].partition_result[0].error_code),
    ),
    (
        ALTER_REASSIGNMENTS,
        0,
        {"timeout_ms": 1, "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": None}]}]},
        O.ALTER,
        lambda r: (r.error_code, r.responses[0].partitions[0].error_code),
    ),
    (LIST_REASSIGNMENTS, 0, {"timeout_ms": 1, "topics": None}, O.DESCRIBE, lambda r: (r.error_code,)),
    (DESCRIBE_LOG_DIRS, 4, {"topics": None}, O.DESCRIBE, lambda r: (r.error_code, len(r.results))),
    (DESCRIBE_QUOTAS, 1, {"components": [], "strict": False}, O.DESCRIBE_CONFIGS, lambda r: (r.error_code,)),
    (
        ALTER_QUOTAS,
        1,
        {
            "entries": [
                {
                    "entity": [{"entity_type": "user", "entity_name": "bob"}],
                    "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
                }
            ],
            "validate_only": True,
        },
        O.ALTER_CONFIGS,
        lambda r: (r.entries[0].error_code,),
    ),
    (
        UPDATE_FEATURES,
        1,
        {"timeout_ms": 1, "feature_updates": [], "validate_only": True},
        O.ALTER,
        lambda r: (r.error_code,),
    ),
    (LIST_CONFIG_RESOURCES, 1, {"resource_types": []}, O.DESCRIBE_CONFIGS, lambda r: (r.error_code,)),
    (
        DESCRIBE_QUORUM,
        2,
        {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
        O.DESCRIBE,
        lambda r: (r.error_code,),
    ),
]


CLUSTER_API_NAMES = [
    "ElectLeaders",
    "AlterPartitionReassignments",
    "ListPartitionReassignments",
    "DescribeLogDirs",
    "DescribeClientQuotas",
    "AlterClientQuotas",
    "UpdateFeatures",
    "ListConfigResources",
    "DescribeQuorum",
]


@pytest.mark.parametrize(("api_key", "version", "fields", "operation", "read"), CLUSTER_APIS, ids=CLUSTER_API_NAMES)
def test_cluster_admin_apis_need_their_cluster_operation(api_key, version, fields, operation, read):
    state = state_with()
    refused = read(call(state, api_key, version, **fields))
    assert refused[0] == E.CLUSTER_AUTHORIZATION_FAILED and set(refused[1:]) <= {E.CLUSTER_AUTHORIZATION_FAILED, 0}
    grant(state, (ALICE, operation, R.CLUSTER, CLUSTER_NAME))
    assert E.CLUSTER_AUTHORIZATION_FAILED not in read(call(state, api_key, version, **fields))

"""``access_denied`` events (issue 37): a denial is recorded where Kafka 4.4's authorizer logs one
("Principal = User:alice is Denied operation = READ from host = ... on resource = ...", for the
checks a request asks with ``logIfDenied``), once per operation and resource per request, and
never for the checks Kafka makes quietly (``logIfDenied=false``): an all-topics Metadata's
filter, ListGroups', the KIP-430 bit sets, CREATE/DELETE on the cluster before each topic's,
IDEMPOTENT_WRITE and ``authorizeByResourceType``, CLUSTER_ACTION before OffsetForLeaderEpoch's
topics, CreateTopics' DESCRIBE_CONFIGS, a regex subscription's topics. Without an authorizer
nothing is ever recorded."""

from __future__ import annotations

from fakebroker.apis import RequestContext, dispatch
from fakebroker.core.events import AccessDenied
from fakebroker.core.security.acls import CLUSTER_NAME, PatternType
from fakebroker.core.security.acls import Operation as O  # noqa: N817
from fakebroker.core.security.acls import ResourceType as R  # noqa: N817
from fakebroker.protocol import data
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import ApiKey, request_type

from .support import batch, cluster
from .test_data_authz import (
    ADMIN,
    ALICE,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    OFFSET_FOR_LEADER_EPOCH,
    call,
    create_topics,
    grant,
    init_producer_id,
    metadata,
    produce,
    state_with,
)
from .test_group_authz import consumer_heartbeat


def denials(state, since: int = 0) -> list[tuple]:
    """The ``access_denied`` events after the first ``since``: (principal, operation, type, name, api)."""
    return [
        (e.principal, e.operation, e.resource_type, e.resource, e.api)
        for e in state.events.since(since)
        if e.kind == "access_denied"
    ]


def test_a_produce_refused_on_three_topics_records_three_denials():
    state = state_with((ALICE, O.WRITE, R.TOPIC, "orders"), topics={"orders": 1, "a": 1, "b": 2, "c": 1})
    got = produce(state, {"orders": [0], "a": [0], "b": [0, 1], "c": [0]})
    assert got[("b", 1)] == E.TOPIC_AUTHORIZATION_FAILED
    assert denials(state) == [
        (ALICE, "WRITE", "TOPIC", "a", "Produce"),
        (ALICE, "WRITE", "TOPIC", "b", "Produce"),  # two partitions, one denial
        (ALICE, "WRITE", "TOPIC", "c", "Produce"),
    ]
    (first, *_) = [e for e in state.events if isinstance(e, AccessDenied)]
    assert first.details == {
        "principal": ALICE,
        "host": "127.0.0.1",
        "operation": "WRITE",
        "resource_type": "TOPIC",
        "resource": "a",
        "api": "Produce",
        "client_id": "t",
    }
    assert (first.broker, first.group, first.client_id) == (0, None, "t")
    assert first.describe() == (
        "broker 0: access_denied principal=User:alice host=127.0.0.1 operation=WRITE resource_type=TOPIC "
        "resource=a api=Produce client_id=t"
    )


def test_a_request_records_each_denial_once_and_the_next_request_again():
    state = state_with(topics={"orders": 1})
    produce(state, {"orders": [0]})
    produce(state, {"orders": [0]})
    assert denials(state) == [(ALICE, "WRITE", "TOPIC", "orders", "Produce")] * 2
    # the same resource asked twice by one request (OffsetFetch v8 naming a group twice)
    mark = len(state.events)
    groups = [{"group_id": "g", "topics": None}, {"group_id": "g", "topics": None}]
    call(state, ApiKey.OFFSET_FETCH, 8, groups=groups, require_stable=False)
    assert denials(state, mark) == [(ALICE, "DESCRIBE", "GROUP", "g", "OffsetFetch")]


def test_a_super_user_and_an_allowed_request_record_nothing():
    state = state_with((ALICE, O.WRITE, R.TOPIC, "orders"))
    produce(state, {"orders": [0]})
    produce(state, {"orders": [0]}, principal=ADMIN)
    metadata(state, ["orders"], principal=ADMIN)
    assert denials(state) == []


def test_without_an_authorizer_nothing_is_asked_nor_recorded():
    state = cluster()
    state.create_topic("orders", 1)
    ctx = RequestContext(state, 0, 0, 9, correlation_id=1, client_id="t", now_ms=0, principal=ALICE)
    assert ctx.allowed(O.WRITE, R.TOPIC, "orders")
    assert ctx.denials is None
    assert [e for e in state.events if e.kind == "access_denied"] == []


def test_an_all_topics_metadata_filters_quietly_and_a_named_topic_is_recorded():
    state = state_with((ALICE, O.READ, R.TOPIC, "orders"), topics={"audit": 1, "orders": 2, "hidden": 1})
    assert [t.name for t in metadata(state).topics] == ["orders"]
    assert [t.name for t in metadata(state, [], version=0).topics] == ["orders"]  # v0's "all"
    assert denials(state) == []
    # KafkaApis: logIfDenied = !isAllTopics
    refused = metadata(state, ["orders", "audit", "ghost"]).topics
    assert [t.error_code for t in refused][1:] == [E.TOPIC_AUTHORIZATION_FAILED] * 2
    assert denials(state) == [
        (ALICE, "DESCRIBE", "TOPIC", "audit", "Metadata"),
        (ALICE, "DESCRIBE", "TOPIC", "ghost", "Metadata"),  # existence is not told; the denial is
    ]


def test_metadata_auto_creation_records_create_on_the_topic_not_on_the_cluster():
    state = state_with((ALICE, O.DESCRIBE, R.TOPIC, "new", PatternType.PREFIXED), auto_create_topics_enable="true")
    metadata(state, ["new-a"], auto_create=True)
    assert denials(state) == [(ALICE, "CREATE", "TOPIC", "new-a", "Metadata")]


def test_authorized_operations_are_quiet_but_the_cluster_describe_before_them_is_not():
    state = state_with((ALICE, O.READ, R.TOPIC, "orders"))
    response = metadata(state, ["orders"], version=10, topic_ops=True, include_cluster_authorized_operations=True)
    assert response.topics[0].topic_authorized_operations == (1 << O.READ) | (1 << O.DESCRIBE)
    # the bit sets asked every other topic operation quietly; DESCRIBE on the cluster (asked before
    # the cluster's bit set) is an ordinary check, as in KafkaApis and AuthHelper
    assert denials(state) == [(ALICE, "DESCRIBE", "CLUSTER", CLUSTER_NAME, "Metadata")]
    mark = len(state.events)
    call(state, DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True, endpoint_type=1)
    assert denials(state, mark) == [(ALICE, "DESCRIBE", "CLUSTER", CLUSTER_NAME, "DescribeCluster")]
    mark = len(state.events)
    call(state, DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False, endpoint_type=1)
    assert denials(state, mark) == []


def test_create_topics_records_create_on_each_topic_only():
    state = state_with((ALICE, O.CREATE, R.TOPIC, "ok-", PatternType.PREFIXED), topics={})
    got = create_topics(state, "nope", "ok-1")
    assert got["nope"].error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert got["ok-1"].topic_config_error_code == E.TOPIC_AUTHORIZATION_FAILED  # DESCRIBE_CONFIGS: quiet
    assert denials(state) == [(ALICE, "CREATE", "TOPIC", "nope", "CreateTopics")]


def test_delete_topics_records_describe_and_delete_of_each_topic_named():
    state = state_with(
        (ALICE, O.DESCRIBE, R.TOPIC, "seen"),
        (ALICE, O.DELETE, R.TOPIC, "gone"),
        topics={"seen": 1, "gone": 1, "hidden": 1},
    )
    call(state, DELETE_TOPICS, 6, timeout_ms=1000, topics=[{"name": "seen"}, {"name": "hidden"}, {"name": "gone"}])
    assert "gone" not in state.topics
    assert sorted(denials(state)) == [
        (ALICE, "DELETE", "TOPIC", "hidden", "DeleteTopics"),
        (ALICE, "DELETE", "TOPIC", "seen", "DeleteTopics"),
        (ALICE, "DESCRIBE", "TOPIC", "hidden", "DeleteTopics"),
    ]  # DELETE on the cluster, asked first, is quiet


def test_a_transactional_id_refused_is_recorded_an_idempotent_producer_refused_is_not():
    state = state_with((ALICE, O.READ, R.TOPIC, "*"))
    assert init_producer_id(state, "tx")[0] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert denials(state) == [(ALICE, "WRITE", "TRANSACTIONAL_ID", "tx", "InitProducerId")]
    mark = len(state.events)
    # KafkaApis asks IDEMPOTENT_WRITE with logIfDenied=false, authorizeByResourceType quietly too
    assert init_producer_id(state)[0] == E.CLUSTER_AUTHORIZATION_FAILED
    assert denials(state, mark) == []


def test_offset_for_leader_epoch_asks_cluster_action_quietly_then_each_topic():
    state = state_with((ALICE, O.DESCRIBE, R.TOPIC, "orders"), topics={"audit": 1, "orders": 1})
    call(
        state,
        OFFSET_FOR_LEADER_EPOCH,
        4,
        replica_id=-1,
        topics=[
            {"topic": n, "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}
            for n in ("audit", "orders")
        ],
    )
    assert denials(state) == [(ALICE, "DESCRIBE", "TOPIC", "audit", "OffsetForLeaderEpoch")]


def group_call(state, api_key: int, version: int, principal: str = ALICE, host: str = "127.0.0.1", **fields):
    kind = request_type(api_key)
    request = kind.decode(kind.encode(kind.new(**fields), version), version)
    ctx = RequestContext(
        state, 0, api_key, version, correlation_id=7, client_id="billing-1", now_ms=0, principal=principal
    )
    ctx.client_host = host
    return dispatch(ctx, request)


def join(state, group: str, principal: str = ALICE, host: str = "127.0.0.1"):
    return group_call(
        state,
        ApiKey.JOIN_GROUP,
        9,
        principal,
        host,
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": data.encode_subscription(["orders"])}],
    )


def test_a_group_denial_names_its_group_and_the_host_as_java_writes_it():
    state = state_with(topics={"orders": 1})
    assert join(state, "billing", host="::1").error_code == E.GROUP_AUTHORIZATION_FAILED
    (event,) = [e for e in state.events if e.kind == "access_denied"]
    assert (event.group, event.client_id, event.broker) == ("billing", "billing-1", 0)
    assert event.details == {
        "principal": ALICE,
        "host": "0:0:0:0:0:0:0:1",  # as a host ACL names it
        "operation": "READ",
        "resource_type": "GROUP",
        "resource": "billing",
        "api": "JoinGroup",
        "client_id": "billing-1",
        "group": "billing",
    }


def test_list_groups_and_describe_groups_bit_sets_are_quiet():
    state = state_with((ALICE, O.DESCRIBE, R.GROUP, "b"), topics={"orders": 1})
    for group in ("a", "b"):
        join(state, group, principal=ADMIN)
    listed = group_call(state, ApiKey.LIST_GROUPS, 4, states_filter=[])
    assert [g.group_id for g in listed.groups] == ["b"]
    described = group_call(state, ApiKey.DESCRIBE_GROUPS, 5, groups=["b"], include_authorized_operations=True)
    assert described.groups[0].authorized_operations == 1 << O.DESCRIBE
    assert denials(state) == []
    group_call(state, ApiKey.DESCRIBE_GROUPS, 5, groups=["a", "b"], include_authorized_operations=True)
    assert denials(state) == [(ALICE, "DESCRIBE", "GROUP", "a", "DescribeGroups")]


def test_a_consumer_heartbeat_records_every_subscribed_topic_refused_and_a_regex_none():
    state = state_with(
        (ALICE, O.READ, R.GROUP, "cg"), (ALICE, O.READ, R.TOPIC, "orders"), topics={"orders": 1, "s1": 1, "s2": 1}
    )

    def heartbeat(topics, regex=None):
        return consumer_heartbeat(state, "cg", topics, regex=regex)

    assert heartbeat(["orders", "s1", "s2"]).error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert denials(state) == [
        (ALICE, "DESCRIBE", "TOPIC", "s1", "ConsumerGroupHeartbeat"),
        (ALICE, "DESCRIBE", "TOPIC", "s2", "ConsumerGroupHeartbeat"),
    ]
    mark = len(state.events)
    # a regex resolves to the topics the member may describe (TopicRegexResolver: quietly)
    assert heartbeat(None, regex="s.*|orders").error_code == E.NONE
    assert denials(state, mark) == []


def test_a_transactional_produce_allowed_its_id_records_the_topic_refused():
    state = state_with((ALICE, O.READ, R.TOPIC, "orders"), topics={"orders": 1})
    grant(state, (ALICE, O.WRITE, R.TRANSACTIONAL_ID, "tx"))
    txn = batch(b"v", producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    produce(state, {"orders": [0]}, tid="tx", records=txn)
    assert denials(state) == [(ALICE, "WRITE", "TOPIC", "orders", "Produce")]

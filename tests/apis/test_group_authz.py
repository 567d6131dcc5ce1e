"""The group-side APIs with an authorizer (issue 37), called through their handlers as a principal:
FindCoordinator, the classic group APIs, OffsetCommit/Fetch/Delete, DescribeGroups, ListGroups,
DeleteGroups, the KIP-848 and share-group APIs. Expected answers follow Kafka 4.4's
``KafkaApis`` (which operation on which resource, in which order, and the error's shape)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakebroker.apis import RequestContext, dispatch
from fakebroker.apis.consumer_group_describe import UNDESCRIBABLE_TOPICS
from fakebroker.apis.context import Parked, Steps
from fakebroker.core.security.acls import CLUSTER_NAME, Acl, Operation, PatternType, Permission, ResourceType
from fakebroker.core.security.authorizer import STANDARD_AUTHORIZER
from fakebroker.protocol import data
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import ApiKey, request_type

from .support import batch, cluster, encodes

ALICE, ADMIN = "User:alice", "User:admin"
OMITTED = -(2**31)
GROUP_OPS = 3400  # every operation a group supports
READ_BITS = (1 << Operation.READ) | (1 << Operation.DESCRIBE)  # READ implies DESCRIBE
SUBSCRIPTION = data.encode_subscription(["orders"])


@pytest.fixture
def state():
    s = cluster(1, config={"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": ADMIN})
    s.features.finalized["share.version"] = 2
    s.create_topic("orders", 2, 1)
    s.create_topic("secret", 1, 1)
    return s


def acl(state, operation: str, resource: ResourceType, name: str, *, deny=False, principal=ALICE) -> None:
    permission = Permission.DENY if deny else Permission.ALLOW
    new = Acl(resource, name, PatternType.LITERAL, principal, "*", Operation[operation], permission)
    assert state.authorizer.create([new], 0) == [(E.NONE, None)]


def call(state, api_key: int, version: int, principal: str = ALICE, **fields: Any):
    """One request answered as ``principal`` (support.call's twin with a principal)."""
    kind = request_type(api_key)
    request = kind.decode(kind.encode(kind.new(**fields), version), version)
    ctx = RequestContext(state, 0, api_key, version, correlation_id=7, client_id="tester", now_ms=0)
    ctx.principal = principal
    result = dispatch(ctx, request)
    if isinstance(result, Steps):
        result = result.finish()
    if isinstance(result, Parked) and result.pending.done:  # a join or sync the group answered at once
        result = result.respond(result.pending.value)
    if not isinstance(result, Parked):
        encodes(api_key, version, result)
    return result


def produce(state, topic: str, *values: bytes) -> None:
    """Records into partition 0 of ``topic``, produced by the super user."""
    produced = call(
        state,
        ApiKey.PRODUCE,
        9,
        ADMIN,
        acks=-1,
        timeout_ms=30_000,
        transactional_id=None,
        topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch(*values)}]}],
    )
    assert produced.responses[0].partition_responses[0].error_code == E.NONE


# -- FindCoordinator ---------------------------------------------------------------------------
def test_find_coordinator_needs_describe_on_each_key(state):
    acl(state, "DESCRIBE", ResourceType.GROUP, "open")
    acl(state, "DESCRIBE", ResourceType.TRANSACTIONAL_ID, "tx-open")
    found = call(state, ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=["open", "closed"])
    assert [(c.key, c.error_code, c.node_id, c.error_message) for c in found.coordinators] == [
        ("open", E.NONE, 0, ""),
        ("closed", E.GROUP_AUTHORIZATION_FAILED, -1, ""),
    ]
    txn = call(state, ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=["tx-closed", "tx-open"])
    assert [c.error_code for c in txn.coordinators] == [E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.NONE]
    # before v4 one key, the whole answer, with Kafka's default text
    old = call(state, ApiKey.FIND_COORDINATOR, 3, key_type=0, key="closed")
    assert (old.error_code, old.error_message, old.node_id, old.host, old.port) == (
        E.GROUP_AUTHORIZATION_FAILED,
        "Group authorization failed.",
        -1,
        "",
        -1,
    )
    assert call(state, ApiKey.FIND_COORDINATOR, 3, key_type=0, key="open").error_message == "NONE"
    # a share key is for brokers: CLUSTER_ACTION, else the whole request fails
    share = call(state, ApiKey.FIND_COORDINATOR, 6, key_type=2, coordinator_keys=["g:AAAAAAAAAAAAAAAAAAAAAA:0"])
    assert [(c.error_code, c.error_message) for c in share.coordinators] == [
        (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    ]
    assert call(state, ApiKey.FIND_COORDINATOR, 3, ADMIN, key_type=0, key="closed").error_code == E.NONE


# -- the classic protocol ----------------------------------------------------------------------
def join(state, group="g", member_id="", principal=ALICE, version=9):
    return call(
        state,
        ApiKey.JOIN_GROUP,
        version,
        principal,
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": SUBSCRIPTION}],
    )


def joined_member(state, group="g", principal=ADMIN) -> tuple[str, int]:
    """The one member of ``group``, Stable, joined and synced by ``principal``: (id, generation)."""
    first = join(state, group, principal=principal)
    done = join(state, group, first.member_id, principal)
    assert done.error_code == E.NONE
    synced = call(
        state,
        ApiKey.SYNC_GROUP,
        5,
        principal,
        group_id=group,
        generation_id=done.generation_id,
        member_id=done.member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[{"member_id": done.member_id, "assignment": b""}],
    )
    assert synced.error_code == E.NONE
    return done.member_id, done.generation_id


def test_join_group_needs_read_on_the_group(state):
    refused = join(state, member_id="someone")
    assert (refused.error_code, refused.member_id, refused.generation_id) == (E.GROUP_AUTHORIZATION_FAILED, "", -1)
    assert (refused.protocol_type, refused.protocol_name, refused.leader, refused.members) == (None, None, "", [])
    assert join(state, version=6).protocol_name == ""  # v0-6 errors carry an empty protocol name
    assert "g" not in state.groups.ids()
    acl(state, "DESCRIBE", ResourceType.GROUP, "g")  # DESCRIBE is not READ
    assert join(state).error_code == E.GROUP_AUTHORIZATION_FAILED
    acl(state, "READ", ResourceType.GROUP, "g")
    assert join(state).error_code == E.MEMBER_ID_REQUIRED


def test_a_deny_wins_and_super_users_pass(state):
    acl(state, "ALL", ResourceType.GROUP, "g")
    acl(state, "READ", ResourceType.GROUP, "g", deny=True)
    assert join(state).error_code == E.GROUP_AUTHORIZATION_FAILED
    assert join(state, principal=ADMIN).error_code == E.MEMBER_ID_REQUIRED


def test_sync_group_checks_its_mandatory_fields_before_authorization(state):
    member, generation = joined_member(state)
    fields = dict(group_id="g", generation_id=generation, member_id=member, group_instance_id=None, assignments=[])
    shapeless = call(state, ApiKey.SYNC_GROUP, 5, protocol_type=None, protocol_name="range", **fields)
    assert shapeless.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    refused = call(state, ApiKey.SYNC_GROUP, 5, protocol_type="consumer", protocol_name="range", **fields)
    assert (refused.error_code, refused.protocol_type, refused.protocol_name, refused.assignment) == (
        E.GROUP_AUTHORIZATION_FAILED,
        None,
        None,
        b"",
    )
    assert call(state, ApiKey.SYNC_GROUP, 4, **fields).error_code == E.GROUP_AUTHORIZATION_FAILED
    acl(state, "READ", ResourceType.GROUP, "g")
    assert call(state, ApiKey.SYNC_GROUP, 5, protocol_type="consumer", protocol_name="range", **fields).error_code == 0


def test_heartbeat_and_leave_group_need_read_on_the_group(state):
    member, generation = joined_member(state)
    beat = dict(group_id="g", generation_id=generation, member_id=member, group_instance_id=None)
    assert call(state, ApiKey.HEARTBEAT, 4, **beat).error_code == E.GROUP_AUTHORIZATION_FAILED
    leave = call(state, ApiKey.LEAVE_GROUP, 5, group_id="g", members=[{"member_id": member, "reason": None}])
    assert (leave.error_code, leave.members) == (E.GROUP_AUTHORIZATION_FAILED, [])
    assert call(state, ApiKey.LEAVE_GROUP, 1, group_id="g", member_id=member).error_code == 30
    assert state.groups.describe(0, "g").members  # nobody left
    acl(state, "READ", ResourceType.GROUP, "g")
    assert call(state, ApiKey.HEARTBEAT, 4, **beat).error_code == E.NONE
    leave = call(state, ApiKey.LEAVE_GROUP, 5, group_id="g", members=[{"member_id": member, "reason": None}])
    assert leave.error_code == E.NONE and leave.members[0].error_code == E.NONE


# -- offsets -----------------------------------------------------------------------------------
def commit(state, group, topics, principal=ALICE):
    return call(
        state,
        ApiKey.OFFSET_COMMIT,
        9,
        principal,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": t,
                "partitions": [
                    {"partition_index": p, "committed_offset": 5, "committed_leader_epoch": -1} for p in partitions
                ],
            }
            for t, partitions in topics
        ],
    )


def errors(response) -> list[tuple[str, int, int]]:
    return [(t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions]


def test_offset_commit_needs_read_on_the_group_then_on_each_topic(state):
    wanted = [("orders", [0, 7]), ("secret", [0]), ("nowhere", [0])]
    refused = commit(state, "g", wanted)
    assert errors(refused) == [(t, p, E.GROUP_AUTHORIZATION_FAILED) for t, ps in wanted for p in ps]
    acl(state, "READ", ResourceType.GROUP, "g")
    acl(state, "READ", ResourceType.TOPIC, "orders")
    acl(state, "READ", ResourceType.TOPIC, "nowhere")
    assert errors(commit(state, "g", wanted)) == [
        ("orders", 0, E.NONE),
        ("orders", 7, E.UNKNOWN_TOPIC_OR_PARTITION),
        ("secret", 0, E.TOPIC_AUTHORIZATION_FAILED),
        ("nowhere", 0, E.UNKNOWN_TOPIC_OR_PARTITION),  # authorized names are then checked for existence
    ]
    # a topic without READ is refused before its existence is looked at
    assert errors(commit(state, "g", [("unknown", [0])])) == [("unknown", 0, E.TOPIC_AUTHORIZATION_FAILED)]
    committed = state.groups.fetch_offsets(0, "g", [("orders", 0), ("secret", 0)], None)[1]
    assert [c.committed.offset if c.committed else -1 for c in committed] == [5, -1]


def test_offset_fetch_by_group_and_by_topic(state):
    commit(state, "g", [("orders", [0]), ("secret", [0])], ADMIN)
    commit(state, "h", [("orders", [0])], ADMIN)
    acl(state, "DESCRIBE", ResourceType.GROUP, "g")
    acl(state, "DESCRIBE", ResourceType.TOPIC, "orders")
    named = [{"name": "secret", "partition_indexes": [0]}, {"name": "orders", "partition_indexes": [0, 1]}]
    fetched = call(
        state,
        ApiKey.OFFSET_FETCH,
        8,
        groups=[
            {"group_id": "h", "topics": named},
            {"group_id": "g", "topics": named},
            {"group_id": "g", "topics": None},
        ],
        require_stable=False,
    )
    h, g, every = fetched.groups
    assert (h.error_code, h.topics) == (E.GROUP_AUTHORIZATION_FAILED, [])
    # undescribable named topics come last, offset -1
    assert [(t.name, p.partition_index, p.committed_offset, p.error_code) for t in g.topics for p in t.partitions] == [
        ("orders", 0, 5, E.NONE),
        ("orders", 1, -1, E.NONE),
        ("secret", 0, -1, E.TOPIC_AUTHORIZATION_FAILED),
    ]
    assert [t.name for t in every.topics] == ["orders"]  # an all-topics fetch leaves them out
    v7 = call(state, ApiKey.OFFSET_FETCH, 7, group_id="h", topics=None, require_stable=False)
    assert (v7.error_code, v7.topics) == (E.GROUP_AUTHORIZATION_FAILED, [])
    v7 = call(state, ApiKey.OFFSET_FETCH, 7, group_id="g", topics=named, require_stable=False)
    assert [(t.name, t.partitions[0].error_code) for t in v7.topics] == [
        ("orders", E.NONE),
        ("secret", E.TOPIC_AUTHORIZATION_FAILED),
    ]
    ids = [{"topic_id": state.topics[n].topic_id, "partition_indexes": [0]} for n in ("secret", "orders")]
    v10 = call(state, ApiKey.OFFSET_FETCH, 10, groups=[{"group_id": "g", "topics": ids}], require_stable=False)
    assert [(t.topic_id, t.partitions[0].error_code) for t in v10.groups[0].topics] == [
        (state.topics["orders"].topic_id, E.NONE),
        (state.topics["secret"].topic_id, E.TOPIC_AUTHORIZATION_FAILED),
    ]


def test_offset_delete_needs_delete_on_the_group_then_read_on_each_topic(state):
    commit(state, "g", [("orders", [0]), ("secret", [0])], ADMIN)
    topics = [
        {"name": "orders", "partitions": [{"partition_index": 0}]},
        {"name": "secret", "partitions": [{"partition_index": 0}]},
    ]
    acl(state, "READ", ResourceType.GROUP, "g")  # READ is not DELETE
    refused = call(state, ApiKey.OFFSET_DELETE, 0, group_id="g", topics=topics)
    assert (refused.error_code, refused.topics) == (E.GROUP_AUTHORIZATION_FAILED, [])
    acl(state, "DELETE", ResourceType.GROUP, "g")
    acl(state, "READ", ResourceType.TOPIC, "orders")
    deleted = call(state, ApiKey.OFFSET_DELETE, 0, group_id="g", topics=topics)
    assert deleted.error_code == E.NONE
    assert errors(deleted) == [("orders", 0, E.NONE), ("secret", 0, E.TOPIC_AUTHORIZATION_FAILED)]


# -- describe, list, delete ----------------------------------------------------------------------
def test_describe_groups_answers_refused_groups_first_with_their_operations(state):
    joined_member(state, "a")
    joined_member(state, "b")
    acl(state, "READ", ResourceType.GROUP, "b")
    described = call(state, ApiKey.DESCRIBE_GROUPS, 5, groups=["a", "b"], include_authorized_operations=True)
    a, b = described.groups
    assert (a.group_id, a.error_code, a.group_state, a.members, a.authorized_operations) == (
        "a",
        E.GROUP_AUTHORIZATION_FAILED,
        "",
        [],
        OMITTED,
    )
    assert (b.group_id, b.error_code, b.group_state, b.authorized_operations) == ("b", E.NONE, "Stable", READ_BITS)
    assert len(b.members) == 1
    admin = call(state, ApiKey.DESCRIBE_GROUPS, 5, ADMIN, groups=["a"], include_authorized_operations=True)
    assert admin.groups[0].authorized_operations == GROUP_OPS


def test_list_groups_shows_only_describable_groups_without_cluster_describe(state):
    for group in ("a", "b", "c"):
        joined_member(state, group)
    acl(state, "DESCRIBE", ResourceType.GROUP, "b")
    listed = call(state, ApiKey.LIST_GROUPS, 4, states_filter=[])
    assert (listed.error_code, [g.group_id for g in listed.groups]) == (E.NONE, ["b"])
    acl(state, "DESCRIBE", ResourceType.CLUSTER, CLUSTER_NAME)
    listed = call(state, ApiKey.LIST_GROUPS, 4, states_filter=[])
    assert sorted(g.group_id for g in listed.groups) == ["a", "b", "c"]


def test_delete_groups_answers_refused_groups_last(state):
    commit(state, "a", [("orders", [0])], ADMIN)
    commit(state, "b", [("orders", [0])], ADMIN)
    acl(state, "DELETE", ResourceType.GROUP, "b")
    deleted = call(state, ApiKey.DELETE_GROUPS, 2, groups_names=["a", "b", "a"])
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        ("b", E.NONE),
        ("a", E.GROUP_AUTHORIZATION_FAILED),
    ]
    assert "a" in state.groups.ids() and "b" not in state.groups.ids()


# -- KIP-848 -------------------------------------------------------------------------------------
def consumer_heartbeat(state, group, topics, principal=ALICE, regex=None):
    return call(
        state,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        1,
        principal,
        group_id=group,
        member_id=uuid.uuid4().hex[:22],
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=topics,
        subscribed_topic_regex=regex,
        server_assignor=None,
        topic_partitions=[],
    )


def test_consumer_group_heartbeat_needs_read_on_the_group_and_describe_on_every_topic(state):
    refused = consumer_heartbeat(state, "cg", ["orders"])
    assert (refused.error_code, refused.error_message, refused.member_id) == (E.GROUP_AUTHORIZATION_FAILED, None, None)
    acl(state, "READ", ResourceType.GROUP, "cg")
    acl(state, "READ", ResourceType.TOPIC, "orders")  # READ implies DESCRIBE
    hidden = consumer_heartbeat(state, "cg", ["orders", "secret"])
    assert (hidden.error_code, hidden.error_message, hidden.assignment) == (E.TOPIC_AUTHORIZATION_FAILED, None, None)
    assert "cg" not in state.groups.ids()  # refused before the coordinator saw it
    joined = consumer_heartbeat(state, "cg", ["orders"])
    assert joined.error_code == E.NONE and joined.member_epoch > 0


def test_a_regex_resolves_to_the_topics_the_members_principal_may_describe(state):
    acl(state, "READ", ResourceType.GROUP, "cg")
    acl(state, "READ", ResourceType.TOPIC, "orders")
    alice = consumer_heartbeat(state, "cg", None, regex=".*")
    assert alice.error_code == E.NONE
    assert state.groups.consumer.groups["cg"].members[alice.member_id].subscribed_names == ("orders",)
    admin = consumer_heartbeat(state, "cg", None, ADMIN, regex=".*")  # a super user: every topic
    assert state.groups.consumer.groups["cg"].members[admin.member_id].subscribed_names == ("orders", "secret")


def test_consumer_group_describe_hides_groups_with_undescribable_topics(state):
    consumer_heartbeat(state, "cg", ["orders", "secret"], ADMIN)
    consumer_heartbeat(state, "other", ["orders"], ADMIN)
    acl(state, "DESCRIBE", ResourceType.GROUP, "cg")
    acl(state, "DESCRIBE", ResourceType.TOPIC, "orders")
    described = call(
        state, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=["cg", "other"], include_authorized_operations=True
    )
    other, cg = described.groups
    assert (other.group_id, other.error_code) == ("other", E.GROUP_AUTHORIZATION_FAILED)
    assert (cg.error_code, cg.error_message, cg.members, cg.group_state, cg.authorized_operations) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        UNDESCRIBABLE_TOPICS,
        [],
        "",
        OMITTED,
    )
    acl(state, "DESCRIBE", ResourceType.TOPIC, "secret")
    described = call(state, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=["cg"], include_authorized_operations=True)
    cg = described.groups[0]
    assert (cg.error_code, len(cg.members), cg.authorized_operations) == (E.NONE, 1, 1 << Operation.DESCRIBE)


# -- share groups --------------------------------------------------------------------------------
def share_heartbeat(state, group, member, epoch, topics, principal=ALICE):
    return call(
        state,
        ApiKey.SHARE_GROUP_HEARTBEAT,
        1,
        principal,
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        rack_id=None,
        subscribed_topic_names=topics,
    )


def share_fetch(state, group, member, epoch, partitions, principal=ALICE, acks=None):
    acks = acks or {}
    names = list(dict.fromkeys([t for t, _ in partitions] + [t for t, _ in acks]))
    topics = [
        {
            "topic_id": state.topics[name].topic_id,
            "partitions": [
                {
                    "partition_index": p,
                    "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": last, "acknowledge_types": types}
                        for f, last, types in acks.get((name, p), [])
                    ],
                }
                for p in sorted({p for t, p in [*partitions, *acks] if t == name})
            ],
        }
        for name in names
    ]
    return call(
        state,
        ApiKey.SHARE_FETCH,
        1,
        principal,
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=500,
        batch_size=500,
        topics=topics,
        forgotten_topics_data=[],
    )


def test_share_group_heartbeat_checks_in_kafkas_order(state):
    assert share_heartbeat(state, "sg", "", 0, ["orders"]).error_code == E.GROUP_AUTHORIZATION_FAILED  # before the id
    acl(state, "READ", ResourceType.GROUP, "sg")
    assert share_heartbeat(state, "sg", "", 0, ["orders"]).error_code == E.INVALID_REQUEST
    refused = share_heartbeat(state, "sg", "m1", 0, ["orders"])
    assert (refused.error_code, refused.error_message) == (E.TOPIC_AUTHORIZATION_FAILED, None)
    acl(state, "DESCRIBE", ResourceType.TOPIC, "orders")
    assert share_heartbeat(state, "sg", "m1", 0, ["orders"]).error_code == E.NONE
    state.features.finalized["share.version"] = 0  # the feature gate comes first
    assert share_heartbeat(state, "sg", "m1", 0, ["orders"]).error_code == E.UNSUPPORTED_VERSION


def test_share_fetch_and_acknowledge_need_read_on_group_and_topics(state):
    state.group_configs.overrides["sg"] = {"share.auto.offset.reset": "earliest"}
    produce(state, "orders", b"a", b"b")
    produce(state, "secret", b"s")
    share_heartbeat(state, "sg", "m1", 0, ["orders", "secret"], ADMIN)
    refused = share_fetch(state, "sg", "m1", 0, [("orders", 0)])
    assert (refused.error_code, refused.responses, refused.acquisition_lock_timeout_ms) == (
        E.GROUP_AUTHORIZATION_FAILED,
        [],
        0,
    )
    acl(state, "READ", ResourceType.GROUP, "sg")
    acl(state, "READ", ResourceType.TOPIC, "orders")
    fetched = share_fetch(state, "sg", "m1", 0, [("orders", 0), ("secret", 0)])
    by_topic = {t.topic_id: t.partitions[0] for t in fetched.responses}
    assert by_topic[state.topics["secret"].topic_id].error_code == E.TOPIC_AUTHORIZATION_FAILED
    orders = by_topic[state.topics["orders"].topic_id]
    assert orders.error_code == E.NONE and [(a.first_offset, a.last_offset) for a in orders.acquired_records] == [
        (0, 1)
    ]
    # acknowledgements: per partition, after the batches' validation
    acked = share_fetch(state, "sg", "m1", 1, [], acks={("orders", 0): [(0, 1, [1])], ("secret", 0): [(0, 0, [1])]})
    codes = {t.topic_id: t.partitions[0].acknowledge_error_code for t in acked.responses}
    assert codes == {state.topics["orders"].topic_id: E.NONE, state.topics["secret"].topic_id: 29}
    ack = call(
        state,
        ApiKey.SHARE_ACKNOWLEDGE,
        1,
        group_id="sg",
        member_id="m1",
        share_session_epoch=2,
        topics=[
            {
                "topic_id": state.topics["secret"].topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "acknowledgement_batches": [{"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}],
                    }
                ],
            }
        ],
    )
    assert ack.error_code == E.NONE and ack.responses[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    denied = call(
        state, ApiKey.SHARE_ACKNOWLEDGE, 1, "User:bob", group_id="sg", member_id="", share_session_epoch=3, topics=[]
    )
    assert denied.error_code == E.GROUP_AUTHORIZATION_FAILED  # before the member id's check


def test_share_group_describe(state):
    share_heartbeat(state, "sg", "m1", 0, ["orders", "secret"], ADMIN)
    share_heartbeat(state, "sg2", "m1", 0, ["orders"], ADMIN)
    acl(state, "DESCRIBE", ResourceType.GROUP, "sg")
    acl(state, "DESCRIBE", ResourceType.GROUP, "sg2")
    acl(state, "DESCRIBE", ResourceType.TOPIC, "orders")
    described = call(
        state,
        ApiKey.SHARE_GROUP_DESCRIBE,
        1,
        group_ids=["nope", "sg", "sg2"],
        include_authorized_operations=True,
    )
    nope, sg, sg2 = described.groups
    assert (nope.group_id, nope.error_code) == ("nope", E.GROUP_AUTHORIZATION_FAILED)
    assert (sg.error_code, sg.error_message, sg.members) == (E.TOPIC_AUTHORIZATION_FAILED, UNDESCRIBABLE_TOPICS, [])
    assert (sg2.error_code, len(sg2.members), sg2.authorized_operations) == (E.NONE, 1, 1 << Operation.DESCRIBE)


def test_share_group_offsets_admin(state):
    share_heartbeat(state, "sg", "m1", 0, ["orders", "secret"], ADMIN)
    share_fetch(state, "sg", "m1", 0, [("orders", 0), ("secret", 0)], ADMIN)
    share_heartbeat(state, "sg", "m1", -1, None, ADMIN)
    named = [{"topic_name": "secret", "partitions": [0]}, {"topic_name": "orders", "partitions": [0]}]
    groups = [
        {"group_id": "other", "topics": None},
        {"group_id": "sg", "topics": named},
        {"group_id": "sg", "topics": None},
    ]
    acl(state, "DESCRIBE", ResourceType.GROUP, "sg")
    acl(state, "DESCRIBE", ResourceType.TOPIC, "orders")
    other, sg, every = call(state, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=groups).groups
    assert other.error_code == E.GROUP_AUTHORIZATION_FAILED
    assert [(t.topic_name, t.partitions[0].error_code, t.partitions[0].start_offset) for t in sg.topics] == [
        ("orders", E.NONE, -1),  # nothing was ever read from it
        ("secret", E.TOPIC_AUTHORIZATION_FAILED, -1),
    ]
    assert sg.topics[1].topic_id == uuid.UUID(int=0)
    assert [t.topic_name for t in every.topics] == ["orders"]
    alter_topics = [
        {"topic_name": n, "partitions": [{"partition_index": 0, "start_offset": 1}]} for n in ("orders", "secret")
    ]
    assert call(state, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="sg", topics=alter_topics).error_code == 30
    acl(state, "READ", ResourceType.GROUP, "sg")
    acl(state, "READ", ResourceType.TOPIC, "orders")
    altered = call(state, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="sg", topics=alter_topics)
    assert altered.error_code == E.NONE
    assert [(t.topic_name, t.partitions[0].error_code) for t in altered.responses] == [
        ("secret", E.TOPIC_AUTHORIZATION_FAILED),
        ("orders", E.NONE),
    ]
    delete_topics = [{"topic_name": "orders"}, {"topic_name": "secret"}]
    refused = call(state, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="sg", topics=delete_topics)
    assert (refused.error_code, refused.responses) == (E.GROUP_AUTHORIZATION_FAILED, [])
    acl(state, "DELETE", ResourceType.GROUP, "sg")
    deleted = call(state, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="sg", topics=delete_topics)
    assert [(r.topic_name, r.error_code, r.error_message) for r in deleted.responses] == [
        ("secret", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        ("orders", E.NONE, None),
    ]
    # nothing left to ask the coordinator about: answered without it (no GROUP_ID_NOT_FOUND)
    only = call(state, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="gone", topics=[{"topic_name": "secret"}])
    assert only.error_code == E.GROUP_AUTHORIZATION_FAILED
    acl(state, "DELETE", ResourceType.GROUP, "gone")
    only = call(state, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="gone", topics=[{"topic_name": "secret"}])
    assert (only.error_code, [r.error_code for r in only.responses]) == (E.NONE, [E.TOPIC_AUTHORIZATION_FAILED])


def test_share_group_state_apis_need_cluster_action(state):
    topics = [{"topic_id": state.topics["orders"].topic_id, "partitions": [{"partition": 0, "leader_epoch": 0}]}]
    state.share_state_topic()
    refused = call(state, ApiKey.READ_SHARE_GROUP_STATE, 0, group_id="sg", topics=topics)
    assert [(p.error_code, p.error_message) for r in refused.results for p in r.partitions] == [
        (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    ]
    acl(state, "CLUSTER_ACTION", ResourceType.CLUSTER, CLUSTER_NAME)
    allowed = call(state, ApiKey.READ_SHARE_GROUP_STATE, 0, group_id="sg", topics=topics)
    assert allowed.results[0].partitions[0].error_code != E.CLUSTER_AUTHORIZATION_FAILED


def test_without_an_authorizer_everyone_may_everything():
    state = cluster(1)
    state.create_topic("orders", 2, 1)
    assert not state.authorizer.enabled
    acl(state, "READ", ResourceType.GROUP, "g", deny=True)  # ACLs kept, not enforced
    joined_member(state, principal=ALICE)
    described = call(state, ApiKey.DESCRIBE_GROUPS, 5, groups=["g"], include_authorized_operations=True)
    assert described.groups[0].authorized_operations == GROUP_OPS
    assert [t.name for t in commit(state, "g", [("orders", [0])]).topics] == ["orders"]

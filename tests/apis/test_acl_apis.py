"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31) through their handlers, as Kafka 4.4's
AclApis answers them (every answer encoded at the version asked): SECURITY_DISABLED without an
authorizer, the cluster checks, Kafka's validation texts, duplicates, filters (ANY, MATCH, exact),
the grouping by resource, the closed connection for UNKNOWN codes, and the events. The decisions
themselves are tested in tests/core/test_authorizer.py."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.apis import RequestContext, dispatch
from fakebroker.apis.context import CloseInstead
from fakebroker.core.configs import STANDARD_AUTHORIZER
from fakebroker.core.security.acls import Operation as O  # noqa: N817
from fakebroker.core.security.acls import PatternType as P  # noqa: N817
from fakebroker.core.security.acls import Permission as A  # noqa: N817
from fakebroker.core.security.acls import ResourceType as R  # noqa: N817
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import request_type

from .support import cluster, encodes, events_after

DESCRIBE, CREATE, DELETE = 29, 30, 31
ON = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
ADMIN = "User:admin"


def call(state, api_key, version=3, principal=ADMIN, host="127.0.0.1", **fields: Any):
    kind = request_type(api_key)
    request = kind.decode(kind.encode(kind.new(**fields), version), version)
    ctx = RequestContext(
        state, 0, api_key, version, correlation_id=7, client_id="t", now_ms=5, client_host=host, principal=principal
    )
    result = dispatch(ctx, request)
    if not isinstance(result, CloseInstead):
        encodes(api_key, version, result)
    return result


def creation(name="orders", rt=R.TOPIC, pattern=P.LITERAL, principal="User:alice", host="*", op=O.READ, perm=A.ALLOW):
    return {
        "resource_type": rt,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": op,
        "permission_type": perm,
    }


def a_filter(name=None, rt=R.ANY, pattern=P.ANY, principal=None, host=None, op=O.ANY, perm=A.ANY):
    return {
        "resource_type_filter": rt,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": host,
        "operation": op,
        "permission_type": perm,
    }


def create(state, *creations, version=3, who=ADMIN):
    response = call(state, CREATE, version, who, creations=list(creations))
    return [(r.error_code, r.error_message) for r in response.results]


def describe(state, version=3, who=ADMIN, **filter_fields):
    response = call(state, DESCRIBE, version, who, **a_filter(**filter_fields))
    resources = [
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            [(a.principal, a.host, a.operation, a.permission_type) for a in r.acls],
        )
        for r in response.resources
    ]
    return response.error_code, response.error_message, resources


def delete(state, *filters, version=3, who=ADMIN):
    response = call(state, DELETE, version, who, filters=list(filters))
    return [
        (
            r.error_code,
            r.error_message,
            [(a.resource_type, a.resource_name, a.pattern_type, a.principal, a.operation) for a in r.matching_acls],
        )
        for r in response.filter_results
    ]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_without_an_authorizer_security_disabled(version):
    state = cluster()
    assert create(state, creation(), version=version) == [(E.SECURITY_DISABLED, "No Authorizer is configured.")]
    assert describe(state, version=version) == (E.SECURITY_DISABLED, "No Authorizer is configured on the broker", [])
    assert delete(state, a_filter(), version=version) == [(E.SECURITY_DISABLED, "No Authorizer is configured.", [])]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_describe_delete(version):
    state = cluster(config=ON)
    mark = len(state.events)
    assert (
        create(
            state,
            creation("orders"),
            creation("orders", op=O.WRITE),
            creation("ord", pattern=P.PREFIXED, principal="User:bob", perm=A.DENY),
            creation("billing", rt=R.GROUP),
            version=version,
        )
        == [(E.NONE, "")] * 4  # Kafka leaves a result's message at its default, ""
    )
    assert create(state, creation("orders"), version=version) == [(E.NONE, "")]  # a duplicate: no second copy
    code, message, resources = describe(state, version=version)
    assert (code, message) == (E.NONE, "")
    assert resources == [
        (R.TOPIC, "orders", P.LITERAL, [("User:alice", "*", O.READ, A.ALLOW), ("User:alice", "*", O.WRITE, A.ALLOW)]),
        (R.TOPIC, "ord", P.PREFIXED, [("User:bob", "*", O.READ, A.DENY)]),
        (R.GROUP, "billing", P.LITERAL, [("User:alice", "*", O.READ, A.ALLOW)]),
    ]
    created = [e for e in events_after(state, mark) if e.kind == "acls_created"]
    assert [len(e.acls) for e in created] == [4]  # the duplicate added nothing, recorded nothing
    assert created[0].acls[0] == "ALLOW User:alice READ TOPIC:LITERAL:orders from *"

    assert delete(state, a_filter(rt=R.TOPIC, name="orders", pattern=P.LITERAL, op=O.WRITE), version=version) == [
        (E.NONE, None, [(R.TOPIC, "orders", P.LITERAL, "User:alice", O.WRITE)])
    ]
    assert delete(state, a_filter(name="nothing"), version=version) == [(E.NONE, None, [])]
    deleted = [e for e in events_after(state, mark) if e.kind == "acls_deleted"]
    assert [e.acls for e in deleted] == [["ALLOW User:alice WRITE TOPIC:LITERAL:orders from *"]]
    assert len(describe(state, version=version)[2]) == 3


def test_filters():
    state = cluster(config=ON)
    create(
        state,
        creation("orders"),
        creation("*"),
        creation("ord", pattern=P.PREFIXED),
        creation("orders-eu", pattern=P.PREFIXED),
        creation("orders", rt=R.GROUP, principal="User:bob", host="10.0.0.1", op=O.DELETE, perm=A.DENY),
    )

    def names(**f):
        return [(rt, name, pattern) for rt, name, pattern, _ in describe(state, **f)[2]]

    assert names(name="orders", pattern=P.MATCH, rt=R.TOPIC) == [
        (R.TOPIC, "orders", P.LITERAL),
        (R.TOPIC, "*", P.LITERAL),
        (R.TOPIC, "ord", P.PREFIXED),
    ]
    assert names(name="orders", pattern=P.ANY) == [(R.TOPIC, "orders", P.LITERAL), (R.GROUP, "orders", P.LITERAL)]
    assert names(name="ord", pattern=P.PREFIXED) == [(R.TOPIC, "ord", P.PREFIXED)]
    assert names(name="ord", pattern=P.LITERAL) == []
    assert names(pattern=P.MATCH, rt=R.GROUP) == [(R.GROUP, "orders", P.LITERAL)]  # no name: all
    assert names(principal="User:bob") == [(R.GROUP, "orders", P.LITERAL)]
    assert names(principal="User:*") == []  # no wildcard expansion in filters
    assert names(host="10.0.0.1") == [(R.GROUP, "orders", P.LITERAL)]
    assert names(host="*", op=O.READ, perm=A.ALLOW, rt=R.TOPIC) == names(rt=R.TOPIC)
    assert names(op=O.DELETE) == names(perm=A.DENY) == [(R.GROUP, "orders", P.LITERAL)]
    # one ACL two filters match is listed under both, removed once
    results = delete(state, a_filter(name="orders", pattern=P.MATCH, rt=R.TOPIC), a_filter(name="*"))
    assert [len(r[2]) for r in results] == [3, 1]
    assert names() == [(R.TOPIC, "orders-eu", P.PREFIXED), (R.GROUP, "orders", P.LITERAL)]


def test_creation_errors_in_kafkas_words():
    state = cluster(config=ON)
    bad = E.INVALID_REQUEST
    assert create(
        state,
        creation("my-cluster", rt=R.CLUSTER),
        creation(""),
        creation("t", principal="alice"),
        creation("t", host=""),
        creation("t", host="10.0.0.0/33"),
        creation("kafka-cluster", rt=R.CLUSTER, op=O.ALTER),
        creation("t", host="10.0.0.0/8"),
    ) == [
        (bad, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (bad, "Invalid empty resource name"),
        (
            bad,
            "Could not parse principal from `alice` (no colon is present separating the principal type from the "
            "principal name)",
        ),
        (bad, "Host pattern cannot be null or empty"),
        (bad, "Invalid CIDR notation '10.0.0.0/33': '10.0.0.0/33' does not appear to be an IPv4 or IPv6 network"),
        (E.NONE, ""),
        (E.NONE, ""),
    ]
    assert len(describe(state)[2]) == 2


@pytest.mark.parametrize(
    "unbuildable",
    [
        creation("t", rt=R.ANY),
        creation("t", pattern=P.MATCH),
        creation("t", pattern=P.ANY),
        creation("t", op=O.ANY),
        creation("t", perm=A.ANY),
    ],
)
def test_a_binding_kafka_cannot_build_fails_the_whole_request(unbuildable):
    """Kafka 4.4 (the secured conformance probes): ResourcePattern and AccessControlEntry refuse
    ANY types and MATCH/ANY patterns with an IllegalArgumentException, which AclApis answers for
    every creation as UNKNOWN_SERVER_ERROR without a message; the valid binding beside it is not
    created. (The other invalid bindings are refused one by one: above.)"""
    state = cluster(config=ON)
    valid, other_cluster = creation("ok"), creation("my-cluster", rt=R.CLUSTER)
    assert create(state, valid, unbuildable, other_cluster) == [(E.UNKNOWN_SERVER_ERROR, None)] * 3
    assert describe(state)[2] == []
    # the checks before it still come first: ALTER on the cluster, an authorizer at all
    denied = create(state, unbuildable, who="User:bob")
    assert [code for code, _ in denied] == [E.CLUSTER_AUTHORIZATION_FAILED]
    assert create(cluster(), unbuildable) == [(E.SECURITY_DISABLED, "No Authorizer is configured.")]


@pytest.mark.parametrize(
    ("api", "fields"),
    [
        (CREATE, {"creations": [creation(rt=0)]}),
        (CREATE, {"creations": [creation(), creation(op=99)]}),
        (CREATE, {"creations": [creation(perm=0)]}),
        (CREATE, {"creations": [creation(pattern=0)]}),
        (DESCRIBE, a_filter(rt=0)),
        (DESCRIBE, a_filter(op=0)),
        (DESCRIBE, a_filter(pattern=9)),
        (DELETE, {"filters": [a_filter(perm=-3)]}),
    ],
)
@pytest.mark.parametrize("config", [ON, {}])
def test_an_unknown_code_closes_the_connection(api, fields, config):
    assert isinstance(call(cluster(config=config), api, **fields), CloseInstead)


def test_the_cluster_checks():
    state = cluster(config=ON)
    code, message, _ = describe(state, who="User:alice")
    assert code == E.CLUSTER_AUTHORIZATION_FAILED and message.endswith("needs DESCRIBE permission.")
    [(code, message)] = create(state, creation(), who="User:alice")
    assert code == E.CLUSTER_AUTHORIZATION_FAILED and message.endswith("needs ALTER permission.")
    [(code, message, matched)] = delete(state, a_filter(), who="User:alice")
    assert code == E.CLUSTER_AUTHORIZATION_FAILED and message.endswith("needs ALTER permission.") and not matched
    assert describe(state)[2] == []  # nothing was created
    # DESCRIBE on the cluster lets alice list, not change; ALTER implies DESCRIBE
    create(state, creation("kafka-cluster", rt=R.CLUSTER, op=O.DESCRIBE))
    assert describe(state, who="User:alice")[0] == E.NONE
    assert create(state, creation(), who="User:alice")[0][0] == E.CLUSTER_AUTHORIZATION_FAILED
    create(state, creation("kafka-cluster", rt=R.CLUSTER, principal="User:bob", op=O.ALTER))
    assert create(state, creation("x"), who="User:bob") == [(E.NONE, "")]
    assert describe(state, who="User:bob")[0] == E.NONE
    assert delete(state, a_filter(name="x"), who="User:bob")[0][0] == E.NONE
    # the checks hold whatever the authorizer holds: off, everyone passes them
    assert describe(cluster(), who="User:alice")[0] == E.SECURITY_DISABLED


def test_over_the_limit_nothing_changes(monkeypatch):
    from fakebroker.core.security import authorizer as module

    monkeypatch.setattr(module, "MAX_RECORDS_PER_USER_OP", 3)
    state = cluster(config=ON)
    too_many = (E.INVALID_REQUEST, "Cannot create more than 3 acls in a single create operation.")
    assert create(state, *[creation(f"t{i}") for i in range(4)]) == [too_many] * 4
    assert describe(state)[2] == []
    create(state, *[creation(f"t{i}") for i in range(3)])
    create(state, creation("t3"))
    results = delete(state, a_filter(name="t0"), a_filter(rt=R.TOPIC))
    assert [r[0] for r in results] == [E.INVALID_REQUEST] * 2 and all(r[1] is None and not r[2] for r in results)
    assert len(describe(state)[2]) == 4

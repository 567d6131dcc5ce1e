"""The authorizer as Kafka 4.4's StandardAuthorizer decides (tmp research §8, StandardAuthorizerData,
Authorizer.authorizeByResourceType, AclControlManager): every rule in a small table, a reference
model compared with the indexed one on random ACLs, and the ACL APIs' create/describe/delete."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.core.configs import STANDARD_AUTHORIZER, BrokerConfig, start_setting_error
from fakebroker.core.security.acls import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    Acl,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from fakebroker.core.security.authorizer import Authorizer, java_host
from fakebroker.protocol.error_codes import ErrorCode as E

O, R, P, A = Operation, ResourceType, PatternType, Permission  # noqa: E741
ON = {"authorizer.class.name": STANDARD_AUTHORIZER}
LIT, PRE = P.LITERAL, P.PREFIXED
ALLOW, DENY = A.ALLOW, A.DENY


def acl(name="orders", op=O.READ, perm=ALLOW, principal="User:alice", host="*", rt=R.TOPIC, pattern=LIT) -> Acl:
    return Acl(rt, name, pattern, principal, host, op, perm)


def authorizer(*acls: Acl, events=None, **config: str) -> Authorizer:
    settings_ = {**ON, **{k.replace("_", "."): v for k, v in config.items()}}
    auth = Authorizer(BrokerConfig(settings_), events)
    assert all(code == E.NONE for code, _ in auth.create(acls, 0))
    return auth


def may(auth, op=O.READ, name="orders", principal="User:alice", host="127.0.0.1", rt=R.TOPIC) -> bool:
    return auth.authorize(principal, host, op, rt, name)


# -- settings ------------------------------------------------------------------------------------


def test_enabled_by_the_class_name_only():
    assert not Authorizer(BrokerConfig()).enabled
    assert Authorizer(BrokerConfig(ON)).enabled
    assert start_setting_error("authorizer.class.name", STANDARD_AUTHORIZER) is None
    assert start_setting_error("authorizer.class.name", "") is None
    refused = start_setting_error("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")
    assert refused is not None and STANDARD_AUTHORIZER in refused
    assert start_setting_error("super.users", "User:admin;User:ops") is None
    assert start_setting_error("allow.everyone.if.no.acl.found", "true") is None
    assert "BOOLEAN" in (start_setting_error("allow.everyone.if.no.acl.found", "maybe") or "")


def test_super_users_are_a_semicolon_list_read_live():
    config = BrokerConfig({**ON, "super.users": " User:admin ; User:ops;;"})
    auth = Authorizer(config)
    auth.create([acl(op=O.ALL, perm=DENY, principal="User:*")])
    assert auth.super_users == {"User:admin", "User:ops"}
    assert may(auth, principal="User:admin") and may(auth, principal="User:ops")  # even over a DENY
    assert not may(auth, principal="User:Admin")  # case matters
    assert not may(auth, principal="User:alice")
    assert auth.authorize_any("User:ops", "h", O.WRITE, R.TOPIC)
    config.static["super.users"] = "User:alice"
    assert may(auth, principal="User:alice") and not may(auth, principal="User:admin")


# -- the decision, rule by rule --------------------------------------------------------------------

# (ACLs, action (op, name), expected) for User:alice from 127.0.0.1 on a TOPIC
DECISIONS = [
    # step 2: which ACLs match the resource
    ([acl("orders")], (O.READ, "orders"), True),
    ([acl("orders")], (O.READ, "orders2"), False),  # a literal is no prefix
    ([acl("order")], (O.READ, "orders"), False),
    ([acl("*")], (O.READ, "anything"), True),
    ([acl("ord", pattern=PRE)], (O.READ, "orders"), True),
    ([acl("orders", pattern=PRE)], (O.READ, "orders"), True),  # a prefix of itself
    ([acl("orders-x", pattern=PRE)], (O.READ, "orders"), False),
    ([acl("*", pattern=PRE)], (O.READ, "orders"), False),  # a PREFIXED "*" is the character
    ([acl("*", pattern=PRE)], (O.READ, "*x"), True),
    ([acl("orders", rt=R.GROUP)], (O.READ, "orders"), False),  # another type
    # step 3: principal
    ([acl(principal="User:bob")], (O.READ, "orders"), False),
    ([acl(principal="User:*")], (O.READ, "orders"), True),
    ([acl(principal="Group:*")], (O.READ, "orders"), False),  # the wildcard is User-typed only
    # step 3: operation; implied operations for ALLOW only
    ([acl(op=O.WRITE)], (O.READ, "orders"), False),
    ([acl(op=O.ALL)], (O.DELETE, "orders"), True),
    *[([acl(op=op)], (O.DESCRIBE, "orders"), True) for op in (O.READ, O.WRITE, O.DELETE, O.ALTER, O.DESCRIBE)],
    *[([acl(op=op)], (O.DESCRIBE, "orders"), False) for op in (O.CREATE, O.ALTER_CONFIGS, O.DESCRIBE_CONFIGS)],
    ([acl(op=O.ALTER_CONFIGS)], (O.DESCRIBE_CONFIGS, "orders"), True),
    ([acl(op=O.ALTER)], (O.DESCRIBE_CONFIGS, "orders"), False),
    ([acl(op=O.DESCRIBE)], (O.READ, "orders"), False),  # nothing implies more than DESCRIBE*
    ([acl(op=O.ALTER_CONFIGS)], (O.ALTER, "orders"), False),
    # step 4: deny wins, whatever its pattern
    ([acl(), acl(perm=DENY)], (O.READ, "orders"), False),
    ([acl(), acl("*", perm=DENY)], (O.READ, "orders"), False),
    ([acl(), acl("or", pattern=PRE, perm=DENY)], (O.READ, "orders"), False),
    ([acl("*"), acl(perm=DENY, principal="User:*")], (O.READ, "orders"), False),
    ([acl(), acl(op=O.ALL, perm=DENY)], (O.READ, "orders"), False),
    # a DENY of an operation does not deny what it would imply
    ([acl(op=O.DESCRIBE), acl(perm=DENY)], (O.DESCRIBE, "orders"), True),
    ([acl(op=O.DESCRIBE_CONFIGS), acl(op=O.ALTER_CONFIGS, perm=DENY)], (O.DESCRIBE_CONFIGS, "orders"), True),
    ([acl(), acl(perm=DENY, principal="User:bob")], (O.READ, "orders"), True),
    ([acl(), acl(perm=DENY, host="10.0.0.1")], (O.READ, "orders"), True),
    # step 6: an ACL matched the resource, none applies: denied
    ([acl(principal="User:bob")], (O.READ, "orders"), False),
    ([], (O.READ, "orders"), False),
]


@pytest.mark.parametrize(("acls", "action", "expected"), DECISIONS)
def test_decisions(acls, action, expected):
    op, name = action
    assert may(authorizer(*acls), op, name) is expected


@pytest.mark.parametrize(
    ("acl_host", "client", "expected"),
    [
        ("*", "10.1.2.3", True),
        ("10.1.2.3", "10.1.2.3", True),
        ("10.1.2.4", "10.1.2.3", False),
        ("10.1.0.0/16", "10.1.2.3", True),
        ("10.1.2.3/32", "10.1.2.3", True),
        ("10.2.0.0/16", "10.1.2.3", False),
        ("10.1.0.0/16", "::ffff:10.1.2.3", True),  # a dual-stack socket's IPv4 client
        ("10.1.2.3", "::ffff:10.1.2.3", True),
        ("0:0:0:0:0:0:0:1", "::1", True),  # hosts are compared as Java writes them
        ("::1", "::1", False),
        ("::1", "0:0:0:0:0:0:0:1", False),
        ("::/0", "::1", True),
        ("fd00::/8", "fd12::5", True),
        ("fd00::/8", "10.1.2.3", False),
        ("10.0.0.0/8", "fd12::5", False),
        ("2001:db8:0:0:0:ff00:42:8329", "2001:db8::ff00:42:8329", True),
    ],
)
def test_hosts(acl_host, client, expected):
    assert may(authorizer(acl(host=acl_host)), host=client) is expected


def test_java_host():
    assert java_host("127.0.0.1") == "127.0.0.1"
    assert java_host("::1") == "0:0:0:0:0:0:0:1"
    assert java_host("::ffff:127.0.0.1") == "127.0.0.1"
    assert java_host("FE80::0001%eth0") == "fe80:0:0:0:0:0:0:1%eth0"
    assert java_host("localhost") == "localhost"


@pytest.mark.parametrize(
    ("acls", "allow_everyone", "expected"),
    [
        ([], "false", False),
        ([], "true", True),
        ([], "TRUE", True),  # Boolean.parseBoolean
        ([acl("other")], "true", True),  # no ACL of this resource
        ([acl("orders", rt=R.GROUP)], "true", True),
        ([acl("orders", principal="User:bob")], "true", False),  # one matched the resource
        ([acl("orders", host="10.9.9.9")], "true", False),
        ([acl("orders", op=O.WRITE)], "true", False),
        ([acl("*", principal="User:bob")], "true", False),
        ([acl("ord", pattern=PRE, principal="User:bob")], "true", False),
    ],
)
def test_allow_everyone_if_no_acl_found_only_when_none_matches_the_resource(acls, allow_everyone, expected):
    auth = authorizer(*acls, allow_everyone_if_no_acl_found=allow_everyone)
    assert may(auth) is expected


def test_cluster_and_other_types():
    auth = authorizer(
        acl(CLUSTER_NAME, O.ALTER, rt=R.CLUSTER),
        acl("txn-", O.WRITE, pattern=PRE, rt=R.TRANSACTIONAL_ID),
        acl("billing", O.READ, rt=R.GROUP),
    )
    assert may(auth, O.ALTER, CLUSTER_NAME, rt=R.CLUSTER) and may(auth, O.DESCRIBE, CLUSTER_NAME, rt=R.CLUSTER)
    assert not may(auth, O.CREATE, CLUSTER_NAME, rt=R.CLUSTER)
    assert may(auth, O.WRITE, "txn-1", rt=R.TRANSACTIONAL_ID) and not may(auth, O.WRITE, "tx", rt=R.TRANSACTIONAL_ID)
    assert may(auth, O.DESCRIBE, "billing", rt=R.GROUP) and not may(auth, O.DELETE, "billing", rt=R.GROUP)


def test_many_prefixes_and_long_names():
    auth = authorizer(*[acl(f"team{i}-", pattern=PRE) for i in range(300)])
    assert may(auth, name="team7-orders") and not may(auth, name="team7")
    short = authorizer(acl("t", pattern=PRE))
    assert may(short, name="t" * 249)


# -- authorizeByResourceType ---------------------------------------------------------------------

ANY_DECISIONS = [
    ([], "false", False),
    ([], "true", True),  # the "hardcode" check: no ACL matches it
    ([acl("x", principal="User:bob")], "true", True),
    ([acl("hard", pattern=PRE, principal="User:bob")], "true", False),  # one matches "hardcode"
    ([acl("orders", O.WRITE)], "false", True),
    ([acl("orders", O.ALL)], "false", True),
    ([acl("orders", O.READ)], "false", False),  # the operation itself or ALL
    ([acl("orders", O.WRITE, principal="User:*")], "false", True),
    ([acl("orders", O.WRITE, principal="User:bob")], "false", False),
    ([acl("orders", O.WRITE, host="10.0.0.1")], "false", False),
    ([acl("orders", O.WRITE), acl("orders", O.WRITE, DENY)], "false", False),  # same literal denied
    ([acl("orders", O.WRITE), acl("ord", O.WRITE, DENY, pattern=PRE)], "false", False),  # a shorter prefix
    ([acl("orders", O.WRITE), acl("orders-", O.WRITE, DENY, pattern=PRE)], "false", True),  # a longer one: no
    ([acl("ord", O.WRITE, pattern=PRE), acl("ord", O.WRITE, DENY)], "false", True),  # a literal deny of a prefix
    ([acl("ord", O.WRITE, pattern=PRE), acl("or", O.WRITE, DENY, pattern=PRE)], "false", False),
    ([acl("orders", O.WRITE), acl("logs", O.WRITE, DENY)], "false", True),
    ([acl("*", O.WRITE)], "false", True),
    ([acl("*", O.WRITE), acl("orders", O.WRITE, DENY)], "false", True),  # "hardcode" is allowed
    ([acl("orders", O.WRITE), acl("*", O.WRITE, DENY)], "false", False),  # a wildcard deny denies all
    ([acl("orders", O.WRITE), acl("*", O.ALL, DENY, principal="User:*")], "false", False),
    ([acl("orders", O.WRITE, rt=R.GROUP)], "false", False),
]


@pytest.mark.parametrize(("acls", "allow_everyone", "expected"), ANY_DECISIONS)
def test_authorize_any(acls, allow_everyone, expected):
    auth = authorizer(*acls, allow_everyone_if_no_acl_found=allow_everyone)
    assert auth.authorize_any("User:alice", "127.0.0.1", O.WRITE, R.TOPIC) is expected


# -- authorized operations -----------------------------------------------------------------------


def test_authorized_operations_checks_each_supported_operation():
    assert Authorizer(BrokerConfig()).authorized_operations("User:x", "h", R.TOPIC, "t") == 3576  # off: all
    auth = authorizer(acl(op=O.READ), acl(op=O.ALTER_CONFIGS), acl(op=O.DELETE, perm=DENY))
    bits = auth.authorized_operations("User:alice", "127.0.0.1", R.TOPIC, "orders")
    assert bits == (1 << O.READ) | (1 << O.DESCRIBE) | (1 << O.ALTER_CONFIGS) | (1 << O.DESCRIBE_CONFIGS)
    assert auth.authorized_operations("User:alice", "127.0.0.1", R.TOPIC, "other") == 0
    everything = authorizer(super_users="User:root")
    expected = {R.TOPIC: 3576, R.GROUP: 3400, R.CLUSTER: 8096, R.TRANSACTIONAL_ID: (1 << 8) | (1 << 4) | (1 << 15)}
    for rt, bits in expected.items():
        assert everything.authorized_operations("User:root", "h", rt, "n") == bits
    assert [o.name for o in SUPPORTED_OPERATIONS[R.GROUP]] == [
        "READ",
        "DESCRIBE",
        "DELETE",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
    ]


# -- a reference model, and properties -------------------------------------------------------------


IMPLIED = {O.DESCRIBE: {O.READ, O.WRITE, O.DELETE, O.ALTER}, O.DESCRIBE_CONFIGS: {O.ALTER_CONFIGS}}


def matches(a: Acl, rt: ResourceType, name: str) -> bool:
    """§8 step 2: ``a`` matches the resource."""
    return a.resource_type == rt and (
        (a.pattern_type == LIT and a.resource_name in (name, "*"))
        or (a.pattern_type == PRE and name.startswith(a.resource_name))
    )


def applies(a: Acl, principal: str, host: str, op: Operation) -> bool:
    """§8 step 3: ``a`` applies to the action, its resource aside."""
    if a.principal not in (principal, "User:*") or a.host not in ("*", java_host(host)):
        return False
    if a.operation in (op, O.ALL):
        return True
    return a.permission == ALLOW and a.operation in IMPLIED.get(op, set())


def reference(acls, super_users, allow_everyone, principal, host, op, rt, name) -> bool:
    """§8 steps 1-6, written straight from the text, no index (no CIDR hosts here)."""
    if principal in super_users:
        return True
    matching = [a for a in acls if matches(a, rt, name)]
    applying = [a for a in matching if applies(a, principal, host, op)]
    if any(a.permission == DENY for a in applying):
        return False
    if applying:
        return True
    return not matching and allow_everyone


NAMES = st.sampled_from(["orders", "ord", "o", "orders-eu", "logs", "*", "l"])
PRINCIPALS = st.sampled_from(["User:alice", "User:bob", "User:*"])
HOSTS = st.sampled_from(["*", "127.0.0.1", "10.0.0.1", "0:0:0:0:0:0:0:1"])
OPS = st.sampled_from([O.READ, O.WRITE, O.DESCRIBE, O.ALTER, O.ALL, O.ALTER_CONFIGS, O.DESCRIBE_CONFIGS])
TYPES = st.sampled_from([R.TOPIC, R.GROUP])
ACLS = st.builds(Acl, TYPES, NAMES, st.sampled_from([LIT, PRE]), PRINCIPALS, HOSTS, OPS, st.sampled_from([ALLOW, DENY]))
ACTIONS = st.tuples(
    st.sampled_from(["User:alice", "User:bob", "User:root"]),
    st.sampled_from(["127.0.0.1", "10.0.0.1", "::1"]),
    OPS.filter(lambda o: o != O.ALL),
    TYPES,
    st.sampled_from(["orders", "ord", "logs", "orders-eu", "x", "*"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ACLS, max_size=12), st.booleans(), st.lists(ACTIONS, min_size=1, max_size=5))
def test_the_index_decides_as_the_reference(acls, allow_everyone, actions):
    auth = authorizer(*acls, super_users="User:root", allow_everyone_if_no_acl_found=str(allow_everyone).lower())
    for action in actions:
        assert auth.authorize(*action) is reference(acls, {"User:root"}, allow_everyone, *action)


@settings(max_examples=200, deadline=None)
@given(st.lists(ACLS, max_size=10), st.booleans(), ACTIONS)
def test_deny_always_wins(acls, allow_everyone, action):
    """A DENY that applies to the action (on the name, any pattern that matches it) denies it,
    whatever else allows; only a super user passes."""
    principal, host, op, rt, name = action
    auth = authorizer(*acls, super_users="User:root", allow_everyone_if_no_acl_found=str(allow_everyone).lower())
    deny = Acl(rt, name, LIT, principal, java_host(host), op, DENY)
    auth.create([acl(name, op, ALLOW, principal, rt=rt), deny])
    assert auth.authorize(*action) is (principal == "User:root")
    auth.delete([AclFilter(rt, name, LIT, principal, java_host(host), op, DENY)])
    auth.create([Acl(rt, "*", LIT, "User:*", "*", O.ALL, DENY)])
    assert auth.authorize(*action) is (principal == "User:root")


@settings(max_examples=300, deadline=None)
@given(st.lists(ACLS, max_size=10), st.booleans(), ACTIONS, ACLS)
def test_another_acl_changes_a_decision_only_through_its_resource(acls, allow_everyone, action, extra):
    """Adding an ACL that does not match the resource never changes a decision about it; one
    that matches it but does not apply to the action changes it only by making the resource
    "found" (an action allowed by ``allow.everyone.if.no.acl.found`` is then denied); one that
    applies denies (DENY) or never takes a permission away (ALLOW)."""
    principal, host, op, rt, name = action
    auth = authorizer(*acls, allow_everyone_if_no_acl_found=str(allow_everyone).lower())
    before = auth.authorize(*action)
    auth.create([extra])
    after = auth.authorize(*action)
    if not matches(extra, rt, name):
        assert after is before
    elif not applies(extra, principal, host, op):
        assert after is (before and any(matches(a, rt, name) for a in acls))
    elif extra.permission == DENY:
        assert after is False
    else:
        assert after or not before


# -- create, describe, delete ----------------------------------------------------------------------


def test_create_describe_delete_and_their_events():
    from fakebroker.core.events import EventLog

    log = EventLog(now_ms=lambda: 0)
    auth = Authorizer(BrokerConfig(ON), log)
    first, prefixed = acl(), acl("ord", pattern=PRE, perm=DENY, principal="User:*", host="10.0.0.0/8")
    assert auth.create([first, prefixed, first], 7) == [(E.NONE, None)] * 3
    assert auth.create([first], 8) == [(E.NONE, None)]  # a duplicate: success, no second copy, no event
    assert auth.acls == [first, prefixed]
    [created] = [e for e in log if e.kind == "acls_created"]
    assert created.time_ms == 7
    assert created.acls == [
        "ALLOW User:alice READ TOPIC:LITERAL:orders from *",
        "DENY User:* READ TOPIC:PREFIXED:ord from 10.0.0.0/8",
    ]
    assert auth.describe(AclFilter(R.TOPIC, "orders", P.MATCH)) == (E.NONE, None, [first, prefixed])
    assert auth.describe(AclFilter(R.GROUP)) == (E.NONE, None, [])
    assert auth.describe(AclFilter(host="10.0.0.0/8")) == (E.NONE, None, [prefixed])
    both = [AclFilter(R.TOPIC, "orders", P.MATCH, permission=A.DENY), AclFilter()]
    assert auth.delete(both, 9) == [(E.NONE, None, [prefixed]), (E.NONE, None, [first, prefixed])]
    [deleted] = [e for e in log if e.kind == "acls_deleted"]
    assert (deleted.time_ms, len(deleted.acls)) == (9, 2)
    assert auth.acls == [] and not may(auth)
    assert auth.delete([AclFilter(R.UNKNOWN), AclFilter(operation=O.UNKNOWN)]) == [
        (E.INVALID_REQUEST, "Unknown patternFilter.", []),
        (E.INVALID_REQUEST, "Unknown entryFilter.", []),
    ]
    assert len([e for e in log if e.kind == "acls_deleted"]) == 1


def test_removing_the_last_acl_of_a_resource_makes_it_not_found_again():
    auth = authorizer(acl(principal="User:bob"), allow_everyone_if_no_acl_found="true")
    assert not may(auth)
    auth.delete([AclFilter(principal="User:bob")])
    assert may(auth)

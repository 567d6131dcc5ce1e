"""``cluster.acls`` (issue 37): ACLs from a test, the same ones the ACL APIs manage, with every
mistake named."""

from __future__ import annotations

import pytest

from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.cluster.access import STANDARD_AUTHORIZER
from fakebroker.core.security.acls import Operation, PatternType, Permission, ResourceType

CONFIG = {"authorizer.class.name": STANDARD_AUTHORIZER}


def decides(cluster: FakeCluster, principal: str, op: Operation, kind: ResourceType, name: str) -> bool:
    return cluster.call(cluster.state.authorizer.authorize, principal, "127.0.0.1", op, kind, name)


def test_allow_deny_list_remove_and_clear():
    with FakeCluster(config=CONFIG).run_in_thread() as cluster:
        read = cluster.acls.allow("User:alice", "read", group="billing")
        assert decides(cluster, "User:alice", Operation.READ, ResourceType.GROUP, "billing")
        assert decides(cluster, "User:alice", Operation.DESCRIBE, ResourceType.GROUP, "billing")  # implied
        assert not decides(cluster, "User:bob", Operation.READ, ResourceType.GROUP, "billing")
        cluster.acls.allow("User:*", "WRITE", topic="orders-", pattern="prefixed")
        deny = cluster.acls.deny("User:bob", "WRITE", topic="orders-eu")
        assert decides(cluster, "User:alice", Operation.WRITE, ResourceType.TOPIC, "orders-us")
        assert not decides(cluster, "User:bob", Operation.WRITE, ResourceType.TOPIC, "orders-eu")
        assert (deny.permission, deny.pattern_type) == (Permission.DENY, PatternType.LITERAL)
        assert len(cluster.acls.list()) == 3
        cluster.acls.remove(read)
        assert not decides(cluster, "User:alice", Operation.READ, ResourceType.GROUP, "billing")
        cluster.acls.clear()
        assert cluster.acls.list() == []
        kinds = [e.kind for e in cluster.events if e.kind.startswith("acls_")]
        assert kinds.count("acls_created") == 3 and "acls_deleted" in kinds


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c: c.acls.allow("User:a", "reed", topic="t"), "no ACL operation 'reed': did you mean 'READ'?"),
        (lambda c: c.acls.allow("User:a", "READ", topic="t", group="g"), "name one resource"),
        (lambda c: c.acls.allow("User:a", "READ"), "name one resource"),
        (lambda c: c.acls.allow("User:a", "READ", topic="t", pattern="glob"), "the patterns are 'literal' and"),
        (lambda c: c.acls.allow("alice", "READ", topic="t"), "Could not parse principal"),
    ],
)
def test_mistakes_name_what_is_valid(call, message):
    with FakeCluster(config=CONFIG).run_in_thread() as cluster:
        with pytest.raises(ClusterUsageError, match=message):
            call(cluster)

"""Issue 37's authorizer with librdkafka (confluent-kafka): a super user creates, describes and
deletes ACLs over SASL PLAIN with the AdminClient; a user who is no super user and has no ACL
may not even list them (CLUSTER_AUTHORIZATION_FAILED, as Kafka's StandardAuthorizer answers)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from fakebroker.cluster import FakeCluster

from .security_support import AUTHORIZER, plain_settings

pytestmark = pytest.mark.clients
USERS = {"admin": "a", "alice": "b"}
CONFIG = AUTHORIZER
TIMEOUT = 15


def admin(cluster: FakeCluster, user: str) -> AdminClient:
    return AdminClient(plain_settings(cluster, user, USERS[user]))


def key(b: AclBinding) -> tuple:
    return (b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type)


BINDINGS = [
    AclBinding(
        ResourceType.TOPIC,
        "orders",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    ),
    AclBinding(
        ResourceType.GROUP,
        "billing-",
        ResourcePatternType.PREFIXED,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    ),
    AclBinding(
        ResourceType.TOPIC,
        "orders",
        ResourcePatternType.LITERAL,
        "User:*",
        "10.0.0.1",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    ),
]
EVERYTHING = AclBindingFilter(
    ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
)


def test_a_super_user_creates_describes_and_deletes_acls():
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=CONFIG).run_in_thread() as cluster:
        client = admin(cluster, "admin")
        assert client.describe_acls(EVERYTHING, request_timeout=TIMEOUT).result(TIMEOUT) == []
        for binding, future in client.create_acls(BINDINGS, request_timeout=TIMEOUT).items():
            assert future.result(TIMEOUT) is None, binding
        described = client.describe_acls(EVERYTHING, request_timeout=TIMEOUT).result(TIMEOUT)
        assert sorted(map(key, described)) == sorted(map(key, BINDINGS))

        # the ACLs that apply to the topic "orders" (MATCH), then only alice's group ones
        applying = AclBindingFilter(
            ResourceType.TOPIC, "orders", ResourcePatternType.MATCH, None, None, AclOperation.ANY, AclPermissionType.ANY
        )
        described = client.describe_acls(applying, request_timeout=TIMEOUT).result(TIMEOUT)
        assert sorted(map(key, described)) == sorted(map(key, [BINDINGS[0], BINDINGS[2]]))

        groups = AclBindingFilter(
            ResourceType.GROUP,
            None,
            ResourcePatternType.ANY,
            "User:alice",
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        [(_, future)] = client.delete_acls([groups], request_timeout=TIMEOUT).items()
        assert list(map(key, future.result(TIMEOUT))) == [key(BINDINGS[1])]
        described = client.describe_acls(EVERYTHING, request_timeout=TIMEOUT).result(TIMEOUT)
        assert sorted(map(key, described)) == sorted(map(key, [BINDINGS[0], BINDINGS[2]]))
        assert [len(e.acls) for e in cluster.events if e.kind in ("acls_created", "acls_deleted")] == [3, 1]

        [(_, future)] = client.delete_acls([EVERYTHING], request_timeout=TIMEOUT).items()
        assert sorted(map(key, future.result(TIMEOUT))) == sorted(map(key, [BINDINGS[0], BINDINGS[2]]))
        assert client.describe_acls(EVERYTHING, request_timeout=TIMEOUT).result(TIMEOUT) == []


def test_a_user_without_acls_may_not_describe_them():
    """alice is no super user and has no ACL: the broker answers DescribeAcls with a top-level
    CLUSTER_AUTHORIZATION_FAILED. librdkafka drops that top-level error (its
    ``rd_kafka_DescribeAclsResponse_parse`` reads it into a local and never reports it: the
    same against Kafka), so ``describe_acls`` gives an empty list; the broker's answer is
    checked in its ``request_error`` event. CreateAcls and DeleteAcls carry the error per
    result, and librdkafka raises it."""
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=CONFIG).run_in_thread() as cluster:
        root = admin(cluster, "admin")
        root.create_acls(BINDINGS[:1], request_timeout=TIMEOUT)[BINDINGS[0]].result(TIMEOUT)
        alice = admin(cluster, "alice")  # kept: a client collected while waiting cancels its requests
        assert alice.describe_acls(EVERYTHING, request_timeout=TIMEOUT).result(TIMEOUT) == []
        refused = [e for e in cluster.events if e.kind == "request_error" and e.api == "DescribeAcls"]
        assert [e.error for e in refused] == ["CLUSTER_AUTHORIZATION_FAILED"]
        with pytest.raises(KafkaException) as failed:
            alice.create_acls(BINDINGS[1:2], request_timeout=TIMEOUT)[BINDINGS[1]].result(TIMEOUT)
        error: KafkaError = failed.value.args[0]
        assert error.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        assert error.str().endswith("needs ALTER permission.")
        with pytest.raises(KafkaException) as failed:
            [(_, future)] = alice.delete_acls([EVERYTHING], request_timeout=TIMEOUT).items()
            future.result(TIMEOUT)
        assert failed.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        left = root.describe_acls(EVERYTHING, request_timeout=TIMEOUT).result(TIMEOUT)
        assert list(map(key, left)) == [key(BINDINGS[0])]  # alice changed nothing

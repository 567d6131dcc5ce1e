"""Issue 37's test-facing side with real clients: each refusal a client meets is an
``access_denied`` event naming who was refused what (principal, operation, resource type and
name, the API), as Kafka 4.4's authorizer logs it, and the ``request_error`` of the refused
answer names the principal; a Metadata request for every topic leaves out what the principal
may not describe without recording a denial (Kafka asks with ``logIfDenied=false`` there), while
one naming such a topic records it. And ``allow.everyone.if.no.acl.found=true``: a topic without
ACLs is everybody's, one with an ACL only its grantees'.

confluent-kafka (librdkafka) over SASL_PLAINTEXT with PLAIN; the Java client (kafka-clients
4.4.0, ``fakebroker.AclScenarios``) for a transactional id refused.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from fakebroker.cluster import FakeCluster

from .security_support import AUTHORIZER, acl_cluster, plain_settings
from .test_java_acls import run_txn, steps
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = pytest.mark.clients
USERS = {"admin": "a", "alice": "b", "bob": "c", "carol": "d", "dave": "e"}
CONFIG = AUTHORIZER
QUIET = {"log_level": 0}


@pytest.fixture
def cluster():
    with acl_cluster(USERS) as c:
        yield c


def settings(cluster: FakeCluster, user: str) -> dict:
    return plain_settings(cluster, user, USERS[user], QUIET["log_level"])


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def denials(cluster: FakeCluster, user: str) -> list:
    """``user``'s access_denied events, in order."""
    return [e for e in cluster.events if e.kind == "access_denied" and e.principal == f"User:{user}"]


def denied(cluster: FakeCluster, user: str) -> set[tuple[str, str, str, str, str]]:
    """What ``user`` was refused: (principal, operation, resource type, resource, API), each once."""
    return {(e.principal, e.operation, e.resource_type, e.resource, e.api) for e in denials(cluster, user)}


def errors(cluster: FakeCluster, error: str) -> list:
    return [e for e in cluster.events if e.kind == "request_error" and e.error == error]


def first_error(consumer: Consumer, timeout: float = 20) -> KafkaError:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None:
            assert msg.error() is not None, "a record read without READ on the group"
            return msg.error()
    raise AssertionError("the consumer saw no error")


def deliver(producer: Producer, topic: str, n: int = 3, timeout: float = 15) -> list[KafkaError | None]:
    reports: list[KafkaError | None] = []
    for i in range(n):
        producer.produce(topic, value=b"v%d" % i, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(timeout)
    return reports


@pytest.mark.parametrize(("protocol", "api"), [("classic", "JoinGroup"), ("consumer", "ConsumerGroupHeartbeat")])
def test_a_consumer_without_read_on_its_group(cluster, protocol, api):
    topic, group = unique("orders"), unique("billing")
    cluster.create_topic(topic, 2)
    cluster.acls.allow("User:alice", "READ", topic=topic)
    cluster.acls.allow("User:alice", "DESCRIBE", group=group)  # FindCoordinator answers; READ is refused
    consumer = Consumer(settings(cluster, "alice") | {"group.id": group, "group.protocol": protocol})
    consumer.subscribe([topic])
    error = first_error(consumer)
    consumer.close()
    assert "Group authorization failed" in error.str(), error.str()
    assert denied(cluster, "alice") == {("User:alice", "READ", "GROUP", group, api)}
    for event in denials(cluster, "alice"):
        assert (event.group, event.host, event.broker) == (group, "127.0.0.1", 0), event
        assert event.client_id == "rdkafka", event
    refused = errors(cluster, "GROUP_AUTHORIZATION_FAILED")
    assert refused and {(e.api, e.principal) for e in refused} == {(api, "User:alice")}


def test_a_producer_without_write_on_a_topic(cluster):
    topic = unique("orders")
    cluster.create_topic(topic, 1)
    cluster.acls.allow("User:bob", "DESCRIBE", topic=topic)  # its Metadata answers; its Produce is refused
    reports = deliver(Producer(settings(cluster, "bob") | {"message.timeout.ms": 10_000}), topic)
    assert [e.code() if e else None for e in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3
    assert denied(cluster, "bob") == {("User:bob", "WRITE", "TOPIC", topic, "Produce")}
    assert [e.group for e in denials(cluster, "bob")] == [None] * len(denials(cluster, "bob"))
    refused = errors(cluster, "TOPIC_AUTHORIZATION_FAILED")
    assert refused and {(e.api, e.principal) for e in refused} == {("Produce", "User:bob")}


def test_a_transactional_producer_without_write_on_its_id(cluster):
    tid = unique("tx")
    cluster.acls.allow("User:carol", "DESCRIBE", transactional_id=tid)  # FindCoordinator answers
    producer = Producer(settings(cluster, "carol") | {"transactional.id": tid, "transaction.timeout.ms": 10_000})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(10)
    assert raised.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert denied(cluster, "carol") == {("User:carol", "WRITE", "TRANSACTIONAL_ID", tid, "InitProducerId")}
    refused = errors(cluster, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
    assert refused and {(e.api, e.principal) for e in refused} == {("InitProducerId", "User:carol")}


def test_metadata_of_every_topic_leaves_out_the_hidden_ones_without_a_denial(cluster):
    seen, hidden = unique("seen"), unique("hidden")
    cluster.create_topic(seen, 1)
    cluster.create_topic(hidden, 1)
    cluster.acls.allow("User:dave", "READ", topic=seen)
    listed = AdminClient(settings(cluster, "dave")).list_topics(timeout=10)
    assert seen in listed.topics and hidden not in listed.topics
    assert denials(cluster, "dave") == []  # KafkaApis filters an all-topics Metadata quietly
    # the same topic named: refused, and recorded (logIfDenied = !isAllTopics)
    named = AdminClient(settings(cluster, "dave")).list_topics(hidden, timeout=10)
    assert named.topics[hidden].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert denied(cluster, "dave") == {("User:dave", "DESCRIBE", "TOPIC", hidden, "Metadata")}


@pytest.mark.java
def test_java_transactional_producer_without_write_on_its_id(java_client_jar):  # noqa: F811
    users = {"admin": "a", "alice": "b"}  # what AclScenarios logs in as: alice
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=users, config=CONFIG).run_in_thread() as cluster:
        tid, topic = unique("tx"), unique("orders")
        cluster.create_topic(topic, 1)
        cluster.acls.allow("User:alice", "WRITE", topic=topic)
        cluster.acls.allow("User:alice", "DESCRIBE", transactional_id=tid)
        got = steps(run_txn(java_client_jar, cluster, tid=tid, topic=topic, n=3))
        assert got["init"][1] == "Transactional Id authorization failed."
        assert denied(cluster, "alice") == {("User:alice", "WRITE", "TRANSACTIONAL_ID", tid, "InitProducerId")}
        assert {e.client_id for e in denials(cluster, "alice")} == {"fakebroker-java-acl-producer"}
        refused = errors(cluster, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
        assert refused and {(e.api, e.principal) for e in refused} == {("InitProducerId", "User:alice")}


# -- allow.everyone.if.no.acl.found ------------------------------------------------------------
def test_allow_everyone_if_no_acl_found():
    config = CONFIG | {"allow.everyone.if.no.acl.found": "true"}
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=config).run_in_thread() as cluster:
        open_topic, guarded, group = unique("open"), unique("guarded"), unique("group")
        cluster.create_topic(open_topic, 1)
        cluster.create_topic(guarded, 1)
        cluster.acls.allow("User:bob", "WRITE", topic=guarded)
        # no ACL on the topic nor on the group: alice produces and consumes in a group
        assert deliver(Producer(settings(cluster, "alice")), open_topic) == [None] * 3
        consumer = Consumer(settings(cluster, "alice") | {"group.id": group, "auto.offset.reset": "earliest"})
        consumer.subscribe([open_topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append(msg.value())
        consumer.commit(asynchronous=False)
        consumer.close()
        assert sorted(got) == [b"v0", b"v1", b"v2"]
        assert sum(cluster.committed(group).values()) == 3
        # an ACL on the topic: it is its grantees' alone; alice is refused, bob writes
        reports = deliver(Producer(settings(cluster, "alice") | {"message.timeout.ms": 10_000}), guarded)
        assert [e.code() if e else None for e in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3
        assert deliver(Producer(settings(cluster, "bob")), guarded) == [None] * 3
        assert sorted(value for _, _, _, value in cluster.records(guarded)) == [b"v0", b"v1", b"v2"]
        # alice's Metadata naming it is refused first (bob's WRITE implies only his DESCRIBE)
        assert denied(cluster, "alice") == {("User:alice", "DESCRIBE", "TOPIC", guarded, "Metadata")}
        assert denials(cluster, "bob") == []

"""Issue 37 with librdkafka (confluent-kafka) over SASL_PLAINTEXT and an authorizer: what a
producer and a metadata request meet when ACLs say no, as on Kafka 4.4. Alice without WRITE on
a topic gets TOPIC_AUTHORIZATION_FAILED in her delivery reports; Metadata leaves out the topics
she may not describe; a transactional producer without WRITE on its transactional id fails
``init_transactions`` with librdkafka's fatal TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and with it
granted commits; an idempotent producer without IDEMPOTENT_WRITE on the cluster or WRITE on
some topic fails with CLUSTER_AUTHORIZATION_FAILED, and with a topic's WRITE (KIP-679) proceeds."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from fakebroker.cluster import FakeCluster

from .security_support import acl_cluster

pytestmark = pytest.mark.clients
USERS = {"admin": "a", "alice": "b"}
ALICE = "User:alice"
QUIET = {"log_level": 0}


@pytest.fixture
def cluster():
    with acl_cluster(USERS) as c:
        yield c


def settings(cluster: FakeCluster, user: str = "alice", mechanism: str = "SCRAM-SHA-512") -> dict:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": USERS[user],
        **QUIET,
    }


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def deliver(producer: Producer, topic: str, n: int = 3, timeout: float = 15) -> list[KafkaError | None]:
    """Produce ``n`` records and flush: each one's delivery error (None when delivered)."""
    reports: list[KafkaError | None] = []
    for i in range(n):
        producer.produce(topic, value=b"v%d" % i, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(timeout)
    return reports


@pytest.mark.parametrize("may_describe", [True, False], ids=["describe-only", "no-acl"])
def test_produce_without_write_is_refused_with_topic_authorization_failed(cluster, may_describe):
    topic = unique("orders")
    cluster.create_topic(topic, 2)
    if may_describe:  # then the refusal is the Produce answer's, not Metadata's
        cluster.acls.allow(ALICE, "DESCRIBE", topic=topic)
    reports = deliver(Producer(settings(cluster) | {"message.timeout.ms": 10_000}), topic)
    assert [e.code() if e else None for e in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3
    assert cluster.records(topic) == []
    cluster.acls.allow(ALICE, "WRITE", topic=topic)
    assert deliver(Producer(settings(cluster)), topic) == [None] * 3
    assert sorted(value for _, _, _, value in cluster.records(topic)) == [b"v0", b"v1", b"v2"]


def test_metadata_leaves_out_the_topics_alice_may_not_describe(cluster):
    seen, hidden = unique("seen"), unique("hidden")
    cluster.create_topic(seen, 1)
    cluster.create_topic(hidden, 1)
    cluster.acls.allow(ALICE, "READ", topic=seen)  # READ implies DESCRIBE
    alice = AdminClient(settings(cluster)).list_topics(timeout=10)
    assert set(alice.topics) == {seen}
    named = AdminClient(settings(cluster)).list_topics(hidden, timeout=10)
    assert named.topics[hidden].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin = AdminClient(settings(cluster, "admin", "PLAIN")).list_topics(timeout=10)
    assert {seen, hidden} <= set(admin.topics)


def transactional(cluster: FakeCluster, tid: str) -> Producer:
    return Producer(settings(cluster) | {"transactional.id": tid, "transaction.timeout.ms": 10_000})


@pytest.mark.parametrize("acl", [None, "DESCRIBE"], ids=["no-acl", "describe-only"])
def test_a_transactional_producer_without_write_on_its_id_fails_fatally(cluster, acl):
    tid = unique("tx")
    if acl:  # FindCoordinator passes (DESCRIBE); InitProducerId refuses (WRITE)
        cluster.acls.allow(ALICE, acl, transactional_id=tid)
    producer = transactional(cluster, tid)
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(10)
    error = raised.value.args[0]
    assert error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, error
    assert error.fatal(), error


def test_a_transactional_producer_granted_write_commits(cluster):
    tid, topic = unique("tx"), unique("orders")
    cluster.create_topic(topic, 2)
    cluster.acls.allow(ALICE, "WRITE", transactional_id=tid)
    cluster.acls.allow(ALICE, "WRITE", topic=topic)
    producer = transactional(cluster, tid)
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(4):
        producer.produce(topic, value=b"t%d" % i, partition=i % 2)
    producer.commit_transaction(10)
    committed = sorted(value for _, _, _, value in cluster.records(topic, committed=True))
    assert committed == [b"t0", b"t1", b"t2", b"t3"]
    # alice may not read it back: READ was never granted
    consumer = Consumer(settings(cluster) | {"group.id": unique("g"), "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    errors = []
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is not None:
            errors.append(msg.error().code())
    consumer.close()
    assert errors and errors[0] in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED)


def test_an_idempotent_producer_needs_idempotent_write_or_some_topic_write(cluster):
    topic = unique("orders")
    cluster.create_topic(topic, 1)
    cluster.acls.allow(ALICE, "DESCRIBE", topic=topic)
    producer = Producer(settings(cluster) | {"enable.idempotence": True, "message.timeout.ms": 10_000})
    producer.produce(topic, value=b"v")
    # InitProducerId refused: librdkafka's fatal error, raised by flush
    with pytest.raises(KafkaException) as raised:
        producer.flush(15)
    error = raised.value.args[0]
    assert (error.code(), error.fatal()) == (KafkaError.CLUSTER_AUTHORIZATION_FAILED, True), error
    assert cluster.records(topic) == []
    # WRITE on a topic is enough for the producer id (KIP-679), and to produce there
    cluster.acls.allow(ALICE, "WRITE", topic=topic)
    assert deliver(Producer(settings(cluster) | {"enable.idempotence": True}), topic) == [None] * 3


def test_idempotent_write_on_the_cluster_gives_a_producer_id_not_a_topic(cluster):
    topic = unique("orders")
    cluster.create_topic(topic, 1)
    cluster.acls.allow(ALICE, "DESCRIBE", topic=topic)
    cluster.acls.allow(ALICE, "IDEMPOTENT_WRITE", cluster=True)
    producer = Producer(settings(cluster) | {"enable.idempotence": True, "message.timeout.ms": 10_000})
    # the producer id is granted (no fatal error); each record is refused by its topic
    reports = deliver(producer, topic)
    assert [e.code() if e else None for e in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3

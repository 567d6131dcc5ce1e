"""Issue 37 with librdkafka (confluent-kafka): SASL PLAIN and SCRAM over TLS and plaintext, TLS
alone, and a wrong password answered as Kafka answers it (the client's own error names it)."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from fakebroker.cluster import FakeCluster
from fakebroker.cluster import conditions as cond

from .refusals import REFUSED_CALL_TIMEOUT, poll_for_error

pytestmark = pytest.mark.clients
QUIET = {"log_level": 3}
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


def settings(cluster: FakeCluster, mechanism: str | None, user: str = "alice", password: str | None = None) -> dict:
    out = {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": cluster.security_protocol, **QUIET}
    if mechanism is not None:
        out |= {"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password or USERS[user]}
    if cluster.tls_ca_file is not None:
        out["ssl.ca.location"] = cluster.tls_ca_file
    return out


def produce_and_consume_in_a_group(cluster: FakeCluster, mechanism: str | None, user: str = "alice") -> list[bytes]:
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 2)
    producer = Producer(settings(cluster, mechanism, user))
    for i in range(10):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(15) == 0
    consumer = Consumer(
        settings(cluster, mechanism, user) | {"group.id": group, "auto.offset.reset": "earliest", "client.id": user}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert cluster.group(group).state in ("Empty", "Stable")
    return sorted(got)


EXPECTED = sorted(b"v%d" % i for i in range(10))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_sasl_ssl_produce_and_consume_in_a_group(mechanism):
    with FakeCluster(brokers=2, security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        assert produce_and_consume_in_a_group(cluster, mechanism) == EXPECTED
        authenticated = [e for e in cluster.events if e.kind == "client_authenticated"]
        assert authenticated and {e.principal for e in authenticated} == {"User:alice"}
        assert {e.mechanism for e in authenticated} == {mechanism}


def test_sasl_plaintext_scram_and_tls_alone():
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS).run_in_thread() as cluster:
        assert cluster.tls_ca_file is None
        assert produce_and_consume_in_a_group(cluster, "SCRAM-SHA-512", user="bob") == EXPECTED
    with FakeCluster(security_protocol="SSL").run_in_thread() as cluster:
        assert produce_and_consume_in_a_group(cluster, None) == EXPECTED


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_a_wrong_password_is_refused_with_kafkas_text(mechanism):
    with FakeCluster(security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        errors: list[KafkaError] = []
        admin = AdminClient(settings(cluster, mechanism, password="wrong") | {"error_cb": errors.append})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=REFUSED_CALL_TIMEOUT)
        poll_for_error(admin, errors, lambda e: e.code() == KafkaError._AUTHENTICATION)  # error_cb is served by poll
        auth_errors = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        assert auth_errors, errors
        text = SCRAM_FAILED.format(mechanism) if mechanism != "PLAIN" else "Invalid username or password"
        assert text in auth_errors[0].str()
        failed = cluster.wait_for_sync(cond.event("authentication_failed"), timeout=5)
        assert failed.mechanism == mechanism and text in failed.reason
        assert not [e for e in cluster.events if e.kind == "client_authenticated"]


def test_an_unknown_user_fails_as_a_wrong_password_does():
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS).run_in_thread() as cluster:
        errors: list[KafkaError] = []
        admin = AdminClient(
            settings(cluster, "SCRAM-SHA-256", user="alice") | {"sasl.username": "mallory", "error_cb": errors.append}
        )
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=REFUSED_CALL_TIMEOUT)
        poll_for_error(admin, errors, lambda e: SCRAM_FAILED.format("SCRAM-SHA-256") in e.str())
        assert any(SCRAM_FAILED.format("SCRAM-SHA-256") in e.str() for e in errors), errors


def test_a_mechanism_the_broker_does_not_enable_is_named():
    with FakeCluster(
        security_protocol="SASL_PLAINTEXT", users=USERS, config={"sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    ).run_in_thread() as cluster:
        errors: list[KafkaError] = []
        admin = AdminClient(settings(cluster, "PLAIN") | {"error_cb": errors.append})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=REFUSED_CALL_TIMEOUT)
        poll_for_error(admin, errors, lambda e: "SCRAM-SHA-512" in e.str())
        assert any("SCRAM-SHA-512" in e.str() for e in errors), [e.str() for e in errors]

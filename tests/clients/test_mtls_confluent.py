"""Mutual TLS (issue 37) with librdkafka: ``ssl.client.auth`` required and requested, the
principal taken from the client certificate's subject through ``ssl.principal.mapping.rules``,
and ACLs deciding on it."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from fakebroker.cluster import FakeCluster
from fakebroker.cluster.access import STANDARD_AUTHORIZER

pytestmark = pytest.mark.clients
QUIET = {"log_level": 3}


def client(cluster: FakeCluster, cert=None) -> dict:
    out = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.ca.location": cluster.tls_ca_file,
        "enable.idempotence": False,
        **QUIET,
    }
    if cert is not None:
        out |= {"ssl.certificate.location": cert.cert_file, "ssl.key.location": cert.key_file}
    return out


def produce(settings: dict) -> KafkaError | None:
    reports: list[KafkaError | None] = []
    producer = Producer(settings | {"on_delivery": lambda err, msg: reports.append(err)})
    producer.produce("orders", value=b"paid")
    producer.flush(10)
    return reports[0] if reports else KafkaError(KafkaError._MSG_TIMED_OUT)


def test_required_client_certificates_name_the_principal_acls_decide_on():
    config = {
        "ssl.client.auth": "required",
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=billing,.*$/$1/L,DEFAULT",
    }
    with FakeCluster(security_protocol="SSL", config=config, topics={"orders": 1}).run_in_thread() as cluster:
        alice = cluster.client_certificate("Alice", organization_unit="billing")
        mallory = cluster.client_certificate("mallory", organization_unit="outside")
        assert alice.subject.startswith("CN=Alice,OU=billing")
        cluster.acls.allow("User:alice", "WRITE", topic="orders")  # the mapped name
        assert produce(client(cluster, alice)) is None
        denied = produce(client(cluster, mallory))  # DEFAULT: User:CN=mallory,OU=outside,...
        assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert len(cluster.records("orders")) == 1
        with pytest.raises(KafkaException):  # no certificate: the TLS handshake fails
            AdminClient(client(cluster)).list_topics(timeout=2)
        closed = [e for e in cluster.events if e.kind == "connection_closed" and "TLS handshake failed" in e.reason]
        assert closed


def test_requested_client_certificates_leave_others_anonymous():
    config = {"ssl.client.auth": "requested", "authorizer.class.name": STANDARD_AUTHORIZER}
    with FakeCluster(security_protocol="SSL", config=config, topics={"orders": 1}).run_in_thread() as cluster:
        cluster.acls.allow("User:ANONYMOUS", "WRITE", topic="orders")
        assert produce(client(cluster)) is None  # no certificate: User:ANONYMOUS
        bob = cluster.client_certificate("bob")
        refused = produce(client(cluster, bob))
        assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

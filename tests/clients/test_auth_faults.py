"""Fault rules aimed at authentication (issue 37): a rule on SaslAuthenticate fails the next
authentications as the broker would refuse them, and the client logs in again afterwards."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer

from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients


def test_the_next_authentication_fails_then_the_client_logs_in_again():
    with FakeCluster(
        security_protocol="SASL_PLAINTEXT", users={"alice": "a-secret"}, topics={"orders": 1}
    ).run_in_thread() as cluster:
        cluster.faults.add(api="SaslAuthenticate", error="SASL_AUTHENTICATION_FAILED", times=1)
        errors: list[KafkaError] = []
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": "a-secret",
                "error_cb": errors.append,
                "reconnect.backoff.ms": 50,
                "log_level": 3,
            }
        )
        producer.produce("orders", value=b"paid")
        assert producer.flush(15) == 0  # after the refused login, the next one succeeds
        assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
        fired = [e for e in cluster.events if e.kind == "fault_fired"]
        assert len(fired) == 1 and fired[0].action == "error"
        assert [e.principal for e in cluster.events if e.kind == "client_authenticated"]
        assert len(cluster.records("orders")) == 1


def test_a_session_ended_now_is_closed_at_its_next_request_and_the_client_logs_in_again():
    with FakeCluster(
        security_protocol="SASL_PLAINTEXT", users={"alice": "a-secret"}, topics={"orders": 1}
    ).run_in_thread() as cluster:
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "alice",
                "sasl.password": "a-secret",
                "client.id": "billing-1",
                "reconnect.backoff.ms": 50,
                "log_level": 3,
            }
        )
        producer.produce("orders", value=b"first")
        assert producer.flush(15) == 0
        logins = len([e for e in cluster.events if e.kind == "client_authenticated"])
        assert cluster.expire_sessions("billing-*") >= 1
        assert cluster.expire_sessions("nobody") == 0
        producer.produce("orders", value=b"second")
        assert producer.flush(15) == 0  # its expired connection was closed; it logged in again
        closed = [e for e in cluster.events if e.kind == "connection_closed" and "SASL session expired" in e.reason]
        assert closed
        assert len([e for e in cluster.events if e.kind == "client_authenticated"]) > logins
        assert [v for *_, v in cluster.records("orders")] == [b"first", b"second"]

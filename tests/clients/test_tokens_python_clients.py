"""Delegation tokens and the Python clients (issue 37). None of confluent-kafka (librdkafka
2.16), kafka-python 3.0 or aiokafka 0.14 has a delegation-token admin API, and none can send
SCRAM's ``tokenauth=true`` extension (librdkafka's client-first is ``n,,n=<user>,r=<nonce>``, and
so are kafka-python's and aiokafka's): a token's id and HMAC given as ``sasl.username`` and
``sasl.password`` are checked as a user's, and refused as Kafka refuses an unknown user, with
SCRAM's generic text. The token is made here with raw requests (CreateDelegationToken v3) over
SASL_SSL, as the Java Admin client sends them; tests/clients/test_java_tokens.py has the client
that logs in with it."""

from __future__ import annotations

import base64
import ssl

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from fakebroker.cluster import FakeCluster
from fakebroker.cluster import conditions as cond

from ..raw_client import RawClient
from .refusals import REFUSED_CALL_TIMEOUT, poll_for_error

pytestmark = pytest.mark.clients
USERS = {"alice": "alice-secret"}
CONFIG = {"delegation.token.secret.key": "token-secret-key"}
SCRAM_FAILED = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
)


def make_token(cluster: FakeCluster) -> tuple[str, str]:
    """A token of alice's, asked for over SASL_SSL with PLAIN: (token id, base64 HMAC)."""
    context = ssl.create_default_context(cafile=str(cluster.tls_ca_file))
    with RawClient(cluster.servers[0].port) as client:
        client.sock = context.wrap_socket(client.sock, server_hostname="127.0.0.1")
        assert client.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
        assert client.request(36, 2, {"auth_bytes": b"\0alice\0alice-secret"}).error_code == 0
        created = client.request(38, 3, {"renewers": [], "max_lifetime_ms": -1})
    assert (created.error_code, created.principal_name) == (0, "alice")
    return created.token_id, base64.b64encode(created.hmac).decode()


def test_confluent_kafka_cannot_log_in_with_a_token():
    with FakeCluster(security_protocol="SASL_SSL", users=USERS, config=CONFIG).run_in_thread() as cluster:
        token_id, password = make_token(cluster)
        errors: list[KafkaError] = []
        admin = AdminClient(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "security.protocol": "SASL_SSL",
                "ssl.ca.location": cluster.tls_ca_file,
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": token_id,
                "sasl.password": password,
                "error_cb": errors.append,
                "log_level": 3,
            }
        )
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=REFUSED_CALL_TIMEOUT)
        poll_for_error(admin, errors, lambda e: e.code() == KafkaError._AUTHENTICATION)  # error_cb is served by poll
        auth_errors = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        assert auth_errors and SCRAM_FAILED in auth_errors[0].str(), errors
        failed = cluster.wait_for_sync(cond.event("authentication_failed"), timeout=5)
        assert failed.reason == SCRAM_FAILED
        assert not [e for e in cluster.events if e.kind == "client_authenticated" and e.principal != "User:alice"]


def test_kafka_python_cannot_log_in_with_a_token():
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as KafkaPythonError

    with FakeCluster(security_protocol="SASL_SSL", users=USERS, config=CONFIG).run_in_thread() as cluster:
        token_id, password = make_token(cluster)
        with pytest.raises(KafkaPythonError):
            KafkaProducer(
                bootstrap_servers=cluster.bootstrap_servers,
                security_protocol="SASL_SSL",
                ssl_cafile=cluster.tls_ca_file,
                sasl_mechanism="SCRAM-SHA-512",
                sasl_plain_username=token_id,
                sasl_plain_password=password,
                max_block_ms=3000,
                bootstrap_timeout_ms=3000,  # it retries the bootstrap until then (30 s by default)
            )
        failed = cluster.wait_for_sync(cond.event("authentication_failed"), timeout=5)
        assert failed.reason == SCRAM_FAILED

"""A SASL listener's authentication on the wire, as Kafka 4.4's SaslServerAuthenticator answers
it (issue 37): what may come before the handshake, the answers to a bad mechanism, a bad
password and a request out of order, the failed-authentication delay, raw tokens after a v0
handshake, and SaslHandshake/SaslAuthenticate where no authentication is under way."""

from __future__ import annotations

import struct
import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.core.security.authenticator import java_hash_set_order
from fakebroker.protocol.error_codes import ErrorCode

from ..raw_client import RawClient

API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 17, 36
USERS = {"alice": "alice-secret"}
VERSIONS = {"client_software_name": "raw", "client_software_version": "1"}
ENABLED = ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256", "OAUTHBEARER"]  # the default mechanisms, in HashSet order


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS).run_in_thread() as running:
        yield running


def closed_unanswered(client: RawClient) -> bool:
    try:
        client.receive_payload()
    except (ConnectionError, OSError):
        return True
    return False


def test_mechanisms_come_back_in_java_hash_set_order():
    assert java_hash_set_order(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]) == [
        "PLAIN",
        "SCRAM-SHA-512",
        "SCRAM-SHA-256",
    ]
    assert java_hash_set_order(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]) == ENABLED


def test_plain_over_saslauthenticate_then_requests_are_served(cluster):
    with RawClient(cluster.servers[0].port) as client:
        assert client.request(API_VERSIONS, 3, VERSIONS).error_code == 0
        shake = client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert shake.error_code == 0 and shake.mechanisms == ENABLED
        done = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
        assert (done.error_code, done.auth_bytes, done.session_lifetime_ms) == (0, b"", 0)
        assert client.request(METADATA, 12, {"topics": None}).brokers[0].node_id == 0
        again = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
        assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert again.error_message == "SaslAuthenticate request received after successful authentication"
        assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_a_request_before_the_handshake_closes_the_connection_unanswered(cluster):
    with RawClient(cluster.servers[0].port) as client:
        client.send(METADATA, 12, {"topics": None})
        assert closed_unanswered(client)
    with RawClient(cluster.servers[0].port) as client:  # a second ApiVersions: the same
        client.request(API_VERSIONS, 3, VERSIONS)
        client.send(API_VERSIONS, 3, VERSIONS)
        assert closed_unanswered(client)


def test_a_wrong_password_is_answered_late_then_the_connection_closes(cluster):
    with RawClient(cluster.servers[0].port) as client:
        client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        started = time.monotonic()
        failed = client.request(SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0nope"})
        waited = time.monotonic() - started
        assert failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert failed.error_message == "Authentication failed: Invalid username or password"
        assert 0.09 <= waited < 2  # connection.failed.authentication.delay.ms, Kafka's 100
        assert closed_unanswered(client)


def test_an_unknown_mechanism_gets_the_enabled_list_and_a_close(cluster):
    with RawClient(cluster.servers[0].port) as client:
        shake = client.request(SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
        assert shake.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert shake.mechanisms == ENABLED
        assert closed_unanswered(client)


def test_another_request_while_authenticating_is_illegal_in_its_own_shape(cluster):
    with RawClient(cluster.servers[0].port) as client:
        client.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})
        refused = client.request(METADATA, 12, {"topics": None})
        assert refused.topics == [] and refused.brokers == []  # Metadata has no top-level error code
        assert closed_unanswered(client)
    with RawClient(cluster.servers[0].port) as client:
        client.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})
        again = client.request(API_VERSIONS, 3, VERSIONS)
        assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert closed_unanswered(client)


def test_raw_tokens_after_a_v0_handshake(cluster):
    with RawClient(cluster.servers[0].port) as client:
        assert client.request(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
        token = b"\0alice\0alice-secret"
        client.sock.sendall(struct.pack(">i", len(token)) + token)
        assert client.receive_payload() == b""  # PLAIN's empty answer, as a zero-length frame
        assert client.request(METADATA, 12, {"topics": None}).brokers[0].node_id == 0
    with RawClient(cluster.servers[0].port) as client:
        client.request(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
        token = b"\0alice\0wrong"
        client.sock.sendall(struct.pack(">i", len(token)) + token)
        assert closed_unanswered(client)


def test_sasl_requests_on_a_plaintext_listener_are_illegal_and_the_connection_stays():
    with FakeCluster().run_in_thread() as plain, RawClient(plain.servers[0].port) as client:
        shake = client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert (shake.error_code, shake.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])
        assert client.request(METADATA, 12, {"topics": None}).brokers[0].node_id == 0


def test_a_session_past_connections_max_reauth_ms_is_closed_at_its_next_request():
    config = {"connections.max.reauth.ms": 300}
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=config).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as client:
            client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
            done = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
            assert done.error_code == 0 and 0 < done.session_lifetime_ms <= 300
            assert client.request(METADATA, 12, {"topics": None}).brokers
            time.sleep(0.4)
            client.send(METADATA, 12, {"topics": None})
            assert closed_unanswered(client)
        with RawClient(cluster.servers[0].port) as client:  # re-authenticated in time, it goes on
            client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
            client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
            time.sleep(0.25)
            assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
            again = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
            assert again.error_code == 0 and again.session_lifetime_ms > 0
            time.sleep(0.2)
            assert client.request(METADATA, 12, {"topics": None}).brokers


def test_virtual_time_moves_the_re_authentication_deadline():
    """With ``virtual_time``, a session's end is on the cluster's clock: an hour of it passes in
    an instant, and the connection is closed at its next request as it would be an hour later."""
    config = {"connections.max.reauth.ms": 3_600_000}
    with FakeCluster(
        security_protocol="SASL_PLAINTEXT", users=USERS, config=config, virtual_time=True
    ).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as client:
            client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
            done = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
            assert done.error_code == 0 and done.session_lifetime_ms == 3_600_000
            cluster.clock.advance(3_599)
            assert client.request(METADATA, 12, {"topics": None}).brokers  # a second is left
            cluster.clock.advance(2)
            client.send(METADATA, 12, {"topics": None})
            assert closed_unanswered(client)

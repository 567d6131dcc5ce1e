"""Delegation tokens on the wire (issue 37): created over a SASL listener, then used to log in
with SCRAM and ``tokenauth=true`` as the Java client does: the session is the owner's, ends at
the token's expiry, and may not use the token APIs; the listener each request came in on reaches
the check (PLAINTEXT and one-way TLS refused, a client certificate accepted); an expired token
is refused with SCRAM's generic text."""

from __future__ import annotations

import base64
import ssl
import time

from fakebroker.cluster import FakeCluster
from fakebroker.protocol.error_codes import ErrorCode

from ..core.scram_client import Client
from ..raw_client import RawClient

METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 3, 17, 36
CREATE, RENEW, EXPIRE, DESCRIBE = 38, 39, 40, 41
SECRET = {"delegation.token.secret.key": "s3cret"}
USERS = {"alice": "alice-secret"}
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"


def plain_login(client: RawClient, user: str = "alice", password: str = "alice-secret") -> None:
    assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    done = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})
    assert done.error_code == 0, done.error_message


def token_login(client: RawClient, token_id: str, hmac: bytes):
    """SCRAM-SHA-512 with ``tokenauth=true``: the last SaslAuthenticate answer."""
    scram = Client("SCRAM-SHA-512", token_id, base64.b64encode(hmac).decode(), extensions=",tokenauth=true")
    assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"}).error_code == 0
    first = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
    if first.error_code:
        return first
    final = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(bytes(first.auth_bytes))})
    assert final.error_code or scram.verify(bytes(final.auth_bytes))
    return final


def create_token(client: RawClient, **fields):
    return client.request(CREATE, 3, {"renewers": [], "max_lifetime_ms": -1, **fields})


def closed(client: RawClient) -> bool:
    try:
        client.receive_payload()
    except (ConnectionError, OSError):
        return True
    return False


def test_a_token_logs_in_as_its_owner_until_its_expiry_and_may_not_ask_for_tokens():
    config = {**SECRET, "delegation.token.expiry.time.ms": 600_000}
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=config).run_in_thread() as cluster:
        port = cluster.servers[0].port
        with RawClient(port) as alice:
            plain_login(alice)
            token = create_token(alice)
            assert (token.error_code, token.principal_name) == (0, "alice")
        with RawClient(port, client_id="with-token") as holder:
            done = token_login(holder, token.token_id, token.hmac)
            assert done.error_code == 0
            lifetime = token.expiry_timestamp_ms - token.issue_timestamp_ms
            assert lifetime - 5_000 < done.session_lifetime_ms <= lifetime  # the session ends with the token
            assert holder.request(METADATA, 12, {"topics": None}).brokers[0].node_id == 0
            again = create_token(holder)
            assert (again.error_code, again.principal_name) == (ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, "alice")
            listed = holder.request(DESCRIBE, 3, {"owners": None})
            assert listed.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        logins = [e for e in cluster.events if e.kind == "client_authenticated" and e.client_id == "with-token"]
        assert [(e.principal, e.mechanism) for e in logins] == [("User:alice", "SCRAM-SHA-512")]
        assert 0 < logins[0].session_lifetime_ms <= 600_000


def test_an_expired_token_is_refused_with_scrams_generic_text():
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=SECRET).run_in_thread() as cluster:
        port = cluster.servers[0].port
        with RawClient(port) as alice:
            plain_login(alice)
            token = create_token(alice)
            gone = alice.request(EXPIRE, 2, {"hmac": token.hmac, "expiry_time_period_ms": -1})
            assert gone.error_code == 0
            assert alice.request(RENEW, 2, {"hmac": token.hmac, "renew_period_ms": 0}).error_code == (
                ErrorCode.DELEGATION_TOKEN_NOT_FOUND
            )
        with RawClient(port) as holder:
            started = time.monotonic()
            refused = token_login(holder, token.token_id, token.hmac)
            assert (refused.error_code, refused.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, GENERIC)
            assert time.monotonic() - started >= 0.09  # connection.failed.authentication.delay.ms
            assert closed(holder)
        (failed,) = [e for e in cluster.events if e.kind == "authentication_failed"]
        assert failed.reason == GENERIC
        kinds = [e.kind for e in cluster.events if e.kind.startswith("token_")]
        assert kinds == ["token_created", "token_expired"]


def test_a_plaintext_listener_refuses_token_requests():
    with FakeCluster(config=SECRET).run_in_thread() as cluster, RawClient(cluster.servers[0].port) as client:
        refused = create_token(client)
        assert (refused.error_code, refused.principal_name) == (
            ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            "ANONYMOUS",
        )
        assert refused.issue_timestamp_ms == -1


def tls_client(cluster: FakeCluster, cert=None) -> RawClient:
    context = ssl.create_default_context(cafile=str(cluster.tls_ca_file))
    if cert is not None:
        context.load_cert_chain(cert.cert_file, cert.key_file)
    client = RawClient(cluster.servers[0].port)
    client.sock = context.wrap_socket(client.sock, server_hostname="127.0.0.1")
    return client


def test_an_ssl_listener_takes_token_requests_with_a_client_certificate_only():
    config = {**SECRET, "ssl.client.auth": "requested"}
    with FakeCluster(security_protocol="SSL", config=config).run_in_thread() as cluster:
        with tls_client(cluster) as anonymous:
            assert create_token(anonymous).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        with tls_client(cluster, cluster.client_certificate("alice")) as alice:
            token = create_token(alice)
            assert token.error_code == 0 and token.principal_name.startswith("CN=alice")
            listed = alice.request(DESCRIBE, 3, {"owners": None})
            assert [t.token_id for t in listed.tokens] == [token.token_id]


def test_virtual_time_ends_the_tokens_session_and_the_sweep_removes_it():
    day = 86_400_000
    config = {**SECRET, "delegation.token.expiry.time.ms": day}
    with FakeCluster(
        security_protocol="SASL_PLAINTEXT", users=USERS, config=config, virtual_time=True
    ).run_in_thread() as cluster:
        port = cluster.servers[0].port
        with RawClient(port) as alice, RawClient(port) as holder:
            plain_login(alice)
            token = create_token(alice)
            assert token.expiry_timestamp_ms - token.issue_timestamp_ms == day
            assert token_login(holder, token.token_id, token.hmac).session_lifetime_ms == day
            renewed = alice.request(RENEW, 2, {"hmac": token.hmac, "renew_period_ms": -1})
            assert renewed.expiry_timestamp_ms == token.expiry_timestamp_ms  # the clock has not moved
            cluster.clock.advance(day / 1000 + 1)  # past the token's expiry, and the sweep ran
            holder.send(METADATA, 12, {"topics": None})
            assert closed(holder)  # the session ended with the token: closed at its next request
            missing = alice.request(RENEW, 2, {"hmac": token.hmac, "renew_period_ms": -1})
            assert missing.error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
        swept = [e for e in cluster.events if e.kind == "token_expired"]
        assert [(e.token_id, e.removed, e.requester) for e in swept] == [(token.token_id, True, None)]

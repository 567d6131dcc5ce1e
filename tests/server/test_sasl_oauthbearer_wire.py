"""OAUTHBEARER on the wire, as Kafka 4.4's broker answers it (issue 37): an unsecured token
accepted with the session lifetime its exp leaves, a refused one in two round trips (the JSON
status as a successful SaslAuthenticate, then SASL_AUTHENTICATION_FAILED with it after the
client's 0x01, the failed-authentication delay and a close), a token header without ``alg``
closing the connection unanswered, the session closed at the token's expiry without
``connections.max.reauth.ms``, and ``FakeCluster(oauth_validator=...)``: the unsecured
validator's options, a test's own function, and the mistakes it refuses."""

from __future__ import annotations

import base64
import json
import time

import pytest

from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.cluster.security import InvalidOAuthToken, OAuthToken
from fakebroker.protocol.error_codes import ErrorCode

from ..raw_client import RawClient

API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 17, 36
INVALID = b'{"status":"invalid_token"}'


def part(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def unsecured(sub: str = "alice", life_s: float = 60, header: object = None, **claims: object) -> str:
    now = time.time()
    # issued a second ago: an iat rounded up past the broker's now (a whole ms) would be in the future
    body = {"sub": sub, "iat": round(now - 1, 3), "exp": round(now + life_s, 3), **claims}
    return f"{part(header or {'alg': 'none'})}.{part(body)}."


def first_message(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def closed_unanswered(client: RawClient) -> bool:
    try:
        client.receive_payload()
    except (ConnectionError, OSError):
        return True
    return False


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster(security_protocol="SASL_PLAINTEXT").run_in_thread() as running:
        yield running


def log_in(client: RawClient, token: str):
    assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}).error_code == 0
    return client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": first_message(token)})


def test_an_unsecured_token_is_accepted_and_its_exp_is_the_session_lifetime(cluster):
    with RawClient(cluster.servers[0].port) as client:
        done = log_in(client, unsecured(life_s=30))
        assert (done.error_code, done.error_message, done.auth_bytes) == (0, "", b"")  # Kafka: the default message, ""
        assert 29_000 < done.session_lifetime_ms <= 30_000  # connections.max.reauth.ms is 0: the token's exp
        assert client.request(METADATA, 12, {"topics": None}).brokers[0].node_id == 0
    seen = [e for e in cluster.events if e.kind == "client_authenticated" and e.mechanism == "OAUTHBEARER"]
    assert seen and seen[-1].principal == "User:alice" and seen[-1].session_lifetime_ms == done.session_lifetime_ms


@pytest.mark.parametrize(
    "token",
    [unsecured(life_s=-1), unsecured(header={"alg": "RS256"}), unsecured(sub=""), unsecured(exp="soon")],
    ids=["expired", "signed", "no-principal", "exp-not-a-number"],
)
def test_a_refused_token_takes_two_round_trips_then_the_connection_closes(cluster, token):
    with RawClient(cluster.servers[0].port) as client:
        challenge = log_in(client, token)
        assert (challenge.error_code, challenge.error_message, challenge.auth_bytes) == (0, "", INVALID)
        assert challenge.session_lifetime_ms == 0
        started = time.monotonic()
        failed = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
        waited = time.monotonic() - started
        assert (failed.error_code, failed.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, INVALID.decode())
        assert 0.09 <= waited < 2  # connection.failed.authentication.delay.ms
        assert closed_unanswered(client)
    failure = [e for e in cluster.events if e.kind == "authentication_failed"][-1]
    assert (failure.mechanism, failure.reason) == ("OAUTHBEARER", INVALID.decode())


def test_a_token_header_without_alg_closes_the_connection_unanswered(cluster):
    with RawClient(cluster.servers[0].port) as client:
        assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}).error_code == 0
        token = f"{part({'typ': 'JWT'})}.{part({'sub': 'alice', 'exp': time.time() + 60})}."
        started = time.monotonic()
        client.send(SASL_AUTHENTICATE, 2, {"auth_bytes": first_message(token)})
        assert closed_unanswered(client) and time.monotonic() - started < 0.09  # at once, no delay
    closed = [e for e in cluster.events if e.kind == "connection_closed"][-1]
    assert "JWS header must have an Algorithm value" in closed.reason


def test_garbage_gets_the_generic_text(cluster):
    with RawClient(cluster.servers[0].port) as client:
        assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}).error_code == 0
        failed = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x00\xffgarbage"})
        assert (failed.error_code, failed.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER",
        )
        assert closed_unanswered(client)


def test_the_session_ends_at_the_tokens_exp_and_a_fresh_token_extends_it(cluster):
    with RawClient(cluster.servers[0].port) as client:
        assert log_in(client, unsecured(life_s=1.2)).error_code == 0
        time.sleep(0.5)
        assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}).error_code == 0  # re-authentication
        again = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": first_message(unsecured(life_s=30))})
        assert again.error_code == 0 and again.session_lifetime_ms > 29_000
        time.sleep(1)
        assert client.request(METADATA, 12, {"topics": None}).brokers  # past the first token's exp
    with RawClient(cluster.servers[0].port) as client:
        assert log_in(client, unsecured(life_s=0.4)).error_code == 0
        assert client.request(METADATA, 12, {"topics": None}).brokers
        time.sleep(0.5)
        client.send(METADATA, 12, {"topics": None})
        assert closed_unanswered(client)  # the session ended at exp: closed at its next request


def test_virtual_time_moves_the_tokens_expiry():
    """With ``virtual_time`` a token's ``exp`` is read on the cluster's clock: an hour of it passes
    in an instant, the session the token opened ends then (closed at its next request), and a
    token whose ``exp`` the cluster's clock has passed is refused as expired, though not yet on
    the wall clock."""
    with FakeCluster(security_protocol="SASL_PLAINTEXT", virtual_time=True).run_in_thread() as cluster:
        port = cluster.servers[0].port
        with RawClient(port) as client:
            done = log_in(client, unsecured(life_s=3_600))
            assert done.error_code == 0 and 3_590_000 < done.session_lifetime_ms <= 3_600_050
            cluster.clock.advance(3_590)  # about ten seconds of the token left
            assert client.request(METADATA, 12, {"topics": None}).brokers
            cluster.clock.advance(11)
            client.send(METADATA, 12, {"topics": None})
            assert closed_unanswered(client)  # the session ended at exp, on the cluster's clock
        closed = [e for e in cluster.events if e.kind == "connection_closed"][-1]
        assert "SASL session expired" in closed.reason
        with RawClient(port) as client:
            challenge = log_in(client, unsecured(life_s=600))  # ten minutes left on the wall clock
            assert (challenge.error_code, challenge.auth_bytes) == (0, INVALID)
            failed = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
            assert failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        with RawClient(port) as client:  # a token made on the cluster's clock is good
            now = cluster.clock.now()
            body = {"sub": "alice", "iat": round(now - 1, 3), "exp": round(now + 60, 3)}
            fresh = log_in(client, f"{part({'alg': 'none'})}.{part(body)}.")
            assert fresh.error_code == 0 and 59_000 < fresh.session_lifetime_ms <= 60_050


def test_the_unsecured_validators_options():
    options = {"unsecuredValidatorPrincipalClaimName": "client_id", "unsecuredValidatorRequiredScope": "kafka"}
    with FakeCluster(security_protocol="SASL_PLAINTEXT", oauth_validator=options).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as client:
            assert log_in(client, unsecured(client_id="svc-1", scope=["kafka"])).error_code == 0
        with RawClient(cluster.servers[0].port) as client:
            refused = log_in(client, unsecured(client_id="svc-1", scope="other"))
            assert refused.auth_bytes == b'{"status":"insufficient_scope", "scope":"[kafka]"}'
        assert [e.principal for e in cluster.events if e.kind == "client_authenticated"] == ["User:svc-1"]


def test_a_validator_of_the_tests_own():
    seen: list[str] = []

    def svc_only(token: str) -> OAuthToken:
        seen.append(token)
        if token == "bad-request":
            raise InvalidOAuthToken(status="invalid_request")
        if not token.startswith("svc-"):
            raise PermissionError("services only")
        return OAuthToken(principal=token, expiry_ms=int(time.time() * 1000) + 10_000, scopes={"kafka"})

    with FakeCluster(security_protocol="SASL_PLAINTEXT", oauth_validator=svc_only).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as client:
            done = log_in(client, "svc-billing")
            # the token's expiry is on time.time(); the broker's clock (its own, time-controllable)
            # may stand a millisecond or so apart from it
            assert done.error_code == 0 and 9_000 < done.session_lifetime_ms <= 10_050
        for token, status in [("alice", INVALID), ("bad-request", b'{"status":"invalid_request"}')]:
            with RawClient(cluster.servers[0].port) as client:
                assert log_in(client, token).auth_bytes == status
        assert seen == ["svc-billing", "alice", "bad-request"]
        assert [e.principal for e in cluster.events if e.kind == "client_authenticated"] == ["User:svc-billing"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"security_protocol": "SSL"}, "oauth_validator needs a SASL listener"),
        (
            {"config": {"sasl.enabled.mechanisms": "PLAIN"}},
            "oauth_validator: OAUTHBEARER is not in sasl.enabled.mechanisms (PLAIN)",
        ),
        ({"oauth_validator": {"principalClaimName": "x"}}, "unknown option 'principalClaimName'"),
        ({"oauth_validator": 42}, "a function (token: str) -> OAuthToken"),
    ],
)
def test_oauth_validator_mistakes_are_usage_errors(kwargs, message):
    given = {"security_protocol": "SASL_SSL", "oauth_validator": {}} | kwargs
    with pytest.raises(ClusterUsageError) as caught:
        FakeCluster(**given)
    assert message in str(caught.value)


def test_what_a_tests_function_returns_is_checked(caplog):
    from fakebroker.cluster.security import oauth_token_validator

    returns: list[object] = []
    validator = oauth_token_validator(lambda token: returns[-1], "SASL_PLAINTEXT", {})
    assert validator is not None
    returns.append(("alice", 10))  # not an OAuthToken: refused, and said in the log
    with pytest.raises(InvalidOAuthToken):
        validator.validate("t", 1000)
    assert "not an OAuthToken" in caplog.text
    returns.append(OAuthToken("alice", 5000.7, ["kafka"]))  # type: ignore[arg-type]
    assert validator.validate("t", 1000) == OAuthToken("alice", 5000, frozenset({"kafka"}))
    returns.append(OAuthToken("alice", 999))  # seconds by mistake, or expired: accepted, and warned of
    assert validator.validate("t", 1000).expiry_ms == 999
    assert "its session ends at once" in caplog.text

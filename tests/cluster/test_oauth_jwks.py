"""The edge of Kafka's secured OAUTHBEARER validator (cluster/jwks.py): the JWKS loaded when the
cluster is made (a wrong URL, a missing file, an endpoint that does not answer, a document that
is no JWKS, settings Kafka 4.4 would not start with: each a ClusterUsageError naming it), a
``file:`` JWKS read again when the file changes, an ``http:`` JWKS refreshed by a background
thread every ``refresh.ms`` and at once for an unknown kid (as Kafka's RefreshingHttpsJwks, at
most once a minute per kid), the token refused meanwhile; and that thread ending with its
cluster. No Kafka client here: the validator is asked directly."""

from __future__ import annotations

import gc
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest

from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.cluster.security import InvalidOAuthToken, oauth_token_validator
from fakebroker.core.security.oauthbearer import TokenValidator
from tests.jwks_issuer import Issuer, broker_settings, serve_jwks


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    made = Issuer()
    made.add_key("k1")
    made.add_key("k2", publish=False)
    return made


def now_ms() -> int:
    return int(time.time() * 1000)


def validator(config: dict, protocol: str = "SASL_SSL") -> TokenValidator:
    config = {"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER", **config}
    made = oauth_token_validator(None, protocol, config)
    assert made is not None
    return made


def accepted(validator: TokenValidator, token: str) -> str:
    return validator.validate(token, now_ms()).principal


def eventually_accepted(validator: TokenValidator, token: str, within_s: float = 10) -> str:
    deadline = time.monotonic() + within_s
    while True:
        try:
            return accepted(validator, token)
        except InvalidOAuthToken:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_file_jwks_is_read_again_when_the_file_changes(tmp_path, issuer):
    path = tmp_path / "jwks.json"
    issuer.published = ["k1"]
    checker = validator(broker_settings(issuer.write(path)))
    assert accepted(checker, issuer.token("alice", "k1")) == "alice"
    with pytest.raises(InvalidOAuthToken):  # k2 is not published yet
        accepted(checker, issuer.token("bob", "k2"))
    issuer.published = ["k1", "k2"]
    issuer.write(path)
    assert accepted(checker, issuer.token("bob", "k2")) == "bob"  # read again before this token: no wait

    path.write_text("{not json")  # a broken file refuses tokens until it is fixed, as Kafka's does
    with pytest.raises(InvalidOAuthToken, match="the JWKS file changed and cannot be used"):
        accepted(checker, issuer.token("alice", "k1"))
    issuer.write(path)
    assert accepted(checker, issuer.token("alice", "k1")) == "alice"


def test_an_unknown_kid_brings_the_http_jwks_again_at_once_and_once_a_minute(issuer):
    issuer.published = ["k1"]
    with serve_jwks(issuer) as served:
        checker = validator(broker_settings(served.url))
        assert served.hits == 1  # fetched when the cluster was made
        assert accepted(checker, issuer.token("alice", "k1")) == "alice"
        with pytest.raises(InvalidOAuthToken, match="Unable to find a suitable verification key"):
            accepted(checker, issuer.token("bob", "k2"))  # refused now; the refresh runs beside
        wait_for_hits(served, 2)
        issuer.published = ["k1", "k2"]
        time.sleep(0.3)
        with pytest.raises(InvalidOAuthToken):  # k2 asked about a moment ago: no new fetch for it within a minute
            accepted(checker, issuer.token("bob", "k2"))
        time.sleep(0.3)
        assert served.hits == 2
        with pytest.raises(InvalidOAuthToken):  # another unknown kid brings a refresh, which finds k2 too
            checker.validate(token_with_kid(issuer, "k9"), now_ms())
        wait_for_hits(served, 3)
        assert eventually_accepted(checker, issuer.token("bob", "k2")) == "bob"
        assert served.hits == 3


def wait_for_hits(served, hits: int) -> None:
    deadline = time.monotonic() + 5
    while served.hits < hits and time.monotonic() < deadline:
        time.sleep(0.02)
    assert served.hits == hits


def token_with_kid(issuer: Issuer, kid: str) -> str:
    """A token naming a kid nobody publishes (signed by k1's key)."""
    now = int(time.time())
    claims = {"sub": "x", "iat": now, "exp": now + 60, "aud": "kafka-cluster", "iss": "https://issuer.test"}
    return jwt.encode(claims, issuer.keys["k1"], "RS256", {"kid": kid})


def test_the_http_jwks_is_refreshed_every_refresh_ms(issuer):
    issuer.published = ["k1"]
    with serve_jwks(issuer) as served:
        checker = validator(broker_settings(served.url, **{"sasl.oauthbearer.jwks.endpoint.refresh.ms": 200}))
        issuer.published = ["k2"]  # k1 rotated out, k2 in: no token asks, the schedule fetches
        deadline = time.monotonic() + 10
        while served.hits < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert served.hits >= 3
        assert accepted(checker, issuer.token("bob", "k2")) == "bob"
        with pytest.raises(InvalidOAuthToken):
            accepted(checker, issuer.token("alice", "k1"))


def test_the_refresh_thread_ends_with_its_cluster(issuer):
    def refreshers() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "fakebroker-jwks-refresh"}

    issuer.published = ["k1"]
    gc.collect()  # the threads of earlier tests' clusters end first
    before = refreshers()
    with serve_jwks(issuer) as served:
        cluster = FakeCluster(security_protocol="SASL_PLAINTEXT", config=broker_settings(served.url))
        (thread,) = refreshers() - before
        del cluster
        deadline = time.monotonic() + 5
        while thread.is_alive() and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.05)
        assert not thread.is_alive()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"sasl.oauthbearer.expected.audience": ""},
            'The OAuth validator for the broker requires "sasl.oauthbearer.expected.audience" to be configured',
        ),
        (
            {"sasl.oauthbearer.expected.issuer": None},
            'The OAuth validator for the broker requires "sasl.oauthbearer.expected.issuer" to be configured',
        ),
        (
            {"sasl.oauthbearer.jwks.endpoint.url": "ftp://keys.test/jwks.json"},
            "The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url contains a URL "
            '(ftp://keys.test/jwks.json) that contains an invalid protocol (ftp); only "http", "https", and "file" '
            "protocol are supported",
        ),
        (
            {"sasl.oauthbearer.jwks.endpoint.url": "/etc/jwks.json"},
            "contains a URL (/etc/jwks.json) that is missing the protocol",
        ),
        (
            {"sasl.oauthbearer.jwks.endpoint.url": "file:///nowhere/jwks.json"},
            "The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url contains a file (/nowhere/jwks.json) "
            "that doesn't exist",
        ),
        (
            {"sasl.oauthbearer.jwks.endpoint.url": "file:///tmp"},
            "references a directory (/tmp), not a file",
        ),
        (
            {"sasl.oauthbearer.jwks.endpoint.url": "http://127.0.0.1:9/jwks.json"},
            "sasl.oauthbearer.jwks.endpoint.url=http://127.0.0.1:9/jwks.json: Could not refresh JWKS: cannot fetch",
        ),
    ],
)
def test_what_kafka_would_not_start_with_is_a_usage_error(tmp_path, issuer, settings, message):
    config = broker_settings(issuer.write(tmp_path / "jwks.json"))
    config.update(settings)
    with pytest.raises(ClusterUsageError) as caught:
        FakeCluster(security_protocol="SASL_SSL", config={k: v for k, v in config.items() if v is not None})
    assert message in str(caught.value)


def test_a_document_that_is_no_jwks_is_a_usage_error(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text("{}")
    with pytest.raises(ClusterUsageError, match="The JSON JWKS content does not include the keys member."):
        FakeCluster(security_protocol="SASL_SSL", config=broker_settings(path.as_uri()))
    path.write_text("<html>")
    with pytest.raises(ClusterUsageError, match="is not JSON"):
        FakeCluster(security_protocol="SASL_SSL", config=broker_settings(path.as_uri()))


@pytest.mark.parametrize(
    ("refresh", "message"),
    [
        ({"sasl.oauthbearer.jwks.endpoint.refresh.ms": 0}, "retryWaitMs value must be positive"),
        ({"sasl.oauthbearer.jwks.endpoint.refresh.ms": -1}, "refresh.ms value must be at least 0"),
        (
            {"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": 10},
            "retryBackoffMaxMs value (10) is less than retryBackoffMs value (100)",
        ),
    ],
)
def test_an_http_jwks_needs_a_positive_refresh_and_sane_backoffs(issuer, refresh, message):
    with serve_jwks(issuer) as served:
        with pytest.raises(ClusterUsageError) as caught:
            FakeCluster(security_protocol="SASL_SSL", config=broker_settings(served.url, **refresh))
        assert message in str(caught.value)


def test_an_oversized_answer_is_no_jwks():
    class Huge(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"keys":[' + b" " * (2 << 20) + b"]}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Huge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/jwks"
        with pytest.raises(ClusterUsageError, match="answered more than 1048576 bytes"):
            FakeCluster(security_protocol="SASL_SSL", config=broker_settings(url))
    finally:
        server.shutdown()
        server.server_close()


def test_the_choice_is_one_validator_and_only_where_oauthbearer_is_served(tmp_path, issuer):
    url = issuer.write(tmp_path / "jwks.json")
    with pytest.raises(ClusterUsageError) as caught:
        FakeCluster(security_protocol="SASL_SSL", config=broker_settings(url), oauth_validator={})
    assert "oauth_validator= and sasl.oauthbearer.jwks.endpoint.url both choose" in str(caught.value)
    # as on Kafka, the JWKS settings of a cluster without OAUTHBEARER are not read (nor is the URL)
    assert oauth_token_validator(None, "PLAINTEXT", broker_settings("file:///nowhere")) is None
    config = {**broker_settings("file:///nowhere"), "sasl.enabled.mechanisms": "PLAIN"}
    assert oauth_token_validator(None, "SASL_SSL", config) is None

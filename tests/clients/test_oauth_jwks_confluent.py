"""Kafka's secured OAUTHBEARER validator with librdkafka (confluent-kafka): an ``oauth_cb``
returning JWTs signed with an RS256 key made here, checked against the JWKS the cluster reads
from a ``file:`` URL or from a local http server (``sasl.oauthbearer.jwks.endpoint.url``),
producing and consuming in a group over SASL_SSL; a token signed by another key refused with
Kafka's ``{"status":"invalid_token"}``, which the client's own error carries; and a new signing
key the JWKS publishes after the cluster started, picked up when its first token comes (the
token refused, the JWKS fetched again at once, the client's next attempt let in)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from fakebroker.cluster import FakeCluster
from fakebroker.cluster import conditions as cond
from tests.jwks_issuer import Issuer, broker_settings, serve_jwks

from .refusals import REFUSED_CALL_TIMEOUT, poll_for_error
from .test_oauthbearer_confluent import EXPECTED, INVALID, authenticated, produce_and_consume_in_a_group, settings

pytestmark = pytest.mark.clients
LIFE_S = 600


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    made = Issuer()
    made.add_key("signing-1")
    made.add_key("signing-2", publish=False)
    made.add_key("impostor", publish=False)
    return made


def signed_tokens(issuer: Issuer, sub: str, kid: str, calls: list[str] | None = None):
    """librdkafka's ``oauth_cb``: a fresh token and its expiry (s) on each call."""

    def oauth_cb(config: str) -> tuple[str, float]:
        if calls is not None:
            calls.append(config)
        return issuer.token(sub, kid, life_s=LIFE_S), time.time() + LIFE_S

    return oauth_cb


def assert_signed_in_as(cluster: FakeCluster, principal: str) -> None:
    seen = authenticated(cluster)
    assert seen and {(e.principal, e.mechanism) for e in seen} == {(principal, "OAUTHBEARER")}
    # the session ends at the token's exp (no connections.max.reauth.ms)
    assert all(LIFE_S * 1000 - 30_000 < e.session_lifetime_ms <= LIFE_S * 1000 for e in seen)


def test_signed_tokens_checked_against_a_file_jwks_produce_and_consume_in_a_group(tmp_path, issuer):
    issuer.published = ["signing-1"]
    config = broker_settings(issuer.write(tmp_path / "jwks.json"))
    calls: list[str] = []
    with FakeCluster(brokers=2, security_protocol="SASL_SSL", config=config).run_in_thread() as cluster:
        client = settings(cluster, oauth_cb=signed_tokens(issuer, "svc-orders", "signing-1", calls))
        assert produce_and_consume_in_a_group(cluster, client) == EXPECTED
        assert calls
        assert_signed_in_as(cluster, "User:svc-orders")
        assert {e.broker for e in authenticated(cluster)} == {0, 1}
        assert not [e for e in cluster.events if e.kind == "authentication_failed"]


def test_signed_tokens_checked_against_an_http_jwks_produce_and_consume_in_a_group(issuer):
    issuer.published = ["signing-1"]
    with serve_jwks(issuer) as served:
        with FakeCluster(security_protocol="SASL_SSL", config=broker_settings(served.url)).run_in_thread() as cluster:
            client = settings(cluster, oauth_cb=signed_tokens(issuer, "svc-billing", "signing-1"))
            assert produce_and_consume_in_a_group(cluster, client) == EXPECTED
            assert_signed_in_as(cluster, "User:svc-billing")
            assert served.hits == 1  # fetched once at start: every kid was known
            assert not [e for e in cluster.events if e.kind == "authentication_failed"]


def test_a_token_signed_by_another_key_is_refused_with_kafkas_json_status(tmp_path, issuer):
    issuer.published = ["signing-1"]
    config = broker_settings(issuer.write(tmp_path / "jwks.json"))
    with FakeCluster(security_protocol="SASL_SSL", config=config).run_in_thread() as cluster:
        errors: list[KafkaError] = []

        def forged(config: str) -> tuple[str, float]:
            header, payload, _ = issuer.token("mallory", "signing-1").split(".")
            signature = issuer.token("mallory", "impostor").split(".")[2]  # the right kid, another key's signature
            return f"{header}.{payload}.{signature}", time.time() + LIFE_S

        admin = AdminClient(settings(cluster, oauth_cb=forged, error_cb=errors.append))
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=REFUSED_CALL_TIMEOUT)
        poll_for_error(admin, errors, lambda e: e.code() == KafkaError._AUTHENTICATION)  # error_cb is served by poll
        auth_errors = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        assert auth_errors and INVALID in auth_errors[0].str(), [e.str() for e in errors]
        failed = cluster.wait_for_sync(cond.event("authentication_failed"), timeout=5)
        assert (failed.mechanism, failed.reason) == ("OAUTHBEARER", INVALID)
        assert not authenticated(cluster)


def test_a_new_signing_key_is_fetched_when_its_first_token_comes(issuer):
    issuer.published = ["signing-1"]
    with serve_jwks(issuer) as served:
        config = broker_settings(served.url)  # refresh.ms: Kafka's hour, so only the unknown kid brings a fetch
        with FakeCluster(security_protocol="SASL_SSL", config=config).run_in_thread() as cluster:
            cluster.create_topic("rotated", 1)
            issuer.publish("signing-2")  # the provider starts signing with a key the cluster has not seen
            errors: list[KafkaError] = []
            producer = Producer(
                settings(cluster, oauth_cb=signed_tokens(issuer, "svc-rotated", "signing-2"), error_cb=errors.append)
            )
            producer.produce("rotated", value=b"after the rotation")
            assert producer.flush(20) == 0
            assert [value for _, _, _, value in cluster.records("rotated")] == [b"after the rotation"]
            failed = [e for e in cluster.events if e.kind == "authentication_failed"]
            assert failed and failed[0].reason == INVALID  # the first attempt, before the JWKS was fetched again
            assert any(INVALID in e.str() for e in errors), [e.str() for e in errors]
            assert {e.principal for e in authenticated(cluster)} == {"User:svc-rotated"}
            assert served.hits == 2  # at start, and once for the new kid

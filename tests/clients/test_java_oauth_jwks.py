"""Kafka's secured OAUTHBEARER validator with the Java client (kafka-clients 4.4.0): the client's
own ``OAuthBearerLoginCallbackHandler`` reads a JWT signed with an RS256 key made here from a
file (``sasl.oauthbearer.token.endpoint.url=file:...``, allowed by the
``org.apache.kafka.sasl.oauthbearer.allowed.urls`` system property as 4.4 requires), and the
cluster checks it against the JWKS it reads from a ``file:`` URL: a producer and a consumer
group over SASL_SSL on two brokers; then a token signed by another key, refused with the
client's own ``SaslAuthenticationException``.

Runs ``fakebroker.SecurityScenarios`` with ``mechanism=OAUTHBEARER token_file=...`` (see
test_java_security.py for how)."""

from __future__ import annotations

import uuid

import pytest

from fakebroker.cluster import FakeCluster
from tests.jwks_issuer import Issuer, broker_settings

from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_security import CONSUMER, PRODUCER, SASL_FAILED, of_type, run_scenario

pytestmark = [pytest.mark.clients, pytest.mark.java]
N = 10
INVALID = '{"status":"invalid_token"}'


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    made = Issuer()
    made.add_key("signing-1")
    made.add_key("impostor", publish=False)
    return made


def test_java_with_a_signed_token_produces_and_consumes_in_a_group(java_client_jar, tmp_path, issuer):  # noqa: F811
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    token_file = tmp_path / "token.jwt"
    token_file.write_text(issuer.token("svc-java", "signing-1", life_s=3600, scope=["orders"]))
    config = broker_settings(issuer.write(tmp_path / "jwks.json"))
    with FakeCluster(brokers=2, security_protocol="SASL_SSL", config=config).run_in_thread() as cluster:
        cluster.create_topic(topic, 2)
        lines = run_scenario(
            java_client_jar,
            cluster,
            "round-trip",
            topic=topic,
            group=group,
            n=N,
            mechanism="OAUTHBEARER",
            token_file=token_file,
            ca=cluster.tls_ca_file,
        )
        assert of_type(lines, "settings")[0]["sasl_mechanism"] == "OAUTHBEARER"
        assert len(of_type(lines, "sent")) == N
        assert sorted(r["value"] for r in of_type(lines, "record")) == sorted(f"value-{i}" for i in range(N))
        assert cluster.committed(group) == {(topic, 0): N // 2, (topic, 1): N // 2}

        authenticated = [e for e in cluster.events if e.kind == "client_authenticated"]
        assert {(e.principal, e.mechanism) for e in authenticated} == {("User:svc-java", "OAUTHBEARER")}
        assert {PRODUCER, CONSUMER} <= {e.client_id for e in authenticated}
        assert {e.broker for e in authenticated} == {0, 1}
        assert all(3_500_000 < e.session_lifetime_ms <= 3_600_000 for e in authenticated)  # the token's exp
        assert not [e for e in cluster.events if e.kind == "authentication_failed"]


def test_java_with_a_token_signed_by_another_key_is_refused(java_client_jar, tmp_path, issuer):  # noqa: F811
    header, payload, _ = issuer.token("mallory", "signing-1").split(".")
    forged_signature = issuer.token("mallory", "impostor").split(".")[2]
    token_file = tmp_path / "token.jwt"
    token_file.write_text(f"{header}.{payload}.{forged_signature}")
    config = broker_settings(issuer.write(tmp_path / "jwks.json"))
    with FakeCluster(security_protocol="SASL_SSL", config=config).run_in_thread() as cluster:
        cluster.create_topic("orders", 1)
        lines = run_scenario(
            java_client_jar,
            cluster,
            "wrong-password",
            topic="orders",
            group="billing",
            mechanism="OAUTHBEARER",
            token_file=token_file,
            ca=cluster.tls_ca_file,
        )
        refused = {line["client"]: line for line in of_type(lines, "refused")}
        assert set(refused) == {"producer", "consumer"}
        for line in refused.values():
            assert line["error"] == SASL_FAILED, line
            assert INVALID in line["message"], line
        failed = [e for e in cluster.events if e.kind == "authentication_failed"]
        assert failed and {(e.mechanism, e.reason) for e in failed} == {("OAUTHBEARER", INVALID)}
        assert not [e for e in cluster.events if e.kind == "client_authenticated"]

"""Issue 37's OAUTHBEARER with the Java client (kafka-clients 4.4.0): Kafka's own unsecured login
module (``OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=... unsecuredLoginLifetimeSeconds=...``)
over SASL_SSL against Kafka's default validator, producing and consuming in a group while its
short-lived token is refreshed (at 80-85 % of its life) and each connection re-authenticates
(at 85-95 % of the session lifetime the broker sent, the token's exp: no
``connections.max.reauth.ms`` is set).

Runs ``fakebroker.SecurityScenarios round-trip`` with ``mechanism=OAUTHBEARER`` (see
test_java_security.py for how)."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from fakebroker.cluster import FakeCluster

from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_security import CONSUMER, PRODUCER, of_type, run_scenario

pytestmark = [pytest.mark.clients, pytest.mark.java]
N = 20
LIFETIME_S = 3
GAP_MS = 300  # N records over 6 s: two lifetimes of the token


def test_java_produces_and_consumes_re_authenticating_with_a_short_lived_token(java_client_jar):  # noqa: F811
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    with FakeCluster(brokers=2, security_protocol="SASL_SSL").run_in_thread() as cluster:
        cluster.create_topic(topic, 2)
        lines = run_scenario(
            java_client_jar,
            cluster,
            "round-trip",
            topic=topic,
            group=group,
            n=N,
            gap=GAP_MS,
            mechanism="OAUTHBEARER",
            user="alice",
            lifetime=LIFETIME_S,
            ca=cluster.tls_ca_file,
        )
        assert of_type(lines, "settings")[0]["sasl_mechanism"] == "OAUTHBEARER"
        assert len(of_type(lines, "sent")) == N and len(of_type(lines, "record")) == N
        assert cluster.committed(group) == {(topic, 0): N // 2, (topic, 1): N // 2}

        authenticated = [e for e in cluster.events if e.kind == "client_authenticated"]
        assert {(e.principal, e.mechanism) for e in authenticated} == {("User:alice", "OAUTHBEARER")}
        assert {PRODUCER, CONSUMER} <= {e.client_id for e in authenticated}
        assert all(0 < e.session_lifetime_ms <= LIFETIME_S * 1000 for e in authenticated)
        per_connection = Counter((e.client_id, e.peer) for e in authenticated)
        # the producer's connections were used all along its 6 s: each time its token neared its end,
        # one of them authenticated again (and again), its records going on meanwhile
        assert max(n for (who, _), n in per_connection.items() if who == PRODUCER) >= 2, per_connection
        assert not [e for e in cluster.events if e.kind == "authentication_failed"]
        expired = [e for e in cluster.events if e.kind == "connection_closed" and "expired" in e.reason]
        assert not expired, expired

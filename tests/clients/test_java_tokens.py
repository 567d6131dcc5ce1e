"""Delegation tokens with the Java client (kafka-clients 4.4.0, issue 37): the Admin client's
createDelegationToken, describeDelegationToken, renewDelegationToken and expireDelegationToken
over SASL_SSL with SCRAM-SHA-512, then a producer logging in with the token (``ScramLoginModule
required username="<token id>" password="<base64 HMAC>" tokenauth="true";``) whose records are
the owner's, an Admin logged in with the token refused more tokens, and the expired token
refused at login with SCRAM's generic text.

The test runs ``fakebroker.TokenScenarios`` (``tests/clients/java``, in the test jar built once
per run by ``java_client_jar``) once: ``BOOTSTRAP lifecycle key=value...``, JSON lines out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from pathlib import Path
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster

from . import test_java_security as security
from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_security import of_type

pytestmark = [pytest.mark.clients, pytest.mark.java]

MAIN = "fakebroker.TokenScenarios"
RUN_TIMEOUT = 120
SECRET = "token-secret-key"
USERS = {name: f"{name}-secret" for name in ("alice", "bob", "carol")}
N = 6
DAY, WEEK, HOUR = 86_400_000, 7 * 86_400_000, 3_600_000
SCRAM_TEXT = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"


def run_scenario(jar: Path, cluster: FakeCluster, scenario: str, **args: Any) -> list[dict]:
    return security.run_scenario(jar, cluster, scenario, main=MAIN, **args)


def test_java_admin_token_lifecycle_and_a_producer_logged_in_with_the_token(java_client_jar):  # noqa: F811
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    config = {"delegation.token.secret.key": SECRET}
    with FakeCluster(brokers=2, security_protocol="SASL_SSL", users=USERS, config=config).run_in_thread() as cluster:
        cluster.create_topic(topic, 1)
        lines = run_scenario(java_client_jar, cluster, "lifecycle", topic=topic, n=N, ca=cluster.tls_ca_file)

        (created,) = of_type(lines, "created")
        token_id = created["token_id"]
        uuid.UUID(token_id)  # a random UUID's text
        expected_hmac = hmac.new(SECRET.encode(), token_id.encode(), hashlib.sha512).digest()
        assert base64.b64decode(created["hmac"]) == expected_hmac
        assert (created["owner"], created["requester"], created["renewers"]) == (
            "User:alice",
            "User:alice",
            ["User:bob"],
        )
        issued = created["issue"]
        assert (created["expiry"], created["max"]) == (issued + DAY, issued + WEEK)

        described = {d["by"]: d for d in of_type(lines, "described")}
        assert [t["token_id"] for t in described["alice"]["tokens"]] == [token_id]
        assert described["alice"]["tokens"][0] | {"type": "created", "t": created["t"]} == created
        (renewed,) = of_type(lines, "renewed")
        assert issued < renewed["expiry"] - HOUR  # bob, a renewer, moved it to an hour from then
        assert [t["token_id"] for t in described["bob"]["tokens"]] == [token_id]  # bob renews it: his to see
        assert described["bob"]["tokens"][0]["expiry"] == renewed["expiry"]
        (expired,) = of_type(lines, "expired")
        assert renewed["expiry"] - HOUR <= expired["expiry"]  # expired at once: its answer is the time then
        assert described["alice-after"]["count"] == 0

        refused = {r["step"]: (r["error"], r["message"]) for r in of_type(lines, "refused")}
        errors = "org.apache.kafka.common.errors."
        assert refused["carol-renews"][0] == errors + "DelegationTokenOwnerMismatchException"
        assert refused["token-creates"][0] == errors + "UnsupportedByAuthenticationException"
        assert refused["renew-expired"][0] == errors + "DelegationTokenNotFoundException"
        assert refused["expired-token-produces"] == (errors + "SaslAuthenticationException", SCRAM_TEXT)

        sent = of_type(lines, "sent")
        assert [(s["i"], s["offset"]) for s in sent] == [(i, i) for i in range(N)]
        assert [value for _, _, _, value in cluster.records(topic)] == [f"value-{i}".encode() for i in range(N)]

        # the token's logins are the owner's, with the session ending at the token's expiry
        logins = [e for e in cluster.events if e.kind == "client_authenticated"]
        by_client = {}
        for e in logins:
            by_client.setdefault(e.client_id, set()).add(e.principal)
        assert by_client["fakebroker-java-token-producer"] == {"User:alice"}
        assert by_client["fakebroker-java-token-admin-token"] == {"User:alice"}
        token_sessions = [e for e in logins if e.client_id == "fakebroker-java-token-producer"]
        assert all(0 < e.session_lifetime_ms <= DAY for e in token_sessions)
        user_sessions = [e for e in logins if e.client_id == "fakebroker-java-token-admin-bob"]
        assert user_sessions and all(e.session_lifetime_ms == 0 for e in user_sessions)
        failed = [e for e in cluster.events if e.kind == "authentication_failed"]
        assert {e.client_id for e in failed} == {"fakebroker-java-expired-token-producer"}
        assert {e.reason for e in failed} == {SCRAM_TEXT}

        kinds = [(e.kind, getattr(e, "removed", None)) for e in cluster.events if e.kind.startswith("token_")]
        assert kinds == [("token_created", None), ("token_renewed", None), ("token_expired", True)]

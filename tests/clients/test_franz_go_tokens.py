"""Delegation tokens with franz-go (issue 37), the one non-Java client here that can log in with
one: its SCRAM mechanism has ``IsToken`` (the ``tokenauth=true`` extension). ``tests/clients/go/tokens``
is a third program of the ``tests/clients/go`` module, ``fbtokens``, run once (see its main.go):
alice asks for a token (CreateDelegationToken through kmsg: kadm has no token API), a client
logged in with it produces records (the owner's, as the broker sees it) and is refused a token of
its own, alice expires the token, and a client with the expired token fails its login.

Set ``FAKEBROKER_GO_LOG=debug`` (or info) for kgo's log (stderr, shown in a failing test's message).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import uuid
from pathlib import Path

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.protocol.error_codes import ErrorCode

from .test_franz_go_transactions import go_build

pytestmark = [pytest.mark.clients, pytest.mark.go]

RUN_TIMEOUT = 90
FRANZ_GO_VERSION = "v1.22.2"  # as in go.mod
SECRET = "token-secret-key"
N = 5
SCRAM_TEXT = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"


@pytest.fixture(scope="session")
def fbtokens(tmp_path_factory) -> Path:
    return go_build(tmp_path_factory, "./tokens", "fbtokens")


def test_franz_go_logs_in_with_a_token_and_is_refused_once_it_expired(fbtokens):
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    config = {"delegation.token.secret.key": SECRET}
    with FakeCluster(
        security_protocol="SASL_SSL", users={"alice": "alice-secret"}, config=config
    ).run_in_thread() as cluster:
        cluster.create_topic(topic, 1)
        try:
            out = subprocess.run(
                [str(fbtokens), cluster.bootstrap_servers, str(cluster.tls_ca_file), topic, str(N)],
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"fbtokens ran over {RUN_TIMEOUT} s\nstderr:\n{exc.stderr}")
        lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        events = "\n".join(e.describe() for e in cluster.events[-60:])
        assert out.returncode == 0 and lines and lines[-1]["type"] == "end", (
            f"{lines[-3:]}\nstderr:\n{out.stderr[-6000:]}\nbroker events:\n{events}"
        )
        by_type = {}
        for line in lines:
            by_type.setdefault(line["type"], []).append(line)
        assert by_type["version"][0]["franz_go"] == FRANZ_GO_VERSION

        (created,) = by_type["created"]
        assert (created["error_code"], created["owner"]) == (0, "User:alice")
        expected = hmac.new(SECRET.encode(), created["token_id"].encode(), hashlib.sha512).digest()
        assert base64.b64decode(created["hmac"]) == expected
        assert [(s["i"], s["offset"]) for s in by_type["sent"]] == [(i, i) for i in range(N)]
        assert by_type["token_creates"] == [
            {"type": "token_creates", "error_code": ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED}
        ]
        assert by_type["expired"][0]["error_code"] == 0
        (refused,) = by_type["refused"]
        assert refused["error"] is not None and SCRAM_TEXT in refused["error"]

        logins = [e for e in cluster.events if e.kind == "client_authenticated"]
        assert {e.principal for e in logins if e.client_id == "fakebroker-franz-go-token"} == {"User:alice"}
        assert all(e.session_lifetime_ms > 0 for e in logins if e.client_id == "fakebroker-franz-go-token")
        failed = [e for e in cluster.events if e.kind == "authentication_failed"]
        assert failed and {e.client_id for e in failed} == {"fakebroker-franz-go-expired-token"}
        assert [v for _, _, _, v in cluster.records(topic)] == [f"value-{i}".encode() for i in range(N)]

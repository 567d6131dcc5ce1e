"""Issue 37 with kafkajs 2.2.4: SASL_SSL with SCRAM-SHA-512 and PLAIN, a group that reads and
commits, and a wrong password refused with kafkajs's own ``KafkaJSSASLAuthenticationError``
carrying Kafka's text.

Each test runs ``tests/clients/js/security.js`` once (node_modules installed once per run by the
``node`` fixture). TLS is Node's, as kafkajs sets it up: ``ssl: {ca: [pem]}`` on
``cluster.tls_ca_file``, the certificate and the host name (127.0.0.1, an IP SAN) both checked.
``KAFKAJS_LOG_LEVEL=DEBUG`` shows kafkajs's SASL exchange in a failure's message.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import pytest

from fakebroker.cluster import FakeCluster

from . import test_kafkajs
from .node_driver import JS_DIR

pytestmark = [pytest.mark.clients, pytest.mark.node]

node = test_kafkajs.node  # the session fixture: the node binary, with js/node_modules installed
SCRIPT = JS_DIR / "security.js"
RUN_TIMEOUT = 45  # seconds per run (the script's own watchdog fires 5 s earlier)
USERS = {"alice": "alice-secret"}
N = 10
KAFKA_TEXT = {
    "SCRAM-SHA-512": "Authentication failed during authentication due to invalid credentials with SASL mechanism "
    "SCRAM-SHA-512",
    "PLAIN": "Authentication failed: Invalid username or password",
}
KAFKAJS_PREFIX = {
    "SCRAM-SHA-512": "SASL SCRAM SHA512 authentication failed: ",
    "PLAIN": "SASL PLAIN authentication failed: ",
}


def run_scenario(node: str, cluster: FakeCluster, scenario: str, mechanism: str, password: str, **args) -> dict:
    """Run one scenario of security.js; its JSON result. Fails the test (with kafkajs's log and the
    broker's events) on a non-zero exit or a timeout."""
    env = {
        **os.environ,
        "KAFKAJS_LOG_LEVEL": os.environ.get("KAFKAJS_LOG_LEVEL", "WARN"),
        "SCENARIO_TIMEOUT_MS": str((RUN_TIMEOUT - 5) * 1000),
    }
    connection = {"ca": cluster.tls_ca_file, "mechanism": mechanism.lower(), "username": "alice", "password": password}
    cmd = [node, str(SCRIPT), cluster.bootstrap_servers, scenario, json.dumps(connection | args)]
    try:
        proc = subprocess.run(cmd, cwd=JS_DIR, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"security.js {scenario} timed out after {RUN_TIMEOUT} s\nstderr:\n{exc.stderr}{broker_log(cluster)}"
        )
    if proc.returncode != 0:
        pytest.fail(
            f"security.js {scenario} exited {proc.returncode}\nstderr:\n{proc.stderr[-6000:]}{broker_log(cluster)}"
        )
    return json.loads(proc.stdout)


def broker_log(cluster: FakeCluster) -> str:
    return "\nbroker events:\n" + "\n".join(e.describe() for e in cluster.events[-80:])


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_kafkajs_produces_and_consumes_in_a_group_over_sasl_ssl(node, mechanism):
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    with FakeCluster(brokers=2, security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        cluster.create_topic(topic, 2)  # a leader on each broker: both are authenticated to
        result = run_scenario(node, cluster, "round-trip", mechanism, "alice-secret", topic=topic, groupId=group, n=N)
        assert result["sent"] == [
            {"partition": 0, "errorCode": 0, "baseOffset": 0},
            {"partition": 1, "errorCode": 0, "baseOffset": 0},
        ]
        by_partition = {p: [tuple(r[1:]) for r in result["records"] if r[0] == p] for p in (0, 1)}
        assert by_partition == {p: [(i // 2, f"key-{i}", f"value-{i}") for i in range(p, N, 2)] for p in (0, 1)}
        assert len(result["records"]) == N  # each record once
        assert result["committed"] == {"0": N // 2, "1": N // 2}
        assert cluster.committed(group) == {(topic, 0): N // 2, (topic, 1): N // 2}

        authenticated = [e for e in cluster.events if e.kind == "client_authenticated"]
        assert {(e.principal, e.mechanism, e.client_id) for e in authenticated} == {
            ("User:alice", mechanism, "fakebroker-kafkajs-secure")
        }
        assert {e.broker for e in authenticated} == {0, 1}
        assert not [e for e in cluster.events if e.kind == "authentication_failed"]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_a_wrong_password_is_a_kafkajs_sasl_authentication_error_with_kafkas_text(node, mechanism):
    with FakeCluster(security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        result = run_scenario(node, cluster, "wrong-password", mechanism, "not-alice-secret", groupId="billing")
        want = {
            "name": "KafkaJSSASLAuthenticationError",
            "type": None,
            "code": None,
            "retriable": False,  # connect() gives up at once rather than retrying a refused password
            "message": KAFKAJS_PREFIX[mechanism] + KAFKA_TEXT[mechanism],
            "cause": None,
        }
        assert result["refused"] == {"producer": want, "consumer": want, "admin": want}
        failed = [e for e in cluster.events if e.kind == "authentication_failed"]
        assert len(failed) == 3  # one connection each, no retry
        assert {(e.mechanism, e.reason, e.client_id) for e in failed} == {
            (mechanism, KAFKA_TEXT[mechanism], "fakebroker-kafkajs-refused")
        }
        assert not [e for e in cluster.events if e.kind == "client_authenticated"]
        assert cluster.group("billing") is None

"""Issue 37 with the Java client (kafka-clients 4.4.0): SASL_SSL with SCRAM-SHA-512 and PLAIN, a
group that reads and commits, a wrong password refused with the client's own
``SaslAuthenticationException`` carrying Kafka's text, and a client that does not trust the
cluster's CA failing its TLS handshake.

Each test runs ``fakebroker.SecurityScenarios`` (``tests/clients/java``, in the test jar built once
per run by ``java_client_jar``) once: ``BOOTSTRAP SCENARIO key=value...``, JSON lines out. TLS is
the client's as production sets it: ``ssl.truststore.type=PEM`` on ``cluster.tls_ca_file`` and
hostname verification left on (``https``, the default) against the 127.0.0.1 bootstrap address
(the JVM verifies the IP literal against the certificate's IP SAN; it sends no SNI for it).
``FAKEBROKER_JAVA_LOG=debug`` shows the client's SASL and TLS handshakes in a failure's message.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.cluster import conditions as cond

from .test_java_client import KAFKA_CLIENTS_VERSION, java_client_jar, java_command  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]

MAIN = "fakebroker.SecurityScenarios"
RUN_TIMEOUT = 90
USERS = {"alice": "alice-secret"}
N = 10
PRODUCER, CONSUMER = "fakebroker-java-secure-producer", "fakebroker-java-secure-consumer"
SASL_FAILED = "org.apache.kafka.common.errors.SaslAuthenticationException"
KAFKA_TEXT = {
    "SCRAM-SHA-512": "Authentication failed during authentication due to invalid credentials with SASL mechanism "
    "SCRAM-SHA-512",
    "PLAIN": "Authentication failed: Invalid username or password",
}


def run_scenario(
    jar: Path, cluster: FakeCluster, scenario: str, *, main: str = MAIN, bootstrap: str | None = None, **args: Any
) -> list[dict]:
    """Run one scenario to its end (bootstrapping on ``bootstrap``, by default the cluster's
    first listener); its JSON lines. Fails the test (with the client's log and the broker's
    events) on a non-zero exit, an error line or a timeout."""
    cmd = java_command(
        "-cp",
        str(jar),
        main,
        bootstrap or cluster.bootstrap_servers,
        scenario,
        *(f"{k}={v}" for k, v in args.items()),
    )
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{main} {scenario} ran over {RUN_TIMEOUT} s\nstderr:\n{exc.stderr}{broker_log(cluster)}")
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines or lines[-1]["type"] != "end":
        pytest.fail(
            f"{main} {scenario} exited {out.returncode}: {lines[-3:]}\n"
            f"stderr:\n{out.stderr[-8000:]}{broker_log(cluster)}"
        )
    assert (lines[0]["type"], lines[0]["kafka_clients"]) == ("version", KAFKA_CLIENTS_VERSION)
    return lines


def broker_log(cluster: FakeCluster) -> str:
    return "\nbroker events:\n" + "\n".join(e.describe() for e in cluster.events[-80:])


def of_type(lines: list[dict], kind: str) -> list[dict]:
    return [line for line in lines if line["type"] == kind]


def secured(cluster: FakeCluster, mechanism: str, password: str = "alice-secret") -> dict[str, str]:
    return {"mechanism": mechanism, "user": "alice", "password": password, "ca": str(cluster.tls_ca_file)}


def sasl_ssl_cluster() -> FakeCluster:
    return FakeCluster(brokers=2, security_protocol="SASL_SSL", users=USERS)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_java_produces_and_consumes_in_a_group_over_sasl_ssl(java_client_jar, mechanism):  # noqa: F811
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    with sasl_ssl_cluster().run_in_thread() as cluster:
        cluster.create_topic(topic, 2)  # a leader on each broker: both are authenticated to
        lines = run_scenario(
            java_client_jar, cluster, "round-trip", topic=topic, group=group, n=N, **secured(cluster, mechanism)
        )
        settings = of_type(lines, "settings")[0]
        assert settings | {"t": 0} == {
            "t": 0,
            "type": "settings",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": mechanism,
            "truststore_type": "PEM",
            "endpoint_identification": "https",  # the host name is checked against the broker's certificate
        }
        assert cluster.bootstrap_servers.startswith("127.0.0.1:")

        sent = of_type(lines, "sent")
        assert [(s["i"], s["partition"], s["offset"]) for s in sent] == [(i, i % 2, i // 2) for i in range(N)]
        records = of_type(lines, "record")
        by_partition = {
            p: [(r["offset"], r["key"], r["value"]) for r in records if r["partition"] == p] for p in (0, 1)
        }
        assert by_partition == {
            p: [(i // 2, f"key-{i}", f"value-{i}") for i in range(p, N, 2)] for p in (0, 1)
        }  # each record once, in order
        committed = of_type(lines, "committed")[0]
        assert (committed["read"], committed["offsets"]) == (N, {"0": N // 2, "1": N // 2})
        assert cluster.committed(group) == {(topic, 0): N // 2, (topic, 1): N // 2}
        assert cluster.group(group).state == "Empty"  # the consumer left on close

        authenticated = [e for e in cluster.events if e.kind == "client_authenticated"]
        assert {e.principal for e in authenticated} == {"User:alice"}
        assert {e.mechanism for e in authenticated} == {mechanism}
        assert {PRODUCER, CONSUMER} <= {e.client_id for e in authenticated}
        assert {e.broker for e in authenticated} == {0, 1}
        assert not [e for e in cluster.events if e.kind == "authentication_failed"]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_a_wrong_password_fails_with_saslauthenticationexception_and_kafkas_text(java_client_jar, mechanism):  # noqa: F811
    with sasl_ssl_cluster().run_in_thread() as cluster:
        cluster.create_topic("orders", 2)
        lines = run_scenario(
            java_client_jar,
            cluster,
            "wrong-password",
            topic="orders",
            group="billing",
            **secured(cluster, mechanism, password="not-alice-secret"),
        )
        refused = {r["client"]: (r["error"], r["message"]) for r in of_type(lines, "refused")}
        assert refused == {
            "producer": (SASL_FAILED, KAFKA_TEXT[mechanism]),
            "consumer": (SASL_FAILED, KAFKA_TEXT[mechanism]),
        }
        failed = [e for e in cluster.events if e.kind == "authentication_failed"]
        assert failed and {(e.mechanism, e.reason) for e in failed} == {(mechanism, KAFKA_TEXT[mechanism])}
        assert not [e for e in cluster.events if e.kind == "client_authenticated"]
        assert cluster.group("billing") is None and cluster.committed("billing") == {}


def test_a_client_that_does_not_trust_the_clusters_ca_fails_its_tls_handshake(java_client_jar):  # noqa: F811
    with sasl_ssl_cluster().run_in_thread() as cluster:
        settings = secured(cluster, "SCRAM-SHA-512")
        del settings["ca"]  # the JDK's own trust store
        lines = run_scenario(java_client_jar, cluster, "untrusted", topic="orders", **settings)
        (refused,) = of_type(lines, "refused")
        assert (refused["error"], refused["message"]) == (
            "org.apache.kafka.common.errors.SslAuthenticationException",
            "SSL handshake failed",
        )
        assert refused["cause"].startswith("sun.security.provider.certpath.SunCertPathBuilderException"), refused
        closed = cluster.wait_for_sync(
            cond.event("connection_closed"), timeout=5
        )  # the JVM's alert, seen by the broker
        assert closed.reason.startswith("TLS handshake failed") and "certificate unknown" in closed.reason, closed
        assert not [e for e in cluster.events if e.kind in ("client_authenticated", "authentication_failed")]


def test_java_with_a_client_certificate_is_the_certificates_principal(java_client_jar):  # noqa: F811
    """Mutual TLS (``ssl.client.auth=required``): the Java client's PEM keystore (a PKCS#8 key and
    its chain, ``ssl.keystore.type=PEM``) is accepted, and the broker's principal for it is the
    certificate's subject through ``ssl.principal.mapping.rules``."""
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    config = {"ssl.client.auth": "required", "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"}
    with FakeCluster(brokers=2, security_protocol="SSL", config=config).run_in_thread() as cluster:
        cluster.create_topic(topic, 2)
        cert = cluster.client_certificate("java-app")
        lines = run_scenario(
            java_client_jar,
            cluster,
            "round-trip",
            topic=topic,
            group=group,
            n=N,
            protocol="SSL",
            ca=cluster.tls_ca_file,
            keystore=cert.keystore_file,
        )
        assert len(of_type(lines, "record")) == N
        assert cluster.committed(group)
        seen = {(e.principal, e.mechanism) for e in cluster.events if e.kind == "client_authenticated"}
        assert seen == {("User:java-app", "SSL")}

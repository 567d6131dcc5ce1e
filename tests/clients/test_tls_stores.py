"""Issue 37 with real clients: Java's keystore files and the broker's own certificate.

- The Java client (kafka-clients 4.4.0) trusts the cluster through ``tls_files.truststore_p12``
  (``ssl.truststore.type=PKCS12``) and ``truststore_jks`` (``JKS``), and authenticates with a
  client certificate's ``keystore_p12`` / ``keystore_jks`` (``ssl.client.auth=required``): records
  go round, and the broker's principal is the certificate's.
- librdkafka (confluent-kafka, kcat) authenticates with ``ssl.keystore.location`` (PKCS#12) and
  ``ssl.keystore.password``.
- A cluster serves the test's own broker certificate (``ssl.keystore.*`` in ``config``), trusted
  by a client through the test's own CA, and trusts client certificates of the test's own CA
  (``ssl.truststore.*``).
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Consumer, Producer
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from fakebroker.cluster import FakeCluster

from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_security import of_type, run_scenario
from .test_kcat_security import _kcat

pytestmark = pytest.mark.clients
N = 10
MTLS = {"ssl.client.auth": "required", "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"}


def principals(cluster: FakeCluster) -> set[tuple[str, str]]:
    return {(e.principal, e.mechanism) for e in cluster.events if e.kind == "client_authenticated"}


def round_trip(settings: dict, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """One record produced and read back by confluent-kafka with ``settings``."""
    reports: list = []
    producer = Producer(settings | {"on_delivery": lambda err, msg: reports.append(err)})
    producer.produce(topic, key=b"k", value=b"paid")
    assert producer.flush(15) == 0 and reports == [None], reports
    consumer = Consumer(settings | {"group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        for _ in range(30):
            msg = consumer.poll(1)
            if msg is not None and not msg.error():
                return [(msg.key(), msg.value())]
        pytest.fail("no record read back")
    finally:
        consumer.close()


# -- the Java client --------------------------------------------------------------------------


@pytest.mark.java
@pytest.mark.parametrize("kind", ["PKCS12", "JKS"])
def test_java_trusts_the_cluster_through_a_truststore_file(java_client_jar, kind):  # noqa: F811
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    with FakeCluster(security_protocol="SSL").run_in_thread() as cluster:
        cluster.create_topic(topic, 2)
        files = cluster.tls_files
        assert files is not None
        store = files.truststore_p12 if kind == "PKCS12" else files.truststore_jks
        lines = run_scenario(
            java_client_jar,
            cluster,
            "round-trip",
            topic=topic,
            group=group,
            n=N,
            protocol="SSL",
            ca=store,
            ca_type=kind,
            ca_password=files.password,
        )
        assert of_type(lines, "settings")[0]["truststore_type"] == kind
        records = sorted((r["key"], r["value"]) for r in of_type(lines, "record"))
        assert records == sorted((f"key-{i}", f"value-{i}") for i in range(N))
        assert len(cluster.records(topic)) == N
        assert cluster.committed(group) == {(topic, 0): N // 2, (topic, 1): N // 2}


@pytest.mark.java
@pytest.mark.parametrize("kind", ["PKCS12", "JKS"])
def test_java_with_a_keystore_file_is_the_certificates_principal(java_client_jar, kind):  # noqa: F811
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    with FakeCluster(security_protocol="SSL", config=MTLS).run_in_thread() as cluster:
        cluster.create_topic(topic, 1)
        files = cluster.tls_files
        assert files is not None
        cert = cluster.client_certificate("java-app")
        lines = run_scenario(
            java_client_jar,
            cluster,
            "round-trip",
            topic=topic,
            group=group,
            n=N,
            protocol="SSL",
            ca=files.truststore_p12,
            ca_type="PKCS12",
            ca_password=files.password,
            keystore=cert.keystore_p12 if kind == "PKCS12" else cert.keystore_jks,
            keystore_type=kind,
            keystore_password=cert.password,
        )
        assert len(of_type(lines, "record")) == N
        assert cluster.committed(group) == {(topic, 0): N}
        assert principals(cluster) == {("User:java-app", "SSL")}


# -- librdkafka ---------------------------------------------------------------------------------


def test_confluent_kafka_with_a_pkcs12_keystore_is_the_certificates_principal():
    with FakeCluster(security_protocol="SSL", config=MTLS, topics={"orders": 1}).run_in_thread() as cluster:
        cert = cluster.client_certificate("billing-app")
        settings = {
            "bootstrap.servers": cluster.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": cluster.tls_ca_file,
            "ssl.keystore.location": cert.keystore_p12,  # key and certificate in one PKCS#12 file
            "ssl.keystore.password": cert.password,
            "log_level": 3,
        }
        assert round_trip(settings, "orders") == [(b"k", b"paid")]
        assert principals(cluster) == {("User:billing-app", "SSL")}


def test_kcat_with_a_pkcs12_keystore_is_the_certificates_principal():
    with FakeCluster(security_protocol="SSL", config=MTLS, topics={"orders": 1}).run_in_thread() as cluster:
        cert = cluster.client_certificate("kcat-app")
        settings = {
            "security.protocol": "SSL",
            "ssl.ca.location": str(cluster.tls_ca_file),
            "ssl.keystore.location": cert.keystore_p12,
            "ssl.keystore.password": cert.password,
        }
        options = [opt for key, value in settings.items() for opt in ("-X", f"{key}={value}")]
        kcat = [_kcat(), "-b", cluster.bootstrap_servers, *options]
        lines = "".join(f"k{i}:v{i}\n" for i in range(N))
        produced = subprocess.run(
            [*kcat, "-P", "-t", "orders", "-K", ":"], input=lines, capture_output=True, text=True, timeout=30
        )
        assert produced.returncode == 0, produced.stderr
        read = subprocess.run(
            [*kcat, "-C", "-t", "orders", "-o", "beginning", "-e", "-f", "%k=%s@%o\n"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert read.returncode == 0, read.stderr
        assert read.stdout.splitlines() == [f"k{i}=v{i}@{i}" for i in range(N)]
        assert principals(cluster) == {("User:kcat-app", "SSL")}


# -- the broker's own certificate ---------------------------------------------------------------


def own_keystore(folder: Path, ca: trustme.CA, password: str) -> str:
    """A PKCS#12 keystore of a broker certificate from ``ca`` for the addresses clients use."""
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    cert = x509.load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())
    data = pkcs12.serialize_key_and_certificates(
        b"broker", key, cert, None, serialization.BestAvailableEncryption(password.encode())
    )
    (folder / "broker.p12").write_bytes(data)
    return str(folder / "broker.p12")


def test_a_cluster_serves_the_tests_own_certificate(tmp_path):
    ca = trustme.CA(organization_name="my company CA")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    config = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": own_keystore(tmp_path, ca, "broker-secret"),
        "ssl.keystore.password": "broker-secret",
    }
    with FakeCluster(security_protocol="SSL", config=config, topics={"orders": 1}).run_in_thread() as cluster:
        assert cluster.tls_ca_file is None  # the keystore does not hold its CA: the test has it
        settings = {
            "bootstrap.servers": cluster.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": str(tmp_path / "ca.pem"),  # the test's own CA, and only it
            "log_level": 3,
        }
        assert round_trip(settings, "orders") == [(b"k", b"paid")]
        assert [(key, value) for _, _, key, value in cluster.records("orders")] == [(b"k", b"paid")]


def test_a_cluster_trusts_client_certificates_of_the_tests_own_ca(tmp_path):
    ca = trustme.CA(organization_name="my company CA")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    client = ca.issue_cert("app", common_name="payments")
    client.cert_chain_pems[0].write_to_path(str(tmp_path / "client.pem"))
    client.private_key_pem.write_to_path(str(tmp_path / "client.key"))
    config = MTLS | {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": own_keystore(tmp_path, ca, "broker-secret"),
        "ssl.keystore.password": "broker-secret",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tmp_path / "ca.pem"),
    }
    with FakeCluster(security_protocol="SSL", config=config, topics={"orders": 1}).run_in_thread() as cluster:
        assert cluster.tls_ca_file is not None  # the truststore holds the CA the broker's certificate is from
        settings = {
            "bootstrap.servers": cluster.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": cluster.tls_ca_file,
            "ssl.certificate.location": str(tmp_path / "client.pem"),
            "ssl.key.location": str(tmp_path / "client.key"),
            "log_level": 3,
        }
        assert round_trip(settings, "orders") == [(b"k", b"paid")]
        assert principals(cluster) == {("User:payments", "SSL")}

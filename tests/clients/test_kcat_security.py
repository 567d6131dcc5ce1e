"""Issue 37 with kcat (librdkafka's CLI): produce with ``-P`` and read back with ``-C -e`` over
SASL_SSL, the broker's certificate checked against ``cluster.tls_ca_file`` (``ssl.ca.location``)
and the host name (librdkafka's default ``ssl.endpoint.identification.algorithm=https``; the
certificate has 127.0.0.1 as an IP SAN).

SCRAM and librdkafka < 2.6.1. Every librdkafka before 2.6.1 puts the client nonce in the
client-final message twice (``r=`` client nonce + the server-first's nonce, which already starts
with the client nonce; confluentinc/librdkafka#4895). Kafka 3.8.1 to 3.9 let that through
(``endsWith``); Kafka 4.0 and later compare the nonces for equality (``ScramSaslServer``), so
those librdkafkas fail SCRAM against a real Kafka 4.x with "invalid credentials" (edenhill/kcat
#462), and fakebroker, posing as 4.4, answers them the same. The kcat that scripts/setup.sh
installs on Debian 12 runs on Debian's librdkafka 2.0.2: so SCRAM-SHA-512 runs kcat on the
librdkafka the confluent-kafka wheel bundles (``LD_LIBRARY_PATH``; the same ABI, soname
``librdkafka.so.1``) when the system's is older, and a separate test shows the installed one
refused exactly as Kafka 4.4 refuses it. PLAIN works on any librdkafka.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients

USERS = {"alice": "alice-secret"}
N = 10
FIXED_IN = (2, 6, 1)  # the first librdkafka whose SCRAM client-final carries the nonce once
SCRAM_FAILED = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
)


def _kcat() -> str:
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.fail("kcat is not installed: scripts/setup.sh installs the Debian package 'kcat'")
    return path


def librdkafka_version(env: dict[str, str] | None = None) -> tuple[int, ...]:
    """The librdkafka kcat runs on (``kcat -V``: "... librdkafka 2.0.2 builtin.features=...")."""
    out = subprocess.run([_kcat(), "-V"], capture_output=True, text=True, timeout=10, env=env)
    found = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", out.stdout + out.stderr)
    assert found, f"kcat -V names no librdkafka:\n{out.stdout}{out.stderr}"
    return tuple(int(part) for part in found.groups())


@pytest.fixture(scope="session")
def scram_kcat_env(tmp_path_factory) -> dict[str, str]:
    """An environment in which kcat runs on a librdkafka that does SCRAM as Kafka 4.x requires:
    the system's if it is new enough, else the confluent-kafka wheel's."""
    if librdkafka_version() >= FIXED_IN:
        return dict(os.environ)
    import confluent_kafka

    bundled = sorted((Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs").glob("librdkafka*.so*"))
    if not bundled:
        pytest.fail(
            f"kcat runs on librdkafka {librdkafka_version()} (SCRAM fails against Kafka 4.x before 2.6.1) and the "
            "confluent-kafka install bundles no librdkafka to run it on instead"
        )
    libdir = tmp_path_factory.mktemp("librdkafka")
    (libdir / "librdkafka.so.1").symlink_to(bundled[0])
    env = {**os.environ, "LD_LIBRARY_PATH": str(libdir)}
    assert librdkafka_version(env) >= FIXED_IN
    return env


def kcat(cluster: FakeCluster, mechanism: str, *args: str, env=None, stdin: str | None = None, password="alice-secret"):
    settings = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
        "ssl.ca.location": str(cluster.tls_ca_file),
    }
    options = [opt for key, value in settings.items() for opt in ("-X", f"{key}={value}")]
    return subprocess.run(
        [_kcat(), "-b", cluster.bootstrap_servers, *options, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )


def produce_and_consume(cluster: FakeCluster, mechanism: str, env=None) -> list[str]:
    """``N`` records ``k<i>:v<i>`` to partition 1 with ``-P``, then read back with ``-C -e``:
    ``key=value@offset`` lines."""
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 2)
    lines = "".join(f"k{i}:v{i}\n" for i in range(N))
    produced = kcat(cluster, mechanism, "-P", "-t", topic, "-p", "1", "-K", ":", env=env, stdin=lines)
    assert produced.returncode == 0, produced.stderr
    assert cluster.offsets(topic, 1) == (0, N)
    read = kcat(cluster, mechanism, "-C", "-t", topic, "-p", "1", "-o", "beginning", "-e", "-f", "%k=%s@%o\n", env=env)
    assert read.returncode == 0, read.stderr
    return read.stdout.splitlines()


def authenticated(cluster: FakeCluster) -> set[tuple[str, str, str | None]]:
    return {(e.principal, e.mechanism, e.client_id) for e in cluster.events if e.kind == "client_authenticated"}


def test_kcat_produces_and_consumes_over_sasl_ssl_with_scram_sha_512(scram_kcat_env):
    with FakeCluster(brokers=2, security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        assert produce_and_consume(cluster, "SCRAM-SHA-512", env=scram_kcat_env) == [f"k{i}=v{i}@{i}" for i in range(N)]
        assert authenticated(cluster) == {("User:alice", "SCRAM-SHA-512", "rdkafka")}
        assert not [e for e in cluster.events if e.kind == "authentication_failed"]


def test_kcat_produces_and_consumes_over_sasl_ssl_with_plain_on_the_installed_librdkafka():
    with FakeCluster(brokers=2, security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        assert produce_and_consume(cluster, "PLAIN") == [f"k{i}=v{i}@{i}" for i in range(N)]
        assert authenticated(cluster) == {("User:alice", "PLAIN", "rdkafka")}


def test_kcat_scram_on_the_installed_librdkafka_is_answered_as_kafka_4_4_answers_it():
    """Before 2.6.1 the doubled nonce is refused with Kafka's text, the right password or not;
    from 2.6.1 on, SCRAM works."""
    version = librdkafka_version()
    with FakeCluster(security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        if version >= FIXED_IN:
            assert produce_and_consume(cluster, "SCRAM-SHA-512") == [f"k{i}=v{i}@{i}" for i in range(N)]
            return
        listed = kcat(cluster, "SCRAM-SHA-512", "-L", "-m", "3")
        assert listed.returncode != 0
        assert f"SASL authentication error: {SCRAM_FAILED}" in listed.stderr, listed.stderr
        failed = [e for e in cluster.events if e.kind == "authentication_failed"]
        assert failed and {(e.mechanism, e.reason) for e in failed} == {("SCRAM-SHA-512", SCRAM_FAILED)}
        assert not authenticated(cluster)


def test_kcat_with_a_wrong_password_is_refused_with_kafkas_text(scram_kcat_env):
    with FakeCluster(security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        listed = kcat(cluster, "SCRAM-SHA-512", "-L", "-m", "3", env=scram_kcat_env, password="not-alice-secret")
        assert listed.returncode != 0
        assert f"SASL authentication error: {SCRAM_FAILED}" in listed.stderr, listed.stderr
        assert not authenticated(cluster)

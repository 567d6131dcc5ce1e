"""Bad input on a SASL_SSL listener (issue 37's Show), each answered or closed as Kafka does while
a librdkafka (confluent-kafka) producer and consumer logged in with SCRAM-SHA-512 keep going on
the same broker:

- random bytes where a TLS client hello belongs, and a Kafka request sent in clear to the TLS
  port (a client configured for PLAINTEXT): the TLS handshake fails and that connection is
  closed, with a ``connection_closed`` event naming it;
- a SCRAM exchange abandoned halfway, after the server-first message: a client that hangs up
  leaves nothing behind, and one that stays silent is closed after ``connections.max.idle.ms``
  as any idle connection (Kafka's selector closes idle channels whether they authenticated or
  not); a login on a new connection then succeeds.

(A garbage SASL token and SASL requests out of order are compared with a real Kafka 4.4 by the
secured conformance probes, ``tests/conformance/probes_security.py``.)"""

from __future__ import annotations

import contextlib
import random
import socket
import ssl
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import headers

from ..raw_client import SASL_AUTHENTICATE, SASL_HANDSHAKE, RawClient, tls_context
from .security_support import USERS, scram_ssl_settings

pytestmark = pytest.mark.clients
IDLE_MS = 1_500


def settings(cluster: FakeCluster) -> dict:
    return scram_ssl_settings(cluster)


class Traffic:
    """A producer and a consumer in a group on the cluster, checked round by round."""

    def __init__(self, cluster: FakeCluster):
        self.cluster = cluster
        self.topic = f"orders-{uuid.uuid4().hex[:6]}"
        cluster.create_topic(self.topic, 1)
        self.producer = Producer(settings(cluster) | {"client.id": "steady-producer", "linger.ms": 0})
        self.consumer = Consumer(
            settings(cluster)
            | {"client.id": "steady-consumer", "group.id": f"g-{self.topic}", "auto.offset.reset": "earliest"}
        )
        self.consumer.subscribe([self.topic])
        self.sent = self.got = 0

    def round_trip(self, n: int = 5, timeout: float = 20) -> None:
        """``n`` more records produced, delivered and read by the consumer."""
        for _ in range(n):
            self.producer.produce(self.topic, value=b"%d" % self.sent)
            self.sent += 1
        assert self.producer.flush(timeout) == 0
        deadline = time.monotonic() + timeout
        while self.got < self.sent and time.monotonic() < deadline:
            msg = self.consumer.poll(0.2)
            self.got += msg is not None and msg.error() is None
        assert self.got == self.sent, (self.got, self.sent)

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(5)
        del self.producer  # gone before the cluster stops: no reconnect attempts logged after it


@pytest.fixture
def cluster():
    config = {"connections.max.idle.ms": IDLE_MS}
    with FakeCluster(security_protocol="SASL_SSL", users=USERS, config=config).run_in_thread() as running:
        yield running


def closed_by_the_broker(sock: socket.socket, within: float) -> bool:
    """Whether the broker closes the socket within ``within`` seconds (whatever it sent first:
    a TLS alert, or nothing)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def ssl_failures(cluster: FakeCluster) -> list:
    return [e for e in cluster.events if e.kind == "connection_closed" and "TLS handshake failed" in e.reason]


def clear_api_versions() -> bytes:
    payload = headers.encode_request(
        18, 3, 1, {"client_software_name": "plaintext-client", "client_software_version": "1"}, client_id="oops"
    )
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize(
    "hello",
    [
        pytest.param(bytes([0x80]) + random.Random(37).randbytes(511), id="random-bytes"),
        pytest.param(random.Random(38).randbytes(2048), id="more-random-bytes"),
        pytest.param(clear_api_versions(), id="kafka-request-in-clear"),
    ],
)
def test_a_tls_client_hello_that_is_not_one_closes_that_connection_only(cluster, hello):
    traffic = Traffic(cluster)
    try:
        traffic.round_trip()
        port = cluster.servers[0].port
        socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        try:
            for sock in socks:
                sock.sendall(hello)
            traffic.round_trip()  # served meanwhile
            assert all(closed_by_the_broker(sock, within=5) for sock in socks)  # at once, not at the 10 s limit
        finally:
            for sock in socks:
                sock.close()
        traffic.round_trip()
        failed = ssl_failures(cluster)
        assert len(failed) == 3 and all(e.client_id is None for e in failed), failed
    finally:
        traffic.close()
    assert not [e for e in cluster.events if e.kind == "authentication_failed"]


def half_a_client_hello() -> bytes:
    """The first half of a real TLS client hello."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    hello = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        hello.do_handshake()
    sent = outgoing.read()
    return sent[: len(sent) // 2]


def test_a_client_that_hangs_up_during_the_tls_handshake_is_a_disconnect_not_a_failure(cluster):
    """Kafka logs a peer that goes away mid-handshake as a disconnect; so no event names it
    (a client closing its connection leaves none either), and everyone else is served."""
    traffic = Traffic(cluster)
    try:
        traffic.round_trip()
        port = cluster.servers[0].port
        for sent in (b"", half_a_client_hello()):
            for _ in range(3):
                with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                    sock.sendall(sent)
        traffic.round_trip()
    finally:
        traffic.close()
    assert not [e for e in cluster.events if e.kind == "connection_closed"], cluster.events
    assert not [e for e in cluster.events if e.kind == "authentication_failed"]


def scram_halfway(cluster: FakeCluster) -> RawClient:
    """A connection whose SCRAM-SHA-512 exchange got its server-first message, then nothing."""
    client = RawClient(cluster.servers[0].port, client_id="halfway", tls=tls_context(cluster.tls_ca_file))
    assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"}).error_code == 0
    scram = RawClient.scram("SCRAM-SHA-512", "alice", USERS["alice"])
    first = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
    assert first.error_code == 0 and bytes(first.auth_bytes).startswith(b"r=")
    return client


def test_a_scram_exchange_abandoned_halfway_is_hung_up_or_closed_when_idle(cluster):
    traffic = Traffic(cluster)
    try:
        traffic.round_trip()
        scram_halfway(cluster).close()  # the client hangs up mid-exchange
        silent = scram_halfway(cluster)  # this one stays, and says nothing more
        try:
            traffic.round_trip()
            started = time.monotonic()
            assert closed_by_the_broker(silent.sock, within=IDLE_MS / 1000 + 10)
            assert time.monotonic() - started >= IDLE_MS / 1000 - 1.0  # not at once: when idle
        finally:
            silent.close()
        idle = [e for e in cluster.events if e.kind == "connection_closed" and e.client_id == "halfway"]
        assert len(idle) == 1 and "connections.max.idle.ms" in idle[0].reason, idle
        with RawClient(cluster.servers[0].port, client_id="again", tls=tls_context(cluster.tls_ca_file)) as again:
            assert again.login("SCRAM-SHA-512", "alice", USERS["alice"]).error_code == 0
        traffic.round_trip()
    finally:
        traffic.close()
    logins = [(e.client_id, e.principal) for e in cluster.events if e.kind == "client_authenticated"]
    assert ("again", "User:alice") in logins and "halfway" not in {c for c, _ in logins}
    assert not [e for e in cluster.events if e.kind == "authentication_failed"]
    assert not ssl_failures(cluster)

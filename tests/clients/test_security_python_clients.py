"""Issue 37 with kafka-python and aiokafka: SASL over TLS (SCRAM-SHA-512, PLAIN), in a group,
and a wrong password surfacing as each client's own authentication error."""

from __future__ import annotations

import ssl
import uuid

import anyio
import pytest

from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients
USERS = {"alice": "alice-secret"}
EXPECTED = sorted(b"v%d" % i for i in range(10))


def kafka_python_settings(cluster: FakeCluster, mechanism: str, password: str = "alice-secret") -> dict:
    out = {
        "bootstrap_servers": cluster.bootstrap_servers,
        "security_protocol": cluster.security_protocol,
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": password,
    }
    if cluster.tls_ca_file is not None:
        out |= {"ssl_cafile": cluster.tls_ca_file, "ssl_check_hostname": True}
    return out


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_kafka_python_over_sasl_ssl(mechanism):
    from kafka import KafkaConsumer, KafkaProducer

    with FakeCluster(security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        topic = f"orders-{uuid.uuid4().hex[:6]}"
        cluster.create_topic(topic, 2)
        producer = KafkaProducer(**kafka_python_settings(cluster, mechanism))
        for i in range(10):
            producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
        producer.flush(15)
        producer.close()
        consumer = KafkaConsumer(
            topic,
            group_id="kp-group",
            auto_offset_reset="earliest",
            consumer_timeout_ms=10000,
            **kafka_python_settings(cluster, mechanism),
        )
        got = []
        for msg in consumer:
            got.append(msg.value)
            if len(got) == 10:
                break
        consumer.commit()
        consumer.close()
        assert sorted(got) == EXPECTED
        assert cluster.committed("kp-group")  # the group's offsets, committed over SASL_SSL
        assert {e.principal for e in cluster.events if e.kind == "client_authenticated"} == {"User:alice"}


def test_kafka_python_wrong_password_raises_its_authentication_error():
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    with FakeCluster(security_protocol="SASL_SSL", users=USERS).run_in_thread() as cluster:
        # kafka-python retries the refused bootstrap, backing off, until bootstrap_timeout_ms (30 s
        # by default: max_block_ms does not bound it) and then raises
        settings = kafka_python_settings(cluster, "SCRAM-SHA-256", "wrong")
        with pytest.raises(KafkaError) as raised:
            KafkaProducer(**settings, max_block_ms=3000, bootstrap_timeout_ms=3000)
        failed = [e for e in cluster.events if e.kind == "authentication_failed"]
        assert failed and "invalid credentials with SASL mechanism SCRAM-SHA-256" in failed[0].reason
        assert raised.value is not None


def aiokafka_settings(cluster: FakeCluster, mechanism: str, password: str = "alice-secret") -> dict:
    from aiokafka.helpers import create_ssl_context

    out = {
        "bootstrap_servers": cluster.bootstrap_servers,
        "security_protocol": cluster.security_protocol,
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": password,
    }
    if cluster.tls_ca_file is not None:
        out["ssl_context"] = create_ssl_context(cafile=cluster.tls_ca_file)
    return out


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_aiokafka_over_sasl_ssl(mechanism):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def main() -> list[bytes]:
        async with FakeCluster(security_protocol="SASL_SSL", users=USERS) as cluster:
            topic = f"orders-{uuid.uuid4().hex[:6]}"
            cluster.create_topic(topic, 2)
            producer = AIOKafkaProducer(**aiokafka_settings(cluster, mechanism))
            await producer.start()
            try:
                for i in range(10):
                    await producer.send_and_wait(topic, key=b"k%d" % i, value=b"v%d" % i)
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(
                topic, group_id="aio-group", auto_offset_reset="earliest", **aiokafka_settings(cluster, mechanism)
            )
            await consumer.start()
            got: list[bytes] = []
            try:
                with anyio.fail_after(30):
                    while len(got) < 10:
                        batch = await consumer.getmany(timeout_ms=500)
                        got += [m.value for records in batch.values() for m in records]
                await consumer.commit()
            finally:
                await consumer.stop()
            assert {e.principal for e in cluster.events if e.kind == "client_authenticated"} == {"User:alice"}
            return sorted(got)

    assert anyio.run(main) == EXPECTED


def test_aiokafka_wrong_password_raises_its_authentication_error(caplog):
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def main() -> str:
        async with FakeCluster(security_protocol="SASL_SSL", users=USERS) as cluster:
            producer = AIOKafkaProducer(**aiokafka_settings(cluster, "PLAIN", "wrong"))
            with pytest.raises((KafkaError, ssl.SSLError, OSError)) as raised:
                await producer.start()
            await producer.stop()
            return str(raised.value)

    # aiokafka logs the broker's answer and raises that it could not bootstrap
    assert "Unable to bootstrap" in anyio.run(main)
    assert "SaslAuthenticationFailed: Authentication failed: Invalid username or password" in caplog.text

"""KIP-368 re-authentication driven by the broker's ``connections.max.reauth.ms`` (issue 37),
with librdkafka (confluent-kafka) logging in with SCRAM-SHA-512 over SASL_SSL:

- on the real clock, a 2 s session: each connection logs in again on the same socket before its
  session ends (librdkafka re-authenticates at 90 % of the lifetime the broker sent), while
  records flow, and nothing is closed or lost;
- on virtual time, an hour's session: an hour of the cluster's clock passes in an instant, the
  broker closes each connection at its next request as Kafka closes an expired session, and the
  client connects and logs in again, its records delivered;
- a fault rule on SaslHandshake, added after the login, refuses the next re-authentication: that
  connection is closed and the client logs in on a new one."""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from fakebroker.cluster import FakeCluster

from .security_support import USERS, scram_ssl_settings

pytestmark = pytest.mark.clients
EXPIRED = "SASL session expired"


def settings(cluster: FakeCluster) -> dict:
    return scram_ssl_settings(cluster)


def logins(cluster: FakeCluster) -> list:
    return [e for e in cluster.events if e.kind == "client_authenticated"]


def test_connections_log_in_again_before_connections_max_reauth_ms_ends_their_session():
    topic, group = f"ticks-{uuid.uuid4().hex[:6]}", f"watch-{uuid.uuid4().hex[:6]}"
    config = {"connections.max.reauth.ms": 2_000}
    with FakeCluster(security_protocol="SASL_SSL", users=USERS, config=config).run_in_thread() as cluster:
        cluster.create_topic(topic, 1)
        producer = Producer(settings(cluster) | {"client.id": "ticker", "linger.ms": 0})
        consumer = Consumer(
            settings(cluster) | {"client.id": "watcher", "group.id": group, "auto.offset.reset": "earliest"}
        )
        consumer.subscribe([topic])
        errors: list[KafkaError] = []
        sent = got = 0
        deadline = time.monotonic() + 6.5  # three sessions' worth
        while time.monotonic() < deadline:
            producer.produce(topic, value=b"%d" % sent, on_delivery=lambda err, _: err and errors.append(err))
            sent += 1
            producer.poll(0)
            msg = consumer.poll(0.1)
            got += msg is not None and msg.error() is None
        assert producer.flush(10) == 0 and not errors, errors
        quiet_until = time.monotonic() + 10
        while got < sent and time.monotonic() < quiet_until:
            msg = consumer.poll(0.5)
            got += msg is not None and msg.error() is None
        consumer.close()
        assert len(cluster.records(topic)) == sent and got == sent, (sent, got)

        seen = logins(cluster)
        assert {(e.principal, e.mechanism) for e in seen} == {("User:alice", "SCRAM-SHA-512")}
        assert all(e.session_lifetime_ms == 2_000 for e in seen), [e.session_lifetime_ms for e in seen]
        per_connection = Counter((e.client_id, e.peer) for e in seen)
        for client_id in ("ticker", "watcher"):
            # one socket used all along logged in three times or more: again and again, in place
            assert max(n for (who, _), n in per_connection.items() if who == client_id) >= 3, per_connection
        assert not [e for e in cluster.events if e.kind == "authentication_failed"]
        closed = [e for e in cluster.events if e.kind == "connection_closed" and EXPIRED in e.reason]
        assert not closed, closed


def test_virtual_time_ends_the_session_and_the_client_logs_in_again():
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    hour_ms = 3_600_000
    with FakeCluster(
        security_protocol="SASL_SSL",
        users=USERS,
        config={"connections.max.reauth.ms": hour_ms},
        topics={topic: 1},
        virtual_time=True,
    ).run_in_thread() as cluster:
        producer = Producer(settings(cluster) | {"client.id": "billing-1", "reconnect.backoff.ms": 50})
        producer.produce(topic, value=b"first")
        assert producer.flush(15) == 0
        first = logins(cluster)
        assert first and all(e.session_lifetime_ms == hour_ms for e in first)

        cluster.clock.advance(hour_ms / 1000 + 1)  # no real time passes: librdkafka has not re-authenticated
        producer.produce(topic, value=b"an hour later")
        assert producer.flush(15) == 0  # closed at its next request; connected and logged in again

        assert [value for *_, value in cluster.records(topic)] == [b"first", b"an hour later"]
        closed = [e for e in cluster.events if e.kind == "connection_closed" and EXPIRED in e.reason]
        assert closed and {e.client_id for e in closed} == {"billing-1"}, closed
        later = [e for e in logins(cluster) if e.seq > closed[0].seq]
        assert later and {e.principal for e in later} == {"User:alice"}
        assert all(e.time_ms >= first[-1].time_ms + hour_ms for e in later)


def test_a_fault_on_saslhandshake_refuses_re_authentication_and_the_client_logs_in_anew():
    """``cluster.faults.add(api="SaslHandshake", ...)`` added after the login refuses the next
    re-authentication: that connection is closed after the refusal, and the client connects and
    logs in again, its records delivered."""
    topic = f"ticks-{uuid.uuid4().hex[:6]}"
    with FakeCluster(
        security_protocol="SASL_SSL", users=USERS, config={"connections.max.reauth.ms": 2_000}, topics={topic: 1}
    ).run_in_thread() as cluster:
        producer = Producer(settings(cluster) | {"client.id": "ticker", "linger.ms": 0, "reconnect.backoff.ms": 50})
        producer.produce(topic, value=b"0")
        assert producer.flush(10) == 0
        rule = cluster.faults.add(api="SaslHandshake", error="ILLEGAL_SASL_STATE", times=1)
        sent = 1
        deadline = time.monotonic() + 4.5  # past the 1.8 s re-authentication, twice
        while time.monotonic() < deadline:
            producer.produce(topic, value=b"%d" % sent)
            sent += 1
            producer.poll(0.05)
        assert producer.flush(15) == 0
        assert len(cluster.records(topic)) == sent

        (fired,) = [e for e in cluster.events if e.kind == "fault_fired" and e.rule == rule.id]
        assert fired.api == "SaslHandshake" and fired.client_id == "ticker"
        refused_peers = {e.peer for e in logins(cluster) if e.seq < fired.seq}
        closed = [e for e in cluster.events if e.kind == "connection_closed" and e.seq > fired.seq]
        assert closed and closed[0].client_id == "ticker" and closed[0].peer in refused_peers, closed
        anew = [e for e in logins(cluster) if e.seq > closed[0].seq and e.peer not in refused_peers]
        assert anew and {e.principal for e in anew} == {"User:alice"}

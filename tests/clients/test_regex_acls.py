"""A KIP-848 regex subscription under ACLs (issue 37), with confluent-kafka
(``group.protocol=consumer``): the coordinator resolves ``^pay-.*`` to the topics the member's
principal may DESCRIBE, as Kafka's does, so alice is assigned only the topic she may read; once
an admin grants her the other over the Admin API, the same running consumer is assigned it at
its next heartbeat and reads its records too, without a restart."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType
from confluent_kafka.admin import ResourceType as Kind

from fakebroker.cluster import FakeCluster

from .security_support import AUTHORIZER, plain_settings

pytestmark = pytest.mark.clients
USERS = {"admin": "a", "alice": "b"}
AUTHORIZED = AUTHORIZER
QUIET = {"log_level": 3}


def settings(cluster: FakeCluster, user: str) -> dict:
    return plain_settings(cluster, user, USERS[user], QUIET["log_level"])


def allow(kind: Kind, name: str, operation: AclOperation) -> AclBinding:
    return AclBinding(kind, name, ResourcePatternType.LITERAL, "User:alice", "*", operation, AclPermissionType.ALLOW)


def read_until(consumer: Consumer, got: dict[str, list[bytes]], wanted: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while sum(map(len, got.values())) < wanted and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.setdefault(msg.topic(), []).append(msg.value())


def test_a_regex_subscription_is_assigned_only_the_topics_the_principal_may_describe():
    suffix = uuid.uuid4().hex[:6]
    eu, us, group = f"pay-eu-{suffix}", f"pay-us-{suffix}", f"billing-{suffix}"
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=AUTHORIZED).run_in_thread() as cluster:
        cluster.create_topic(eu, 2)
        cluster.create_topic(us, 2)
        producer = Producer(settings(cluster, "admin"))
        for topic in (eu, us):
            for i in range(4):
                producer.produce(topic, value=f"{topic}-{i}".encode())
        assert producer.flush(15) == 0
        admin = AdminClient(settings(cluster, "admin"))
        for future in admin.create_acls(
            [allow(Kind.GROUP, group, AclOperation.READ), allow(Kind.TOPIC, eu, AclOperation.READ)]
        ).values():
            future.result(timeout=10)

        consumer = Consumer(
            settings(cluster, "alice")
            | {"group.id": group, "group.protocol": "consumer", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe([f"^pay-.*-{suffix}"])
        got: dict[str, list[bytes]] = {}
        read_until(consumer, got, 4, 20)
        read_until(consumer, got, 5, 1)  # nothing more comes: the other topic is not assigned
        assert {t: sorted(v) for t, v in got.items()} == {eu: [f"{eu}-{i}".encode() for i in range(4)]}
        assert sorted((tp.topic, tp.partition) for tp in consumer.assignment()) == [(eu, 0), (eu, 1)]
        member = cluster.group(group).members[0]
        assert {t: sorted(p) for t, p in member.assignment.items()} == {eu: [0, 1]}

        for future in admin.create_acls([allow(Kind.TOPIC, us, AclOperation.READ)]).values():
            future.result(timeout=10)
        read_until(consumer, got, 8, 20)
        assert {t: sorted(v) for t, v in got.items()} == {
            eu: [f"{eu}-{i}".encode() for i in range(4)],
            us: [f"{us}-{i}".encode() for i in range(4)],
        }
        assert sorted((tp.topic, tp.partition) for tp in consumer.assignment()) == [(eu, 0), (eu, 1), (us, 0), (us, 1)]
        consumer.close()

"""Issue 37's proof with real clients: an ACL denying a group read makes the consumer fail with
GROUP_AUTHORIZATION_FAILED, and granting it over the Admin API lets the same running consumer
proceed, without a restart. confluent-kafka (classic and KIP-848 protocols), kafka-python and
aiokafka, over SASL_PLAINTEXT with PLAIN, the StandardAuthorizer on and ``User:admin`` a super user."""

from __future__ import annotations

import time
import uuid

import anyio
import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from fakebroker.cluster import FakeCluster

from .kafka_python_join import knows_partitions
from .security_support import AUTHORIZER, plain_settings

pytestmark = pytest.mark.clients
USERS = {"admin": "a", "alice": "b"}
AUTHORIZED = AUTHORIZER
GROUP = "billing"
EXPECTED = sorted(b"v%d" % i for i in range(10))
QUIET = {"log_level": 3}


def settings(cluster: FakeCluster, user: str) -> dict:
    return plain_settings(cluster, user, USERS[user], QUIET["log_level"])


def binding(resource: ResourceType, name: str, operation: AclOperation, permission: AclPermissionType) -> AclBinding:
    return AclBinding(resource, name, ResourcePatternType.LITERAL, "User:alice", "*", operation, permission)


def done(futures: dict) -> None:
    for future in futures.values():
        future.result(timeout=10)


def setup(cluster: FakeCluster, group_acl: str) -> tuple[str, AdminClient]:
    """A topic with ten records, alice's READ on it, and her group ``group_acl``: "none" (no ACL on
    it: denied from FindCoordinator on, which needs DESCRIBE) or "deny" (DESCRIBE allowed, READ
    denied: FindCoordinator answers, JoinGroup or ConsumerGroupHeartbeat is refused)."""
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 2)
    producer = Producer(settings(cluster, "admin"))
    for i in range(10):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(15) == 0
    admin = AdminClient(settings(cluster, "admin"))
    acls = [binding(ResourceType.TOPIC, topic, AclOperation.READ, AclPermissionType.ALLOW)]
    if group_acl == "deny":
        acls.append(binding(ResourceType.GROUP, GROUP, AclOperation.DESCRIBE, AclPermissionType.ALLOW))
        acls.append(binding(ResourceType.GROUP, GROUP, AclOperation.READ, AclPermissionType.DENY))
    done(admin.create_acls(acls))
    return topic, admin


def grant(admin: AdminClient, group_acl: str) -> None:
    """What an operator does: remove the DENY if there is one, allow READ on the group."""
    if group_acl == "deny":
        deny = AclBindingFilter(
            ResourceType.GROUP,
            GROUP,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.DENY,
        )
        done(admin.delete_acls([deny]))
    done(admin.create_acls([binding(ResourceType.GROUP, GROUP, AclOperation.READ, AclPermissionType.ALLOW)]))


def first_error(consumer: Consumer) -> KafkaError:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None:
            assert msg.error() is not None, "a record read without READ on the group"
            return msg.error()
    raise AssertionError("the consumer saw no error")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
@pytest.mark.parametrize("group_acl", ["none", "deny"])
def test_confluent_consumer_fails_on_the_group_then_proceeds_once_granted(protocol, group_acl):
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=AUTHORIZED).run_in_thread() as cluster:
        topic, admin = setup(cluster, group_acl)
        config = settings(cluster, "alice") | {
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "group.protocol": protocol,
        }
        consumer = Consumer(config)
        consumer.subscribe([topic])
        error = first_error(consumer)
        assert "Group authorization failed" in error.str(), error.str()
        assert not cluster.committed(GROUP)
        if protocol == "consumer" and group_acl == "deny":
            # a KIP-848 consumer refused on its ConsumerGroupHeartbeat stops for good, in librdkafka
            # as in the Java client (both take GROUP_AUTHORIZATION_FAILED there as fatal): after the
            # grant, a new consumer proceeds
            assert error.code() == KafkaError._FATAL and "ConsumerGroupHeartbeat" in error.str(), error.str()
            consumer.close()
            consumer = Consumer(config)
            consumer.subscribe([topic])
        else:  # FindCoordinator, JoinGroup refused: the consumer retries
            assert error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED and not error.fatal(), error
        grant(admin, group_acl)
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer.commit(asynchronous=False)
        consumer.close()
        assert sorted(got) == EXPECTED
        assert sum(cluster.committed(GROUP).values()) == 10


def test_kafka_python_consumer_fails_on_the_group_then_proceeds_once_granted():
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=AUTHORIZED).run_in_thread() as cluster:
        topic, admin = setup(cluster, "deny")
        consumer = KafkaConsumer(
            topic,
            group_id=GROUP,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            bootstrap_servers=cluster.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password=USERS["alice"],
        )
        knows_partitions(consumer, topic, 2)  # kafka-python 3.0.12: see kafka_python_join.py
        with pytest.raises(GroupAuthorizationFailedError):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                assert not consumer.poll(timeout_ms=200), "a record read without READ on the group"
        grant(admin, "deny")
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            try:
                polled = consumer.poll(timeout_ms=200)
            except GroupAuthorizationFailedError:  # an answer to a request sent before the grant
                continue
            for records in polled.values():
                got += [r.value for r in records]
        consumer.commit()
        consumer.close()
        assert sorted(got) == EXPECTED
        assert sum(cluster.committed(GROUP).values()) == 10


def test_aiokafka_consumer_fails_on_the_group_then_proceeds_once_granted():
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import GroupAuthorizationFailedError

    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=AUTHORIZED).run_in_thread() as cluster:
        topic, admin = setup(cluster, "none")

        async def main() -> list[bytes]:
            consumer = AIOKafkaConsumer(
                group_id=GROUP,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                bootstrap_servers=cluster.bootstrap_servers,
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN",
                sasl_plain_username="alice",
                sasl_plain_password=USERS["alice"],
            )
            await consumer.start()
            consumer.subscribe([topic])
            try:
                with pytest.raises(GroupAuthorizationFailedError):
                    with anyio.fail_after(20):
                        while True:
                            assert not await consumer.getmany(timeout_ms=200), "read without READ on the group"
                await anyio.to_thread.run_sync(grant, admin, "none")
                got: list[bytes] = []
                with anyio.fail_after(30):
                    while len(got) < 10:
                        try:
                            batches = await consumer.getmany(timeout_ms=200)
                        except GroupAuthorizationFailedError:  # one its retries met before the grant
                            continue
                        for records in batches.values():
                            got += [r.value for r in records]
                await consumer.commit()
                return got
            finally:
                await consumer.stop()

        assert sorted(anyio.run(main)) == EXPECTED
        assert sum(cluster.committed(GROUP).values()) == 10

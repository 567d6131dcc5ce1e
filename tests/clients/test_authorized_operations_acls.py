"""KIP-430 authorized operations under the authorizer (issue 37), read by librdkafka's
AdminClient (confluent-kafka) with ``include_authorized_operations``: a topic's (Metadata), the
cluster's (DescribeCluster), a classic group's (DescribeGroups) and a KIP-848 consumer group's
(ConsumerGroupDescribe) are what the principal's ACLs give it (an ALLOW of READ implies
DESCRIBE, as on Kafka), and a super user's are every operation the resource type has."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient

from fakebroker.cluster import FakeCluster
from fakebroker.cluster.access import STANDARD_AUTHORIZER

from .security_support import plain_settings

pytestmark = pytest.mark.clients
USERS = {"admin": "admin-secret", "alice": "alice-secret"}
CONFIG = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
TIMEOUT = 15
Op = AclOperation
TOPIC_OPS = {Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
GROUP_OPS = {Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
CLUSTER_OPS = {
    Op.CREATE,
    Op.ALTER,
    Op.DESCRIBE,
    Op.CLUSTER_ACTION,
    Op.DESCRIBE_CONFIGS,
    Op.ALTER_CONFIGS,
    Op.IDEMPOTENT_WRITE,
}


def client(cluster: FakeCluster, user: str) -> dict:
    return plain_settings(cluster, user, USERS[user])


def join(cluster: FakeCluster, topic: str, group: str, protocol: str) -> Consumer:
    """Alice's consumer, in ``group`` with ``protocol``, once it read the topic's record."""
    extra = {"group.id": group, "group.protocol": protocol, "auto.offset.reset": "earliest"}
    consumer = Consumer(client(cluster, "alice") | extra)
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            return consumer
    consumer.close()
    raise AssertionError(f"{protocol} consumer of {group} read nothing")


def operations(admin: AdminClient, topic: str, groups: list[str]) -> tuple[set, set, dict[str, set]]:
    (described,) = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True).values()
    cluster = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    found = admin.describe_consumer_groups(groups, include_authorized_operations=True)
    by_group = {g: set(f.result(TIMEOUT).authorized_operations or ()) for g, f in found.items()}
    topic_ops = set(described.result(TIMEOUT).authorized_operations or ())
    return topic_ops, set(cluster.authorized_operations or ()), by_group


def test_a_principal_reads_the_operations_its_acls_give_it():
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    classic, modern = f"billing-{uuid.uuid4().hex[:6]}", f"audit-{uuid.uuid4().hex[:6]}"
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=CONFIG).run_in_thread() as cluster:
        cluster.create_topic(topic, 1)
        cluster.acls.allow("User:alice", "READ", topic=topic)
        cluster.acls.allow("User:alice", "READ", group=classic)
        cluster.acls.allow("User:alice", "READ", group=modern)
        cluster.acls.allow("User:alice", "DESCRIBE", cluster=True)
        producer = Producer(client(cluster, "admin"))
        producer.produce(topic, value=b"paid")
        assert producer.flush(TIMEOUT) == 0
        consumers = [join(cluster, topic, classic, "classic"), join(cluster, topic, modern, "consumer")]
        try:
            # ConsumerGroupDescribe answers the KIP-848 group (librdkafka asks it first): a rule
            # that only counts shows it was asked
            counted = cluster.faults.add(api="ConsumerGroupDescribe", action="delay", delay=0.001)
            alice = AdminClient(client(cluster, "alice"))
            topic_ops, cluster_ops, group_ops = operations(alice, topic, [classic, modern])
            assert topic_ops == {Op.READ, Op.DESCRIBE}
            assert cluster_ops == {Op.DESCRIBE}
            assert group_ops == {classic: {Op.READ, Op.DESCRIBE}, modern: {Op.READ, Op.DESCRIBE}}
            fired = [e for e in cluster.events if e.kind == "fault_fired" and e.rule == counted.id]
            assert fired, "ConsumerGroupDescribe was not asked"

            admin = AdminClient(client(cluster, "admin"))
            topic_ops, cluster_ops, group_ops = operations(admin, topic, [classic, modern])
            assert (topic_ops, cluster_ops) == (TOPIC_OPS, CLUSTER_OPS)
            assert group_ops == {classic: GROUP_OPS, modern: GROUP_OPS}
        finally:
            for consumer in consumers:
                consumer.close()

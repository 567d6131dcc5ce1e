"""confluent-kafka's AdminClient (librdkafka) against a 3-broker fakebroker: describe_topics
(partitions, leaders, replicas, ISR, topic id, authorized operations) and
list_consumer_group_offsets (the offsets a consumer committed)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AclOperation, AdminClient

from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients
QUIET = {"log_level": 3}
TOPIC, PARTITIONS = "ledger", 4
TOPIC_OPERATIONS = {"READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3).run_in_thread() as c:
        c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=2)
        yield c


def admin(cluster: FakeCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **QUIET})


def test_describe_topics_matches_the_cluster(cluster):
    cluster.stop_broker(2)  # its replicas drop out of the ISR, its partitions move
    client = admin(cluster)  # kept: the futures fail when the client is destroyed
    futures = client.describe_topics(
        TopicCollection([TOPIC, "missing"]), request_timeout=10, include_authorized_operations=True
    )
    description = futures[TOPIC].result(timeout=15)
    view = cluster.describe_topic(TOPIC)
    assert description.name == TOPIC and description.is_internal is False
    assert str(uuid.UUID(bytes=_uuid_bytes(description.topic_id))) == view.topic_id
    # librdkafka asks Metadata (v12, include_topic_authorized_operations): Kafka without an authorizer
    # answers every topic operation; apis/metadata.py still answers "omitted" (None here), reported
    operations = description.authorized_operations
    if operations is not None:
        assert all(isinstance(op, AclOperation) for op in operations)
        assert {op.name for op in operations} == TOPIC_OPERATIONS
    got = [
        (p.id, p.leader.id if p.leader else -1, [n.id for n in p.replicas], [n.id for n in p.isr])
        for p in description.partitions
    ]
    want = [(p.partition, p.leader, list(p.replicas), [r for r in p.replicas if r != 2]) for p in view.partitions]
    assert got == want
    assert all(leader != 2 for _, leader, _, _ in got)
    with pytest.raises(Exception) as missing:
        futures["missing"].result(timeout=15)
    assert "UNKNOWN_TOPIC_OR_PART" in str(missing.value)


def test_list_consumer_group_offsets_answers_the_committed_offsets(cluster):
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, **QUIET})
    for i in range(20):
        producer.produce(TOPIC, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "auditors", "enable.auto.commit": False, **QUIET}
    )
    committed = [TopicPartition(TOPIC, 0, 5), TopicPartition(TOPIC, 1, 3), TopicPartition(TOPIC, 3, 1)]
    consumer.commit(offsets=committed, asynchronous=False)
    consumer.close()
    assert cluster.committed("auditors") == {(TOPIC, 0): 5, (TOPIC, 1): 3, (TOPIC, 3): 1}

    client = admin(cluster)
    [future] = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions("auditors")]).values()
    answer = future.result(timeout=15)
    assert answer.group_id == "auditors"
    assert sorted((tp.topic, tp.partition, tp.offset) for tp in answer.topic_partitions) == [
        (TOPIC, 0, 5),
        (TOPIC, 1, 3),
        (TOPIC, 3, 1),
    ]
    asked = ConsumerGroupTopicPartitions("auditors", [TopicPartition(TOPIC, 1), TopicPartition(TOPIC, 2)])
    [future] = client.list_consumer_group_offsets([asked]).values()
    answer = future.result(timeout=15)
    assert sorted((tp.partition, tp.offset) for tp in answer.topic_partitions) == [(1, 3), (2, -1001)]


def _uuid_bytes(topic_id) -> bytes:
    """confluent-kafka's Uuid: its most and least significant halves."""
    most, least = topic_id.get_most_significant_bits(), topic_id.get_least_significant_bits()
    return (most & (2**64 - 1)).to_bytes(8, "big") + (least & (2**64 - 1)).to_bytes(8, "big")

"""FakeCluster(warm=True): ``__consumer_offsets`` exists from the start, as on a Kafka that
earlier tests used, so a real client's first FindCoordinator finds its coordinator at once."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster

confluent_kafka = pytest.importorskip("confluent_kafka")

FIRST_FIND = {"fakebroker.coordinator.first.find.unavailable": True}  # Kafka 4.4's fresh-broker answer


def internal_topics(cluster: FakeCluster) -> set[str]:
    return {t.name for t in cluster.describe_topics(internal=True)} - set(cluster.topics())


def test_a_default_cluster_starts_without_the_offsets_topic_and_a_warm_one_with_it():
    with FakeCluster().run_in_thread() as cold:
        assert internal_topics(cold) == set()
    with FakeCluster(warm=True, topics={"t": 1}).run_in_thread() as warm:
        assert internal_topics(warm) == {"__consumer_offsets"}
        assert len(warm.describe_topic("__consumer_offsets").partitions) == 50  # offsets.topic.num.partitions
        assert [e.details["topic"] for e in warm.events if e.kind == "topic_created"] == ["t"]  # internal: no event


def first_find_errors(warm: bool) -> list[str | None]:
    """Errors of FindCoordinator answers while a confluent-kafka consumer commits once."""
    with FakeCluster(warm=warm, config=FIRST_FIND, topics={"t": 1}).run_in_thread() as cluster:
        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g", "log_level": 3}
        )
        try:
            consumer.commit(offsets=[confluent_kafka.TopicPartition("t", 0, 1)], asynchronous=False)
        finally:
            consumer.close()
        assert cluster.committed("g") == {("t", 0): 1}
        return [e.error for e in cluster.events if e.kind == "request_error" and e.api == "FindCoordinator"]


def test_a_real_clients_first_find_coordinator_is_answered_at_once_on_a_warm_cluster():
    assert first_find_errors(warm=True) == []
    # the same client on a cold cluster with Kafka 4.4's fresh-broker answer: the check can see it
    assert first_find_errors(warm=False) == ["COORDINATOR_NOT_AVAILABLE"]

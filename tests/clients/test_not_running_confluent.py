"""Issue 36 with a real client: after its ``with`` block a cluster refuses what would reach the
stopped brokers (ClusterNotRunning, saying so) instead of answering with dead ports or silent
no-ops, while what happened in the block, the client's records included, stays in its events."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer

from fakebroker.cluster import ClusterNotRunning, FakeCluster
from fakebroker.cluster import conditions as cond

pytestmark = pytest.mark.clients
QUIET = {"log_level": 3}


def test_a_cluster_used_after_its_block_says_it_has_stopped():
    with FakeCluster(brokers=2, topics={"orders": 2}).run_in_thread() as cluster:
        bootstrap = cluster.bootstrap_servers
        producer = Producer({"bootstrap.servers": bootstrap, "client.id": "late-user", **QUIET})
        for i in range(4):
            producer.produce("orders", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
        assert producer.flush(10) == 0
        assert len(cluster.records("orders")) == 4
        seen = cluster.wait_for_sync(cond.event("client_connected", client_id="late-user"), timeout=5)
        assert seen.broker in (0, 1)

    for call in (
        lambda: cluster.bootstrap_servers,
        lambda: cluster.create_topic("after", 1),
        lambda: cluster.faults.add(api="Produce", error="NOT_LEADER_OR_FOLLOWER"),
        lambda: cluster.stop_broker(1),
        lambda: cluster.records("orders"),
    ):
        with pytest.raises(ClusterNotRunning, match=r"the cluster has stopped \(its `with` block has ended\)"):
            call()
    with pytest.raises(KafkaException):  # the ports it named are closed: nothing answers there
        producer.list_topics(timeout=0.5)
    # what happened in the block stays readable
    assert "late-user" in {e.client_id for e in cluster.events if e.kind == "client_connected"}

"""Issue 16: facade calls naming what the cluster does not have raise ClusterUsageError (a
ValueError naming the valid ids), not a bare IndexError or KeyError."""

from __future__ import annotations

import pytest

from fakebroker.cluster import ClusterUsageError, FakeCluster


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster(brokers=2, topics={"orders": 2}).run_in_thread() as running:
        yield running


def test_unknown_broker_ids_name_the_brokers(cluster):
    with pytest.raises(ClusterUsageError, match=r"no broker 7; the cluster's brokers are \[0, 1\]"):
        cluster.stop_broker(7)
    with pytest.raises(ClusterUsageError, match=r"no broker 7"):
        cluster.start_broker(7)
    with pytest.raises(ClusterUsageError, match=r"no broker 9 to be the leader; the cluster's brokers are \[0, 1\]"):
        cluster.move_leader("orders", 1, 9)
    with pytest.raises(ClusterUsageError, match=r"no broker 5 to be the coordinator"):
        cluster.move_coordinator("g", 5)


def test_unknown_topics_and_partitions_name_the_valid_ones(cluster):
    with pytest.raises(ClusterUsageError, match=r"topic 'orders' has no partition 9; its partitions are 0\.\.1"):
        cluster.move_leader("orders", 9, 1)
    with pytest.raises(ClusterUsageError, match=r"no topic 'ordres'; topics: 'orders'"):
        cluster.move_leader("ordres", 0, 1)
    assert isinstance(ClusterUsageError("x"), ValueError)


def test_no_live_broker_is_a_clear_error_not_an_index_error():
    with FakeCluster(brokers=2, topics={"orders": 1}).run_in_thread() as cluster:
        cluster.stop_broker(1)
        with pytest.raises(
            ClusterUsageError, match=r"broker 1 is stopped and cannot be the leader; running brokers: \[0\]"
        ):
            cluster.move_leader("orders", 0, 1)
        cluster.stop_broker(0)
        with pytest.raises(ClusterUsageError, match=r"no broker is running to coordinate group 'g'"):
            cluster.move_coordinator("g")
        with pytest.raises(ClusterUsageError, match=r"no broker is running to lead orders-0"):
            cluster.move_leader("orders", 0, 0)
        cluster.start_broker(0)
        assert cluster.move_coordinator("g") == 0
        cluster.stop_broker(0)
        with pytest.raises(ClusterUsageError, match=r"no broker is running to coordinate transactional id 't'"):
            cluster.move_transaction_coordinator("t")

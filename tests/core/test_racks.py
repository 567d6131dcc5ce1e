"""Racks in the core: the broker order Kafka's rack-aware placement walks, and a topic's replicas
spread over racks; brokers keep their rack across a restart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.topics.layout import rack_alternated


def test_rack_alternated_takes_one_broker_of_each_rack_in_turn():
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    assert rack_alternated([0, 1, 2, 3, 4, 5], racks) == [0, 2, 4, 1, 3, 5]
    assert rack_alternated([0, 1, 2], {}) == [0, 1, 2]  # no racks: unchanged
    assert rack_alternated([0, 1, 2], {0: "x", 1: "x"}) == [2, 0, 1]  # no rack counts as a rack of its own
    assert rack_alternated([3, 1, 2], {1: "b", 2: "a", 3: "a"}) == [2, 1, 3]  # racks by name, brokers by id


def cluster(racks: list[str | None]) -> ClusterState:
    state = ClusterState("c", BrokerConfig({}))
    for node, rack in enumerate(racks):
        state.broker_started(node, "127.0.0.1", 9092 + node, 0, rack)
    return state


@given(
    racks=st.integers(2, 4),
    per_rack=st.integers(1, 3),
    replication=st.integers(1, 4),
    partitions=st.integers(1, 12),
    topics=st.integers(1, 3),
)
def test_replicas_land_on_as_many_racks_as_they_can(racks, per_rack, replication, partitions, topics):
    """Equal racks: every partition's replicas are on min(replication, racks) distinct racks."""
    names = [f"r{i}" for i in range(racks)]
    state = cluster([names[b % racks] for b in range(racks * per_rack)])
    if replication > racks * per_rack:
        return
    for t in range(topics):
        topic = state.create_topic(f"t{t}", partitions, replication)
        for p in topic.partitions:
            assert len(set(p.replicas)) == replication
            assert len({state.brokers[r].rack for r in p.replicas}) == min(replication, racks), p.replicas


def test_a_restarted_broker_keeps_its_rack():
    state = cluster(["a", "b"])
    state.broker_stopped(1, 10)
    state.broker_started(1, "127.0.0.1", 9999, 20)
    assert state.brokers[1].rack == "b" and state.brokers[1].port == 9999

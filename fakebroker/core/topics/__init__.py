"""Topics and where their partitions live.

``model.py`` holds brokers, topics and partitions as data, and Kafka's rules for topic names
and manual replica lists; ``layout.py`` where a new topic's or new partitions' replicas go
(CreateTopics, CreatePartitions); ``reassignments.py`` partition reassignments;
``elections.py`` leader elections asked for by an admin (ElectLeaders). Each decides as
Kafka's controller does; :class:`~..cluster_state.ClusterState` applies the changes.

The data names are re-exported here; the other modules are imported by name (they read the
cluster state, which imports this package).
"""

from __future__ import annotations

from .model import (
    MAX_PARTITIONS_PER_REQUEST,
    MAX_TOPIC_NAME,
    BrokerInfo,
    Partition,
    Topic,
    TopicError,
    topic_name_error,
)

__all__ = [
    "MAX_PARTITIONS_PER_REQUEST",
    "MAX_TOPIC_NAME",
    "BrokerInfo",
    "Partition",
    "Topic",
    "TopicError",
    "topic_name_error",
]

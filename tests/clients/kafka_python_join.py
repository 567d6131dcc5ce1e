"""kafka-python 3.0.12 and a group's first join: fetch the topic's metadata first."""

from __future__ import annotations

from typing import Any


def knows_partitions(consumer: Any, topic: str, partitions: int) -> None:
    """Has a kafka-python consumer fetch ``topic``'s metadata (``partitions`` of them) before its
    first JoinGroup. Without it a first leader assigns nothing ("No partition metadata") and
    rejoins when the metadata arrives, and kafka-python 3.0.12 can lose that rejoin: the leader's
    own assignment updates the snapshot ``need_rejoin()`` compares, so a ``poll()`` that timed out
    before the SyncGroup answer never applies it, and the member sits in the new generation with
    no partitions and no heartbeats. A client bug: the broker's answers in that trace are Kafka's,
    and holding that SyncGroup answer 0.5 s reproduces it every time."""
    assert consumer.partitions_for_topic(topic) == set(range(partitions))

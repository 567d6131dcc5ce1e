"""What a restart needs besides the segment files, as JSON: the cluster id, the topics
(names, ids, partitions with their replicas, leader epochs and log start offsets, configs),
the brokers' dynamic settings, the committed offsets of every group and the next producer id.

Kafka keeps these in its metadata log, ``log-start-offset-checkpoint`` and ``__consumer_offsets``;
here one file, rewritten whole by the facade when something changed and at shutdown.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.offsets import CommittedOffset

VERSION = 1


def snapshot(state: ClusterState) -> dict[str, Any]:
    topics = {}
    for topic in state.topics.values():
        if topic.internal:
            continue  # created again on first use; committed offsets are saved below
        topics[topic.name] = {
            "id": str(topic.topic_id),
            "configs": dict(topic.config.overrides),
            "partitions": [
                {
                    "replicas": list(p.replicas),
                    "leader_epoch": p.leader_epoch,
                    "log_start_offset": p.log.log_start_offset,
                }
                for p in topic.partitions
            ],
        }
    offsets = {
        group: [
            [t, p, o.offset, o.leader_epoch, o.metadata, o.commit_timestamp_ms, o.expire_timestamp_ms]
            for (t, p), o in sorted(stored.items())
        ]
        for group, stored in state.offsets.offsets.items()
        if stored
    }
    return {
        "version": VERSION,
        "cluster_id": state.cluster_id,
        "dynamic_config": dict(state.config.dynamic),
        "next_producer_id": state.producer_ids.next_id,
        "topics": topics,
        "offsets": offsets,
    }


def restore(state: ClusterState, meta: dict[str, Any], now_ms: int) -> None:
    """Bring topics (reopening their logs from the storage) and offsets back into ``state``."""
    state.config.dynamic.update(meta.get("dynamic_config") or {})
    state.producer_ids.skip_to(int(meta.get("next_producer_id", 0)))
    for name, spec in (meta.get("topics") or {}).items():
        parts = spec["partitions"]
        state.restore_topic(
            name,
            uuid.UUID(spec["id"]),
            [p["replicas"] for p in parts],
            dict(spec.get("configs") or {}),
            leader_epochs=[p.get("leader_epoch", 0) for p in parts],
            log_start_offsets=[p.get("log_start_offset", 0) for p in parts],
            internal=False,
            now_ms=now_ms,
        )
    for group, rows in (meta.get("offsets") or {}).items():
        stored = state.offsets.offsets.setdefault(group, {})
        for topic, partition, offset, epoch, metadata, committed_ms, expire_ms in rows:
            stored[(topic, partition)] = CommittedOffset(offset, epoch, metadata, committed_ms, expire_ms)

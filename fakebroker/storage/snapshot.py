"""What a restart needs besides the segment files, as JSON: the cluster id, the topics
(names, ids, partitions with their replicas, leader epochs and log start offsets, configs),
the brokers' dynamic settings, the groups' configs (resource type GROUP), the committed
offsets of every group, the next producer id, the transaction coordinator's state
(``storage.txn_state``), the classic groups' records (``storage.group_state``), the KIP-848
consumer groups (``storage.consumer_group_state``), the share groups (``storage.share_group_state``)
and the streams groups (``storage.streams_group_state``).

Kafka keeps these in its metadata log, ``log-start-offset-checkpoint``, ``__consumer_offsets``
and ``__transaction_state``; here one snapshot file, and a journal of the changes made since it
(``storage.journal``), which the snapshot absorbs when it is rewritten. :func:`problem` says what
makes a snapshot unusable, so a damaged one is refused before anything on disk is touched.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.groups.offsets import CommittedOffset
from . import consumer_group_state, group_state, security_state, share_group_state, streams_group_state, txn_state
from .rows import is_count, offset_row, row_problem

__all__ = ["offset_row", "problem", "restore", "row_problem", "snapshot"]

VERSION = 1
log = logging.getLogger("fakebroker")


def topic_entry(state: ClusterState, name: str) -> dict[str, Any] | None:
    """One topic as the snapshot keeps it (None: no such topic, or an internal one)."""
    topic = state.topics.get(name)
    if topic is None or topic.internal:
        return None  # an internal topic is created again on first use; its offsets are kept apart
    return {
        "id": str(topic.topic_id),
        "configs": dict(topic.config.overrides),
        "partitions": [partition_entry(state, name, p.index) for p in topic.partitions],
    }


def partition_entry(state: ClusterState, topic: str, index: int) -> dict[str, Any] | None:
    p = state.partition(topic, index)
    if p is None:
        return None
    return {"replicas": list(p.replicas), "leader_epoch": p.leader_epoch, "log_start_offset": p.log.log_start_offset}


def offset_rows(state: ClusterState, group: str) -> list[list[Any]]:
    """A group's committed offsets: [topic, partition, offset, leader epoch, metadata,
    commit time, expire time] each, in partition order."""
    stored = state.groups.offsets.offsets.get(group) or {}
    return [offset_row(t, p, o) for (t, p), o in sorted(stored.items())]


def snapshot(state: ClusterState, generation: int = 0) -> dict[str, Any]:
    topics = {}
    for name in state.topics:
        entry = topic_entry(state, name)
        if entry is not None:
            topics[name] = entry
    offsets = {group: offset_rows(state, group) for group, stored in state.groups.offsets.offsets.items() if stored}
    return {
        "version": VERSION,
        "journal": generation,
        "cluster_id": state.cluster_id,
        "dynamic_config": dict(state.config.dynamic),
        "broker_configs": {str(b): dict(s) for b, s in sorted(state.config.per_broker.items()) if s},
        "group_configs": {g: dict(s) for g, s in sorted(state.group_configs.overrides.items()) if s},
        "next_producer_id": state.producer_ids.next_id,
        "topics": topics,
        "offsets": offsets,
        "transactions": txn_state.txn_entries(state),
        "groups": group_state.group_entries(state),
        "consumer_groups": consumer_group_state.group_entries(state),
        "share_groups": share_group_state.group_entries(state),
        "streams_groups": streams_group_state.group_entries(state),
        "share_states": share_group_state.state_entries(state),
        "acls": security_state.acl_rows(state),
        "scram": security_state.scram_entries(state),
        "tokens": security_state.token_entries(state),
    }


def restore(state: ClusterState, meta: dict[str, Any], now_ms: int) -> None:
    """Bring topics (reopening their logs from the storage) and offsets back into ``state``;
    a log that recovery cut is said in one line on the ``fakebroker`` logger (WARNING)."""
    state.config.dynamic.update(meta.get("dynamic_config") or {})
    for broker, settings in (meta.get("broker_configs") or {}).items():
        state.config.broker_store(int(broker)).update(settings)
    for group, settings in (meta.get("group_configs") or {}).items():
        state.group_configs.replace(group, settings)
    state.producer_ids.skip_to(int(meta.get("next_producer_id", 0)))
    security_state.restore(state, meta)
    txn_state.restore(state, meta.get("transactions") or {})  # before the logs: their open transactions
    for name, spec in (meta.get("topics") or {}).items():
        parts = spec["partitions"]
        topic = state.restore_topic(
            name,
            uuid.UUID(spec["id"]),
            [p["replicas"] for p in parts],
            dict(spec.get("configs") or {}),
            leader_epochs=[p.get("leader_epoch", 0) for p in parts],
            log_start_offsets=[p.get("log_start_offset", 0) for p in parts],
            internal=False,
            now_ms=now_ms,
        )
        for p in topic.partitions:
            if p.log.cut is not None:
                log.warning("fakebroker: %s", p.log.cut.describe(f"{name}-{p.index}"))
    for group, rows in (meta.get("offsets") or {}).items():
        stored = state.groups.offsets.offsets.setdefault(group, {})
        for topic, partition, offset, epoch, metadata, committed_ms, expire_ms in rows:
            stored[(topic, partition)] = CommittedOffset(offset, epoch, metadata, committed_ms, expire_ms)
    txn_state.resume(state, now_ms)  # markers of transactions answered in PrepareCommit/PrepareAbort
    group_state.restore(state, meta.get("groups") or {}, now_ms)  # members heartbeat on at their generation
    consumer_group_state.restore(state, meta.get("consumer_groups") or {}, now_ms)  # ... and at their epoch
    share_group_state.restore_states(state, meta.get("share_states") or [])  # acknowledged progress
    share_group_state.restore_groups(state, meta.get("share_groups") or {}, now_ms)
    streams_group_state.restore(state, meta.get("streams_groups") or {}, now_ms)  # ... and with their tasks


# -- what makes a snapshot unusable ------------------------------------------------------------


def strings(value: Any) -> bool:
    """Whether ``value`` is an object of strings (a config store as JSON)."""
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def problem(meta: Any) -> str | None:
    """What is wrong with a snapshot (as read from JSON), in a few words; None if it is usable."""
    if not isinstance(meta, dict):
        return f"holds {'null' if meta is None else type(meta).__name__}, not an object"
    if meta.get("version") != VERSION:
        return f"version {meta.get('version')!r} is not {VERSION}, the one this fakebroker reads"
    if not isinstance(meta.get("cluster_id"), str) or not meta["cluster_id"]:
        return "cluster_id is missing or not a string"
    if "journal" in meta and not is_count(meta["journal"]):
        return "journal is not a generation number"
    if "next_producer_id" in meta and not is_count(meta["next_producer_id"]):
        return "next_producer_id is not a number >= 0"
    if "dynamic_config" in meta and not strings(meta["dynamic_config"]):
        return "dynamic_config is not an object of strings"
    brokers = meta.get("broker_configs", {})
    if not isinstance(brokers, dict):
        return "broker_configs is not an object"
    for broker, settings in brokers.items():
        if not broker.isdigit() or not strings(settings):
            return f"broker_configs.{broker} is not a broker id with an object of strings"
    groups = meta.get("group_configs", {})
    if not isinstance(groups, dict) or not all(strings(settings) for settings in groups.values()):
        return "group_configs is not an object of objects of strings"
    topics = meta.get("topics")
    if not isinstance(topics, dict):
        return "topics is missing or not an object"
    for name, spec in topics.items():
        found = topic_problem(spec)
        if found:
            return f"topics.{name}: {found}"
    offsets = meta.get("offsets", {})
    if not isinstance(offsets, dict):
        return "offsets is not an object"
    for group, rows in offsets.items():
        if not isinstance(rows, list) or not all(row_problem(row) is None for row in rows):
            return f"offsets.{group} is not a list of [topic, partition, offset, epoch, metadata, time, expiry]"
    found = txn_state.problem(meta.get("transactions", {}))
    if found:
        return f"transactions {found}"
    found = group_state.problem(meta.get("groups", {}))
    if found:
        return f"groups {found}"
    found = consumer_group_state.problem(meta.get("consumer_groups", {}))
    if found:
        return f"consumer_groups {found}"
    found = security_state.acls_problem(meta.get("acls", []))
    if found:
        return f"acls {found}"
    found = security_state.scram_problem(meta.get("scram", {}))
    if found:
        return f"scram {found}"
    found = security_state.tokens_problem(meta.get("tokens", {}))
    if found:
        return f"tokens {found}"
    found = share_group_state.groups_problem(meta.get("share_groups", {}))
    if found:
        return f"share_groups {found}"
    found = share_group_state.states_problem(meta.get("share_states", []))
    if found:
        return f"share_states {found}"
    found = streams_group_state.problem(meta.get("streams_groups", {}))
    if found:
        return f"streams_groups {found}"
    return None


def topic_problem(spec: Any) -> str | None:
    if not isinstance(spec, dict):
        return "not an object"
    try:
        uuid.UUID(spec.get("id"))
    except (TypeError, ValueError, AttributeError):
        return f"id {spec.get('id')!r} is not a UUID"
    if not strings(spec.get("configs", {})):
        return "configs is not an object of strings"
    parts = spec.get("partitions")
    if not isinstance(parts, list) or not parts:
        return "partitions is not a non-empty list"
    for i, p in enumerate(parts):
        found = partition_problem(p)
        if found:
            return f"partition {i}: {found}"
    return None


def partition_problem(p: Any) -> str | None:
    if not isinstance(p, dict):
        return "not an object"
    replicas = p.get("replicas")
    if not isinstance(replicas, list) or not replicas or not all(is_count(r) for r in replicas):
        return "replicas is not a non-empty list of broker ids"
    if not is_count(p.get("leader_epoch", 0)):
        return "leader_epoch is not a number >= 0"
    if not is_count(p.get("log_start_offset", 0)):
        return "log_start_offset is not a number >= 0"
    return None

"""The cluster's state as the control endpoint's JSON: brokers, topics, groups with their
committed offsets and lag, transactions, fault rules, cuts and the clock.

The JSON routes answer with these, and the console's live stream (``fakebroker.http.live``)
sends the same shapes, so what the page shows is what the API says."""

from __future__ import annotations

from typing import Any

from ..cluster import FakeCluster


def brokers_json(cluster: FakeCluster) -> list[dict[str, Any]]:
    return [b.to_dict() for b in cluster.brokers()]


def topics_json(cluster: FakeCluster, *, internal: bool = False) -> list[dict[str, Any]]:
    return [t.to_dict() for t in cluster.describe_topics(internal=internal)]


def group_json(cluster: FakeCluster, group_id: str) -> dict[str, Any] | None:
    """A group's JSON: a share group's with its share partitions and records in flight, a
    streams group's with its topology and tasks."""
    view = cluster.group(group_id)
    if view is not None and view.group_type == "share":
        share = cluster.share_group(group_id)
        if share is not None:
            return share.to_dict()
    if view is not None and view.group_type == "streams":
        streams = cluster.streams_group(group_id)
        if streams is not None:
            return streams.to_dict()
    return view.to_dict() if view is not None else None


def groups_json(cluster: FakeCluster) -> list[dict[str, Any]]:
    views = (group_json(cluster, g) for g in cluster.groups())
    return [v for v in views if v is not None]


def offsets_json(cluster: FakeCluster, group_id: str, ends: dict[tuple[str, int], int] | None = None) -> list[dict]:
    """A group's committed offsets, each with its partition's end (high watermark) and the lag
    between them, as ``kafka-consumer-groups --describe`` shows them (no end: a deleted topic)."""
    committed = cluster.committed(group_id)
    if ends is None:
        ends = end_offsets(cluster, {t for t, _ in committed})
    out = []
    for (topic, partition), offset in sorted(committed.items()):
        end = ends.get((topic, partition))
        lag = max(end - offset, 0) if end is not None and offset >= 0 else None
        out.append({"topic": topic, "partition": partition, "offset": offset, "end_offset": end, "lag": lag})
    return out


def end_offsets(cluster: FakeCluster, topics: set[str] | None = None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> high watermark, of ``topics`` (default: all, internal ones too)."""
    views = (
        cluster.describe_topics(internal=True)
        if topics is None
        else [v for v in map(cluster.describe_topic, sorted(topics)) if v is not None]
    )
    return {(t.name, p.partition): p.high_watermark for t in views for p in t.partitions}


def transactions_json(cluster: FakeCluster) -> list[dict[str, Any]]:
    views = (cluster.transaction(t) for t in cluster.transactions())
    return [v.to_dict() for v in views if v is not None]


def faults_json(cluster: FakeCluster) -> list[dict[str, Any]]:
    return [r.to_dict() for r in cluster.faults.list()]


def cuts_json(cluster: FakeCluster) -> list[dict[str, Any]]:
    return [{"client_id": c, "broker": b} for c, b in cluster.cuts()]


def clock_json(cluster: FakeCluster) -> dict[str, Any]:
    return {"now_ms": cluster.clock.now_ms(), "virtual": cluster.clock.virtual}

"""What the console reads live: ``GET /stream`` (server-sent events: the cluster's state and
its new events, pushed as they happen), ``GET /vocabulary`` (the names the fault and churn
forms offer) and ``GET /groups/{id}/timeline`` (a group's swim lanes as data).

A stream costs nothing until someone opens one: no task runs for it before. While open, it
sleeps until the event log grows (``Runtime.wait_event``), waits ``COALESCE_S`` for the rest of
a burst, and sends the new events and one state snapshot; with no event it still sends a
snapshot every ``IDLE_S`` (offsets and rates move without events). So a burst of a thousand
events costs one snapshot, not a thousand."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Any

import anyio

from ..cluster import ErrorCode, FakeCluster, settings
from ..cluster import conditions as cond
from ..timeline import swimlanes
from ..version import __version__
from . import state
from .churning import BLOCK_NAMES
from .schemas import HTTPError

COALESCE_S = 0.1  # after the first new event, how long the rest of a burst may gather
IDLE_S = 1.0  # a snapshot at least this often (offsets and rates move without events)
MAX_EVENTS_PER_MESSAGE = 500  # a longer burst sends its newest, saying how many it skipped
FIRST_EVENTS = 200  # the newest events a new stream starts with


class EventStream:
    """A ``text/event-stream`` body: the server sends ``chunks()`` until the client goes away or
    the endpoint stops."""

    def __init__(self, cluster: FakeCluster, since: int | None):
        self.cluster = cluster
        self.since = since
        self.rates = RateMeter()

    async def chunks(self) -> AsyncIterator[bytes]:
        cluster = self.cluster
        seq = cluster.event_count
        since = seq - FIRST_EVENTS if self.since is None else self.since
        yield _message("hello", {"version": __version__, "seq": seq}, retry_ms=1000)
        yield _message("state", self.snapshot())
        yield _message("events", self.events_after(max(since, 0)))
        seq = max(seq, since)
        runtime = cluster.runtime
        while True:
            await runtime.wait_event(IDLE_S)  # the next event, or IDLE_S
            if cluster.event_count > seq:
                await anyio.sleep(COALESCE_S)
            batch = self.events_after(seq)
            seq = batch["next_since"]
            if batch["events"] or batch["skipped"]:
                yield _message("events", batch, event_id=seq)
            yield _message("state", self.snapshot())

    def events_after(self, seq: int) -> dict[str, Any]:
        events = self.cluster.events_since(seq)
        skipped = max(len(events) - MAX_EVENTS_PER_MESSAGE, 0)
        newest = events[skipped:]
        return {
            "events": [e.to_dict() for e in newest],
            "next_since": events[-1].seq if events else seq,
            "skipped": skipped,
            "dropped": self.cluster.events_dropped,
        }

    def snapshot(self) -> dict[str, Any]:
        return snapshot(self.cluster, self.rates)


def snapshot(cluster: FakeCluster, rates: RateMeter | None = None) -> dict[str, Any]:
    """Everything the console shows but the event list, in the JSON routes' shapes, with
    each broker's roles, each group's offsets with lag, and each partition's records/s."""
    brokers, topics, groups = state.brokers_json(cluster), state.topics_json(cluster), state.groups_json(cluster)
    ends = {(t["name"], p["partition"]): p["high_watermark"] for t in topics for p in t["partitions"]}
    transactions = state.transactions_json(cluster)
    for group in groups:
        group["offsets"] = state.offsets_json(cluster, group["group_id"], ends)
    if rates is not None:
        rates.annotate(topics)
    for broker in brokers:
        node = broker["id"]
        broker["leads"] = sum(p["leader"] == node for t in topics for p in t["partitions"])
        broker["coordinates"] = sorted(g["group_id"] for g in groups if g.get("coordinator") == node)
        broker["transactions"] = sorted(t["transactional_id"] for t in transactions if t.get("coordinator") == node)
    return {
        "clock": state.clock_json(cluster),
        "brokers": brokers,
        "topics": topics,
        "groups": groups,
        "transactions": transactions,
        "faults": state.faults_json(cluster),
        "cuts": state.cuts_json(cluster),
        "events": {"count": cluster.event_count, "dropped": cluster.events_dropped},
    }


class RateMeter:
    """Records per second of each partition, from the change of its high watermark between two
    snapshots of one stream (wall time)."""

    def __init__(self) -> None:
        self._last: tuple[float, dict[tuple[str, int], int]] | None = None

    def annotate(self, topics: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        ends = {(t["name"], p["partition"]): p["high_watermark"] for t in topics for p in t["partitions"]}
        before, then = (self._last[1], self._last[0]) if self._last is not None else ({}, now)
        elapsed = now - then
        for topic in topics:
            total = 0.0
            for p in topic["partitions"]:
                key = (topic["name"], p["partition"])
                grown = ends[key] - before.get(key, ends[key])
                p["records_per_s"] = round(max(grown, 0) / elapsed, 1) if elapsed > 0 else 0.0
                total += p["records_per_s"]
            topic["records_per_s"] = round(total, 1)
        self._last = (now, ends)


def _message(kind: str, data: Any, *, event_id: int | None = None, retry_ms: int | None = None) -> bytes:
    lines = []
    if retry_ms is not None:
        lines.append(f"retry: {retry_ms}")
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append(f"event: {kind}")
    lines.append("data: " + json.dumps(data, default=str, separators=(",", ":")))
    return ("\n".join(lines) + "\n\n").encode()


# -- route handlers -----------------------------------------------------------------------------
async def stream(req: Any) -> EventStream:  # a routes.Request (routes imports this module)
    last = req.headers.get("last-event-id")
    since = req.q("since", int)
    if since is None and last is not None and last.isdigit():
        since = int(last)
    if since is not None and since < 0:
        raise HTTPError(400, "since must be 0 or more")
    return EventStream(req.cluster, since)


async def vocabulary(req: Any) -> Any:
    return {
        "apis": sorted(set(settings.api_keys().values())),
        "errors": sorted(e.name for e in ErrorCode if e.value != 0),
        "actions": dict(settings.FAULT_ACTIONS),
        "event_kinds": list(cond.EVENT_KINDS),
        "churn_blocks": list(BLOCK_NAMES),
    }


async def group_timeline(req: Any) -> Any:
    group = req.params["id"]
    if req.cluster.group(group) is None:
        raise HTTPError(404, f"no group {group!r}")
    lanes = swimlanes(req.cluster.events, group=group, until=time.time())
    out = asdict(lanes)
    out["lanes"] = [{**lane, "label": plain.label} for lane, plain in zip(out["lanes"], lanes.lanes)]
    out["group"] = group
    return out

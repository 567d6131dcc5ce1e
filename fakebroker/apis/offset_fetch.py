"""OffsetFetch (key 9): one group (v0-7) or several (v8+); a missing group is no error."""

from __future__ import annotations

from typing import Any

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .common import topic_name_by_id
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    if v < 8:
        topics = None if request.topics is None else [(t.name, list(t.partition_indexes)) for t in request.topics]
        error, out = _fetch(ctx, request.group_id, topics, stable=v >= 7 and request.require_stable)
        if v < 2 and error:
            # v0-1 have no group error field: it goes into every partition.
            for t in out:
                for p in t["partitions"]:
                    p["error_code"] = error
        return ctx.response(topics=out, error_code=error, throttle_time_ms=0)
    groups = []
    for g in request.groups:
        named: list[tuple[str | None, list[int], Any]] | None = None
        if g.topics is not None:
            named = [
                (
                    (t.name if v < 10 else topic_name_by_id(ctx.cluster, t.topic_id)),
                    list(t.partition_indexes),
                    t.topic_id,
                )
                for t in g.topics
            ]
        member = (g.member_id, g.member_epoch) if v >= 9 else None
        error, out = _fetch(
            ctx,
            g.group_id,
            [(n, ps) for n, ps, _ in named] if named is not None else None,
            member,
            stable=request.require_stable,
        )
        if named is not None and v >= 10:
            for entry, (_, _, topic_id) in zip(out, named):
                entry["topic_id"] = topic_id
        elif v >= 10:
            # An all-topics fetch: v10 names topics by id only, so Kafka fills each id in from its
            # metadata and leaves out a topic it has no id for (it could not be named).
            known = ctx.cluster.topics
            out = [{**entry, "topic_id": known[entry["name"]].topic_id} for entry in out if entry["name"] in known]
        groups.append({"group_id": g.group_id, "error_code": error, "topics": out})
    return ctx.response(groups=groups, throttle_time_ms=0)


def _fetch(
    ctx: RequestContext,
    group_id: str | None,
    topics: list[tuple[str | None, list[int]]] | None,
    member: tuple[str | None, int] | None = None,
    *,
    stable: bool = False,
) -> tuple[ErrorCode, list[dict]]:
    wanted = None if topics is None else [(n, p) for n, ps in topics for p in ps]
    error, found = ctx.cluster.groups.fetch_offsets(ctx.broker_id, group_id, wanted, member, stable=stable)
    if error:
        return error, [{"name": n, "partitions": [_partition(p, None, error) for p in ps]} for n, ps in topics or []]
    out: dict[str | None, dict] = {}
    for f in found:
        entry = out.setdefault(f.topic, {"name": f.topic, "partitions": []})
        entry["partitions"].append(_partition(f.partition, f.committed, f.error))
    for name, _ in topics or []:
        out.setdefault(name, {"name": name, "partitions": []})
    return ErrorCode.NONE, list(out.values())


def _partition(index: int, committed, error: ErrorCode) -> dict:
    if committed is None:
        return {
            "partition_index": index,
            "committed_offset": -1,
            "committed_leader_epoch": -1,
            "metadata": "",
            "error_code": error,
        }
    return {
        "partition_index": index,
        "committed_offset": committed.offset,
        "committed_leader_epoch": committed.leader_epoch,
        "metadata": committed.metadata,
        "error_code": error,
    }


API = api(ApiKey.OFFSET_FETCH, (0, 10), handle)

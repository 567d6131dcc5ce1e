"""OffsetFetch (key 9): one group (v0-7) or several (v8+); a missing group is no error.

With an authorizer (``handleOffsetFetchRequestFromCoordinator``), per group: DESCRIBE on the group,
else GROUP_AUTHORIZATION_FAILED and no topics; named topics the principal may not DESCRIBE are
not asked for and come last, each partition offset -1 with TOPIC_AUTHORIZATION_FAILED; an
all-topics fetch leaves them out without a word."""

from __future__ import annotations

from typing import Any

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import denied, split
from .common import topic_name_by_id
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    if v < 8:
        if denied(ctx, Operation.DESCRIBE, ResourceType.GROUP, request.group_id):
            return ctx.response(topics=[], error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0)
        topics = None if request.topics is None else [(t.name, list(t.partition_indexes)) for t in request.topics]
        topics, undescribable = _split(ctx, topics)
        error, out = _fetch(ctx, request.group_id, topics, stable=v >= 7 and request.require_stable)
        out = _refused(ctx, error, out, undescribable, all_topics=topics is None)
        if v < 2 and error:
            # v0-1 have no group error field: it goes into every partition.
            for t in out:
                for p in t["partitions"]:
                    p["error_code"] = error
        return ctx.response(topics=out, error_code=error, throttle_time_ms=0)
    groups = []
    for g in request.groups:
        if denied(ctx, Operation.DESCRIBE, ResourceType.GROUP, g.group_id):
            groups.append({"group_id": g.group_id, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []})
            continue
        named: list[tuple[str | None, list[int], Any]] | None = None
        refused: list[tuple[str | None, list[int], Any]] = []  # named topics the principal may not DESCRIBE
        if g.topics is not None:
            named = [
                (
                    (t.name if v < 10 else topic_name_by_id(ctx.cluster, t.topic_id)),
                    list(t.partition_indexes),
                    t.topic_id,
                )
                for t in g.topics
            ]
            named, refused = split(ctx, Operation.DESCRIBE, ResourceType.TOPIC, named, lambda t: t[0])
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
        out = _refused(ctx, error, out, refused, all_topics=named is None)
        if named is None and v >= 10:
            # An all-topics fetch: v10 names topics by id only, so Kafka fills each id in from its
            # metadata and leaves out a topic it has no id for (it could not be named).
            known = ctx.cluster.topics
            out = [{**entry, "topic_id": known[entry["name"]].topic_id} for entry in out if entry["name"] in known]
        groups.append({"group_id": g.group_id, "error_code": error, "topics": out})
    return ctx.response(groups=groups, throttle_time_ms=0)


def _split(
    ctx: RequestContext, topics: list[tuple[str | None, list[int]]] | None
) -> tuple[list[tuple[str | None, list[int]]] | None, list[tuple[str | None, list[int]]]]:
    """The named topics the principal may DESCRIBE, and those it may not (None: all topics)."""
    if topics is None:
        return None, []
    return split(ctx, Operation.DESCRIBE, ResourceType.TOPIC, topics, lambda t: t[0])


def _refused(
    ctx: RequestContext, error: ErrorCode, out: list[dict], refused: list[tuple], *, all_topics: bool
) -> list[dict]:
    """The answer's topics with the refused named ones appended (a group error answers alone), or,
    for an all-topics fetch, without the topics the principal may not DESCRIBE."""
    if error:
        return out
    if all_topics:
        shown, _ = split(ctx, Operation.DESCRIBE, ResourceType.TOPIC, out, lambda entry: entry["name"])
        return shown
    failed = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return out + [
        {"name": t[0], "partitions": [_partition(p, None, failed) for p in t[1]]}
        | ({"topic_id": t[2]} if len(t) > 2 else {})
        for t in refused
    ]


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

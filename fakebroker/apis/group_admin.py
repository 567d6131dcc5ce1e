"""DescribeGroups (15), ListGroups (16), DeleteGroups (42) and OffsetDelete (47)."""

from __future__ import annotations

import dataclasses

from ..core.groups import offsets as group_ops
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from . import authorized_operations as ops
from .common import coordinator_error
from .context import RequestContext
from .registry import api

AUTHORIZED_OPERATIONS_OMITTED = ops.OMITTED
GROUP_OPERATIONS = ops.GROUP


def describe(ctx: RequestContext, request: Message) -> Message:
    out = []
    for group_id in request.groups:
        entry = {
            "group_id": group_id,
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            "members": [],
            "group_state": "",
            "protocol_type": "",
            "protocol_data": "",
        }
        error = coordinator_error(ctx, group_id)
        if error:
            out.append({**entry, "error_code": error})
            continue
        found = group_ops.describe_group(ctx.cluster.offsets, group_id)
        # v0-5 report a missing group as Dead, without an error
        error = found.error if ctx.api_version >= 6 else ErrorCode.NONE
        if ctx.api_version >= 3 and request.include_authorized_operations and not error:
            entry["authorized_operations"] = GROUP_OPERATIONS  # no authorizer: everything a group supports
        out.append(
            {
                **entry,
                "error_code": error,
                "group_state": found.state,
                "protocol_type": found.protocol_type,
                "protocol_data": found.protocol_data,
                "members": [dataclasses.asdict(m) for m in found.members],
                "error_message": f"Group {group_id} not found." if error else None,
            }
        )
    return ctx.response(groups=out, throttle_time_ms=0)


def list_groups(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    cluster = ctx.cluster
    if "__consumer_offsets" in cluster.topics:
        led = {p.index for p in cluster.offsets_topic().partitions if p.leader == ctx.broker_id}
        if led & set(cluster.loading_until_ms):  # a loading partition fails the whole call (Kafka 4.x)
            return ctx.response(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, groups=[], throttle_time_ms=0)
        hosted = [
            dataclasses.asdict(g)
            for g in group_ops.list_groups(
                cluster.offsets, request.states_filter if v >= 4 else None, request.types_filter if v >= 5 else None
            )
            if cluster.coordinator_of(g.group_id) == ctx.broker_id
        ]
    else:
        hosted = []
    return ctx.response(error_code=ErrorCode.NONE, groups=hosted, throttle_time_ms=0)


def delete_groups(ctx: RequestContext, request: Message) -> Message:
    results = []
    for group_id in dict.fromkeys(request.groups_names):  # duplicates dropped, order kept
        error = coordinator_error(ctx, group_id) if group_id is not None else ErrorCode.INVALID_GROUP_ID
        if not error:
            error = group_ops.delete_group(ctx.cluster.offsets, group_id)
        results.append({"group_id": group_id, "error_code": error})
    return ctx.response(results=results, throttle_time_ms=0)


def offset_delete(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    wanted = []
    per: dict[tuple[str, int], ErrorCode] = {}
    for t in request.topics:
        for p in t.partitions:
            if cluster.partition(t.name, p.partition_index) is None:
                per[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append((t.name, p.partition_index))
    error = coordinator_error(ctx, request.group_id) if request.group_id else ErrorCode.INVALID_GROUP_ID
    if not error:
        error, results = cluster.offsets.delete_offsets(request.group_id, wanted)
        per.update(results)
    if error:
        return ctx.response(error_code=error, topics=[], throttle_time_ms=0)
    topics = [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": p.partition_index, "error_code": per[(t.name, p.partition_index)]}
                for p in t.partitions
            ],
        }
        for t in request.topics
    ]
    return ctx.response(error_code=ErrorCode.NONE, topics=topics, throttle_time_ms=0)


APIS = (
    api(15, (0, 6), describe),
    api(16, (0, 5), list_groups),
    api(42, (0, 3), delete_groups),
    api(47, (0, 0), offset_delete),
)

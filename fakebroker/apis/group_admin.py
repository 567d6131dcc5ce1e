"""DescribeGroups (15), ListGroups (16), DeleteGroups (42) and OffsetDelete (47).

With an authorizer (as ``KafkaApis``): DescribeGroups needs DESCRIBE per group (the refused ones
answered first, GROUP_AUTHORIZATION_FAILED; ``authorized_operations`` from the authorizer);
ListGroups lists every group with DESCRIBE on the cluster, else only those the principal may
DESCRIBE; DeleteGroups needs DELETE per group (the refused ones answered last); OffsetDelete
DELETE on the group (the whole answer), then READ per topic (before the topic's existence)."""

from __future__ import annotations

import dataclasses

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from . import authorized_operations as ops
from .authz import allowed_names, denied, operations, split
from .context import RequestContext
from .registry import api

AUTHORIZED_OPERATIONS_OMITTED = ops.OMITTED


def describe(ctx: RequestContext, request: Message) -> Message:
    allowed, refused = split(ctx, Operation.DESCRIBE, ResourceType.GROUP, request.groups, lambda g: g)
    out = []
    for group_id in [*refused, *allowed]:
        entry = {
            "group_id": group_id,
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            "members": [],
            "group_state": "",
            "protocol_type": "",
            "protocol_data": "",
        }
        if group_id in refused:
            out.append({**entry, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            continue
        found = ctx.cluster.groups.describe(ctx.broker_id, group_id)
        if found.error and found.error != ErrorCode.GROUP_ID_NOT_FOUND:
            out.append({**entry, "error_code": found.error})
            continue
        # v0-5 report a missing group as Dead, without an error
        error = found.error if ctx.api_version >= 6 else ErrorCode.NONE
        if ctx.api_version >= 3 and request.include_authorized_operations and not error:
            entry["authorized_operations"] = operations(ctx, ResourceType.GROUP, group_id)
        out.append(
            {
                **entry,
                "error_code": error,
                "group_state": found.state,
                "protocol_type": found.protocol_type,
                "protocol_data": found.protocol_data,
                "members": [dataclasses.asdict(m) for m in found.members],
                "error_message": _not_found(ctx, group_id) if error else None,
            }
        )
    return ctx.response(groups=out, throttle_time_ms=0)


def _not_found(ctx: RequestContext, group_id: str) -> str:
    """Kafka's text: a streams group's id exists, as another type than classic."""
    groups = ctx.cluster.groups
    if groups.made("streams") and groups.streams.live(group_id) is not None:  # else no streams group exists
        return f"Group {group_id} is not a classic group."
    return f"Group {group_id} not found."


def list_groups(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    error, hosted = ctx.cluster.groups.list_groups(
        ctx.broker_id, request.states_filter if v >= 4 else None, request.types_filter if v >= 5 else None
    )
    # both asked quietly (KafkaApis' ``logIfDenied=false``): the groups one may not describe are
    # left out, no denial recorded
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER, quiet=True):
        shown = allowed_names(ctx, Operation.DESCRIBE, ResourceType.GROUP, (g.group_id for g in hosted), quiet=True)
        hosted = [g for g in hosted if g.group_id in shown]
    return ctx.response(error_code=error, groups=[dataclasses.asdict(g) for g in hosted], throttle_time_ms=0)


def delete_groups(ctx: RequestContext, request: Message) -> Message:
    names = list(dict.fromkeys(request.groups_names))  # duplicates dropped, order kept
    allowed, refused = split(ctx, Operation.DELETE, ResourceType.GROUP, names, lambda g: g)
    results = []
    for group_id in allowed:
        error = ctx.cluster.groups.delete_group(ctx.broker_id, group_id)
        results.append({"group_id": group_id, "error_code": error})
    results += [{"group_id": g, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED} for g in refused]
    return ctx.response(results=results, throttle_time_ms=0)


def offset_delete(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    if denied(ctx, Operation.DELETE, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, topics=[], throttle_time_ms=0)
    readable = allowed_names(ctx, Operation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
    wanted = []
    per: dict[tuple[str, int], ErrorCode] = {}
    for t in request.topics:
        for p in t.partitions:
            if t.name not in readable:
                per[(t.name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif cluster.partition(t.name, p.partition_index) is None:
                per[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append((t.name, p.partition_index))
    error, results = cluster.groups.delete_offsets(ctx.broker_id, request.group_id, wanted)
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
    api(ApiKey.DESCRIBE_GROUPS, (0, 6), describe),
    api(ApiKey.LIST_GROUPS, (0, 5), list_groups),
    api(ApiKey.DELETE_GROUPS, (0, 3), delete_groups),
    api(ApiKey.OFFSET_DELETE, (0, 0), offset_delete),
)

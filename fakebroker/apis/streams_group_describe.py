"""StreamsGroupDescribe (key 89, v0-1): streams groups with their topology, epochs, members
and assignments (GroupCoordinatorService ``streamsGroupDescribe``, StreamsGroup
``asDescribedGroup``). DESCRIBE per group, refused ones listed first; with an authorizer, a
group whose topology names a topic the caller may not DESCRIBE becomes
TOPIC_AUTHORIZATION_FAILED. v1: the assignor name; no topology description plugin here, so
TopologyDescriptionStatus is 1 (not stored) when asked for, 0 otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from . import authorized_operations as ops
from .authz import allowed_names, operations, split
from .context import RequestContext
from .registry import api
from .streams_group_heartbeat import _task_list, streams_enabled

if TYPE_CHECKING:
    from ..core.groups.streams.model import StreamsGroup, StreamsMember, Tasks
    from ..core.groups.streams.topology import TopicInfo


def _error(ctx: RequestContext, group_id: str | None, code: ErrorCode, message: str | None = None) -> dict:
    return {
        "group_id": group_id or "",
        "error_code": code,
        "error_message": message,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "topology": None,
        "members": [],
        "authorized_operations": ops.OMITTED,
        "assignor_name": None,
    }


def _topic_info(info: TopicInfo, partitions: int) -> dict[str, Any]:
    return {
        "name": info.name,
        "partitions": partitions,
        "replication_factor": info.replication_factor,
        "topic_configs": [{"key": k, "value": v} for k, v in sorted(info.configs)],
    }


def _topology(group: StreamsGroup) -> dict[str, Any] | None:
    """The configured topology when ready (decided counts), else the requested one (counts as
    sent); the configured one as Kafka's describe sees it (``described_configured``, model.py)."""
    topology = group.topology
    if topology is None:
        return None
    described = group.described_configured
    configured = described if described is not None and described.ready else None
    counts = configured.internal_counts if configured is not None else {}
    subs = []
    for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id):
        subs.append(
            {
                "subtopology_id": s.subtopology_id,
                "source_topics": sorted(s.source_topics),
                "repartition_sink_topics": sorted(s.repartition_sink_topics),
                "state_changelog_topics": [
                    _topic_info(i, counts.get(i.name, i.partitions))
                    for i in sorted(s.state_changelog_topics, key=lambda i: i.name)
                ],
                "repartition_source_topics": [
                    _topic_info(i, counts.get(i.name, i.partitions))
                    for i in sorted(s.repartition_source_topics, key=lambda i: i.name)
                ],
            }
        )
    return {"epoch": topology.epoch, "subtopologies": subs}


def _assignment(tasks: Tasks) -> dict[str, Any]:
    return {
        "active_tasks": _task_list(tasks.active),
        "standby_tasks": _task_list(tasks.standby),
        "warmup_tasks": _task_list(tasks.warmup),
    }


def _offsets(offsets: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    return [{"subtopology_id": s, "partition": p, "offset": o} for (s, p), o in sorted(offsets.items())]


def _member(group: StreamsGroup, m: StreamsMember) -> dict[str, Any]:
    # imported with the first streams group described: a cluster without streams groups never needs it
    from ..core.groups.streams.model import Tasks

    endpoint = m.user_endpoint
    return {
        "member_id": m.member_id,
        "member_epoch": m.member_epoch,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "topology_epoch": m.topology_epoch,
        "process_id": m.process_id,
        "user_endpoint": {"host": endpoint[0], "port": endpoint[1]} if endpoint is not None else None,
        "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())],
        "task_offsets": _offsets(m.task_offsets),
        "task_end_offsets": _offsets(m.task_end_offsets),
        "assignment": _assignment(m.assigned),
        "target_assignment": _assignment(group.target.get(m.member_id, Tasks())),
        "is_classic": False,
    }


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    groups = list(request.group_ids)
    out: list[dict] = []
    if not streams_enabled(ctx):
        out = [_error(ctx, g, ErrorCode.UNSUPPORTED_VERSION) for g in groups]
        return ctx.response(groups=out, throttle_time_ms=0)
    groups, refused = split(ctx, Operation.DESCRIBE, ResourceType.GROUP, groups, lambda g: g)
    out = [_error(ctx, g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in refused]
    include_description = ctx.api_version >= 1 and request.include_topology_description
    for group_id in groups:
        error, message, group = cluster.groups.streams_describe(ctx.broker_id, group_id)
        if error or group is None:
            out.append(_error(ctx, group_id, error, message))
            continue
        topics = group.topology.topic_names() if group.topology is not None else []
        if topics and len(allowed_names(ctx, Operation.DESCRIBE, ResourceType.TOPIC, topics)) < len(set(topics)):
            out.append(_error(ctx, group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        out.append(
            {
                "group_id": group_id,
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "group_state": group.state.value,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "topology": _topology(group),
                "members": [_member(group, m) for m in group.members.values()],
                "authorized_operations": operations(ctx, ResourceType.GROUP, group_id)
                if request.include_authorized_operations
                else ops.OMITTED,
                "topology_description": None,
                "topology_description_status": 1 if include_description else 0,
                "assignor_name": "sticky",
            }
        )
    return ctx.response(groups=out, throttle_time_ms=0)


API = api(ApiKey.STREAMS_GROUP_DESCRIBE, (0, 1), handle)

"""StreamsGroupHeartbeat (key 88, v0-1): streams groups' membership, topology and tasks
(KIP-1071); every rule is in core/groups/ (the group service, then streams/coordinator.py).
Here, Kafka's API-layer checks in its order (``KafkaApis.handleStreamsGroupHeartbeat``): the
gate (``group.coordinator.rebalance.protocols`` has ``streams`` and ``streams.version`` >= 1),
READ on the group, internal topics named by the topology, invalid topic names, DESCRIBE on
every topology topic; then, after the coordinator answered, the internal topics it asked for
are created (as Kafka's auto topic creation manager does; CREATE on the cluster or the topic
needed, else the MISSING_INTERNAL_TOPICS detail says so)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..core.security.acls import Operation, ResourceType
from ..core.topics.model import TopicError
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import allowed_names, any_denied, denied
from .context import RequestContext
from .registry import api

if TYPE_CHECKING:
    from ..core.groups.streams.heartbeat import StreamsHeartbeatResult
    from ..core.groups.streams.topology import TopicInfo, Topology

INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def streams_enabled(ctx: RequestContext) -> bool:
    """Apis ``isStreamsGroupProtocolEnabled``."""
    cluster = ctx.cluster
    return cluster.features.finalized.get("streams.version", 0) >= 1 and cluster.groups.streams.enabled()


def valid_topic_name(name: str) -> bool:
    """Kafka's ``Topic.isValid``."""
    return 0 < len(name) <= 249 and name not in (".", "..") and _LEGAL.fullmatch(name) is not None


def error_response(ctx: RequestContext, code: ErrorCode, message: str | None = None) -> Message:
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        member_id="",
        member_epoch=0,
        heartbeat_interval_ms=0,
        acceptable_recovery_lag=-1,
        status=[],
        active_tasks=None,
        standby_tasks=None,
        warmup_tasks=None,
        endpoint_information_epoch=0,
        partitions_by_user_endpoint=None,
    )


def _topic_info(info: Any) -> TopicInfo:
    from ..core.groups.streams.topology import TopicInfo

    configs = tuple((c.key, c.value) for c in info.topic_configs)
    return TopicInfo(info.name, info.partitions, info.replication_factor, configs)


def _topology(request: Message) -> tuple[Topology | None, bool]:
    """The request's topology, and whether a subtopology names a source topic regex."""
    from ..core.groups.streams.topology import CopartitionGroup, Subtopology, Topology

    raw = request.topology
    if raw is None:
        return None, False
    regex = False
    subs = []
    for s in raw.subtopologies:
        regex = regex or bool(s.source_topic_regex)
        subs.append(
            Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(s.repartition_sink_topics),
                tuple(_topic_info(i) for i in s.state_changelog_topics),
                tuple(_topic_info(i) for i in s.repartition_source_topics),
                tuple(
                    CopartitionGroup(tuple(g.source_topics), tuple(g.repartition_source_topics))
                    for g in s.copartition_groups
                ),
            )
        )
    return Topology(raw.epoch, tuple(subs)), regex


def _tasks(items: Any) -> frozenset[tuple[str, int]] | None:
    if items is None:
        return None
    return frozenset((t.subtopology_id, p) for t in items for p in t.partitions)


def _offsets(items: Any) -> dict[tuple[str, int], int] | None:
    if items is None:
        return None
    return {(t.subtopology_id, t.partition): t.offset for t in items}


def _task_list(tasks: frozenset[tuple[str, int]]) -> list[dict[str, Any]]:
    by_sub: dict[str, list[int]] = {}
    for sub, p in sorted(tasks):
        by_sub.setdefault(sub, []).append(p)
    return [{"subtopology_id": s, "partitions": ps} for s, ps in by_sub.items()]


def _partitions(by_topic: dict[str, list[int]]) -> list[dict[str, Any]]:
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def handle(ctx: RequestContext, request: Message) -> Message:
    # the streams core is imported at the first heartbeat: a cluster without streams groups never needs it
    from ..core.groups.streams.heartbeat import StreamsHeartbeatRequest

    cluster = ctx.cluster
    if not streams_enabled(ctx):
        return error_response(ctx, ErrorCode.UNSUPPORTED_VERSION)
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return error_response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topology, regex = _topology(request)
    if topology is not None:
        names = topology.topic_names()
        internal = [n for n in names if n in INTERNAL_TOPICS]
        if internal:
            return error_response(
                ctx,
                ErrorCode.STREAMS_INVALID_TOPOLOGY,
                f"Use of Kafka internal topics {','.join(internal)} in a Kafka Streams topology is prohibited.",
            )
        invalid = [n for n in names if not valid_topic_name(n)]
        if invalid:
            return error_response(
                ctx, ErrorCode.STREAMS_INVALID_TOPOLOGY, f"Topic names {','.join(invalid)} are not valid topic names."
            )
        if any_denied(ctx, Operation.DESCRIBE, ResourceType.TOPIC, names):
            return error_response(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    endpoint = request.user_endpoint
    result = cluster.groups.streams_heartbeat(
        ctx.now_ms,
        ctx.broker_id,
        StreamsHeartbeatRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            endpoint_information_epoch=request.endpoint_information_epoch,
            instance_id=request.instance_id,
            rack_id=request.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            topology=topology,
            active_tasks=_tasks(request.active_tasks),
            standby_tasks=_tasks(request.standby_tasks),
            warmup_tasks=_tasks(request.warmup_tasks),
            process_id=request.process_id,
            user_endpoint=(endpoint.host, endpoint.port) if endpoint is not None else None,
            client_tags={kv.key: kv.value for kv in request.client_tags} if request.client_tags is not None else None,
            task_offsets=_offsets(request.task_offsets),
            task_end_offsets=_offsets(request.task_end_offsets),
            shutdown_application=request.shutdown_application,
            uses_regex=regex,
            client_id=ctx.client_id or "",
            client_host=f"/{ctx.client_host}",
            version=ctx.api_version,
        ),
    )
    if result.error:
        return error_response(ctx, result.error, result.message)
    statuses = _create_internal_topics(ctx, result)
    tasks = result.tasks
    endpoints = None
    if result.endpoints is not None:
        endpoints = [
            {
                "user_endpoint": {"host": host, "port": port},
                "active_partitions": _partitions(active),
                "standby_partitions": _partitions(standby),
            }
            for (host, port), active, standby in result.endpoints
        ]
    fields: dict[str, Any] = dict(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        task_offset_interval_ms=result.task_offset_interval_ms,
        status=[{"status_code": code, "status_detail": detail} for code, detail in statuses],
        active_tasks=_task_list(tasks.active) if tasks is not None else None,
        standby_tasks=_task_list(tasks.standby) if tasks is not None else None,
        warmup_tasks=_task_list(tasks.warmup) if tasks is not None else None,
        endpoint_information_epoch=result.endpoint_epoch,
        partitions_by_user_endpoint=endpoints,
    )
    if ctx.api_version >= 1:
        fields["acceptable_recovery_lag"] = result.acceptable_recovery_lag
    return ctx.response(**fields)


def _create_internal_topics(ctx: RequestContext, result: StreamsHeartbeatResult) -> list[tuple[int, str]]:
    """Apis + DefaultAutoTopicCreationManager: the coordinator answered; now the internal
    topics it asked for are created (they exist from the member's next heartbeat). Refused or
    failed ones are appended to the MISSING_INTERNAL_TOPICS detail."""
    from ..core.groups.streams.topology import Status

    statuses = list(result.statuses)
    if not result.to_create:
        return statuses
    names = [t.name for t in result.to_create]
    if ctx.allowed(Operation.CREATE, ResourceType.CLUSTER, "kafka-cluster", quiet=True):  # KafkaApis asks it quietly
        allowed = set(names)
    else:
        allowed = allowed_names(ctx, Operation.CREATE, ResourceType.TOPIC, names)
    extra = ""
    refused = [n for n in names if n not in allowed]
    if refused:
        extra += f"; Unauthorized to CREATE on topics {', '.join(refused)}."
    failed = []
    for topic in result.to_create:
        if topic.name not in allowed or topic.name in ctx.cluster.topics:
            continue
        try:
            ctx.cluster.create_topic(topic.name, topic.partitions, topic.replication_factor, dict(topic.configs))
        except TopicError as exc:
            failed.append(f"{topic.name} ({exc})")
    if failed:
        extra += f"; Creation failed: {', '.join(failed)}."
    if extra:
        statuses = [(c, d + extra if c == Status.MISSING_INTERNAL_TOPICS else d) for c, d in statuses]
    return statuses


API = api(ApiKey.STREAMS_GROUP_HEARTBEAT, (0, 1), handle)

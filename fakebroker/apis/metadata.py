"""Metadata (key 3): brokers, controller, topics with their partitions, leaders and ids."""

from __future__ import annotations

from ..core.cluster_state import Partition, Topic, TopicError, topic_name_error
from ..core.security.acls import Operation, ResourceType
from ..core.topics import MAX_PARTITIONS_PER_REQUEST
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from ..protocol.primitives import ZERO_UUID
from . import authorized_operations as ops
from .authz_topics import INTERNAL_TOPICS, cluster_operations, topic_check, topic_operations
from .common import broker_endpoint
from .context import STEP, RequestContext, in_steps
from .registry import api

AUTHORIZED_OPERATIONS_OMITTED, TOPIC_OPERATIONS, CLUSTER_OPERATIONS = ops.OMITTED, ops.TOPIC, ops.CLUSTER


def handle(ctx: RequestContext, request: Message):
    every = _asks_every_topic(ctx.api_version, request.topics)
    return in_steps(_handle(ctx, request), len(ctx.cluster.topics) if every else len(request.topics))


def _asks_every_topic(version: int, wanted: list | None) -> bool:
    return wanted is None or (version == 0 and not wanted)  # v0: empty list = all topics; v1+: null = all


def _handle(ctx: RequestContext, request: Message):
    """Yields after every ``STEP`` topics named or described (the server lets other
    connections run)."""
    cluster = ctx.cluster
    v = ctx.api_version
    brokers = [broker_endpoint(b, ctx.listener) for b in cluster.alive_brokers()]
    wanted = request.topics
    # Every operation of the resource type when asked without an authorizer (v8+; the
    # cluster's v8-10); with one, those the principal may do, for the topics it may describe
    all_operations = v >= 8 and request.include_topic_authorized_operations
    # DESCRIBE on each topic, with an authorizer (None: none, every topic may be described);
    # a denial is recorded for a topic named, not for one an all-topics answer leaves out
    # (KafkaApis' ``logIfDenied = !isAllTopics``)
    every_topic = _asks_every_topic(v, wanted)
    may_describe = topic_check(ctx, Operation.DESCRIBE, quiet=every_topic)
    topics: list[Message] = []
    # KafkaApis answers named topics in four groups, each in the order asked: topic ids it does
    # not know, the topics it describes, those refused CREATE (auto-creation), those refused
    # DESCRIBE (``unknownTopicIdsTopicMetadata ++ topicMetadata ++ unauthorizedForCreate... ++
    # unauthorizedForDescribe...``)
    unknown_ids: list[Message] = []
    refused_create: list[Message] = []
    refused_describe: list[Message] = []

    def add(topic: dict, group: list[Message] = topics) -> None:
        """Typed now, slice by slice: coercing 100,000 topics at the end took most of a second."""
        if all_operations and "topic_authorized_operations" not in topic:
            topic["topic_authorized_operations"] = (
                TOPIC_OPERATIONS if may_describe is None else topic_operations(ctx, topic["name"])
            )
        group.append(ctx.item("topics", topic))

    if every_topic:
        for done, topic in enumerate(sorted(cluster.topics.values(), key=lambda t: t.name), 1):
            if done % STEP == 0:
                yield
            if may_describe is not None and not may_describe(topic.name):
                continue  # a topic the principal may not describe is left out of an all-topics answer
            add(_describe(ctx, topic))
    else:
        refused = False
        auto_create = (request.allow_auto_topic_creation or v < 4) and cluster.config.get_bool(
            "auto.create.topics.enable"
        )
        uncreatable: set[str] = set()  # missing topics the principal may describe but not create
        if auto_create:
            # the missing topics named (of those the principal may describe)
            missing = {e.name for e in wanted if e.name and e.name not in cluster.topics}
            if may_describe is not None:
                missing = {name for name in missing if may_describe(name)}
                if missing and not ctx.allowed(Operation.CREATE, ResourceType.CLUSTER, quiet=True):
                    # KafkaApis: CREATE on the cluster, else CREATE on each topic, else no creation
                    # and TOPIC_AUTHORIZATION_FAILED
                    uncreatable = {n for n in missing if not ctx.allowed(Operation.CREATE, ResourceType.TOPIC, n)}
                    missing -= uncreatable
            # Kafka's AutoTopicCreationManager asks its controller for every missing topic of the
            # request in one CreateTopics, which the controller refuses whole (POLICY_VIOLATION,
            # "Excessively large number of partitions per request.") above 10,000 partitions:
            # then nothing is created, and the answer is the same UNKNOWN_TOPIC_OR_PARTITION.
            if len(missing) * max(cluster.config.get_int("num.partitions"), 1) > MAX_PARTITIONS_PER_REQUEST:
                auto_create = False
                refused = True
        for done, entry in enumerate(wanted, 1):
            if done % STEP == 0:
                yield
            name = entry.name
            by_id = False
            # v10+ may name a topic by id: the Java client then sends an empty name, not a null one
            if v >= 10 and (name is None or (not name and entry.topic_id != ZERO_UUID)):
                name = next((t.name for t in cluster.topics.values() if t.topic_id == entry.topic_id), None)
                if name is None:
                    # not one of the topics whose authorized operations are filled in
                    add(
                        {
                            "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                            "name": None,
                            "topic_id": entry.topic_id,
                            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                        },
                        unknown_ids,
                    )
                    continue
                by_id = True
            if may_describe is not None and not may_describe(name):
                # Existence is not checked, so the answer does not tell; a topic asked by id keeps
                # its id (ids are not secret) and loses its name, one asked by name gets no id
                add(
                    {
                        "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        "name": None if by_id else name,
                        "topic_id": entry.topic_id if by_id else ZERO_UUID,
                        "is_internal": False,
                        "partitions": [],
                        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                    },
                    refused_describe,
                )
                continue
            if name in uncreatable:
                add(
                    {
                        "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        "name": name,
                        "topic_id": ZERO_UUID,
                        "is_internal": name in INTERNAL_TOPICS,
                        "partitions": [],
                        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                    },
                    refused_create,
                )
                continue
            add(_lookup(ctx, name, auto_create, refused))
        topics[:0] = unknown_ids
        topics += refused_create + refused_describe
    asked_cluster = 8 <= v <= 10 and request.include_cluster_authorized_operations
    return ctx.response(
        brokers=brokers,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=topics,
        cluster_authorized_operations=cluster_operations(ctx) if asked_cluster else AUTHORIZED_OPERATIONS_OMITTED,
    )


def _lookup(ctx: RequestContext, name: str, auto_create: bool, refused: bool = False) -> dict:
    cluster = ctx.cluster
    topic = cluster.topics.get(name)
    if topic is not None:
        return _describe(ctx, topic)
    if topic_name_error(name):
        return {"error_code": ErrorCode.INVALID_TOPIC_EXCEPTION, "name": name, "is_internal": False}
    if refused:  # auto-creation asked for, and refused by the controller's per-request cap
        return {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "is_internal": False}
    if not auto_create:
        return {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name}
    try:
        cluster.create_topic(name, auto=True)
    except TopicError:
        pass  # Kafka's controller refuses it later (a colliding name, too few brokers): the answer is the same
    # Kafka 4.4 (DefaultAutoTopicCreationManager) sends the creation to its controller and answers
    # this request UNKNOWN_TOPIC_OR_PARTITION at once; the topic shows from a later request on.
    # Ours is created here, so the next Metadata describes it; clients retry in between.
    return {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "is_internal": False}


def partition_state(p: Partition, alive: set[int]) -> dict:
    """A partition's leader, epoch and replicas as Metadata and DescribeTopicPartitions show them
    (a stopped broker is out of the ISR and offline)."""
    return {
        "partition_index": p.index,
        "leader_id": p.leader if p.leader in alive else -1,
        "leader_epoch": p.leader_epoch,
        "replica_nodes": list(p.replicas),
        "isr_nodes": [r for r in p.isr if r in alive],
        "offline_replicas": [r for r in p.replicas if r not in alive],
    }


def _describe(ctx: RequestContext, topic: Topic) -> dict:
    alive = {b.node_id for b in ctx.cluster.alive_brokers()}
    partitions = [
        {
            "error_code": ErrorCode.NONE if p.leader in alive else ErrorCode.LEADER_NOT_AVAILABLE,
            **partition_state(p, alive),
        }
        for p in topic.partitions
    ]
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.internal,
        "partitions": partitions,
    }


API = api(ApiKey.METADATA, (0, 13), handle)

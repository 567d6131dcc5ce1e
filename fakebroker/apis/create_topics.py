"""CreateTopics (key 19).

With an authorizer, as Kafka's ControllerApis checks: CREATE on the cluster, else CREATE on each
topic (a topic refused is answered TOPIC_AUTHORIZATION_FAILED, "Authorization failed.", after the
others and the duplicates); a topic created without DESCRIBE_CONFIGS on it is answered without
its configs, partition count and replication factor (TopicConfigErrorCode
TOPIC_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from ..core.cluster_state import TopicError
from ..core.configs import validate, validate_topic
from ..core.security.acls import Operation, ResourceType
from ..core.topics import MAX_PARTITIONS_PER_REQUEST
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import CREATE_DENIED, topic_check
from .context import STEP, RequestContext, in_steps
from .registry import api

METADATA_TOPIC = "__cluster_metadata"  # Topic.CLUSTER_METADATA_TOPIC_NAME: never created, never authorized
# A created topic's answer describes its ~37 configs: a topic costs what ten partitions of a
# Produce do, so it may pause ten times as often.
TOPICS_PER_STEP = STEP // 10


def _partitions_asked(topics: list[Message], default: int) -> int:
    """Kafka's ``validateTotalNumberOfPartitions`` count (the defaults included)."""
    total = 0
    for t in topics:
        total += (
            len(t.assignments) if t.assignments else (default if t.num_partitions == -1 else max(t.num_partitions, 0))
        )
    return total


def handle(ctx: RequestContext, request: Message):
    return in_steps(_handle(ctx, request), len(request.topics))


def _handle(ctx: RequestContext, request: Message):
    """Yields after every ``TOPICS_PER_STEP`` topics (the server lets other connections run)."""
    # With an authorizer: the topics the principal may not create (ControllerApis leaves them
    # out of what its controller is asked, and answers them last), and whether it may describe
    # a created topic's configs (None: no authorizer, every topic may be created and described)
    uncreatable: set[str] = set()
    # (ControllerApis asks both quietly, ``logIfDenied=false``: only CREATE on a topic is recorded)
    may_describe_configs = topic_check(ctx, Operation.DESCRIBE_CONFIGS, quiet=True)
    if may_describe_configs is not None and not ctx.allowed(Operation.CREATE, ResourceType.CLUSTER, quiet=True):
        may_create = topic_check(ctx, Operation.CREATE)
        assert may_create is not None
        uncreatable = {t.name for t in request.topics if t.name != METADATA_TOPIC and not may_create(t.name)}
    # what the controller is asked for (the partition cap counts these)
    asked = [t for t in request.topics if t.name not in uncreatable and t.name != METADATA_TOPIC]
    if _partitions_asked(asked, ctx.cluster.config.get_int("num.partitions")) > MAX_PARTITIONS_PER_REQUEST:
        # one request may not create more (Kafka's controller bounds its records): all of it is refused
        refused = {
            "error_code": ErrorCode.POLICY_VIOLATION,
            "error_message": "Excessively large number of partitions per request.",
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
        }
        return ctx.response(topics=[{"name": t.name, **refused} for t in request.topics], throttle_time_ms=0)
    results: list[Message | dict] = []
    seen: dict[str, int] = {}
    for t in request.topics:
        seen[t.name] = seen.get(t.name, 0) + 1
    for done, t in enumerate(request.topics, 1):
        if done % TOPICS_PER_STEP == 0:
            yield
        result = {
            "name": t.name,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],  # Kafka's answer to an error (v5+)
        }
        if seen[t.name] > 1 or t.name in uncreatable or t.name == METADATA_TOPIC:
            continue  # answered once, after the others, as ControllerApis.createTopics does
        configs = {c.name: c.value for c in t.configs}
        bad = next((reason for n, v in configs.items() if (reason := validate(n, v, topic=True))), None)
        null = next((n for n, v in configs.items() if v is None), None)
        if not bad and not null:
            bad = validate_topic(configs, ctx.cluster.config)
        if bad or null:
            reason = bad or f"Null value not supported for topic configs: {null}"
            result.update(error_code=ErrorCode.INVALID_CONFIG, error_message=reason)
            results.append(ctx.item("topics", result))
            continue
        try:
            topic = ctx.cluster.create_topic(
                t.name,
                t.num_partitions,
                t.replication_factor,
                {k: v for k, v in configs.items() if v is not None},
                {a.partition_index: list(a.broker_ids) for a in t.assignments} or None,
                validate_only=request.validate_only,
            )
        except TopicError as exc:
            result.update(error_code=exc.code, error_message=exc.message)
            results.append(ctx.item("topics", result))
            continue
        if may_describe_configs is not None and not may_describe_configs(t.name):
            # created, but its configs are not the principal's to see (ReplicationControlManager)
            result.update(topic_id=topic.topic_id, topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        else:
            result.update(
                topic_id=topic.topic_id,
                num_partitions=len(topic.partitions),
                replication_factor=len(topic.partitions[0].replicas),
                configs=[
                    {
                        "name": e.name,
                        "value": e.value,
                        "read_only": e.read_only,
                        "config_source": e.source,
                        "is_sensitive": e.is_sensitive,
                    }
                    for e in topic.config.describe(ctx.broker_id)
                ],
            )
        if not request.validate_only:
            ctx.data_changed()
        results.append(ctx.item("topics", result))
    results.extend(
        {
            "name": name,
            "error_code": ErrorCode.INVALID_REQUEST,
            "error_message": "Duplicate topic name.",
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],  # Kafka's answer to an error (v5+)
        }
        for name, count in seen.items()
        if count > 1
    )
    for name, count in seen.items():
        if count == 1 and (name == METADATA_TOPIC or name in uncreatable):
            error, text = (
                (ErrorCode.INVALID_REQUEST, f"Creation of internal topic {METADATA_TOPIC} is prohibited.")
                if name == METADATA_TOPIC
                else (ErrorCode.TOPIC_AUTHORIZATION_FAILED, CREATE_DENIED)
            )
            refusal = {"error_code": error, "error_message": text, "num_partitions": -1, "replication_factor": -1}
            results.append({"name": name, **refusal, "configs": []})
    return ctx.response(topics=results, throttle_time_ms=0)


API = api(ApiKey.CREATE_TOPICS, (0, 7), handle)

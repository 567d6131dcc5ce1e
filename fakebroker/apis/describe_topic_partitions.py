"""DescribeTopicPartitions (key 75): the partitions of topics, paged by a partition limit and a
cursor, as Kafka 4.x's ``DescribeTopicPartitionsRequestHandler`` answers on a broker without an
authorizer (the Java Admin's ``describeTopics`` uses it).

Topics are answered in name order from the cursor's topic on (from its partition on); at most
``response_partition_limit`` partitions (1 to ``max.request.partition.size.limit``, 2000) go in
one answer, and ``next_cursor`` names where the next request starts. An empty topic list asks
for every topic (unknown ones cannot be in it); a named topic that does not exist is answered
UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name). A cursor whose topic
is not among the named ones, or whose partition is negative, makes the whole answer
INVALID_REQUEST. Without an authorizer every topic operation is authorized; with one, a topic
the principal may not DESCRIBE is left out of an all-topics answer and answered
TOPIC_AUTHORIZATION_FAILED (last, its existence unchecked) when named.
"""

from __future__ import annotations

from ..core.cluster_state import Topic, topic_name_error
from ..core.groups.placement import OFFSETS_TOPIC, TRANSACTION_TOPIC
from ..core.security.acls import Operation
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from ..protocol.primitives import ZERO_UUID
from . import authorized_operations as ops
from .authz_topics import topic_check, topic_operations
from .context import RequestContext
from .metadata import partition_state
from .registry import api

MAX_PARTITIONS = 2000  # max.request.partition.size.limit
INTERNAL_TOPICS = (OFFSETS_TOPIC, TRANSACTION_TOPIC, "__share_group_state")  # Kafka's Topic.isInternal
# READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: all a topic's
# operations, what AuthHelper.authorizedOperations answers without an authorizer
TOPIC_OPERATIONS = ops.TOPIC


class _InvalidRequest(Exception):
    pass


def handle(ctx: RequestContext, request: Message) -> Message:
    try:
        return _describe(ctx, request)
    except _InvalidRequest:
        # the request's error answer: each named topic with the error, nothing else
        topics = [
            {"error_code": ErrorCode.INVALID_REQUEST, "name": t.name, "is_internal": False, "partitions": []}
            for t in request.topics
        ]
        return ctx.response(throttle_time_ms=0, topics=topics, next_cursor=None)


def _describe(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not request.topics
    if fetch_all:
        names = {n for n in cluster.topics if n >= cursor_topic}
    else:
        names = {t.name for t in request.topics if t.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            raise _InvalidRequest
    if cursor is not None and cursor.partition_index < 0:
        raise _InvalidRequest
    remaining = max(min(MAX_PARTITIONS, request.response_partition_limit), 1)
    topics: list[dict] = []
    # With an authorizer, DESCRIBE on each topic, asked in name order as the handler's lazy
    # stream asks it (up to the topic the cursor stops at): one the principal may not describe
    # is left out of an all-topics answer, and answered last, without checking that it exists,
    # when named
    may_describe = topic_check(ctx, Operation.DESCRIBE)
    refused: list[dict] = []
    next_cursor = None
    for name in sorted(names):
        if may_describe is not None and not may_describe(name):
            if not fetch_all:
                refused.append(
                    {
                        "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        "name": name,
                        "topic_id": ZERO_UUID,
                        "is_internal": False,
                        "partitions": [],
                        "topic_authorized_operations": ops.OMITTED,
                    }
                )
            continue
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = cluster.topics.get(name)
        if topic is None:
            if not fetch_all:
                error = (
                    ErrorCode.INVALID_TOPIC_EXCEPTION
                    if topic_name_error(name)
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                topics.append(
                    {
                        "error_code": error,
                        "name": name,
                        "topic_id": ZERO_UUID,
                        "is_internal": name in INTERNAL_TOPICS,
                        "partitions": [],
                        "topic_authorized_operations": TOPIC_OPERATIONS,
                    }
                )
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        topics.append(_topic(ctx, topic, start, upper))
        if upper < len(topic.partitions):
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= max(upper - start, 0)
    if may_describe is not None:  # the operations this principal may do, on the topics answered
        for entry in topics:
            entry["topic_authorized_operations"] = topic_operations(ctx, entry["name"])
    return ctx.response(throttle_time_ms=0, topics=topics + refused, next_cursor=next_cursor)


def _topic(ctx: RequestContext, topic: Topic, start: int, upper: int) -> dict:
    alive = {b.node_id for b in ctx.cluster.alive_brokers()}
    partitions = [
        {
            "error_code": ErrorCode.NONE,
            **partition_state(p, alive),
            "eligible_leader_replicas": [],
            "last_known_elr": [],
        }
        for p in topic.partitions[start:upper]
    ]
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.internal,
        "partitions": partitions,
        "topic_authorized_operations": TOPIC_OPERATIONS,
    }


API = api(ApiKey.DESCRIBE_TOPIC_PARTITIONS, (0, 0), handle)

"""AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46), as Kafka's
controller answers them (the broker forwards both); the rules are in
:mod:`fakebroker.core.topics.reassignments`.

Alter answers each named partition (NONE, or the error and its message; a cancel without a
reassignment in progress is NO_REASSIGNMENT_IN_PROGRESS without a message); the top-level error
is NONE and v1 echoes ``allow_replication_factor_change``. List names the reassignments in
progress, of every partition (null topics) or of the named ones; an empty list answers nothing.
"""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..core.topics import reassignments
from ..core.topics.reassignments import ReassignmentError
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import cluster_denied
from .context import RequestContext
from .registry import api


def handle_alter(ctx: RequestContext, request: Message) -> Message:
    allow = request.allow_replication_factor_change if ctx.api_version >= 1 else True
    if not ctx.allowed(Operation.ALTER, ResourceType.CLUSTER):
        # the controller's first check: the error at the top and on every partition named
        denied, text = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, cluster_denied(ctx, Operation.ALTER)
        responses = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": denied, "error_message": text}
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ]
        return ctx.response(error_code=denied, error_message=text, responses=responses)
    if not request.topics:
        return ctx.response(error_code=ErrorCode.NONE, error_message="", responses=[])
    responses = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            code, message = ErrorCode.NONE, None
            try:
                replicas = list(p.replicas) if p.replicas is not None else None
                reassignments.reassign(
                    ctx.cluster,
                    topic.name,
                    p.partition_index,
                    replicas,
                    ctx.now_ms,
                    allow_replication_factor_change=allow,
                )
            except ReassignmentError as exc:
                code, message = exc.code, exc.message
            partitions.append({"partition_index": p.partition_index, "error_code": code, "error_message": message})
        responses.append({"name": topic.name, "partitions": partitions})
    ctx.data_changed()
    return ctx.response(
        error_code=ErrorCode.NONE,
        error_message=None,
        allow_replication_factor_change=allow,
        responses=responses,
    )


def handle_list(ctx: RequestContext, request: Message) -> Message:
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER):
        # the controller's first check: the error at the top, the partitions named echoed
        topics = [
            {"name": t.name, "partitions": [{"partition_index": i} for i in t.partition_indexes]}
            for t in request.topics or ()
        ]
        denied, text = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, cluster_denied(ctx, Operation.DESCRIBE)
        return ctx.response(error_code=denied, error_message=text, topics=topics)
    if request.topics is not None and not request.topics:
        return ctx.response(error_code=ErrorCode.NONE, error_message=None, topics=[])
    wanted = None if request.topics is None else {t.name: list(t.partition_indexes) for t in request.topics}
    topics = [
        {
            "name": name,
            "partitions": [
                {
                    "partition_index": index,
                    "replicas": ctx.cluster.topics[name].partitions[index].replicas,
                    "adding_replicas": r.adding,
                    "removing_replicas": r.removing,
                }
                for index, r in found
            ],
        }
        for name, found in reassignments.listed(ctx.cluster, wanted).items()
    ]
    return ctx.response(error_code=ErrorCode.NONE, error_message=None, topics=topics)


ALTER = api(ApiKey.ALTER_PARTITION_REASSIGNMENTS, (0, 1), handle_alter)
LIST = api(ApiKey.LIST_PARTITION_REASSIGNMENTS, (0, 0), handle_list)

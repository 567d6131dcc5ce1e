"""ElectLeaders (key 43): preferred or unclean leader elections, as Kafka's controller answers
them (the broker forwards the request to it).

Named partitions each get a result (see :mod:`fakebroker.core.topics.elections`). A null list elects
for every partition of every topic, internal ones too, and leaves out the partitions whose
election was not needed (every topic still gets its entry). An empty list answers nothing. An
unknown election type makes the answer INVALID_REQUEST, top-level (v1+) and for each named
partition. v0 has neither the election type (always preferred) nor the top-level error code.
"""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..core.topics import elections
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import cluster_denied
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    election = request.election_type if ctx.api_version >= 1 else elections.PREFERRED
    named = request.topic_partitions
    if not ctx.allowed(Operation.ALTER, ResourceType.CLUSTER):
        # the controller's first check (authorizeClusterOperation): every named partition refused
        return _refused(ctx, named, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, cluster_denied(ctx, Operation.ALTER))
    if election not in elections.ELECTION_TYPES:
        return _refused(ctx, named, ErrorCode.INVALID_REQUEST, f"Unknown election type {election}")
    results: list[dict] = []
    if named is None:
        for topic in list(cluster.topics.values()):
            partitions = []
            for p in topic.partitions:
                code, message = elections.elect(cluster, election, topic.name, p.index, ctx.now_ms)
                if code != ErrorCode.ELECTION_NOT_NEEDED:
                    partitions.append({"partition_id": p.index, "error_code": code, "error_message": message})
            results.append({"topic": topic.name, "partition_result": partitions})
    else:
        for t in named:
            partitions = []
            for index in t.partitions:
                code, message = elections.elect(cluster, election, t.topic, index, ctx.now_ms)
                partitions.append({"partition_id": index, "error_code": code, "error_message": message})
            results.append({"topic": t.topic, "partition_result": partitions})
    if any(p["error_code"] == ErrorCode.NONE for r in results for p in r["partition_result"]):
        ctx.data_changed()  # parked fetches of a partition that moved answer NOT_LEADER_OR_FOLLOWER
    return ctx.response(error_code=ErrorCode.NONE, replica_election_results=results)


def _refused(ctx: RequestContext, named, error: ErrorCode, message: str) -> Message:
    """The request refused whole: ``error`` at the top (v1+) and on each named partition."""
    results = [
        {
            "topic": t.topic,
            "partition_result": [
                {"partition_id": p, "error_code": error, "error_message": message} for p in t.partitions
            ],
        }
        for t in named or []
    ]
    return ctx.response(error_code=error, replica_election_results=results)


API = api(ApiKey.ELECT_LEADERS, (0, 2), handle)

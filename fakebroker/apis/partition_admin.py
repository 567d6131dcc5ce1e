"""ElectLeaders (key 43) and ListPartitionReassignments (key 46): what ``kafka-leader-election``
and ``kafka-reassign-partitions --list`` (the admin client's ``electLeaders`` and
``listPartitionReassignments``) ask, answered as Kafka's controller does.

A partition's preferred leader is its first replica. A preferred election moves the leader
back to it when it is alive (after ``cluster.move_leader``, say); an unclean one elects the
first live replica of a partition without a leader. fakebroker never reassigns replicas, so
no reassignment is ever in progress."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .context import RequestContext
from .registry import api

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."
NOT_AVAILABLE = {
    PREFERRED: (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available."),
    UNCLEAN: (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "Eligible topic partition leaders are not available."),
}


def _elect(ctx: RequestContext, topic: str, index: int, election: int) -> tuple[int, str | None]:
    cluster = ctx.cluster
    found = cluster.topics.get(topic)
    if found is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    if not 0 <= index < len(found.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
    partition = found.partitions[index]
    alive = {b.node_id for b in cluster.alive_brokers()}
    has_leader = partition.leader >= 0 and partition.leader in alive
    preferred = partition.replicas[0] if partition.replicas else -1
    if (election == PREFERRED and partition.leader == preferred and has_leader) or (election == UNCLEAN and has_leader):
        return ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED
    if election == PREFERRED:
        target = preferred if preferred in alive else None
    else:
        target = next((r for r in partition.replicas if r in alive), None)
    if target is None:
        return NOT_AVAILABLE[election]
    cluster.move_leader(
        partition, target, ctx.now_ms, reason=f"{'preferred' if election == PREFERRED else 'unclean'} leader election"
    )
    ctx.data_changed()
    return ErrorCode.NONE, None


def elect_leaders(ctx: RequestContext, request: Message) -> Message:
    election = request.election_type if ctx.api_version >= 1 else PREFERRED
    if election not in (PREFERRED, UNCLEAN):
        message = f"Unknown election type {election}"
        results = [
            {
                "topic": t.topic,
                "partition_result": [
                    {"partition_id": p, "error_code": ErrorCode.INVALID_REQUEST, "error_message": message}
                    for p in t.partitions
                ],
            }
            for t in request.topic_partitions or []
        ]
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, replica_election_results=results)
    results = []
    if request.topic_partitions is None:
        # every partition; those that already have the wanted leader are left out, as Kafka does
        for name in sorted(ctx.cluster.topics):
            parts = []
            for index in range(len(ctx.cluster.topics[name].partitions)):
                code, message = _elect(ctx, name, index, election)
                if code != ErrorCode.ELECTION_NOT_NEEDED:
                    parts.append({"partition_id": index, "error_code": code, "error_message": message})
            results.append({"topic": name, "partition_result": parts})
    else:
        for t in request.topic_partitions:
            parts = []
            for index in t.partitions:
                code, message = _elect(ctx, t.topic, index, election)
                parts.append({"partition_id": index, "error_code": code, "error_message": message})
            results.append({"topic": t.topic, "partition_result": parts})
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, replica_election_results=results)


def list_partition_reassignments(ctx: RequestContext, request: Message) -> Message:
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, topics=[])


APIS = (
    api(43, (0, 2), elect_leaders),
    api(46, (0, 0), list_partition_reassignments),
)

"""Leader elections asked for by an admin (ElectLeaders), as Kafka's controller runs them
(``ReplicationControlManager.electLeader``).

A preferred election gives a partition back to its first replica when that replica is alive
(in the ISR, which fakebroker keeps as every live replica); an unclean one gives a partition
without a leader to any live replica. Each partition answers NONE (elected), ELECTION_NOT_NEEDED
(the preferred replica leads already; for an unclean election: the partition has a leader),
PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE (no replica can take it) or
UNKNOWN_TOPIC_OR_PARTITION. An elected partition moves through :meth:`ClusterState.move_leader`,
so the usual ``leader_moved`` event (reason ``preferred election`` / ``unclean election``) and
the coordinator moves of internal partitions follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from ..cluster_state import ClusterState

PREFERRED, UNCLEAN = 0, 1
ELECTION_TYPES = (PREFERRED, UNCLEAN)


def elect(state: ClusterState, election_type: int, topic: str, index: int, now_ms: int) -> tuple[ErrorCode, str | None]:
    """Run one election: (error code, message) as Kafka's controller answers it."""
    t = state.topics.get(topic)
    if t is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    if not 0 <= index < len(t.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
    partition = t.partitions[index]
    alive = {b.node_id for b in state.alive_brokers()}
    leader = partition.leader if partition.leader in alive else -1
    if election_type == PREFERRED:
        preferred = partition.replicas[0]
        if leader == preferred:
            return ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
        if preferred not in alive:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available."
        state.move_leader(partition, preferred, now_ms, reason="preferred election")
        return ErrorCode.NONE, None
    if leader != -1:
        return ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
    candidates = [r for r in partition.replicas if r in alive]
    if not candidates:
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "Eligible topic partition leaders are not available."
    state.move_leader(partition, candidates[0], now_ms, reason="unclean election")
    return ErrorCode.NONE, None

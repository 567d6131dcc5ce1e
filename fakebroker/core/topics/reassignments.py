"""Partition reassignments (AlterPartitionReassignments, ListPartitionReassignments), as Kafka's
controller runs them (``ReplicationControlManager.alterPartitionReassignment``).

A reassignment names a partition's target replicas. Kafka first makes the replicas the target
plus the replicas being removed, waits until every target replica is in the ISR, then drops the
removed ones and, when the leader is one of them, elects the first target replica in the ISR.
fakebroker has no replication to wait for: a replica is in sync as soon as its broker is alive,
so a reassignment whose target brokers are all alive completes at once, and one naming a
stopped broker stays in progress (ListPartitionReassignments shows it, a null target cancels it)
until that broker starts again.

Checks, in Kafka's order: the topic and partition exist (UNKNOWN_TOPIC_OR_PARTITION); for a
cancel, a reassignment is in progress (NO_REASSIGNMENT_IN_PROGRESS); the target is not empty,
names only registered brokers (a stopped broker is still registered) and none twice, checked in
broker-id order (INVALID_REPLICA_ASSIGNMENT); without ``allow_replication_factor_change`` the
number of replicas stays (INVALID_REPLICATION_FACTOR).
"""

from __future__ import annotations

from typing import Protocol

from ...lazy_dataclasses import dataclass
from ...protocol.error_codes import ErrorCode
from ..events import Event, EventLog
from .model import BrokerInfo, Partition, Topic


class ClusterState(Protocol):
    """What a reassignment reads and changes of :class:`~fakebroker.core.cluster_state.ClusterState`
    (which keeps the reassignments in progress and calls :func:`complete_ready` when a broker starts)."""

    topics: dict[str, Topic]
    brokers: dict[int, BrokerInfo]
    reassignments: dict[tuple[str, int], Reassignment]
    events: EventLog

    def alive_brokers(self) -> list[BrokerInfo]: ...

    def move_leader(
        self, partition: Partition, broker: int | None, now_ms: int, *, reason: str | None = None
    ) -> None: ...


@dataclass(frozen=True, kw_only=True)
class PartitionReassigned(Event):
    """A reassignment of ``topic``-``partition`` started (``state="started"``, waiting for
    ``adding``), completed (``replicas`` are the target) or was cancelled."""

    topic: str
    partition: int
    state: str
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass
class Reassignment:
    """One reassignment in progress: the partition's replicas are ``target`` + ``removing``."""

    target: list[int]
    adding: list[int]
    removing: list[int]


class ReassignmentError(Exception):
    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code = code
        self.message = message


def reassign(
    state: ClusterState,
    topic: str,
    index: int,
    replicas: list[int] | None,
    now_ms: int,
    *,
    allow_replication_factor_change: bool = True,
) -> None:
    """Start (and, when it can, complete) or cancel (``replicas`` None) a reassignment, or raise
    :class:`ReassignmentError` with Kafka's error."""
    partition = _partition(state, topic, index)
    key = (topic, index)
    ongoing = state.reassignments.get(key)
    if replicas is None:
        if ongoing is None:
            raise ReassignmentError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
        _cancel(state, partition, ongoing, now_ms)
        return
    _validate(state, replicas)
    if not allow_replication_factor_change:
        current = len(ongoing.target) if ongoing is not None else len(partition.replicas)
        if current != len(replicas):
            raise ReassignmentError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"The replication factor is changed from {current} to {len(replicas)}",
            )
    current_replicas = list(partition.replicas)
    removing = sorted(set(current_replicas) - set(replicas))
    adding = sorted(set(replicas) - set(current_replicas))
    if not removing and not adding and ongoing is None:
        partition.replicas = list(replicas)  # a new order only: done at once, the leader stays
        return
    if ongoing is not None:
        # the earlier target's replicas that are not in the new one are removed as well
        removing = sorted(set(removing) | (set(ongoing.removing) - set(replicas)))
        adding = sorted((set(adding) | set(ongoing.adding)) & set(replicas))
    partition.replicas = list(replicas) + [r for r in removing if r not in replicas]
    state.reassignments[key] = Reassignment(list(replicas), adding, removing)
    state.events.append(
        PartitionReassigned(
            topic=topic,
            partition=index,
            state="started",
            replicas=tuple(replicas),
            adding=tuple(adding),
            removing=tuple(removing),
        ),
        now_ms,
    )
    complete_ready(state, now_ms)


def complete_ready(state: ClusterState, now_ms: int) -> int:
    """Complete every reassignment whose target replicas are all alive (in sync); returns how many."""
    alive = {b.node_id for b in state.alive_brokers()}
    done = 0
    for (topic, index), ongoing in list(state.reassignments.items()):
        if not set(ongoing.target) <= alive:
            continue
        partition = state.topics[topic].partitions[index]
        del state.reassignments[(topic, index)]
        partition.replicas = list(ongoing.target)
        if partition.leader not in ongoing.target or partition.leader not in alive:
            state.move_leader(partition, None, now_ms, reason="reassignment")
        state.events.append(
            PartitionReassigned(topic=topic, partition=index, state="completed", replicas=tuple(ongoing.target)),
            now_ms,
        )
        done += 1
    return done


def listed(state: ClusterState, wanted: dict[str, list[int]] | None) -> dict[str, list[tuple[int, Reassignment]]]:
    """The reassignments in progress: of every partition (``wanted`` None) or of the named ones
    (unknown topics and partitions left out); topics without one are left out."""
    out: dict[str, list[tuple[int, Reassignment]]] = {}
    if wanted is None:
        for (topic, index), ongoing in state.reassignments.items():
            out.setdefault(topic, []).append((index, ongoing))
        return out
    for topic, indexes in wanted.items():
        found = [(i, state.reassignments[(topic, i)]) for i in indexes if (topic, i) in state.reassignments]
        if found:
            out[topic] = found
    return out


def _partition(state: ClusterState, topic: str, index: int) -> Partition:
    t = state.topics.get(topic)
    if t is None:
        raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}.")
    if not 0 <= index < len(t.partitions):
        raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}.")
    return t.partitions[index]


def _validate(state: ClusterState, replicas: list[int]) -> None:
    if not replicas:
        raise ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        )
    previous = None
    for broker in sorted(replicas):
        if broker not in state.brokers:
            raise ReassignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker}, but no such broker is registered.",
            )
        if broker == previous:
            raise ReassignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker} more than once.",
            )
        previous = broker


def _cancel(state: ClusterState, partition: Partition, ongoing: Reassignment, now_ms: int) -> None:
    """Back to the replicas before the reassignment (the current ones less those being added)."""
    original = [r for r in partition.replicas if r not in ongoing.adding]
    alive = {b.node_id for b in state.alive_brokers()}
    if not any(r in alive for r in original):
        raise ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Unable to revert partition assignment for {partition.topic}:{partition.index} because it would "
            "require an unclean leader election.",
        )
    del state.reassignments[(partition.topic, partition.index)]
    partition.replicas = original
    if partition.leader not in original or partition.leader not in alive:
        state.move_leader(partition, None, now_ms, reason="reassignment cancelled")
    state.events.append(
        PartitionReassigned(
            topic=partition.topic, partition=partition.index, state="cancelled", replicas=tuple(original)
        ),
        now_ms,
    )

"""Where a new topic's or new partitions' replicas go, checked as Kafka's controller checks a
CreateTopics or CreatePartitions (its order, its error codes and messages): pure functions of
the request and the cluster's brokers; :class:`ClusterState` applies what they decide."""

from __future__ import annotations

from collections.abc import Callable, Collection

from ...protocol.error_codes import ErrorCode
from .model import (
    MAX_PARTITIONS_PER_REQUEST,
    Topic,
    TopicError,
    colliding_topic,
    manual_assignment_error,
    topic_name_error,
)

# (count, replication, live brokers, first partition) -> a replica list per partition
Spread = Callable[[int, int, list[int], int], list[list[int]]]


def rack_alternated(brokers: list[int], racks: dict[int, str | None]) -> list[int]:
    """``brokers`` in the order Kafka's rack-aware placement walks them: the first broker of each
    rack (racks by name), then the second of each, ... Unchanged when no broker has a rack; a
    broker without one counts as a rack of its own."""
    if not any(racks.get(b) for b in brokers):
        return brokers
    by_rack: dict[str, list[int]] = {}
    for b in sorted(brokers):
        by_rack.setdefault(racks.get(b) or f"\0{b}", []).append(b)
    columns = [by_rack[r] for r in sorted(by_rack)]
    return [col[i] for i in range(max(map(len, columns))) for col in columns if i < len(col)]


def new_topic(
    name: str,
    num_partitions: int,
    replication_factor: int,
    assignments: dict[int, list[int]] | None,
    *,
    existing: Collection[str],
    registered: set[int],
    alive: list[int],
    defaults: tuple[int, int],
    spread: Spread,
) -> list[list[int]]:
    """The replicas of each partition of a new topic (-1 counts take the broker ``defaults``:
    num.partitions, default.replication.factor), or TopicError."""
    reason = topic_name_error(name)
    if reason:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
    if name in existing:
        raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    other = colliding_topic(name, existing)
    if other is not None:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {other}")
    if assignments:
        if num_partitions != -1 or replication_factor != -1:
            raise TopicError(
                ErrorCode.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        parts = sorted(assignments)
        if parts != list(range(len(parts))):
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions should be a consecutive 0-based integer sequence"
            )
        for replicas in assignments.values():
            if not replicas or any(r not in registered for r in replicas):
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Replica assignment {replicas} names an unknown broker"
                )
        return [list(assignments[p]) for p in parts]
    if num_partitions == -1:
        num_partitions = defaults[0]
    if replication_factor == -1:
        replication_factor = defaults[1]
    if num_partitions <= 0:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if replication_factor > len(alive):
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
            f"{replication_factor} cannot be reached because only {len(alive)} broker(s) are registered.",
        )
    if num_partitions > MAX_PARTITIONS_PER_REQUEST:  # Kafka's controller bounds one operation's records
        raise TopicError(ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request.")
    return spread(num_partitions, replication_factor, alive, 0)


def new_partitions(
    topic: Topic | None,
    name: str,
    count: int,
    assignments: list[list[int]] | None,
    *,
    registered: set[int],
    alive: list[int],
    spread: Spread,
) -> tuple[int, list[list[int]]]:
    """(the current partition count, the replicas of each new partition) for CreatePartitions
    raising ``topic`` to ``count``, or TopicError."""
    if topic is None:
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    current = len(topic.partitions)
    if count == current:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if count < current:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {name} currently has {current} partition(s); {count} would not be an increase.",
        )
    additional = count - current
    if assignments is not None and len(assignments) != additional:
        raise TopicError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
            "assignment(s) were specified.",
        )
    if additional > MAX_PARTITIONS_PER_REQUEST:  # Kafka's controller bounds one operation's records
        raise TopicError(ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request.")
    replication = len(topic.partitions[0].replicas)
    if assignments is not None:
        for i, replicas in enumerate(assignments):
            problem = manual_assignment_error(replicas, registered, replication)
            if problem is None and not set(replicas) & set(alive):
                problem = (
                    "All brokers specified in the manual partition assignment for partition "
                    f"{current + i} are fenced or in controlled shutdown."
                )
            if problem is not None:
                raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
        return current, [list(a) for a in assignments]
    if not alive:
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication} time(s): All brokers are currently fenced "
            "or in controlled shutdown.",
        )
    return current, spread(additional, replication, alive, current)

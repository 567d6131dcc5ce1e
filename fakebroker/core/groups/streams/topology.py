"""A streams group's topology (what its first member sends) and its configured form: the
partition counts Kafka decides for the internal topics, the tasks per subtopology, and the
status the members get while the topology cannot run (Kafka's ``InternalTopicManager``,
``RepartitionTopics``, ``CopartitionedTopicsEnforcer``, ``ChangelogTopics``).

``configure`` is pure: topology + the partition counts of existing topics in, a
:class:`ConfiguredTopology` out. A topology Kafka calls invalid raises
:class:`InvalidTopology` (STREAMS_INVALID_TOPOLOGY, 130, with Kafka's message).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import field

from ....lazy_dataclasses import dataclass


class Status(enum.IntEnum):
    """StreamsGroupHeartbeatResponse.Status codes."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6


class InvalidTopology(Exception):
    """StreamsInvalidTopologyException: the heartbeat fails with STREAMS_INVALID_TOPOLOGY."""


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int = 0  # 0: decided by the coordinator
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CopartitionGroup:
    """Indices into a subtopology's source topics and repartition-source topics."""

    source_topics: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    @property
    def stateful(self) -> bool:
        return bool(self.state_changelog_topics)

    def copartitioned_names(self) -> list[set[str]]:
        out = []
        for group in self.copartition_groups:
            names = {self.source_topics[i] for i in group.source_topics if 0 <= i < len(self.source_topics)}
            names |= {
                self.repartition_source_topics[i].name
                for i in group.repartition_source_topics
                if 0 <= i < len(self.repartition_source_topics)
            }
            out.append(names)
        return out


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    def by_id(self) -> dict[str, Subtopology]:
        return {s.subtopology_id: s for s in self.subtopologies}

    def same_as(self, other: Topology) -> bool:
        """Kafka's equality: same epoch, same subtopologies by id (their order is free), every
        list inside in the same order."""
        return self.epoch == other.epoch and self.by_id() == other.by_id()

    def topic_names(self) -> list[str]:
        """Every topic the topology names (the API layer authorizes and validates them), in
        Kafka's order (``KafkaApis.handleStreamsGroupHeartbeat``): per subtopology its source,
        repartition sink, repartition source and changelog topics, each name once."""
        out: list[str] = []
        for s in self.subtopologies:
            out += list(s.source_topics) + list(s.repartition_sink_topics)
            out += [t.name for t in s.repartition_source_topics] + [t.name for t in s.state_changelog_topics]
        return list(dict.fromkeys(out))

    def required_topics(self) -> set[str]:
        out: set[str] = set()
        for s in self.subtopologies:
            out.update(s.source_topics)
            out.update(t.name for t in s.repartition_source_topics)
            out.update(t.name for t in s.state_changelog_topics)
        return out


@dataclass(frozen=True)
class TopicToCreate:
    """A CreatableTopic the coordinator asks for: Kafka's API layer creates it."""

    name: str
    partitions: int
    replication_factor: int  # -1: the broker default
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ConfiguredTopology:
    epoch: int
    tasks: dict[str, int] = field(default_factory=dict)  # subtopology id -> number of tasks (empty: unknown)
    internal_counts: dict[str, int] = field(default_factory=dict)  # decided partitions of internal topics
    to_create: tuple[TopicToCreate, ...] = ()
    status: tuple[Status, str] | None = None  # MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL

    @property
    def ready(self) -> bool:
        return self.status is None


def summarize(topics: list[str] | set[str]) -> str:
    """Kafka's ``summarizeTopics``: at most three names, then how many more, in the order of
    ``topics`` (a set is sorted, as Kafka's TreeSet of missing source topics)."""
    names = sorted(topics) if isinstance(topics, set) else list(topics)
    text = ", ".join(names[:3])
    if len(names) > 3:
        text += f" and {len(names) - 3} additional topics"
    return text


class _Incorrect(Exception):
    """A topic configuration failure that is a status, not an error."""


def _java_map(counts: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) + "}"


def configure(topology: Topology, existing: Mapping[str, int]) -> ConfiguredTopology:
    """``InternalTopicManager.configureTopics``: ``existing`` maps each existing topic to its
    partition count. Raises :class:`InvalidTopology` for what Kafka answers with 130."""
    missing = {t for s in topology.subtopologies for t in s.source_topics if t not in existing}
    if missing:
        return ConfiguredTopology(
            topology.epoch, status=(Status.MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} are missing.")
        )
    decided: dict[str, int] = {}

    def count(topic: str) -> int | None:
        return existing[topic] if topic in existing else decided.get(topic)

    try:
        _repartition_counts(topology, existing, decided)
        _copartition(topology, decided, count)
        for sub in topology.subtopologies:  # ChangelogTopics: as many as the subtopology has tasks
            for info in sub.state_changelog_topics:
                decided[info.name] = _tasks_of(sub, count)
    except _Incorrect as exc:
        return ConfiguredTopology(topology.epoch, status=(Status.INCORRECTLY_PARTITIONED_TOPICS, str(exc)))
    tasks = {s.subtopology_id: _tasks_of(s, count) for s in topology.subtopologies}
    wanted: dict[str, TopicToCreate] = {}
    for sub in topology.subtopologies:
        for info in list(sub.repartition_source_topics) + list(sub.state_changelog_topics):
            rf = info.replication_factor if info.replication_factor != 0 else -1
            wanted[info.name] = TopicToCreate(info.name, decided[info.name], rf, info.configs)
    for name in sorted(topology.required_topics()):
        expected = wanted.get(name)
        if name in existing and expected is not None:
            del wanted[name]
            if existing[name] != expected.partitions:
                detail = (
                    f"Existing topic {name} has different number of partitions: "
                    f"expected {expected.partitions}, found {existing[name]}"
                )
                return ConfiguredTopology(topology.epoch, status=(Status.INCORRECTLY_PARTITIONED_TOPICS, detail))
    to_create = tuple(wanted[n] for n in sorted(wanted))
    status = None
    if to_create:
        from .assignor import java_hash_map_order  # on first use: a cluster without streams groups never needs it

        # InternalTopicManager.missingInternalTopics names them in its HashMap's order
        names = summarize(java_hash_map_order(list(wanted)))
        status = (Status.MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {names}")
    return ConfiguredTopology(topology.epoch, tasks, dict(decided), to_create, status)


def _tasks_of(sub: Subtopology, count: Callable[[str], int | None]) -> int:
    counts = [count(t) for t in list(sub.source_topics) + [i.name for i in sub.repartition_source_topics]]
    known = [c for c in counts if c is not None]
    if not known:
        raise InvalidTopology(f"No source topics found for subtopology {sub.subtopology_id}")
    return max(known)


def _repartition_counts(topology: Topology, existing: Mapping[str, int], decided: dict[str, int]) -> None:
    """RepartitionTopics (``computeRepartitionTopicPartitionCount``): a fixed count where the
    topology says so; else, round after round, each repartition sink topic of a subtopology
    gets the largest count of that subtopology's repartition source and source topics (the
    first writer to know one decides). A round without progress while some sink is still
    unknown is a loop; a repartition source nobody writes is never decided."""
    counts: dict[str, int] = {}
    for sub in topology.subtopologies:
        for info in sub.repartition_source_topics:
            if info.partitions != 0:
                counts[info.name] = info.partitions
    from .assignor import java_hash_map_order  # on first use: a cluster without streams groups never needs it

    by_id = topology.by_id()
    subs = [by_id[sid] for sid in java_hash_map_order(list(by_id))]  # StreamsTopology's HashMap
    needed = True
    while needed:
        needed = progress = False
        for sub in subs:
            for sink in sub.repartition_sink_topics:
                if sink in counts:
                    continue
                best: int | None = None
                for info in sub.repartition_source_topics:
                    candidate = counts.get(info.name)
                    if candidate is not None and (best is None or candidate > best):
                        best = candidate
                for source in sub.source_topics:
                    candidate = existing.get(source)
                    if candidate is not None and (best is None or candidate > best):
                        best = candidate
                if best is None:
                    needed = True
                else:
                    counts[sink] = best
                    progress = True
        if needed and not progress:
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics. "
                "There may be loops in the topology that cannot be resolved."
            )
    for sub in topology.subtopologies:
        if any(info.name not in counts for info in sub.repartition_source_topics):
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics, "
                "because a repartition source topic is never used as a sink topic."
            )
    decided.update(counts)


def _copartition(topology: Topology, decided: dict[str, int], count: Callable[[str], int | None]) -> None:
    """CopartitionedTopicsEnforcer: the topics of a co-partition group get one count."""
    fixed = {i.name for s in topology.subtopologies for i in s.repartition_source_topics if i.partitions != 0}
    repartition = {i.name for s in topology.subtopologies for i in s.repartition_source_topics}
    for sub in topology.subtopologies:
        for group in sub.copartitioned_names():
            if not group:
                continue
            internal = {t for t in group if t in repartition}
            external = {t: count(t) or 0 for t in group if t not in repartition}
            if not external:
                enforced = {t: decided[t] for t in internal if t in fixed}
                if enforced and len(set(enforced.values())) > 1:
                    raise _Incorrect(
                        "Following topics do not have the same number of partitions: "
                        f"[{_java_map({t: decided[t] for t in internal})}]"
                    )
                target = next(iter(enforced.values())) if enforced else max(decided.get(t, 0) for t in internal)
                if target == 0:
                    raise InvalidTopology(f"Could not validate the copartitioning of topics: {sorted(internal)}")
            else:
                values = set(external.values())
                if len(values) > 1:
                    raise _Incorrect(
                        f"Following topics do not have the same number of partitions: [{_java_map(external)}]"
                    )
                target = next(iter(values))
            for topic in sorted(internal):
                if topic in fixed and decided[topic] != target:
                    raise _Incorrect(
                        f"Number of partitions [{decided[topic]}] of repartition topic [{topic}] doesn't match "
                        f"number of partitions [{target}] of the source topic."
                    )
                decided[topic] = target

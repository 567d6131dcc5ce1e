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
from dataclasses import dataclass, field


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
        """Every topic the topology names (the API layer authorizes and validates them)."""
        out: list[str] = []
        for s in self.subtopologies:
            out += list(s.source_topics) + list(s.repartition_sink_topics)
            out += [t.name for t in s.state_changelog_topics] + [t.name for t in s.repartition_source_topics]
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
    """Kafka's ``summarizeTopics``: at most three names, then how many more."""
    names = sorted(topics)
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
    missing = sorted({t for s in topology.subtopologies for t in s.source_topics if t not in existing})
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
        status = (Status.MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {summarize(list(wanted))}")
    return ConfiguredTopology(topology.epoch, tasks, dict(decided), to_create, status)


def _tasks_of(sub: Subtopology, count: Callable[[str], int | None]) -> int:
    counts = [count(t) for t in list(sub.source_topics) + [i.name for i in sub.repartition_source_topics]]
    known = [c for c in counts if c is not None]
    if not known:
        raise InvalidTopology(f"Subtopology {sub.subtopology_id} has no source topics.")
    return max(known)


def _repartition_counts(topology: Topology, existing: Mapping[str, int], decided: dict[str, int]) -> None:
    """RepartitionTopics: a fixed count where the topology says so; else, round after round,
    the largest source count of the subtopologies writing to it."""
    infos = {i.name: i for s in topology.subtopologies for i in s.repartition_source_topics}
    for name, info in infos.items():
        if info.partitions != 0:
            decided[name] = info.partitions
    while True:
        needed = False
        progress = False
        for name in infos:
            if name in decided:
                continue
            best: int | None = None
            for sub in topology.subtopologies:
                if name not in sub.repartition_sink_topics:
                    continue
                for upstream in sub.source_topics:
                    if upstream in infos:
                        candidate = decided.get(upstream)
                    else:
                        candidate = existing.get(upstream)
                    if candidate is not None and (best is None or candidate > best):
                        best = candidate
                for upstream_info in sub.repartition_source_topics:
                    candidate = decided.get(upstream_info.name)
                    if candidate is not None and (best is None or candidate > best):
                        best = candidate
            if best is None:
                needed = True
            else:
                decided[name] = best
                progress = True
        if not needed:
            return
        if not progress:
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics, make sure all user input "
                "topics are created and all Pattern subscriptions match at least one topic in the cluster"
            )


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

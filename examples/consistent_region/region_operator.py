"""A checkpointing stream operator in the style of a "consistent region".

Each member of a consumer group reads its partitions of ``topic`` and folds the records
into per-key running totals (count and sum), kept per partition. Every ``interval`` seconds
the region takes a checkpoint: every current member contributes its partitions' state
together with the next offset to read, and the checkpoint is complete once all of them
have. A complete checkpoint is *merged* over the previous one, so a partition nobody owned
at that moment keeps its older entry.

On any revocation (a member joins or leaves, partitions are added) the region resets: every
member drops what it computed since the last complete checkpoint, and whoever owns a
partition afterwards starts from that checkpoint's state and offset (``on_assign`` seeks
there; a partition without an entry starts from offset 0 with empty state). Partitions
added at run time reach the group through the consumers' metadata refresh and a rebalance.

Why the result is exact: a member only folds the record whose offset is the next one it
expects for that partition, and it loads (state, offset) from the checkpoint as one pair.
So every entry of every checkpoint is the fold of exactly the records before its offset,
whoever computed it and however often the region rewound. The in-process
``CheckpointStore`` stands for the region's checkpoint storage; Kafka commits are made after
each complete checkpoint for lag monitoring only.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition

State = dict[str, tuple[int, int]]  # key -> (count, sum) for one partition


@dataclass(frozen=True)
class Checkpoint:
    id: int
    offsets: dict[int, int]  # partition -> next offset to read
    state: dict[int, State]  # partition -> that partition's per-key totals

    def totals(self) -> dict[str, tuple[int, int]]:
        return merge_totals(self.state.values())


def merge_totals(states: object) -> dict[str, tuple[int, int]]:
    """Per-key (count, sum) over the given per-partition states."""
    counts: Counter[str] = Counter()
    sums: Counter[str] = Counter()
    for state in states:  # type: ignore[attr-defined]
        for key, (count, total) in state.items():
            counts[key] += count
            sums[key] += total
    return {key: (counts[key], sums[key]) for key in counts}


@dataclass
class Pending:
    id: int
    epoch: int
    expected: set[str]
    offsets: dict[int, int] = field(default_factory=dict)
    state: dict[int, State] = field(default_factory=dict)
    contributed: set[str] = field(default_factory=set)
    complete: bool = False


class CheckpointStore:
    """The region's checkpoint storage and bookkeeping (in-process, shared by the members)."""

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self.epoch = 0  # bumped by every reset; state from an older epoch is never checkpointed
        self.completed = Checkpoint(0, {}, {})
        self.pending: Pending | None = None
        self.members: set[str] = set()
        self.resets = 0
        self.aborted = 0
        self.history: list[int] = []  # ids of complete checkpoints
        self._last_begin = 0.0
        self._next_id = 1  # an aborted checkpoint's id is not reused

    def join(self, member: str) -> None:
        self.members.add(member)

    def leave(self, member: str) -> None:
        self.members.discard(member)
        self._abort()

    def reset(self) -> None:
        """A member was revoked: the region rewinds to ``completed``."""
        self.epoch += 1
        self.resets += 1
        self._abort()

    def _abort(self) -> None:
        if self.pending is not None:
            self.aborted += 1
            self.pending = None

    def maybe_begin(self, now: float) -> None:
        if self.pending is None and self.members and now - self._last_begin >= self.interval:
            self._last_begin = now
            self.pending = Pending(self._next_id, self.epoch, set(self.members))
            self._next_id += 1

    def contribute(self, member: str, epoch: int, offsets: dict[int, int], state: dict[int, State]) -> Pending | None:
        """Add a member's part to the pending checkpoint; returns it if the part was taken."""
        pending = self.pending
        if pending is None or epoch != pending.epoch or member not in pending.expected or member in pending.contributed:
            return None
        if set(offsets) & set(pending.offsets):  # two owners of one partition: not a cut, try again later
            self._abort()
            return None
        pending.offsets.update(offsets)
        pending.state.update(state)
        pending.contributed.add(member)
        if pending.contributed == pending.expected:
            self.completed = Checkpoint(
                pending.id, {**self.completed.offsets, **pending.offsets}, {**self.completed.state, **pending.state}
            )
            self.history.append(pending.id)
            pending.complete = True
            self.pending = None
        return pending


class RegionMember:
    """One consumer of the region; ``step()`` polls, folds records and takes part in checkpoints."""

    def __init__(self, store: CheckpointStore, bootstrap: str, group: str, topic: str, name: str, **settings: object):
        self.store = store
        self.topic = topic
        self.name = name
        self.epoch = store.epoch
        self.state: dict[int, State] = {}
        self.next_offset: dict[int, int] = {}  # partition -> offset of the next record to fold
        self.processed = 0  # records folded, including ones a reset threw away
        self.discarded = 0  # records folded and then thrown away by a reset
        self.skipped = 0  # deliveries that were not the next expected record (before a seek took effect)
        self._saved = 0  # ``processed`` at the point a reset rewinds to (the last complete checkpoint)
        self._part: tuple[Pending, int] | None = None  # our part of the pending checkpoint, and ``processed`` then
        self._committed_id = 0
        self._reseek: set[int] = set()
        store.join(name)
        # Eager assignment: every rebalance revokes everything, so every rebalance is a reset.
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "partition.assignment.strategy": "roundrobin",
                **settings,
            }
        )
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)

    # -- rebalance callbacks ------------------------------------------------------------------
    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.store.reset()
        self._drop()
        self.state, self.next_offset = {}, {}
        self._reseek.clear()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._drop()
        for tp in partitions:
            tp.offset = self._load(tp.partition)
        consumer.assign(partitions)

    # -- checkpoint state -----------------------------------------------------------------------
    def _drop(self) -> None:
        """Forget everything folded since the last complete checkpoint."""
        if self._part is not None and self._part[0].complete:
            # our part made it into a checkpoint that completed since our last step: it is saved,
            # not thrown away (a rebalance callback can come before the step that would note it)
            self._saved = self._part[1]
        self.discarded += self.processed - self._saved
        self._saved, self._part = self.processed, None
        self.epoch = self.store.epoch

    def _load(self, partition: int) -> int:
        checkpoint = self.store.completed
        offset = checkpoint.offsets.get(partition, 0)  # logs here are never truncated: 0 is the start
        self.state[partition] = dict(checkpoint.state.get(partition, {}))
        self.next_offset[partition] = offset
        return offset

    def _rewind(self) -> None:
        """Another member was revoked: reload our partitions from the checkpoint and seek."""
        self._drop()
        for partition in list(self.next_offset):
            self._load(partition)
            self._reseek.add(partition)

    def _seek(self) -> None:
        for partition in list(self._reseek):
            try:
                self.consumer.seek(TopicPartition(self.topic, partition, self.next_offset[partition]))
                self._reseek.discard(partition)
            except KafkaException:  # not fetching yet: try again next step
                pass

    # -- work ---------------------------------------------------------------------------------
    def step(self, timeout: float = 0.01, batch: int = 100) -> None:
        if self.epoch != self.store.epoch:
            self._rewind()
        self._seek()
        for message in self.consumer.consume(batch, timeout):
            if message.error():
                continue
            partition, offset = message.partition(), message.offset()
            expected = self.next_offset.get(partition)
            if expected is None or offset != expected:
                # Not ours any more, or fetched before a seek: fold nothing. Ahead of what we
                # expect means the fetch position is wrong, so seek again.
                self.skipped += 1
                if expected is not None and offset > expected:
                    self._reseek.add(partition)
                continue
            key = message.key().decode()
            count, total = self.state[partition].get(key, (0, 0))
            self.state[partition][key] = (count + 1, total + int(message.value()))
            self.next_offset[partition] = offset + 1
            self.processed += 1
        self._checkpoint()

    def _checkpoint(self) -> None:
        pending = self.store.pending
        if pending is not None and pending.epoch == self.epoch and self.name not in pending.contributed:
            state = {p: dict(s) for p, s in self.state.items()}
            if self.store.contribute(self.name, self.epoch, dict(self.next_offset), state):
                self._part = (pending, self.processed)
        if self._part is not None and self._part[0].complete:
            self._saved, self._part = self._part[1], None
        done = self.store.completed
        if done.id > self._committed_id:
            self._committed_id = done.id
            mine = [TopicPartition(self.topic, p, done.offsets[p]) for p in self.next_offset if p in done.offsets]
            if mine:
                try:
                    self.consumer.commit(offsets=mine, asynchronous=True)  # for lag dashboards only
                except KafkaException:
                    pass

    def stop(self) -> None:
        self.store.leave(self.name)
        self.consumer.close()  # leaves the group: on_revoke resets the region


class Region:
    """The operator: a checkpoint store and its members, stepped from one thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, *, interval: float = 0.25, **settings: object):
        self.store = CheckpointStore(interval)
        self.bootstrap, self.group, self.topic, self.settings = bootstrap, group, topic, settings
        self.members: dict[str, RegionMember] = {}
        self.retired: list[RegionMember] = []

    def add(self, name: str) -> RegionMember:
        member = RegionMember(self.store, self.bootstrap, self.group, self.topic, name, **self.settings)
        self.members[name] = member
        return member

    def remove(self, name: str) -> None:
        member = self.members.pop(name)
        member.stop()
        self.retired.append(member)

    def step(self) -> None:
        self.store.maybe_begin(time.monotonic())
        for member in list(self.members.values()):
            member.step()

    def live_totals(self) -> dict[str, tuple[int, int]]:
        return merge_totals(s for m in self.members.values() for s in m.state.values())

    def stop(self) -> None:
        for name in list(self.members):
            self.remove(name)

    @property
    def everyone(self) -> list[RegionMember]:
        return [*self.retired, *self.members.values()]

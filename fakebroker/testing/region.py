"""A checkpointing-consumer harness: the consistent-region pattern, with your fold and your client.

A *region* is a set of consumers in one group that fold their partitions' records into state
and save it together in checkpoints, so that on any trouble the whole region goes back to the
last checkpoint and redoes the work from there. You give the fold; the harness does the rest:

- **drain**: every ``interval`` seconds a checkpoint begins; each member stops polling,
  finishes the records it already holds, then hands in its partitions' state and the next
  offset of each;
- **merge**: once every expected member has, the parts are merged over the previous
  checkpoint (a partition nobody owned keeps its older entry) and saved in the
  :class:`CheckpointStore`; a checkpoint not complete within ``merge_timeout`` is aborted and
  the region resets (a member that crashed or hangs never hands in its part; it is left out of
  later checkpoints until it steps again);
- **commit**: after each checkpoint every member commits its partitions' checkpointed offsets
  *synchronously*; a failed commit (the generation moved on, the coordinator is gone) resets
  the region, since the group may already have handed those partitions to someone else;
- **reset**: on a revocation, a lost partition, a merge timeout or a failed commit, every member
  throws away what it folded since the last checkpoint and reloads state and offset from it; a
  partition with no entry starts from ``initial(partition)`` at offset 0 (the *initial state*;
  :meth:`Region.reset` with ``to_initial=True`` drops all checkpoints and starts the region over).

It is exact because a member folds only the record at the offset it expects next and loads
(state, offset) from a checkpoint as one pair: every entry of every checkpoint is the fold of
exactly the records before its offset, however often the region rewound.

Members are stepped from one thread (:meth:`Region.step`). A member's consumer is anything with
the small :class:`RegionConsumer` interface; :class:`ConfluentRegionConsumer` adapts a
confluent-kafka ``Consumer``. A minimal run, with a scripted consumer standing in for a client::

    >>> class Scripted:  # one partition, three records, no rebalances
    ...     def __init__(self): self.records, self.commits = [Record(0, i, "k", i) for i in range(3)], []
    ...     def subscribe(self, on_assign, on_revoke): self.position = on_assign([0])[0]
    ...     def poll(self, max_records, timeout):
    ...         out = self.records[self.position:self.position + max_records]
    ...         self.position += len(out)
    ...         return out
    ...     def seek(self, partition, offset): self.position = offset; return True
    ...     def commit(self, offsets): self.commits.append(offsets)
    ...     def close(self): pass
    >>> clock = iter(range(100)).__next__
    >>> region = Region(initial=lambda p: 0, fold=lambda total, r: total + r.value, interval=2, clock=clock)
    >>> consumer = Scripted()
    >>> member = region.add("m1", consumer)
    >>> for _ in range(3):  # poll and fold; drain, checkpoint and commit; poll nothing new
    ...     region.step()
    >>> region.store.latest.offsets, region.store.latest.state, consumer.commits
    ({0: 3}, {0: 3}, [{0: 3}])
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

S = TypeVar("S")
OnAssign = Callable[[list[int]], dict[int, int]]  # partitions arrived -> the offset to start each at
OnRevoke = Callable[[list[int]], None]  # partitions taken or lost


class Record(NamedTuple):
    """One record as the fold sees it."""

    partition: int
    offset: int
    key: Any
    value: Any


class CommitFailed(Exception):
    """A synchronous commit was refused (what :meth:`RegionConsumer.commit` raises)."""


class RegionConsumer(Protocol):
    """What the harness needs of one member's consumer (one topic)."""

    def subscribe(self, on_assign: OnAssign, on_revoke: OnRevoke) -> None:
        """Join the group; call ``on_assign(partitions)`` when partitions arrive and start each at
        the offset it returns; call ``on_revoke(partitions)`` when they are taken or lost."""

    def poll(self, max_records: int, timeout: float) -> list[Record]: ...

    def seek(self, partition: int, offset: int) -> bool:
        """Move the fetch position; False if the client cannot yet (try again next step)."""

    def commit(self, offsets: dict[int, int]) -> None:
        """Commit synchronously; raise :class:`CommitFailed` if the broker refuses."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class Checkpoint(Generic[S]):
    id: int
    offsets: Mapping[int, int]  # partition -> next offset to read
    state: Mapping[int, S]  # partition -> the fold of every record before that offset


class CheckpointStore(Generic[S]):
    """Where complete checkpoints are kept (in process; subclass to persist them)."""

    def __init__(self) -> None:
        self.latest: Checkpoint[S] = Checkpoint(0, {}, {})
        self.history: list[int] = []  # ids of the checkpoints saved, oldest first

    def save(self, checkpoint_id: int, offsets: Mapping[int, int], state: Mapping[int, S]) -> Checkpoint[S]:
        """Merge the parts over the latest checkpoint and keep the result."""
        self.latest = Checkpoint(checkpoint_id, {**self.latest.offsets, **offsets}, {**self.latest.state, **state})
        self.history.append(checkpoint_id)
        return self.latest

    def clear(self) -> None:
        """Forget every checkpoint: the region starts over from the initial state."""
        self.latest = Checkpoint(0, {}, {})


@dataclass
class _Pending:
    id: int
    epoch: int
    deadline: float
    expected: set[str]
    offsets: dict[int, int] = field(default_factory=dict)
    state: dict[int, Any] = field(default_factory=dict)
    handed_in: set[str] = field(default_factory=set)


class Region(Generic[S]):
    """The region: its members, the checkpoint in progress and the resets so far."""

    def __init__(
        self,
        *,
        initial: Callable[[int], S],
        fold: Callable[[S, Record], S],
        interval: float = 0.25,
        merge_timeout: float = 2.0,
        batch: int = 100,
        store: CheckpointStore[S] | None = None,
        clock: Callable[[], float] = time.monotonic,
        snapshot: Callable[[S], S] = copy.deepcopy,
    ) -> None:
        if interval <= 0 or merge_timeout <= 0 or batch < 1:
            raise ValueError("interval and merge_timeout must be > 0 and batch >= 1")
        self.initial, self.fold, self.snapshot = initial, fold, snapshot
        self.interval, self.merge_timeout, self.batch, self.clock = interval, merge_timeout, batch, clock
        self.store: CheckpointStore[S] = store if store is not None else CheckpointStore()
        self.members: dict[str, RegionMember[S]] = {}
        self.gone: list[RegionMember[S]] = []  # removed members, for their counters
        self.epoch = 0  # bumped by every reset: work of an older epoch is never checkpointed
        self.resets: list[str] = []  # why each reset happened
        self.aborted = 0  # checkpoints begun and not completed
        self.pending: _Pending | None = None
        self._next_id = 1
        self._last_begin = clock()

    # -- membership ---------------------------------------------------------------------------
    def add(self, name: str, consumer: RegionConsumer) -> RegionMember[S]:
        if name in self.members:
            raise ValueError(f"the region already has a member named {name!r}")
        member = RegionMember(self, name, consumer)
        self.members[name] = member
        consumer.subscribe(member.on_assign, member.on_revoke)
        return member

    def remove(self, name: str) -> None:
        """The member leaves cleanly (its consumer closes; the group rebalances)."""
        member = self._member(name)
        if member.alive:
            member.consumer.close()  # its revocation resets the region and drops its unsaved work
        else:  # crashed: what it folded and no checkpoint kept is lost
            member._drop()
            member.consumer.close()
        member.alive = False
        del self.members[name]
        self.gone.append(member)

    def crash(self, name: str) -> RegionMember[S]:
        """The member stops dead: never stepped again, its consumer neither polled nor closed
        (cut its connections too, and the group expires its session). The region is not told:
        it notices when the member misses a checkpoint's merge. :meth:`remove` closes it later."""
        member = self._member(name)
        member.alive = False
        return member

    def _member(self, name: str) -> RegionMember[S]:
        if name not in self.members:
            raise ValueError(f"no member {name!r}; members: {sorted(self.members)}")
        return self.members[name]

    # -- checkpoints and resets ---------------------------------------------------------------
    def reset(self, reason: str, *, to_initial: bool = False) -> None:
        """Every member goes back to the latest checkpoint (or, ``to_initial``, to the start)."""
        if to_initial:
            self.store.clear()
        self.epoch += 1
        self.resets.append(reason)
        self._abort()

    def _abort(self) -> None:
        if self.pending is not None:
            self.aborted += 1
            self.pending = None

    def step(self) -> None:
        """Begin a checkpoint when one is due, time out a late one, and step every member once."""
        now = self.clock()
        pending = self.pending
        if pending is not None and now > pending.deadline:
            late = sorted(pending.expected - pending.handed_in)
            for name in late:  # left out until they step again
                if name in self.members:
                    self.members[name].responsive = False
            missing = ", ".join(late)
            self.reset(f"checkpoint {pending.id} not merged within {self.merge_timeout} s: no part from {missing}")
        elif pending is None and now - self._last_begin >= self.interval:
            expected = {name for name, m in self.members.items() if m.responsive}
            if expected:
                self._last_begin = now
                self.pending = _Pending(self._next_id, self.epoch, now + self.merge_timeout, expected)
                self._next_id += 1
        live = [member for member in self.members.values() if member.alive]
        for member in live:
            member.step()
        for member in live:  # after everyone has stepped, so a checkpoint completed by the last is committed by all
            member.commit()

    def _hand_in(self, member: RegionMember[S], offsets: dict[int, int], state: dict[int, S]) -> None:
        pending = self.pending
        assert pending is not None
        if set(offsets) & set(pending.offsets):  # two owners of one partition: not a cut; try later
            self.aborted += 1
            self.pending = None
            return
        pending.offsets.update(offsets)
        pending.state.update(state)
        pending.handed_in.add(member.name)
        if pending.handed_in == pending.expected:
            self.store.save(pending.id, pending.offsets, pending.state)
            self.pending = None

    # -- what a test reads --------------------------------------------------------------------
    @property
    def everyone(self) -> list[RegionMember[S]]:
        return [*self.gone, *self.members.values()]

    def live_state(self) -> dict[int, S]:
        """Partition -> state, as the members now hold it."""
        return {p: s for m in self.members.values() if m.alive for p, s in m.state.items()}

    def stop(self) -> None:
        for name in list(self.members):
            self.remove(name)


class RegionMember(Generic[S]):
    """One consumer of the region and what it folded since the last checkpoint."""

    def __init__(self, region: Region[S], name: str, consumer: RegionConsumer) -> None:
        self.region, self.name, self.consumer = region, name, consumer
        self.alive = True  # False once removed or crashed: never stepped, its callbacks change nothing
        self.responsive = True  # False after it missed a merge; True again when it steps
        self.epoch = region.epoch
        self.state: dict[int, S] = {}
        self.next_offset: dict[int, int] = {}  # partition -> offset of the next record to fold
        self.held: list[Record] = []  # polled, not yet folded
        self.processed = 0  # records folded, including ones a reset threw away
        self.discarded = 0  # records folded and then thrown away by a reset
        self.skipped = 0  # deliveries that were not the next expected record
        self.commits = 0  # synchronous commits that succeeded
        self.failed_commits = 0
        self._saved = 0  # ``processed`` as of the last checkpoint holding our work
        self._handed_in: tuple[int, int] | None = None  # (checkpoint id, ``processed`` then)
        self._committed_id = 0
        self._committed: dict[int, int] = {}  # partition -> offset we last committed
        self._reseek: set[int] = set()

    # -- rebalance callbacks ------------------------------------------------------------------
    def on_revoke(self, partitions: list[int]) -> None:
        if not self.alive:
            return
        self.region.reset(f"{self.name} lost partitions {sorted(partitions)}")
        self._drop()
        self.state, self.next_offset, self.held = {}, {}, []
        self._reseek.clear()

    def on_assign(self, partitions: list[int]) -> dict[int, int]:
        if not self.alive:
            return {}
        self._drop()
        return {p: self._load(p) for p in partitions}

    # -- state --------------------------------------------------------------------------------
    def _drop(self) -> None:
        """Forget everything folded since the last checkpoint that holds our work."""
        self._note_saved()
        self.discarded += self.processed - self._saved
        self._saved, self._handed_in = self.processed, None
        self.epoch = self.region.epoch

    def _note_saved(self) -> None:
        if self._handed_in is not None and self.region.store.latest.id >= self._handed_in[0]:
            if self._handed_in[0] in self.region.store.history:
                self._saved = self._handed_in[1]
            self._handed_in = None

    def _load(self, partition: int) -> int:
        latest = self.region.store.latest
        offset = latest.offsets.get(partition, 0)
        saved = latest.state.get(partition)
        self.state[partition] = self.region.snapshot(saved) if saved is not None else self.region.initial(partition)
        self.next_offset[partition] = offset
        return offset

    def _rewind(self) -> None:
        """Another member caused a reset: reload our partitions and seek back."""
        self._drop()
        self.held = []
        for partition in list(self.next_offset):
            self._load(partition)
            self._reseek.add(partition)

    # -- work ---------------------------------------------------------------------------------
    def step(self, timeout: float = 0.01) -> None:
        """Poll and fold, or, while a checkpoint waits for our part, drain and hand it in."""
        region = self.region
        self.responsive = True
        if self.epoch != region.epoch:
            self._rewind()
        for partition in list(self._reseek):
            if self.consumer.seek(partition, self.next_offset[partition]):
                self._reseek.discard(partition)
        pending = region.pending
        draining = pending is not None and pending.epoch == self.epoch and self.name in pending.expected
        if draining:  # finish what we hold, poll nothing new, hand in our part
            assert pending is not None
            if self.name not in pending.handed_in:
                self._fold(self.held)
                self.held = []
                self._handed_in = (pending.id, self.processed)
                region._hand_in(self, dict(self.next_offset), {p: region.snapshot(s) for p, s in self.state.items()})
        else:
            if not self.held:
                self.held = self.consumer.poll(region.batch, timeout)
            self._fold(self.held[: region.batch])
            self.held = self.held[region.batch :]

    def _fold(self, records: list[Record]) -> None:
        for record in records:
            expected = self.next_offset.get(record.partition)
            if expected is None or record.offset != expected:
                # not ours any more, or fetched before a seek took effect: fold nothing; ahead of
                # what we expect means the fetch position is wrong, so seek again
                self.skipped += 1
                if expected is not None and record.offset > expected:
                    self._reseek.add(record.partition)
                continue
            self.state[record.partition] = self.region.fold(self.state[record.partition], record)
            self.next_offset[record.partition] = record.offset + 1
            self.processed += 1

    def commit(self) -> None:
        """Commit, synchronously, our partitions' offsets of a checkpoint newer than our last commit."""
        self._note_saved()
        latest = self.region.store.latest
        if latest.id <= self._committed_id:
            return
        self._committed_id = latest.id
        mine = {
            p: latest.offsets[p]
            for p in self.next_offset
            if p in latest.offsets and self._committed.get(p) != latest.offsets[p]
        }
        if not mine:
            return
        try:
            self.consumer.commit(mine)
        except CommitFailed as exc:
            self.failed_commits += 1
            self.region.reset(f"{self.name}'s commit failed: {exc}")
        else:
            self.commits += 1
            self._committed.update(mine)


class ConfluentRegionConsumer:
    """:class:`RegionConsumer` over a confluent-kafka ``Consumer`` reading ``topic`` (create it
    with ``enable.auto.commit`` false; the eager ``range`` or ``roundrobin`` assignors make every
    rebalance a revocation, so every rebalance resets the region)."""

    def __init__(self, consumer: Any, topic: str) -> None:
        from confluent_kafka import KafkaException, TopicPartition  # only where confluent-kafka is used

        self.consumer, self.topic = consumer, topic
        self._tp, self._kafka_exception = TopicPartition, KafkaException

    def subscribe(self, on_assign: OnAssign, on_revoke: OnRevoke) -> None:
        def assigned(consumer: Any, partitions: list[Any]) -> None:
            starts = on_assign([tp.partition for tp in partitions])
            consumer.assign([self._tp(self.topic, p, starts[p]) for p in starts])

        def revoked(consumer: Any, partitions: list[Any]) -> None:
            on_revoke([tp.partition for tp in partitions])

        self.consumer.subscribe([self.topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)

    def poll(self, max_records: int, timeout: float) -> list[Record]:
        return [
            Record(m.partition(), m.offset(), m.key(), m.value())
            for m in self.consumer.consume(max_records, timeout)
            if m.error() is None
        ]

    def seek(self, partition: int, offset: int) -> bool:
        try:
            self.consumer.seek(self._tp(self.topic, partition, offset))
        except self._kafka_exception:  # not fetching it yet
            return False
        return True

    def commit(self, offsets: dict[int, int]) -> None:
        tps = [self._tp(self.topic, p, o) for p, o in offsets.items()]
        try:
            answered = self.consumer.commit(offsets=tps, asynchronous=False)
        except self._kafka_exception as exc:
            raise CommitFailed(str(exc.args[0])) from exc
        refused = [tp for tp in answered or [] if tp.error is not None]
        if refused:
            raise CommitFailed(", ".join(f"partition {tp.partition}: {tp.error}" for tp in refused))

    def close(self) -> None:
        self.consumer.close()

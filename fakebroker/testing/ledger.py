"""A delivery ledger: record what producers had acknowledged and what consumers processed, then
check the run's delivery guarantees (lost records, duplicates and their causes, per-key order,
commits beyond what was processed) in three lines.

Usage (confluent-kafka here; any client works). The cluster link is optional: with it, each
duplicate is explained by the group event between its first and its repeated processing, read
from ``cluster.events``, and with ``group`` the group's commits are checked too::

    import time

    from confluent_kafka import Consumer, Producer

    from fakebroker import DeliveryLedger, FakeCluster

    with FakeCluster(brokers=3, topics={"orders": 6}).run_in_thread() as cluster:
        ledger = DeliveryLedger(cluster, group="billing")
        servers = cluster.bootstrap_servers
        producer = Producer({"bootstrap.servers": servers, "on_delivery": ledger.on_delivery})
        for i in range(100):
            producer.produce("orders", key=b"k%d" % (i % 10), value=b"v%d" % i)
        producer.flush(10)
        consumer = Consumer(
            {"bootstrap.servers": servers, "group.id": "billing", "auto.offset.reset": "earliest",
             "enable.auto.commit": False}
        )
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 20
        while ledger.verdict().lost and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                ledger.record("c1", msg)  # handled: now commit it
                consumer.commit(msg, asynchronous=False)
        consumer.close()
        ledger.assert_exactly_once()  # or assert_at_least_once(max_duplicates=...)
        print(ledger.verdict().summary())

``ledger.record(member, message)`` takes a confluent-kafka ``Message`` or a kafka-python or
aiokafka ``ConsumerRecord``; ``ledger.produced_from(metadata)`` a kafka-python or aiokafka
``RecordMetadata``; ``produced``/``processed``/``committed`` take plain values. Recording is
thread-safe (one lock), so consumers on threads may share one ledger.

The verdict's ``exactly_once`` means nothing lost and nothing processed twice, ``at_least_once``
nothing lost; out-of-order processing and commits beyond what was processed are reported beside
them (a commit past a transaction marker or a compacted gap is not a problem: records the ledger
saw produced are what a commit must not skip). ``assert_exactly_once()`` and
``assert_at_least_once()`` also fail on a commit beyond what was processed — a consumer that
commits a record before processing it loses the record whenever it stops in between, even if
no run of the test stops it there — naming each commit's partition and offsets, the
``offset_committed`` event (or the ``committed()`` call) that made it and what became of the
record; ``allow_commits_beyond=True`` accepts them (at most once on purpose).

Duplicates are what at least once allows, but not every duplicate: a consumer that commits after
processing reads a record again only from where its position was set anew (the committed offset,
after a rebalance, a rejoin, a coordinator or leader move). With a cluster, the verdict's
``duplicates_beyond_policy`` names the repeats nothing explains so (see ``policy.py``): a member
that processed a record again with nothing that sets a position back since it was handed it
(``rewind``: it sought back, or ran a batch twice), or a record read again although the group's
committed offset had been past it since before the reader's position was set (``behind_commit``,
with ``group``: it started from an offset of its own). ``assert_at_least_once()`` fails on them,
naming each; ``allow_duplicates_beyond_policy=True`` accepts them (re-processing on purpose).

Share groups (KIP-932) are queues: :meth:`DeliveryLedger.queue_verdict` and
:meth:`DeliveryLedger.assert_queue_delivery` check that every record was processed at least once
across the group or archived, explain each repeat by the share event that brought the record
back (``released``, ``lock expired``, ``member left``), and list the archived records with their
reason and delivery count (see ``queue.py``). ``record`` notes a share consumer message's
delivery count; a poison record's test is three lines::

    ledger = DeliveryLedger(cluster, group="workers")   # ... ledger.record("w1", msg) as they come
    verdict = ledger.assert_queue_delivery(archived={("jobs", 0, 3): "delivery limit"})
    assert verdict.archived[0].deliveries == 5 and verdict.repeats_by_cause() == {"released": 4}
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .policy import BeyondPolicy, beyond_policy
from .queue import Archived, ArchivedSpec, Processing, QueueVerdict, Repeat, ShareHistory, check, judge

if TYPE_CHECKING:
    from ..cluster import Event, FakeCluster

__all__ = [
    "Archived",
    "BeyondPolicy",
    "CommitBeyond",
    "DeliveryLedger",
    "Duplicate",
    "OutOfOrder",
    "QueueVerdict",
    "RecordId",
    "Repeat",
    "Reread",
    "Verdict",
]

SHOWN = 5  # how many of each problem the summary lists
_MEMBER_ID = re.compile(r"\b(\S+?)-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_GROUP_KINDS = frozenset(
    {
        "rebalance_started",
        "generation_started",
        "member_removed",
        "member_expired",
        "group_unloaded",
        "group_loaded",
        "group_epoch_bumped",
        "offset_committed",
    }
)


class RecordId(NamedTuple):
    """One record's place: a lost record in :attr:`Verdict.lost`."""

    topic: str
    partition: int
    offset: int


class Duplicate(NamedTuple):
    """A record processed more than once: ``members`` in processing order; ``cause`` names the group
    event between its first and its second processing (None without a cluster, or none found)."""

    topic: str
    partition: int
    offset: int
    key: bytes | str | None
    times: int
    members: tuple[str, ...]
    cause: str | None


class Reread(NamedTuple):
    """One repeated processing of a record: by ``member``, when the cluster's event log held
    ``events`` events (where the timeline marks it); ``cause`` as in :class:`Duplicate`."""

    member: str
    topic: str
    partition: int
    offset: int
    events: int
    cause: str | None


class OutOfOrder(NamedTuple):
    """A record processed for the first time after ``after_offset``, a later record of its key and
    partition, had already been processed."""

    key: bytes | str | None
    topic: str
    partition: int
    offset: int
    after_offset: int


class CommitBeyond(NamedTuple):
    """A commit of next offset ``committed`` while a record below it that was produced had not been
    processed: a consumer that commits before it processes loses the record if it stops in between.

    - ``processed_up_to``: the highest offset processed in the partition by then (-1: none);
    - ``unprocessed``: the first record the commit skipped: produced, not processed by then, at
      or above the partition's commit before (an older one skipped what lies below) and below
      ``committed`` (None: the ledger saw nothing produced in the partition);
    - ``event``: the ``seq`` of the group's ``offset_committed`` event that made the commit (None
      for a commit reported through :meth:`DeliveryLedger.committed`, by ``member``);
    - ``outcome``: what became of ``unprocessed``: ``"processed later by <member>"``, or
      ``"lost"`` with the group event after the commit that handed the partition on, e.g.
      ``"lost after generation 3 (rebalance: member b-1a2b3c4d left)"``."""

    topic: str
    partition: int
    committed: int
    processed_up_to: int
    unprocessed: int | None = None
    event: int | None = None
    member: str | None = None
    outcome: str | None = None

    def describe(self) -> str:
        """One line: the partition, the offsets, the commit that exposed it and what followed."""
        by = f"offset_committed event #{self.event}" if self.event is not None else f"committed() by {self.member}"
        skipped = f"offset {self.unprocessed}" if self.unprocessed is not None else "the records below it"
        text = (
            f"{self.topic}[{self.partition}]: next offset {self.committed} committed ({by}) while {skipped} "
            f"was not processed (processed up to {self.processed_up_to})"
        )
        return text + (f"; offset {self.unprocessed} was {self.outcome}" if self.outcome else "")


@dataclass(frozen=True)
class Verdict:
    """What a ledger found. ``produced`` counts the distinct acknowledged records, ``processed`` every
    processing (repeats included)."""

    produced: int
    """Distinct records the producers had acknowledged."""
    processed: int
    """Every processing the consumers reported, repeats included."""
    lost: list[RecordId] = field(default_factory=list)
    """Acknowledged records never processed."""
    duplicates: list[Duplicate] = field(default_factory=list)
    """Records processed more than once, each with its members and cause."""
    out_of_order: list[OutOfOrder] = field(default_factory=list)
    """Records of one key processed before an older record of that key."""
    committed_beyond_processed: list[CommitBeyond] = field(default_factory=list)
    """Commits that ran ahead of the processing (they fail both assertions unless allowed)."""
    duplicates_beyond_policy: list[BeyondPolicy] = field(default_factory=list)
    """Repeated processings at-least-once with commits after processing does not allow: a
    record processed again by a member that had processed it, with nothing that sets a position
    back since it was handed it (``rewind``), or one the group's committed offset had stayed past
    since before the reader's position was set (``behind_commit``); see :mod:`.policy`. Only
    with a cluster (and ``group=`` for the commits); each is also in :attr:`duplicates`."""

    @property
    def exactly_once(self) -> bool:
        """Every acknowledged record processed, none twice."""
        return not self.lost and not self.duplicates

    @property
    def at_least_once(self) -> bool:
        """Every acknowledged record processed (duplicates allowed)."""
        return not self.lost

    def duplicates_by_cause(self) -> Counter[str | None]:
        """How many extra processings each cause explains (a record processed 3 times counts 2)."""
        out: Counter[str | None] = Counter()
        for d in self.duplicates:
            out[d.cause] += d.times - 1
        return out

    def summary(self) -> str:
        """A few lines: the counts, the first few of each problem, duplicates grouped by cause."""
        extra = sum(d.times - 1 for d in self.duplicates)
        lines = [
            f"delivery: {self.produced} produced, {self.processed} processed; {len(self.lost)} lost, "
            f"{len(self.duplicates)} duplicated ({extra} extra), {len(self.out_of_order)} out of order, "
            f"{len(self.committed_beyond_processed)} commits beyond processed"
            + (
                f", {len(self.duplicates_beyond_policy)} processed again beyond the commit policy"
                if self.duplicates_beyond_policy
                else ""
            )
        ]

        def some(title: str, items: list[Any], show: Any) -> None:
            if items:
                more = f" (first {SHOWN} of {len(items)})" if len(items) > SHOWN else ""
                lines.append(f"{title}{more}: " + ", ".join(show(i) for i in items[:SHOWN]))

        some("lost", self.lost, lambda r: f"{r.topic}[{r.partition}]@{r.offset}")
        if self.duplicates:
            lines.append("duplicates by cause:")
            for cause, n in self.duplicates_by_cause().most_common():
                lines.append(f"  {n} x {cause or 'no cause found'}")
        some(
            "duplicates",
            self.duplicates,
            lambda d: f"{d.topic}[{d.partition}]@{d.offset} x{d.times} by {'/'.join(d.members)}",
        )
        some(
            "processed again beyond the commit policy",
            self.duplicates_beyond_policy,
            lambda b: f"{b.topic}[{b.partition}]@{b.offset} by {b.member} ({b.rule.replace('_', ' ')})",
        )
        some(
            "out of order",
            self.out_of_order,
            lambda o: f"key {o.key!r} {o.topic}[{o.partition}]@{o.offset} after @{o.after_offset}",
        )
        some(
            "committed beyond processed",
            self.committed_beyond_processed,
            lambda c: f"{c.topic}[{c.partition}] committed {c.committed}, processed up to {c.processed_up_to}",
        )
        return "\n".join(lines)


class _Entry(NamedTuple):
    at: int  # the ledger's own order
    events: int  # cluster.event_count when recorded (0 without a cluster)
    member: str
    topic: str
    partition: int
    offset: int  # the offset processed, or the next offset committed
    key: Any
    delivery: int | None = None  # the record's delivery count (share groups), when known


class DeliveryLedger:
    """Records acknowledged and processed records (thread-safe) and judges them: :meth:`verdict`.

    ``cluster`` (optional) links each record to the cluster's event log (it notes
    ``cluster.event_count`` with each), so duplicates get a cause: from ``group``'s events, or
    any group's without one. With ``group``, that group's own ``offset_committed`` events are
    checked like the commits the application reports through :meth:`committed`. Only events
    after the ledger was made are read."""

    def __init__(self, cluster: FakeCluster | None = None, group: str | None = None) -> None:
        self.cluster = cluster
        self.group = group
        self._lock = threading.Lock()
        self._at = 0
        self._start = cluster.event_count if cluster is not None else 0
        self._produced: dict[tuple[str, int, int], Any] = {}  # acknowledged record -> key
        self._processed: list[_Entry] = []
        self._commits: list[_Entry] = []

    # -- recording ---------------------------------------------------------------------------------
    def _stamp(self) -> tuple[int, int]:
        self._at += 1
        return self._at, self.cluster.event_count if self.cluster is not None else 0

    def produced(self, topic: str, partition: int, offset: int, key: Any = None) -> None:
        """An acknowledged record (the producer got its offset)."""
        with self._lock:
            self._produced[(topic, int(partition), int(offset))] = key

    def processed(
        self, member: str, topic: str, partition: int, offset: int, key: Any = None, delivery_count: int | None = None
    ) -> None:
        """``member`` (any name the test gives a consumer) handled the record; ``delivery_count``:
        which delivery of it, for a share group's record (1 the first time)."""
        count = int(delivery_count) if delivery_count is not None and delivery_count > 0 else None
        with self._lock:
            self._processed.append(_Entry(*self._stamp(), str(member), topic, int(partition), int(offset), key, count))

    def committed(self, member: str, topic: str, partition: int, next_offset: int) -> None:
        """The application committed ``next_offset`` (the next record to read) for the partition."""
        with self._lock:
            self._commits.append(_Entry(*self._stamp(), str(member), topic, int(partition), int(next_offset), None))

    def on_delivery(self, err: Any, msg: Any) -> None:
        """confluent-kafka's ``on_delivery``/``callback``: records successes (offset known) only."""
        if err is None and msg is not None and msg.offset() is not None and msg.offset() >= 0:
            self.produced(msg.topic(), msg.partition(), msg.offset(), msg.key())

    def produced_from(self, metadata: Any, key: Any = None) -> None:
        """A kafka-python or aiokafka ``RecordMetadata`` (``send(...).get()``, ``send_and_wait``)."""
        self.produced(metadata.topic, metadata.partition, metadata.offset, key)

    def record(self, member: str, message: Any) -> None:
        """``member`` processed ``message``: a confluent-kafka ``Message`` (methods; a
        ``ShareConsumer``'s with its delivery count) or a kafka-python/aiokafka
        ``ConsumerRecord`` (attributes). An error message is refused."""
        if callable(getattr(message, "topic", None)):
            error = message.error() if callable(getattr(message, "error", None)) else None
            if error is not None:
                raise ValueError(f"not a record but an error: {error}")
            count = message.delivery_count() if callable(getattr(message, "delivery_count", None)) else None
            self.processed(member, message.topic(), message.partition(), message.offset(), message.key(), count)
        else:
            self.processed(member, message.topic, message.partition, message.offset, message.key)

    # -- judging -----------------------------------------------------------------------------------
    def verdict(self) -> Verdict:
        """Judge everything recorded so far (recording may go on afterwards)."""
        with self._lock:
            produced = dict(self._produced)
            processed = list(self._processed)
            commits = list(self._commits)
        everything, events, share = self._history()
        seqs = [e.seq for e in events]
        keys = {**{(e.topic, e.partition, e.offset): e.key for e in processed if e.key is not None}, **produced}

        seen: dict[tuple[str, int, int], list[_Entry]] = {}
        out_of_order: list[OutOfOrder] = []
        highest_of_key: dict[tuple[str, int, Any], int] = {}
        for e in processed:
            where = (e.topic, e.partition, e.offset)
            first = where not in seen
            seen.setdefault(where, []).append(e)
            key = keys.get(where)
            if first and key is not None:
                highest = highest_of_key.get((e.topic, e.partition, key), -1)
                if highest > e.offset:
                    out_of_order.append(OutOfOrder(key, e.topic, e.partition, e.offset, highest))
                highest_of_key[(e.topic, e.partition, key)] = max(highest, e.offset)

        duplicates = [
            Duplicate(
                *where, keys.get(where), len(es), tuple(x.member for x in es), _why(events, seqs, share, es[0], es[1])
            )
            for where, es in sorted(seen.items())
            if len(es) > 1
        ]
        lost = sorted(RecordId(*where) for where in produced if where not in seen)
        beyond = self._beyond(processed, commits, events, set(produced))
        policy = []
        if self.cluster is not None:
            reads = [Processing(e.member, e.topic, e.partition, e.offset, e.events, e.delivery) for e in processed]
            policy = beyond_policy(reads, everything, self.group, start=self._start, queued=share.deliveries)
        return Verdict(len(produced), len(processed), lost, duplicates, out_of_order, beyond, policy)

    def rereads(self) -> list[Reread]:
        """Every processing of a record after its first, in the order they happened (what the
        timeline marks on the member's lane: ``timeline(cluster, ledger=ledger)``)."""
        with self._lock:
            processed = list(self._processed)
        events, share = self._events()
        seqs = [e.seq for e in events]
        last: dict[tuple[str, int, int], _Entry] = {}
        out: list[Reread] = []
        for e in processed:
            where = (e.topic, e.partition, e.offset)
            before = last.get(where)
            last[where] = e
            if before is not None:  # caused by what happened since the processing before this one
                out.append(Reread(e.member, *where, e.events, _why(events, seqs, share, before, e)))
        return out

    def _events(self) -> tuple[list[Event], ShareHistory]:
        """The group events that explain duplicates, and the share group's record history."""
        _, events, share = self._history()
        return events, share

    def _history(self) -> tuple[list[Event], list[Event], ShareHistory]:
        """Every event since the ledger began, the group events that explain duplicates among
        them, and the share group's record history."""
        if self.cluster is None:
            return [], [], ShareHistory(())
        everything = self.cluster.events_since(self._start)
        events = [
            e
            for e in everything
            if (e.kind in _GROUP_KINDS and (self.group is None or e.group == self.group)) or e.kind == "broker_stopped"
        ]
        return everything, events, ShareHistory(everything, self.group)

    # -- queue semantics (share groups) ------------------------------------------------------------
    def queue_verdict(self) -> QueueVerdict:
        """Judge everything recorded so far as a queue (a share group, KIP-932): every acknowledged
        record processed at least once across the group or archived by it, each repeat with the
        cause the cluster's share events give (``released``, ``lock expired``, ``member left``),
        and the archived records with their reason and delivery count."""
        with self._lock:
            produced = list(self._produced)
            processed = [
                Processing(e.member, e.topic, e.partition, e.offset, e.events, e.delivery) for e in self._processed
            ]
        _, share = self._events()
        return judge(produced, processed, share, RecordId)

    def assert_queue_delivery(
        self, archived: ArchivedSpec = (), *, max_repeats: int | None = None, explained: bool | None = None
    ) -> QueueVerdict:
        """Raise AssertionError (with the summary) unless every record was processed at least once
        or archived, exactly the ``archived`` records were archived (a collection of (topic,
        partition, offset), a mapping of them to the reason expected, e.g. ``{("jobs", 0, 3):
        "delivery limit"}``, or how many), every repeat has a cause (``explained``; default: when
        the ledger has a cluster to read causes from), and at most ``max_repeats`` happened."""
        verdict = self.queue_verdict()
        check(verdict, archived, max_repeats, self.cluster is not None if explained is None else explained)
        return verdict

    def _beyond(
        self, processed: list[_Entry], commits: list[_Entry], events: list[Event], produced: set[tuple[str, int, int]]
    ) -> list[CommitBeyond]:
        # Each check: (timed by the cluster's event count?, when, topic, partition, next offset
        # committed, the offset_committed event's seq or None, the member reporting it or None,
        # the cluster's event count at the commit).
        checks: list[tuple[bool, int, str, int, int, int | None, str | None, int]] = [
            (False, c.at, c.topic, c.partition, c.offset, None, c.member, c.events) for c in commits
        ]
        if self.group is not None:
            checks += [
                (True, e.seq - 1, e.details["topic"], e.details["partition"], e.details["offset"], e.seq, None, e.seq)
                for e in events
                if e.kind == "offset_committed"
            ]
        firsts: dict[tuple[str, int], list[_Entry]] = {}  # partition -> first processings, in order
        first_of: dict[tuple[str, int, int], _Entry] = {}
        for p in processed:
            if (p.topic, p.partition, p.offset) not in first_of:
                first_of[(p.topic, p.partition, p.offset)] = p
                firsts.setdefault((p.topic, p.partition), []).append(p)
        made: dict[tuple[str, int], list[int]] = {}
        for t, part, o in sorted(produced):
            made.setdefault((t, part), []).append(o)
        seqs = [e.seq for e in events]
        generations = [i for i, e in enumerate(events) if e.kind in ("generation_started", "group_epoch_bumped")]
        found: dict[int, CommitBeyond] = {}
        reported: set[tuple[str, int, int]] = set()
        for by_events in (False, True):
            # One sweep in time order per clock: what was processed before each commit only grows.
            sweeps: dict[tuple[str, int], _Sweep] = {}
            mine = sorted((c[1], i, c) for i, c in enumerate(checks) if c[0] == by_events)
            for when, i, (_, _, topic, partition, committed, seq, member, at_event) in mine:
                tp = (topic, partition)
                sweep = sweeps.setdefault(tp, _Sweep(firsts.get(tp, []), made.get(tp), by_events))
                sweep.advance(when)
                skipped = sweep.skipped(committed)
                if (
                    committed > sweep.up_to + 1
                    and (skipped is not None or sweep.produced is None)  # nothing seen produced: the plain rule
                    and (topic, partition, committed) not in reported
                ):
                    reported.add((topic, partition, committed))
                    outcome = None
                    if skipped is not None:
                        later = first_of.get((topic, partition, skipped))
                        if later is not None:
                            outcome = f"processed later by {later.member}"
                        else:  # what handed the partition on after the commit, if the log shows it
                            cause = _loss_cause(events, seqs, generations, at_event)
                            outcome = "lost" + (f" after {cause}" if cause else "")
                    found[i] = CommitBeyond(
                        topic, partition, committed, sweep.up_to, skipped, seq, member if seq is None else None, outcome
                    )
        return [found[i] for i in sorted(found)]

    def assert_exactly_once(self, *, allow_commits_beyond: bool = False) -> Verdict:
        """Raise AssertionError (with the summary) unless nothing was lost or processed twice and
        no commit ran ahead of the processing (:attr:`Verdict.committed_beyond_processed`: a
        consumer that commits a record before processing it loses the record if it stops in
        between, even when no run of the test happens to stop it there). The message names each
        such commit's partition, offsets and the event that made it (see
        :meth:`CommitBeyond.describe`). ``allow_commits_beyond=True``: judge only what was lost
        and repeated (an at-most-once consumer on purpose)."""
        verdict = self.verdict()
        _check(verdict, [] if verdict.exactly_once else ["not exactly once"], allow_commits_beyond, True)
        return verdict

    def assert_at_least_once(
        self,
        max_duplicates: int | None = None,
        *,
        allow_commits_beyond: bool = False,
        allow_duplicates_beyond_policy: bool = False,
    ) -> Verdict:
        """Raise AssertionError (with the summary) if a record was lost, if more than
        ``max_duplicates`` extra processings happened, if a commit ran ahead of the processing
        (unless ``allow_commits_beyond``; see :meth:`assert_exactly_once`), or if a record was
        processed again where at-least-once with commits after processing allows no repeat
        (:attr:`Verdict.duplicates_beyond_policy`: a member went back to a record it had
        processed with nothing since that sets a position back, or read a record the group had
        committed past before its position was set), unless ``allow_duplicates_beyond_policy``
        (a consumer that re-processes on purpose). That check needs the ledger's cluster (and
        ``group=`` for the commits)."""
        verdict = self.verdict()
        extra = sum(d.times - 1 for d in verdict.duplicates)
        problems = []
        if not verdict.at_least_once:
            problems.append("not at least once")
        elif max_duplicates is not None and extra > max_duplicates:
            problems.append(f"{extra} duplicates (at most {max_duplicates} allowed)")
        _check(verdict, problems, allow_commits_beyond, allow_duplicates_beyond_policy)
        return verdict


def _loss_cause(events: list[Event], seqs: list[int], generations: list[int], after: int) -> str | None:
    """The group event after event number ``after`` (a commit) that handed a partition on: the
    window up to the first generation (or epoch) after it, so each costs a few events, not the log."""
    lo = bisect.bisect_right(seqs, after)
    k = bisect.bisect_left(generations, lo)
    hi = generations[k] + 1 if k < len(generations) else len(events)
    if hi <= lo:
        return None
    return _cause(events, seqs, _Entry(0, after, "", "", 0, 0, None), _Entry(0, seqs[hi - 1], "", "", 0, 0, None))


def _check(verdict: Verdict, problems: list[str], allow_commits_beyond: bool, allow_beyond_policy: bool) -> None:
    """Raise AssertionError with ``problems`` and, unless allowed, the commits beyond processing
    (the lost records' first: their commit explains the loss) and the repeats beyond the commit
    policy, then the summary."""
    beyond = [] if allow_commits_beyond else verdict.committed_beyond_processed
    again = [] if allow_beyond_policy else verdict.duplicates_beyond_policy
    if not problems and not beyond and not again:
        return
    lines = []
    if beyond:
        problems.append(f"{len(beyond)} commit{'s' if len(beyond) > 1 else ''} beyond what was processed")
        shown = sorted(beyond, key=lambda c: not (c.outcome or "").startswith("lost"))[:SHOWN]
        lines.append(
            "a commit ran ahead of the processing (a consumer that commits a record before it has processed it "
            "loses the record if it stops in between)"
            + (f"; first {SHOWN} of {len(beyond)}" if len(beyond) > SHOWN else "")
            + ":"
        )
        lines += [f"  {c.describe()}" for c in shown]
        lines.append("(pass allow_commits_beyond=True to accept commits ahead of processing: at most once on purpose)")
    if again:
        problems.append(
            f"{len(again)} record{'s' if len(again) > 1 else ''} processed again beyond what at least once allows"
        )
        lines.append(
            "a record was processed again though no position was set at or below it (at least once with commits "
            "after processing re-reads only from the committed offset, after a rebalance, rejoin, coordinator or "
            "leader move)" + (f"; first {SHOWN} of {len(again)}" if len(again) > SHOWN else "") + ":"
        )
        lines += [f"  {b.describe()}" for b in again[:SHOWN]]
        lines.append("(pass allow_duplicates_beyond_policy=True to accept them: a consumer re-processing on purpose)")
    raise AssertionError("; ".join(problems) + ":\n" + "\n".join([*lines, verdict.summary()]))


class _Sweep:
    """One partition's processing as of a moment that only moves forward."""

    def __init__(self, firsts: list[_Entry], produced: list[int] | None, by_events: bool) -> None:
        self.firsts, self.produced, self.by_events = firsts, produced, by_events
        self.done: set[int] = set()
        self.up_to = -1  # the highest offset processed so far
        self._next = 0  # the next first processing to take in
        self._lowest = 0  # index in ``produced`` of the lowest produced offset perhaps not processed yet
        self.previous: int | None = None  # the partition's last commit checked (on this clock)

    def advance(self, when: int) -> None:
        while self._next < len(self.firsts):
            e = self.firsts[self._next]
            if (e.events if self.by_events else e.at) > when:
                break
            self.done.add(e.offset)
            self.up_to = max(self.up_to, e.offset)
            self._next += 1

    def skipped(self, committed: int) -> int | None:
        """The lowest record that committing ``committed`` skips first: produced, not processed
        yet, at or above the partition's previous commit (below it, an earlier commit skipped it)
        and below ``committed``; None: none (or nothing seen produced in the partition). Records
        below ``_lowest`` are all processed, so the scan starts at the later of the two."""
        previous, self.previous = self.previous, committed
        if self.produced is None:
            return None
        while self._lowest < len(self.produced) and self.produced[self._lowest] in self.done:
            self._lowest += 1
        i = self._lowest if previous is None else max(self._lowest, bisect.bisect_left(self.produced, previous))
        while i < len(self.produced) and self.produced[i] < committed:
            if self.produced[i] not in self.done:
                return self.produced[i]
            i += 1
        return None


# -- causes ------------------------------------------------------------------------------------------
def _short(text: str) -> str:
    """Member ids ("<client id>-<uuid>") shortened to "<client id>-<first 8 hex digits>"."""
    return _MEMBER_ID.sub(lambda m: f"{m.group(1)}-{m.group(2)}", text)


def _who(e: Event) -> str:
    return _short(str(e.details.get("member", "?")))


def _why(events: list[Event], seqs: list[int], share: ShareHistory, first: _Entry, again: _Entry) -> str | None:
    """Why ``again`` processed a record ``first`` had: a share group's event (the record came
    back to the group), else the group event between them."""
    where = (first.topic, first.partition, first.offset)
    if share and where in share.deliveries:
        return share.repeat_cause(where, (first.events, first.delivery), (again.events, again.delivery))[0]
    return _cause(events, seqs, first, again)


def _cause(events: list[Event], seqs: list[int], first: _Entry, again: _Entry) -> str | None:
    """The group event between two processings of one record that explains the second, as text
    (``seqs``: the events' places, for bisecting)."""
    lo, hi = bisect.bisect_right(seqs, first.events), bisect.bisect_right(seqs, again.events)
    window = [e for e in events[lo:hi] if e.kind != "offset_committed"]
    if not window:
        return None
    parts: list[str] = []
    if any(e.kind in ("group_unloaded", "group_loaded") for e in window):
        stopped = [e.broker for e in window if e.kind == "broker_stopped"]
        parts.append("coordinator moved" + (f" (broker {stopped[0]} stopped)" if stopped else ""))
    gen = next((e for e in window if e.kind in ("generation_started", "group_epoch_bumped")), None)
    until = gen.seq if gen is not None else again.events
    removed = [e for e in window if e.kind in ("member_removed", "member_expired") and e.seq <= until]
    forced = [e for e in removed if e.kind == "member_expired" or e.details.get("reason") != "left the group"]
    if forced:
        e = forced[0]
        reason = "session expired" if e.kind == "member_expired" else e.details["reason"]
        what = f"member {_who(e)} removed: {_short(str(reason))}"
    elif removed:
        what = "rebalance: " + ", ".join(f"member {_who(e)} left" for e in removed)
    else:
        # the rebalance that led to the generation (it may have started before the first processing)
        start, end = (0, bisect.bisect_left(seqs, until)) if gen is not None else (lo, hi)
        group = gen.group if gen is not None else None
        rebalance = next(
            (
                events[j]
                for j in range(end - 1, start - 1, -1)
                if events[j].kind == "rebalance_started" and (group is None or events[j].group == group)
            ),
            None,
        )
        what = f"rebalance: {_short(str(rebalance.details['reason']))}" if rebalance is not None else ""
    if gen is not None:
        number = gen.details.get("generation", gen.details.get("epoch"))
        label = "generation" if gen.kind == "generation_started" else "epoch"
        parts.append(f"{label} {number}" + (f" ({what})" if what else ""))
    elif what:
        parts.append(what)
    if not parts:
        stopped = [e.broker for e in window if e.kind == "broker_stopped"]
        if stopped:
            parts.append(f"broker {stopped[0]} stopped")
    return "; ".join(parts) or None

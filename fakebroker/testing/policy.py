"""The duplicates at-least-once does not allow, for the delivery ledger.

A consumer that commits after it processes (at least once) processes a record a second time
only because its position in the partition was set anew: it reads again from the group's
committed offset after the partition moved (a rebalance, a restart or rejoin), or after a
coordinator or leader failure made its client look its position up again. So a record may be
processed again when the re-reader's position was set at or below it; :func:`beyond_policy`
names the repeats that no such setting explains.

What a member processes of a partition goes forward in *runs*: a run ends where the member's
next record of the partition is at or below the one before (it went back). A client hands out a
partition's records in batches, in order, each after the application processed the one before,
and may set a position while a batch is in hand (aiokafka rebalances beside the application):
so the batch holding a record of a run was handed out after the member's processing that came
before the run, and that is where the rules look from.

``rewind``
    A member processes a record it has processed itself before, and no event that can set a
    position happened from its processing of the partition before the run that held its earlier
    read (the ledger's beginning, for its first run there) until this one: no event of the group
    but a commit (no rebalance, join, leave, expiry, fencing, reconciliation, coordinator move),
    no broker stopping or starting, no leader move or deleted records in the partition. A
    consumer that seeks back, or runs a batch twice, does this (from its second run on: the
    first may have been handed out before the member's assignment settled).

``behind_commit``
    A member processes a record again (anyone processed it before) that the group's committed
    offset of the partition stayed past, without a break, from before the member's position
    that led to it was set until the member began the run it belongs to: the group had promised
    never to hand it out again. "Before the position was set": from the member's processing of
    the partition before the previous run, or, when that run or this one is the member's first
    in the partition, from the start of the latest rebalance that completed before its first
    run began (``rebalance_started`` or ``group_epoch_bumped``, completed by the next
    ``generation_started`` or ``target_assignment_computed``). A consumer that starts from an
    offset of its own (the beginning, a stale store) instead of the committed one does this. An
    old owner's commit that lands after the new owner looked its position up does not count.

Both rules need the cluster's event log (the ledger's ``cluster``), ``behind_commit`` also the
group (the ledger's ``group=``: its ``offset_committed`` events are the committed offsets); a
share group's records (queues: they come back by design) are never judged. Where the log
dropped events the rules would need, a repeat counts as explained.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from .queue import Processing

if TYPE_CHECKING:
    from ..cluster import Event

# Events outside a group that may set a consumer's position: a broker going or coming back (its
# partitions' leaders and its groups move), and, for one partition or topic, a leader move or a
# change of its log a client resets its position after.
BROKER_KINDS = frozenset({"broker_stopped", "broker_started"})
PARTITION_KINDS = frozenset({"leader_moved", "records_deleted", "segments_deleted"})
TOPIC_KINDS = frozenset({"topic_created", "topic_deleted", "topic_restored", "partitions_created"})
REBALANCE_STARTS = frozenset({"rebalance_started", "group_epoch_bumped"})
REBALANCE_ENDS = frozenset({"generation_started", "target_assignment_computed"})
COMMIT_KINDS = frozenset({"offset_committed", "offset_deleted"})
RESET_KINDS = frozenset({"group_deleted", "offsets_expired"})  # the group's offsets gone (expired: perhaps)


class BeyondPolicy(NamedTuple):
    """A processing of a record again that at-least-once with commits after processing does not
    allow, by ``member`` when the cluster's event log held ``events`` events. ``rule``:

    - ``"rewind"``: ``member`` had processed the record itself, and no event that sets a
      position happened after event ``since`` (its processing of the partition before the run
      that held its earlier read, or the ledger's beginning) up to this processing;
    - ``"behind_commit"``: the group's committed offset of the partition (the next offset to
      read) stayed at ``committed`` or above, past the record, from event ``since`` (before
      ``member``'s position that led to it was set) until ``member`` began reading on from it."""

    member: str
    topic: str
    partition: int
    offset: int
    events: int
    rule: str
    committed: int | None
    since: int

    def describe(self) -> str:
        """One line: the record, who processed it again, and why no position explains it."""
        where = f"{self.topic}[{self.partition}]@{self.offset}"
        if self.rule == "rewind":
            return (
                f"{where}: {self.member} processed it again after event #{self.events}, having processed it "
                f"before, and nothing set its position back after event #{self.since} (no rebalance, rejoin, "
                "coordinator or leader move)"
            )
        return (
            f"{where}: {self.member} processed it again after event #{self.events}, though the group's committed "
            f"offset had stayed at {self.committed} or above from event #{self.since}, before {self.member}'s "
            "position there was set, until it read on from it"
        )


class _Moves:
    """The places in the event log of the events that may set a consumer's position."""

    def __init__(self, events: Iterable[Event], group: str | None) -> None:
        self.anywhere: list[int] = []
        self.partition: dict[tuple[str, int], list[int]] = {}
        self.topic: dict[str, list[int]] = {}
        for e in events:
            if e.group is not None:
                if e.kind not in COMMIT_KINDS and (group is None or e.group == group):
                    self.anywhere.append(e.seq)
            elif e.kind in BROKER_KINDS:
                self.anywhere.append(e.seq)
            elif e.kind in PARTITION_KINDS:
                d = e.details
                self.partition.setdefault((d["topic"], d["partition"]), []).append(e.seq)
            elif e.kind in TOPIC_KINDS:
                self.topic.setdefault(e.details["topic"], []).append(e.seq)

    def latest(self, topic: str, partition: int, upto: int) -> int | None:
        """The last of them, for anything or for the partition, at or before ``upto``."""
        found = None
        for seqs in (self.anywhere, self.partition.get((topic, partition), ()), self.topic.get(topic, ())):
            i = bisect.bisect_right(seqs, upto)
            if i and (found is None or seqs[i - 1] > found):
                found = seqs[i - 1]
        return found

    def between(self, topic: str, partition: int, after: int, upto: int) -> bool:
        """Whether one of them, for anything or for the partition, is in (``after``, ``upto``]."""
        for seqs in (self.anywhere, self.partition.get((topic, partition), ()), self.topic.get(topic, ())):
            i = bisect.bisect_right(seqs, after)
            if i < len(seqs) and seqs[i] <= upto:
                return True
        return False


class _Commits:
    """A group's committed offset of each partition over the event log (-1: none known)."""

    def __init__(self, events: Iterable[Event], group: str) -> None:
        changes: dict[tuple[str, int], list[tuple[int, int]]] = {}
        resets: list[int] = []
        for e in events:
            if e.kind in COMMIT_KINDS and e.group == group:
                d = e.details
                value = d["offset"] if e.kind == "offset_committed" else -1
                changes.setdefault((d["topic"], d["partition"]), []).append((e.seq, value))
            elif e.kind in RESET_KINDS and e.group in (None, group):
                resets.append(e.seq)
        self._seqs: dict[tuple[str, int], list[int]] = {}
        self._values: dict[tuple[str, int], list[int]] = {}
        self._mins: dict[tuple[str, int], _RangeMin] = {}
        for tp, those in changes.items():
            merged = sorted(those + [(s, -1) for s in resets])
            self._seqs[tp] = [s for s, _ in merged]
            self._values[tp] = [v for _, v in merged]

    def lowest(self, topic: str, partition: int, since: int, upto: int) -> int:
        """The lowest committed offset of the partition from event ``since`` (the offset then)
        to event ``upto``; -1 where none is known."""
        tp = (topic, partition)
        seqs = self._seqs.get(tp)
        if not seqs:
            return -1
        values = self._values[tp]
        lo, hi = bisect.bisect_left(seqs, since), bisect.bisect_right(seqs, upto)
        low = values[lo - 1] if lo > 0 else -1
        if hi > lo:
            mins = self._mins.get(tp)
            if mins is None:
                mins = self._mins[tp] = _RangeMin(values)
            low = min(low, mins.lowest(lo, hi))
        return low


class _RangeMin:
    """The lowest of ``values[lo:hi]`` in constant time (a sparse table)."""

    def __init__(self, values: Sequence[int]) -> None:
        self.rows = [list(values)]
        width = 1
        while 2 * width <= len(values):
            row = self.rows[-1]
            self.rows.append([min(row[i], row[i + width]) for i in range(len(row) - width)])
            width *= 2

    def lowest(self, lo: int, hi: int) -> int:
        level = (hi - lo).bit_length() - 1
        row = self.rows[level]
        return min(row[lo], row[hi - (1 << level)])


def beyond_policy(
    processed: Sequence[Processing],
    events: Sequence[Event],
    group: str | None,
    *,
    start: int,
    queued: Collection[tuple[str, int, int]] = (),
) -> list[BeyondPolicy]:
    """The repeats of ``processed`` (in the order they happened) that no position explains, by
    the module's rules, read from ``events`` (the cluster's, after event ``start``, the ledger's
    beginning; the first of them tells whether older ones were dropped). ``group``: the ledger's
    (None: every group's events set positions, and commits are not judged); ``queued``: the
    share groups' records, never judged."""
    known_from = events[0].seq - 1 if events else start  # events up to this one are not in the log
    known_from = max(known_from, start)
    moves = _Moves(events, group)
    commits = _Commits(events, group) if group is not None else None
    ours = [e for e in events if e.group == group] if group is not None else []
    starts = [e.seq for e in ours if e.kind in REBALANCE_STARTS]
    ends = [e.seq for e in ours if e.kind in REBALANCE_ENDS]
    again: set[int] = set()  # indexes of the processings of a record processed before (by anyone)
    seen: set[tuple[str, int, int]] = set()
    by_reader: dict[tuple[str, str, int], list[int]] = {}
    for i, p in enumerate(processed):
        where = (p.topic, p.partition, p.offset)
        if where in seen and where not in queued and p.delivery is None:
            again.add(i)
        seen.add(where)
        by_reader.setdefault((p.member, p.topic, p.partition), []).append(i)
    found: dict[int, BeyondPolicy] = {}
    for (member, topic, partition), mine in by_reader.items():
        runs = _runs([processed[i].offset for i in mine])  # where each processing's run begins, in ``mine``

        def stamp(k: int) -> int:
            return processed[mine[k]].events

        def before_run(k: int) -> int | None:
            """Where to look from for the position behind run ``runs[k]``: the processing before
            the previous run began (after the first rebalance settled, for a first run)."""
            r = runs[k]
            if r == 0 or runs[r - 1] == 0:
                return _rebalance_before(starts, ends, stamp(0))
            return stamp(runs[r - 1] - 1)

        last: dict[int, int] = {}  # offset -> its latest place in ``mine``
        for k, i in enumerate(mine):
            p = processed[i]
            before = last.get(p.offset)
            last[p.offset] = k
            if i not in again:
                continue
            if before is not None:  # the member's own record again: nothing may have set its position
                r = runs[before]
                window = stamp(r - 1) if r > 0 else start
                if window >= known_from and not moves.between(topic, partition, window, p.events):
                    found[i] = BeyondPolicy(member, topic, partition, p.offset, p.events, "rewind", None, window)
                    continue
            if commits is None:
                continue
            since = before_run(k)
            if since is None or since <= known_from:
                continue
            low = commits.lowest(topic, partition, since, stamp(runs[k]))
            if low > p.offset:
                found[i] = BeyondPolicy(member, topic, partition, p.offset, p.events, "behind_commit", low, since)
    return [found[i] for i in sorted(found)]


def _runs(offsets: Sequence[int]) -> list[int]:
    """For each place, where its run begins: a run goes forward, and ends where the next offset
    is at or below the one before."""
    out: list[int] = []
    for k, o in enumerate(offsets):
        out.append(k if k == 0 or o <= offsets[k - 1] else out[-1])
    return out


def _rebalance_before(starts: list[int], ends: list[int], moment: int) -> int | None:
    """Where the latest rebalance to complete at or before event ``moment`` started: its first
    start after the completion before (None: none)."""
    k = bisect.bisect_right(ends, moment) - 1
    if k < 0:
        return None
    first = bisect.bisect_right(starts, ends[k - 1]) if k > 0 else 0
    if first < len(starts) and starts[first] < ends[k]:
        return starts[first]
    g = bisect.bisect_left(starts, ends[k]) - 1  # it has no start of its own: the one before
    return starts[g] if g >= 0 else None

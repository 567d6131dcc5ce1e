"""Queue semantics for the delivery ledger: share groups (KIP-932), where records, not
partitions, go to members, and a record comes back when its member releases it, its
acquisition lock expires or its member leaves, until its delivery limit archives it.

:class:`ShareHistory` reads a share group's record events (``share_records_acquired``,
``..._acknowledged``, ``..._released``, ``..._archived``) into each record's deliveries and how
each ended; the ledger's :meth:`~fakebroker.testing.ledger.DeliveryLedger.queue_verdict` asks it
why a record was processed again and which records were archived. A :class:`QueueVerdict` says
whether every record acknowledged by the producers was processed at least once across the
group or archived, and explains every repeat by its cause:

- ``released``: the member that had it released it (AcknowledgeType.RELEASE);
- ``lock expired``: its acquisition lock ran out before the member answered;
- ``member left``: the member's share session closed and it fetched nothing more (it closed
  or left); ``session closed`` when it went on fetching after (a dropped connection).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..cluster import Event

SHOWN = 5  # how many of each problem the summary lists
SHARE_KINDS = frozenset(
    {
        "share_records_acquired",
        "share_records_acknowledged",
        "share_records_released",
        "share_records_archived",
    }
)
Where = tuple[str, int, int]  # topic, partition, offset


class Repeat(NamedTuple):
    """One processing of a record after its first, by ``member`` (the ledger's name), in the
    record's ``delivery`` (its delivery count, when known); ``cause`` says why the record came
    back (None: no share event explains it, e.g. the application processed one delivery twice);
    ``holder`` is the client (or member id) that had it before; ``events`` is the cluster's
    event count when it was processed (where the timeline marks it)."""

    member: str
    topic: str
    partition: int
    offset: int
    delivery: int | None
    cause: str | None
    holder: str | None
    events: int


class Archived(NamedTuple):
    """A record the share group archived: never delivered again. ``reason`` is ``delivery
    limit`` (delivered ``deliveries`` times, the group's limit) or ``rejected``; ``processed``
    counts the ledger's processings of it."""

    topic: str
    partition: int
    offset: int
    reason: str
    deliveries: int
    processed: int


@dataclass(frozen=True)
class QueueVerdict:
    """What a ledger found under queue semantics. ``produced`` counts the distinct acknowledged
    records, ``processed`` every processing (repeats included); a record archived is handled
    (not lost), and listed in ``archived``."""

    produced: int
    processed: int
    lost: list[Any] = field(default_factory=list)  # RecordId
    repeats: list[Repeat] = field(default_factory=list)
    archived: list[Archived] = field(default_factory=list)

    @property
    def at_least_once(self) -> bool:
        """Every acknowledged record processed at least once, or archived."""
        return not self.lost

    @property
    def unexplained(self) -> list[Repeat]:
        """The repeats no share event explains."""
        return [r for r in self.repeats if r.cause is None]

    def repeats_by_cause(self) -> Counter[str | None]:
        """How many repeated processings each cause explains."""
        return Counter(r.cause for r in self.repeats)

    def summary(self) -> str:
        """A few lines: the counts, repeats by cause, the archived records, the first few lost."""
        lines = [
            f"queue delivery: {self.produced} produced, {self.processed} processed; {len(self.lost)} lost, "
            f"{len(self.archived)} archived, {len(self.repeats)} repeats ({len(self.unexplained)} unexplained)"
        ]

        def some(title: str, items: list[Any], show: Any) -> None:
            if items:
                more = f" (first {SHOWN} of {len(items)})" if len(items) > SHOWN else ""
                lines.append(f"{title}{more}: " + ", ".join(show(i) for i in items[:SHOWN]))

        if self.repeats:
            lines.append("repeats by cause:")
            for cause, n in self.repeats_by_cause().most_common():
                lines.append(f"  {n} x {cause or 'no cause found'}")
        some(
            "archived",
            self.archived,
            lambda a: f"{a.topic}[{a.partition}]@{a.offset} after {a.deliveries} deliveries ({a.reason})",
        )
        some("lost", self.lost, lambda r: f"{r.topic}[{r.partition}]@{r.offset}")
        some(
            "unexplained repeats",
            self.unexplained,
            lambda r: (
                f"{r.topic}[{r.partition}]@{r.offset} by {r.member}"
                + (f" (delivery {r.delivery})" if r.delivery else "")
            ),
        )
        return "\n".join(lines)


class _Delivery:
    """One acquisition of one record: when, by whom, its delivery count, and how it ended."""

    __slots__ = ("seq", "member", "client", "count", "end", "end_seq")

    def __init__(self, seq: int, member: str, client: str | None, count: int) -> None:
        self.seq, self.member, self.client, self.count = seq, member, client, count
        self.end: str | None = None  # accepted, released, rejected, lock expired, session closed, ...
        self.end_seq = 0


class ShareHistory:
    """Every record's deliveries in a share group (``group`` None: any), from the events.

    Acknowledgements and archiving name their offsets; a release (lock expiry, closed session)
    names only the member and partition, so it ends the deliveries of that member's records in
    that partition that no acknowledgement ended before the record's next delivery."""

    def __init__(self, events: Iterable[Event], group: str | None = None) -> None:
        self.deliveries: dict[Where, list[_Delivery]] = {}
        self.archived: dict[Where, str] = {}
        self._open: dict[tuple[str, int, str], list[_Delivery]] = {}  # (topic, partition, member) -> unanswered
        self._active: dict[str, list[int]] = {}  # member -> seqs of its acquisitions and acknowledgements
        for e in events:
            if e.kind in SHARE_KINDS and (group is None or e.group == group):
                self._take(e)

    def __bool__(self) -> bool:
        return bool(self.deliveries)

    def _take(self, e: Event) -> None:
        d = e.details
        member = str(d.get("member", ""))
        topic, partition = d["topic"], d["partition"]
        if e.kind == "share_records_acquired":
            self._active.setdefault(member, []).append(e.seq)
            open_ = self._open.setdefault((topic, partition, member), [])
            for o in range(d["first"], d["last"] + 1):
                delivery = _Delivery(e.seq, member, e.client_id, d["delivery_count"])
                self.deliveries.setdefault((topic, partition, o), []).append(delivery)
                open_.append(delivery)
        elif e.kind == "share_records_acknowledged":
            self._active.setdefault(member, []).append(e.seq)
            outcome = {"accept": "accepted", "release": "released", "reject": "rejected"}.get(
                d["outcome"], d["outcome"]
            )
            for o in range(d["first"], d["last"] + 1):
                got = self.deliveries.get((topic, partition, o))
                if got and got[-1].member == member and got[-1].end is None:
                    got[-1].end, got[-1].end_seq = outcome, e.seq
        elif e.kind == "share_records_released":
            # the oldest unanswered first: a lock expiry releases one acquisition, and the
            # oldest lock runs out first; a closed session releases every one
            key = (topic, partition, member)
            unanswered = [x for x in self._open.get(key, []) if x.end is None]
            count = int(d.get("records", len(unanswered)))
            for delivery in unanswered[:count]:
                delivery.end, delivery.end_seq = d["reason"], e.seq
            self._open[key] = unanswered[count:]
        elif e.kind == "share_records_archived":
            for o in range(d["first"], d["last"] + 1):
                self.archived[(topic, partition, o)] = d["reason"]

    def _cause(self, delivery: _Delivery) -> str | None:
        """Why ``delivery`` ended without its record being done (None: unknown)."""
        if delivery.end == "session closed":
            later = self._active.get(delivery.member, [])
            back = bisect.bisect_right(later, delivery.end_seq) < len(later)
            return "session closed" if back else "member left"
        if delivery.end in ("released", "lock expired"):
            return delivery.end
        return None

    def delivery_of(self, where: Where, events: int, count: int | None) -> int | None:
        """Index of the delivery a processing belongs to: the one with its delivery count, else
        the last before the processing (``events``: the event count then)."""
        got = self.deliveries.get(where)
        if not got:
            return None
        if count is not None and count > 0:
            matching = [i for i, d in enumerate(got) if d.count == count and d.seq <= events]
            if matching:
                return matching[-1]
        i = bisect.bisect_right([d.seq for d in got], events) - 1
        return i if i >= 0 else None

    def repeat_cause(
        self, where: Where, before: tuple[int, int | None], again: tuple[int, int | None]
    ) -> tuple[str | None, str | None]:
        """(cause, holder) of processing ``again`` after ``before``, each (events, delivery
        count): what ended the delivery just before ``again``'s, when they are different ones."""
        first = self.delivery_of(where, *before)
        second = self.delivery_of(where, *again)
        if second is None or second == 0 or first is None or first >= second:
            return None, None
        previous = self.deliveries[where][second - 1]
        return self._cause(previous), previous.client or previous.member or None

    def deliveries_of(self, where: Where) -> int:
        got = self.deliveries.get(where)
        return max((d.count for d in got), default=0) if got else 0


class Processing(NamedTuple):
    """What the judge needs of one processing the ledger recorded."""

    member: str
    topic: str
    partition: int
    offset: int
    events: int
    delivery: int | None


def judge(
    produced: Iterable[Where],
    processed: list[Processing],
    history: ShareHistory,
    record: Callable[[str, int, int], Any] = lambda *where: where,
) -> QueueVerdict:
    """The queue verdict of ``processed`` (in order) against the records ``produced``; a lost
    record is given as ``record(topic, partition, offset)``."""
    produced = set(produced)
    last: dict[Where, Processing] = {}
    times: Counter[Where] = Counter()
    repeats: list[Repeat] = []
    for p in processed:
        where = (p.topic, p.partition, p.offset)
        times[where] += 1
        before = last.get(where)
        last[where] = p
        if before is not None:
            cause, holder = history.repeat_cause(where, (before.events, before.delivery), (p.events, p.delivery))
            repeats.append(Repeat(p.member, *where, p.delivery, cause, holder, p.events))
    known = produced | set(times)
    archived = [
        Archived(*where, reason, history.deliveries_of(where), times[where])
        for where, reason in sorted(history.archived.items())
        if where in known
    ]
    done = set(times) | {(a.topic, a.partition, a.offset) for a in archived}
    lost = [record(*where) for where in sorted(produced - done)]
    return QueueVerdict(len(produced), len(processed), lost, repeats, archived)


ArchivedSpec = Any  # an int, a collection of (topic, partition, offset), or a mapping of them to reasons


def check(verdict: QueueVerdict, archived: ArchivedSpec, max_repeats: int | None, explained: bool) -> None:
    """Raise AssertionError (with the summary) where ``verdict`` breaks queue delivery."""
    problems = []
    if verdict.lost:
        problems.append(f"{len(verdict.lost)} record(s) neither processed nor archived")
    got = {(a.topic, a.partition, a.offset): a.reason for a in verdict.archived}
    if isinstance(archived, int) and not isinstance(archived, bool):
        if len(got) != archived:
            problems.append(f"{len(got)} record(s) archived, {archived} expected")
    else:
        wanted = dict(archived) if hasattr(archived, "items") else {tuple(w): None for w in archived}
        wanted = {tuple(w): reason for w, reason in wanted.items()}
        if set(got) != set(wanted):
            missing, extra = sorted(set(wanted) - set(got)), sorted(set(got) - set(wanted))
            problems.append(
                "archived records differ"
                + (f"; not archived: {', '.join(_place(w) for w in missing)}" if missing else "")
                + (f"; archived unexpectedly: {', '.join(_place(w) for w in extra)}" if extra else "")
            )
        wrong = [w for w, reason in wanted.items() if reason is not None and w in got and got[w] != reason]
        for w in wrong:
            problems.append(f"{_place(w)} archived for {got[w]!r}, not {wanted[w]!r}")
    if explained and verdict.unexplained:
        problems.append(f"{len(verdict.unexplained)} repeat(s) no share event explains")
    if max_repeats is not None and len(verdict.repeats) > max_repeats:
        problems.append(f"{len(verdict.repeats)} repeats (at most {max_repeats} allowed)")
    if problems:
        raise AssertionError("queue delivery broken: " + "; ".join(problems) + "\n" + verdict.summary())


def _place(where: tuple[Any, ...]) -> str:
    topic, partition, offset = where
    return f"{topic}[{partition}]@{offset}"

"""Conditions tests wait for (``await cluster.wait_for(...)``), each able to say what it
waited for and what it saw last, so a timeout explains itself.

A condition is any callable taking the cluster and returning a truthy value, checked on the
cluster's loop after every event and every ``poll``. The classes here are the common ones and
say which events can change their answer (:meth:`Condition.wakes_on`, a key of
``core.events.index``), so a pending wait is woken only by those: an event wait by events of
its kind (and group or topic), a group's state or offsets by that group's events.

Share groups (KIP-932) have their own: :func:`share_group_stable` (members at the current
target assignment), :func:`share_start_offset` (every record below an offset, or every record
produced so far, acknowledged or archived), :func:`record_delivered` and
:func:`record_archived` (one record's fate, from the share events). Streams groups (KIP-1071)
have :func:`streams_group_stable` (every member at the target tasks).

The names a condition is given are checked when it is made, not at its timeout: an event kind
(:data:`EVENT_KINDS`) and the fields it is matched on, a group state (:data:`GROUP_STATES`), an
archive reason (:data:`ARCHIVE_REASONS`). A name not among them raises
:class:`~fakebroker.cluster.ClusterUsageError` with the closest valid names ("did you mean")
and the list of valid ones.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..core import cluster_state as _state  # noqa: F401 - imports every module that defines an event kind
from ..core.events import KINDS, Event, detail_fields, event_kinds
from ..core.events.index import Key, key_for
from ..core.groups.classic.model import GroupState as _ClassicState
from ..core.groups.consumer.model import ConsumerGroupState as _ConsumerState
from ..core.groups.share.model import ShareGroupState as _ShareState
from ..core.groups.streams.model import GroupState as _StreamsState
from ..lazy_dataclasses import dataclass
from ..protocol.suggest import close_matches
from .errors import ClusterUsageError

if TYPE_CHECKING:  # what the cluster's methods return; a wait never needs the modules themselves
    from .shares import ShareGroupView, SharePartitionView
    from .streams import StreamsGroupView
    from .views import GroupView

EVENT_KINDS: tuple[str, ...] = tuple(event_kinds())
"""Every event kind, in name order (``cluster.events`` holds events of these kinds only)."""
_EVENT_KIND_SET = frozenset(EVENT_KINDS)
GROUP_STATES: tuple[str, ...] = tuple(
    dict.fromkeys(s.value for states in (_ClassicState, _ConsumerState, _ShareState, _StreamsState) for s in states)
)
"""Kafka's names of a group's states: the classic protocol's, then those only consumer groups
(KIP-848) have (share groups have Empty, Stable and Dead), then streams groups' NotReady."""
ARCHIVE_REASONS = ("delivery limit", "rejected")
"""Why a share group archives records (``share_records_archived``'s ``reason``)."""
_EVENT_FIELDS: dict[str, tuple[str, ...] | None] = {}


def _squeezed(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def suggest(given: str, valid: Iterable[str], n: int = 2) -> list[str]:
    """The valid names closest to ``given``: those equal to it but for case and separators
    (``stable`` -> ``Stable``, ``MemberJoined`` -> ``member_joined``), else the nearest spellings."""
    valid = list(valid)
    squeezed = _squeezed(given)
    same = [v for v in valid if _squeezed(v) == squeezed]
    if same:
        return same[:n]
    by_squeezed = {_squeezed(v): v for v in valid}
    return [by_squeezed[m] for m in close_matches(squeezed, by_squeezed, n=n, cutoff=0.6)]


def unknown_name(what: str, given: Any, valid: Sequence[str]) -> ClusterUsageError:
    """The error for ``given`` not among ``valid``: the closest ones first, then all of them."""
    every = f"{what}s: {', '.join(valid)}"
    if not isinstance(given, str):
        return ClusterUsageError(f"{what} must be a string, not {given!r}; {every}")
    close = suggest(given, valid)
    if not close:
        return ClusterUsageError(f"unknown {what} {given!r}; {every}")
    return ClusterUsageError(f"unknown {what} {given!r}: did you mean {' or '.join(map(repr, close))}? ({every})")


def check_event_kind(kind: Any) -> str:
    """``kind`` if events of it are recorded, else :class:`ClusterUsageError` naming the closest kinds."""
    if not isinstance(kind, str) or kind not in _EVENT_KIND_SET:
        raise unknown_name("event kind", kind, EVENT_KINDS)
    return kind


def event_fields(kind: str) -> tuple[str, ...] | None:
    """What an event wait may match an event of ``kind`` on: its own fields (its ``details``)
    and ``broker``, the broker it happened on; None for a kind whose details are not its fields
    (``fault_added``'s are the rule's)."""
    if kind not in _EVENT_FIELDS:
        cls = KINDS[kind]
        own = cls.details is Event.details  # the properties themselves: a kind may make its own
        _EVENT_FIELDS[kind] = (*(f.name for f in detail_fields(cls)), "broker") if own else None
    return _EVENT_FIELDS[kind]


def _check_fields(kind: str, details: dict[str, Any]) -> None:
    fields = event_fields(kind)
    if fields is None:
        return
    for name in details:
        if name not in fields:
            close = suggest(name, fields)
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
            raise ClusterUsageError(
                f"an event of kind {kind!r} has no field {name!r}{hint}, so none would ever match; "
                f"its fields: {', '.join(fields)}"
            )


def _check_count(name: str, value: Any, least: int | None = None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or least is not None and value < least:
        at_least = f" >= {least}" if least is not None else ""
        raise ClusterUsageError(f"{name} must be a whole number{at_least}, not {value!r}")


class ClusterLike(Protocol):
    """What conditions read of the cluster (the facade's public methods)."""

    def group(self, group_id: str) -> GroupView | None: ...

    def committed(self, group_id: str) -> dict[tuple[str, int], int]: ...

    def events_since(self, count: int) -> list[Event]: ...

    def share_group(self, group_id: str) -> ShareGroupView | None: ...

    def streams_group(self, group_id: str) -> StreamsGroupView | None: ...

    def offsets(self, topic: str, partition: int) -> tuple[int, int]: ...


class Condition(abc.ABC):
    last_seen: Any = None
    polled: ClassVar[bool] = True  # whether the answer can change without an event it wakes on

    @abc.abstractmethod
    def __call__(self, cluster: ClusterLike) -> Any:
        """Truthy (the value ``wait_for`` returns) once the condition holds."""

    def wakes_on(self) -> list[Key] | None:
        """The events that can change the answer, as index keys; None: every event."""
        return None

    def check(self, cluster: ClusterLike, delivered: list[Event]) -> Any:
        """The answer again, after ``delivered`` (the events it woke on; none after a poll)."""
        return self(cluster)

    def describe(self) -> str:
        return repr(self)


@dataclass(repr=False)
class GroupState(Condition):
    """Group ``group`` is in ``state`` (Kafka's name, e.g. "Stable"), optionally with exactly
    ``members`` members, and optionally with a generation above ``generation_above``."""

    group: str
    state: str | None = "Stable"
    members: int | None = None
    generation_above: int | None = None

    def __post_init__(self) -> None:  # a name no group is ever in would wait out its timeout
        if self.state is not None and self.state not in GROUP_STATES:
            raise unknown_name("group state", self.state, GROUP_STATES)
        _check_count("members", self.members, 0)
        _check_count("generation_above", self.generation_above)

    def __call__(self, cluster: ClusterLike) -> Any:
        view = cluster.group(self.group)
        self.last_seen = (
            None if view is None else f"{view.state}, generation {view.generation}, {len(view.members)} members"
        )
        if view is None:
            return False
        if self.state is not None and view.state != self.state:
            return False
        if self.members is not None and len(view.members) != self.members:
            return False
        if self.generation_above is not None and view.generation <= self.generation_above:
            return False
        return view

    def wakes_on(self) -> list[Key] | None:
        return [key_for(None, {"group": self.group})]

    def describe(self) -> str:
        parts = [f"group {self.group!r}"]
        if self.state:
            parts.append(f"is {self.state}")
        if self.members is not None:
            parts.append(f"with {self.members} members")
        if self.generation_above is not None:
            parts.append(f"past generation {self.generation_above}")
        return " ".join(parts)


def generation_above(group: str, generation: int) -> GroupState:
    """The group has started a generation greater than ``generation`` and is Stable in it."""
    return GroupState(group, "Stable", None, generation)


@dataclass(repr=False)
class EventSeen(Condition):
    """An event of ``kind`` whose fields include ``details`` (``client_id`` and ``group`` match
    the event's own, ``broker`` the broker it happened on), at or after event number ``since``.
    An unknown kind, or a field events of the kind do not have, raises
    :class:`~fakebroker.cluster.ClusterUsageError` naming the closest valid ones."""

    kind: str
    details: dict[str, Any]
    since: int = 0
    _seen: int = field(default=0, init=False, compare=False)  # events already looked at (their count)
    polled: ClassVar[bool] = False  # only a new event can answer it

    def __post_init__(self) -> None:  # refused now, not at the timeout
        check_event_kind(self.kind)
        _check_fields(self.kind, self.details)

    def __call__(self, cluster: ClusterLike) -> Any:
        # Incremental: each call reads only the events appended since the last one.
        return self._first(cluster.events_since(max(self.since, self._seen)))

    def wakes_on(self) -> list[Key] | None:
        return [key_for(self.kind, self.details)]

    def check(self, cluster: ClusterLike, delivered: list[Event]) -> Any:
        # Only the events filed under this wait's key, never the rest of the log.
        return self._first([e for e in delivered if e.seq > max(self.since, self._seen)])

    def _first(self, events: list[Event]) -> Any:
        for event in events:
            self._seen = event.seq
            if self.matches(event):
                return event
        return False

    def matches(self, event: Event) -> bool:
        if event.kind != self.kind:
            return False
        if not self.details:
            return True
        details = event.details
        return all((event.broker if k == "broker" else details.get(k)) == v for k, v in self.details.items())

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.details.items())
        return f"event {self.kind}({inner})"


def event(kind: str, *, since: int = 0, **details: Any) -> EventSeen:
    return EventSeen(kind, details, since)


def member_expired(group: str, client_id: str, *, since: int = 0) -> EventSeen:
    """A member of ``group`` whose client id is ``client_id`` had its session expire."""
    return EventSeen("member_expired", {"group": group, "client_id": client_id}, since)


@dataclass(repr=False)
class CommittedOffset(Condition):
    """``group`` has committed at least ``at_least`` on ``topic``-``partition``."""

    group: str
    topic: str
    partition: int
    at_least: int

    def __call__(self, cluster: ClusterLike) -> Any:
        self.last_seen = cluster.committed(self.group).get((self.topic, self.partition))
        return self.last_seen is not None and self.last_seen >= self.at_least

    def wakes_on(self) -> list[Key] | None:
        # transactional offsets become committed with the transaction's marker, whose event
        # names the transactional id, not the group
        return [key_for(None, {"group": self.group}), key_for("txn_committed", {})]

    def describe(self) -> str:
        return f"group {self.group!r} committed offset >= {self.at_least} on {self.topic}-{self.partition}"


def committed_offset(group: str, topic: str, partition: int, at_least: int) -> CommittedOffset:
    return CommittedOffset(group, topic, partition, at_least)


# -- share groups (KIP-932) ----------------------------------------------------------------------
@dataclass(repr=False)
class _EpochGroupStable(Condition):
    """A group of the server-side protocols (share, streams) Stable with every member at the
    current target; the view it read when true."""

    group: str
    members: int | None = None
    kind: ClassVar[str] = ""
    target: ClassVar[str] = ""

    @abc.abstractmethod
    def view(self, cluster: ClusterLike) -> Any: ...

    def lagging(self, view: Any) -> int:
        return sum(m.member_epoch != view.assignment_epoch for m in view.members)

    def complete(self, view: Any) -> bool:
        return True

    def __call__(self, cluster: ClusterLike) -> Any:
        view = self.view(cluster)
        if view is None:
            self.last_seen = None
            return False
        lagging = self.lagging(view)
        status = getattr(view, "status", None)
        self.last_seen = (
            f"{view.state}, epoch {view.group_epoch} (assignment epoch {view.assignment_epoch}), "
            f"{len(view.members)} members"
            + (f", {lagging} not at the target yet" if lagging else "")
            + (f", status {status[0]}" if status is not None else "")
        )
        if view.state != "Stable" or not view.settled:
            return False
        if self.members is not None and len(view.members) != self.members:
            return False
        return view if self.complete(view) else False

    def wakes_on(self) -> list[Key] | None:
        # a member reaches the target at a heartbeat that records no event: polled as well
        return [key_for(None, {"group": self.group})]

    def describe(self) -> str:
        count = f" with {self.members} members" if self.members is not None else ""
        return f"{self.kind} group {self.group!r} is Stable{count}, every member at {self.target}"


@dataclass(repr=False)
class ShareGroupStable(_EpochGroupStable):
    """Share group ``group`` is Stable, with exactly ``members`` members (any number when None),
    and every member has reached the current target assignment (its epoch is the group's)."""

    kind: ClassVar[str] = "share"
    target: ClassVar[str] = "the target assignment"

    def view(self, cluster: ClusterLike) -> Any:
        return cluster.share_group(self.group)


def share_group_stable(group: str, members: int | None = None) -> ShareGroupStable:
    return ShareGroupStable(group, members)


@dataclass(repr=False)
class StreamsGroupStable(_EpochGroupStable):
    """Streams group ``group`` is Stable, with exactly ``members`` members (stream threads; any
    number when None), every member at the target tasks, and every task of its topology
    active somewhere."""

    kind: ClassVar[str] = "streams"
    target: ClassVar[str] = "its target tasks"

    def view(self, cluster: ClusterLike) -> Any:
        return cluster.streams_group(self.group)

    def lagging(self, view: Any) -> int:
        return sum(m.member_epoch != view.assignment_epoch or m.state != "STABLE" for m in view.members)

    def complete(self, view: Any) -> bool:
        return sum(len(m.tasks.active) for m in view.members) == sum(s.tasks for s in view.subtopologies)


def streams_group_stable(group: str, members: int | None = None) -> StreamsGroupStable:
    _check_count("members", members, 0)
    return StreamsGroupStable(group, members)


@dataclass(repr=False)
class ShareStartOffset(Condition):
    """The start offset of ``group``'s share partition ``topic``-``partition`` reached
    ``at_least``: every record below it was acknowledged or archived. With ``at_least`` None,
    the partition's high watermark at each check: every record produced so far is done."""

    group: str
    topic: str
    partition: int
    at_least: int | None = None

    def __call__(self, cluster: ClusterLike) -> Any:
        view = cluster.share_group(self.group)
        sp: SharePartitionView | None = view.partition(self.topic, self.partition) if view is not None else None
        target = self.at_least
        if target is None:
            try:
                target = cluster.offsets(self.topic, self.partition)[1]
            except ValueError:  # no such partition (yet)
                self.last_seen = f"no partition {self.topic}-{self.partition}"
                return False
        self.last_seen = (
            "no share partition" if sp is None else f"start offset {sp.start_offset} (target {target})"
        ) + ("" if sp is None or not sp.in_flight else f", {_in_flight(sp)} in flight")
        return sp if sp is not None and sp.start_offset >= target else False

    def wakes_on(self) -> list[Key] | None:
        return [key_for(None, {"group": self.group})]

    def describe(self) -> str:
        where = f"share group {self.group!r} on {self.topic}-{self.partition}"
        if self.at_least is None:
            return f"{where}: every record produced acknowledged or archived"
        return f"{where}: start offset >= {self.at_least}"


def _in_flight(sp: SharePartitionView) -> str:
    counts: dict[str, int] = {}
    for r in sp.in_flight:
        counts[r.state] = counts.get(r.state, 0) + r.records
    return ", ".join(f"{n} {state}" for state, n in counts.items())


def share_start_offset(group: str, topic: str, partition: int, at_least: int | None = None) -> ShareStartOffset:
    return ShareStartOffset(group, topic, partition, at_least)


@dataclass(repr=False)
class ShareRecordSeen(EventSeen):
    """An event of ``kind`` (``share_records_acquired`` or ``share_records_archived``) whose
    range holds ``offset`` (any when None), with ``delivery_count`` at least ``times``."""

    offset: int | None = None
    times: int = 1

    def matches(self, event: Event) -> bool:
        if not super().matches(event):
            return False
        d = event.details
        if self.offset is not None and not d["first"] <= self.offset <= d["last"]:
            return False
        return int(d.get("delivery_count", self.times)) >= self.times

    def describe(self) -> str:
        d = self.details
        where = f"{d['topic']}-{d['partition']}" + (f" offset {self.offset}" if self.offset is not None else "")
        if self.kind == "share_records_acquired":
            return f"share group {d['group']!r}: {where} delivered {self.times} time(s)"
        reason = f" ({d['reason']})" if "reason" in d else ""
        return f"share group {d['group']!r}: {where} archived{reason}"


def record_delivered(
    group: str, topic: str, partition: int, offset: int, *, times: int = 1, since: int = 0
) -> ShareRecordSeen:
    """The record was acquired by a member of share group ``group`` for the ``times``-th time
    (or later)."""
    _check_count("times", times, 1)
    return ShareRecordSeen(
        "share_records_acquired", {"group": group, "topic": topic, "partition": partition}, since, offset, times
    )


def record_archived(
    group: str, topic: str, partition: int, offset: int | None = None, *, reason: str | None = None, since: int = 0
) -> ShareRecordSeen:
    """Share group ``group`` archived the record (any record of the partition when ``offset``
    is None): it will never be delivered again. ``reason``: ``delivery limit``, ``rejected``."""
    details: dict[str, Any] = {"group": group, "topic": topic, "partition": partition}
    if reason is not None:
        if reason not in ARCHIVE_REASONS:
            raise unknown_name("archive reason", reason, ARCHIVE_REASONS)
        details["reason"] = reason
    return ShareRecordSeen("share_records_archived", details, since, offset)


def describe(condition: Callable[..., Any]) -> str:
    if isinstance(condition, Condition):
        text = condition.describe()
        if condition.last_seen is not None:
            text += f" (last seen: {condition.last_seen})"
        return text
    return getattr(condition, "__name__", repr(condition))

"""The swim lanes of a group's story as data: members' lanes with generation segments and
assignments, markers for expiries, faults, denials and cluster actions, and the group's states.

A share group (KIP-932) has no generations: each member jumps to the target assignment of the
group's epoch, so its lane gets a segment per target computed; its state follows its
membership (Empty, Stable), and its records add marks: lock expiries and archived records as
lines, redeliveries (a delivery count above 1) on the lane of the member that got them."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .text import _UUID, OFFSETS_TOPIC, Principals, _related, _secs, group_transactions, share_place

if TYPE_CHECKING:  # the events' type only: a timeline needs no running cluster
    from ..cluster import Event


@dataclass
class Segment:
    """A stretch of a member's life: joining (``generation`` None) or in one generation."""

    start: float
    end: float | None = None
    generation: int | None = None
    assignment: dict[str, list[int]] | None = None
    rebalancing_from: float | None = None  # the group started rebalancing while in this generation


@dataclass
class Lane:
    group: str
    key: str  # the group instance id of a static member, else the member id
    client_id: str
    member_id: str
    segments: list[Segment] = field(default_factory=list)
    ended: str | None = None  # "expired", "left", "removed"
    principal: str | None = None  # whom its client id authenticated as (text.Principals)

    @property
    def label(self) -> str:
        tail = _UUID.search(self.member_id)
        short = tail.group(1) if tail else self.member_id[-8:]
        return f"{self.client_id} ({short})" + (f" as {self.principal}" if self.principal else "")


@dataclass
class Marker:
    x: float
    kind: str
    label: str
    group: str | None = None
    client_id: str | None = None
    count: int = 1  # records behind one mark (duplicates re-read at one moment by one member)


@dataclass
class Swimlanes:
    lanes: list[Lane]
    markers: list[Marker]
    states: dict[str, list[tuple[float, float, str]]]  # group -> (start, end, state)
    start: float
    end: float
    x_label: str


def _positions(events: Sequence[Event], until: float | None) -> tuple[list[float], str, float | None]:
    """x of each event in seconds since the first, the x of ``until`` (a wall time), and the
    axis label. The cluster clock when it is the real one (its ``time_ms`` is then the wall
    time); a virtual clock stands still between jumps, so then real time orders the picture
    and the jumps are marked. Events without wall times (made up in tests) use the cluster clock."""
    first = events[0]
    walled = all(e.wall > 0 for e in events)
    if not walled or all(abs(e.time_ms - e.wall * 1000) < 1000 for e in events):
        end = (until * 1000 - first.time_ms) / 1000 if until is not None and walled else None
        return [(e.time_ms - first.time_ms) / 1000 for e in events], "seconds (cluster clock)", end
    end = until - first.wall if until is not None else None
    return [e.wall - first.wall for e in events], "seconds of real time (the virtual clock's jumps are marked)", end


def swimlanes(
    events: Iterable[Event], *, group: str | None = None, until: float | None = None, rereads: Iterable[Any] = ()
) -> Swimlanes:
    """Lanes per member, generation segments, markers and group-state spans (what the
    picture draws), from the event log alone; ``until`` (a wall time, e.g. ``time.time()``)
    extends the last spans to that moment rather than the last event. ``rereads``: a delivery
    ledger's :meth:`~fakebroker.testing.ledger.DeliveryLedger.rereads`, marked as ``duplicate`` on the
    lane of the member (by client id) that processed a record again."""
    events = list(events)
    xs, x_label, until_x = _positions(events, until) if events else ([], "seconds", None)
    lanes: dict[tuple[str, str], Lane] = {}  # (group, instance or member id) -> its latest lane
    all_lanes: list[Lane] = []
    lane_of: dict[tuple[str, str], Lane] = {}  # (group, member id) -> lane while a member
    markers: list[Marker] = []
    states: dict[str, list[tuple[float, float, str]]] = {}
    state_now: dict[str, tuple[float, str]] = {}
    last_offsets_leader: int | None = None
    fault_rules_marked: set[Any] = set()
    denials_marked: set[tuple[Any, ...]] = set()  # (principal, operation, resource type, resource) labelled
    group_xs: list[float] = []
    clients = {e.client_id for e in events if e.group == group and e.client_id} if group is not None else set()
    txns = group_transactions(events, group) if group is not None else set()
    shares = share_groups(events)
    share_members: dict[str, int] = {}  # share group -> members now
    principals = Principals()

    def close(lane: Lane, x: float) -> None:
        if lane.segments and lane.segments[-1].end is None:
            lane.segments[-1].end = x

    def lanes_of(gid: str) -> list[Lane]:
        return [lane for (g, _), lane in lane_of.items() if g == gid]

    for e, x in zip(events, xs):
        gid, d = e.group, e.details
        principals.see(e)
        if e.kind == "leader_moved" and d.get("topic") == OFFSETS_TOPIC:
            last_offsets_leader = d.get("leader")
        if group is not None and not _related(e, group, clients, txns):
            continue
        if gid is not None:
            group_xs.append(x)
        member: Any = d.get("member")  # an event's details are untyped: its member id where it has one
        if e.kind == "member_joined" and gid:
            key = d.get("instance") or member
            lane = lanes.get((gid, key))
            if lane is None or lane.ended:
                lane = lanes[(gid, key)] = Lane(gid, key, e.client_id or str(member), member)
                all_lanes.append(lane)
            lane_of[(gid, member)] = lane
            lane.principal = principals.of(e.client_id) or lane.principal
            if not lane.segments or lane.segments[-1].end is not None:
                lane.segments.append(Segment(x))
            if gid in shares:
                share_members[gid] = share_members.get(gid, 0) + 1
                if share_members[gid] == 1:
                    _state_to(states, state_now, gid, x, "Stable")
        elif e.kind == "member_fenced" and gid and (gid, member) in lane_of:
            lane = lane_of.pop((gid, member))
            lane.member_id = d.get("replaced_by") or lane.member_id
            lane_of[(gid, lane.member_id)] = lane
        elif e.kind == "generation_started" and gid:
            for lane in lanes_of(gid):
                close(lane, x)
                lane.segments.append(Segment(x, generation=d.get("generation")))
        elif e.kind == "rebalance_started" and gid:
            for lane in lanes_of(gid):
                seg = lane.segments[-1] if lane.segments else None
                if seg is not None and seg.end is None and seg.generation is not None and seg.rebalancing_from is None:
                    seg.rebalancing_from = x
            markers.append(Marker(x, "rebalance_started", "rebalance", gid))
        elif e.kind == "assignment_delivered" and gid and (gid, member) in lane_of:
            seg = lane_of[(gid, member)].segments[-1]
            if seg.generation == d.get("generation") and "assignment" in d:
                seg.assignment = d["assignment"]
        elif e.kind == "member_reconciled" and gid and (gid, member) in lane_of:
            # KIP-848: each member moves on its own, epoch by epoch; hatched while it revokes
            lane = lane_of[(gid, member)]
            close(lane, x)
            assignment = d.get("assignment")
            for role in ("standby", "warmup"):  # a streams member's other tasks: "standby 1[2-3]"
                if d.get(role):
                    assignment = {**(assignment or {}), **{f"{role} {s}": ps for s, ps in d[role].items()}}
            seg = Segment(x, generation=d.get("epoch"), assignment=assignment)
            if d.get("revoking"):
                seg.rebalancing_from = x
            lane.segments.append(seg)
        elif e.kind == "group_epoch_bumped" and gid:
            markers.append(Marker(x, "rebalance_started", f"epoch {d.get('epoch')}", gid))
        elif e.kind == "target_assignment_computed" and gid in shares:
            # a share member jumps to its target at once (there is nothing to revoke)
            targets = d.get("assignment") or {}
            for lane in lanes_of(gid):
                close(lane, x)
                lane.segments.append(Segment(x, generation=d.get("epoch"), assignment=targets.get(lane.member_id, {})))
        elif e.kind in ("member_expired", "member_left") and gid:
            verb = "expired" if e.kind == "member_expired" else "left"
            markers.append(Marker(x, e.kind, f"{e.client_id or member} {verb}", gid, e.client_id))
            if (gid, member) in lane_of:
                lane_of[(gid, member)].ended = verb
                if gid in shares:  # gone at once: no removal follows
                    close(lane_of.pop((gid, member)), x)
                    share_members[gid] = max(share_members.get(gid, 1) - 1, 0)
                    if not share_members[gid]:
                        _state_to(states, state_now, gid, x, "Empty")
        elif e.kind in SHARE_MARKS and gid:
            mark = _share_mark(e, x)
            if mark is not None:
                markers.append(mark)
        elif e.kind == "member_removed" and gid and (gid, member) in lane_of:
            lane = lane_of.pop((gid, member))
            close(lane, x)
            lane.ended = lane.ended or "removed"
        elif e.kind == "group_state_changed" and gid:
            _state_to(states, state_now, gid, x, d.get("new", "?"))
        elif e.kind == "group_loaded" and gid:
            where = f" -> b{last_offsets_leader}" if last_offsets_leader is not None else ""
            markers.append(Marker(x, "coordinator_moved", f"coordinator{where}", gid))
            _state_to(states, state_now, gid, x, d.get("state", "?"))
        elif e.kind == "group_unloaded" and gid:
            _state_to(states, state_now, gid, x, "Unloaded")
        elif e.kind == "group_created" and gid in shares:
            _state_to(states, state_now, gid, x, "Empty")
        elif e.kind in ("group_deleted",) and gid:
            for lane in lanes_of(gid):
                close(lane, x)
            _state_to(states, state_now, gid, x, "Dead")
        elif e.kind == "fault_fired":
            first = d.get("rule") not in fault_rules_marked
            fault_rules_marked.add(d.get("rule"))
            label = f"fault {d.get('rule')}: {d.get('api')} {d.get('action')}" if first else ""
            markers.append(Marker(x, "fault_fired", label, gid, e.client_id))
        elif e.kind == "access_denied":
            # a client retries what it was refused: a line (labelled) for the first of each denial,
            # a small mark on the client's lane for every one (as a fault rule's)
            what = (d.get("principal"), d.get("operation"), d.get("resource_type"), d.get("resource"))
            first = what not in denials_marked
            denials_marked.add(what)
            label = f"{d.get('principal')} denied {d.get('operation')} {d.get('resource')}" if first else ""
            markers.append(Marker(x, "access_denied", label, gid, e.client_id))
        elif e.kind in ("broker_stopped", "broker_started"):
            markers.append(Marker(x, e.kind, f"b{e.broker} {e.kind.split('_')[1]}"))
        elif e.kind in ("network_cut", "network_healed"):
            markers.append(
                Marker(x, e.kind, f"{'cut' if e.kind == 'network_cut' else 'healed'} {e.client_id or ''}".strip())
            )
        elif e.kind == "clock_advanced":
            markers.append(Marker(x, e.kind, f"clock {_secs(d.get('by_ms', 0))}"))
        elif e.kind in ("txn_fenced", "txn_timed_out", "txn_aborted"):
            verb = {"txn_fenced": "fenced", "txn_timed_out": "timed out", "txn_aborted": "aborted"}[e.kind]
            markers.append(Marker(x, e.kind, f"txn {d.get('transactional_id')} {verb}"))
    end = max(xs + ([until_x] if until_x is not None else [])) if xs else 0.0
    start = min(group_xs) if group_xs else (min(xs) if xs else 0.0)
    for lane in all_lanes:
        close(lane, end)
    for gid, (since, state) in state_now.items():
        states.setdefault(gid, []).append((since, end, state))
    markers += _reread_markers(events, xs, rereads)
    shown = [m for m in markers if m.x >= start]  # the picture starts with the group
    return Swimlanes(all_lanes, shown, states, start, end, x_label)


SHARE_MARKS = frozenset({"share_records_acquired", "share_records_released", "share_records_archived"})


def share_groups(events: Sequence[Event]) -> set[str]:
    """The share groups among the events' groups: those with record events, and those whose
    target assignments no member reconciles to (a consumer group's members do, one by one)."""
    found: set[str] = set()
    targets: set[str] = set()
    reconciled: set[str] = set()
    for e in events:
        if e.group is None:
            continue
        if e.kind.startswith("share_records_"):
            found.add(e.group)
        elif e.kind == "target_assignment_computed":
            targets.add(e.group)
        elif e.kind in ("member_reconciled", "assignment_delivered", "generation_started"):
            reconciled.add(e.group)
    return found | (targets - reconciled)


def _share_mark(e: Event, x: float) -> Marker | None:
    """A lock expiry or an archived range as a line; a redelivery as a mark on its lane."""
    d = e.details
    who = e.client_id or str(d.get("member", "?"))
    if e.kind == "share_records_released" and d.get("reason") == "lock expired":
        return Marker(x, "share_lock_expired", f"lock expired: {d.get('records')} of {who}", e.group, e.client_id)
    if e.kind == "share_records_archived":
        return Marker(x, "share_archived", f"archived {share_place(d)} ({d.get('reason')})", e.group)
    if e.kind == "share_records_acquired" and int(d.get("delivery_count", 1)) > 1:
        records = int(d.get("last", 0)) - int(d.get("first", 0)) + 1
        return Marker(x, "redelivered", "", e.group, e.client_id, records)
    return None


def _reread_markers(events: list[Event], xs: list[float], rereads: Iterable[Any]) -> list[Marker]:
    """One ``duplicate`` mark per member and moment: a reread happened after the event whose
    seq is the ledger's event count then (the newest event the log held)."""
    seqs = [e.seq for e in events]
    counts: dict[tuple[float, str], int] = {}
    for r in rereads:
        i = bisect.bisect_right(seqs, r.events) - 1
        if i >= 0:
            counts[(xs[i], r.member)] = counts.get((xs[i], r.member), 0) + 1
    return [Marker(x, "duplicate", "", None, member, n) for (x, member), n in counts.items()]


def _state_to(
    states: dict[str, list[tuple[float, float, str]]], now: dict[str, tuple[float, str]], gid: str, x: float, state: str
) -> None:
    if gid in now:
        since, old = now[gid]
        states.setdefault(gid, []).append((since, x, old))
    now[gid] = (x, state)

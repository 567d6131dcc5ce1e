"""The text timeline: one line per event (or per run of identical ones), for logs and
failure messages."""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the events' type only: a timeline needs no running cluster
    from ..cluster import Event


OFFSETS_TOPIC = "__consumer_offsets"
# Hidden unless asked for: one per connection, and they say nothing about the group.
NOISE = frozenset({"client_connected"})
# Events about no group that still shape every group's story (kept when filtering by group).
CLUSTER_WIDE = frozenset(
    {
        "broker_stopped",
        "broker_started",
        "clock_advanced",
        "network_cut",
        "network_healed",
        "leader_moved",
        "partitions_created",
        "topic_deleted",
    }
)
_UUID = re.compile(r"([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# -- selecting and formatting ---------------------------------------------------------------------
def select_events(
    events: Iterable[Event],
    *,
    group: str | None = None,
    kinds: Collection[str] | None = None,
    include_noise: bool = False,
) -> list[Event]:
    """The events a timeline shows. ``group``: that group's events, the cluster-wide ones
    (brokers, clock, network, leaders of user topics) and those of its members' clients
    (faults, errors, closed connections). ``kinds``: only these kinds (noise included)."""
    events = list(events)
    if group is not None:
        clients = {e.client_id for e in events if e.group == group and e.client_id}
        txns = group_transactions(events, group)
        events = [e for e in events if _related(e, group, clients, txns)]
    if kinds is not None:
        return [e for e in events if e.kind in kinds]
    return events if include_noise else [e for e in events if e.kind not in NOISE]


def group_transactions(events: Iterable[Event], group: str) -> set[str]:
    """Transactional ids that committed offsets for ``group``: their fencing, timeouts and
    aborts belong to the group's story."""
    return {e.details["transactional_id"] for e in events if e.kind == "txn_offsets_added" and e.group == group}


def _related(e: Event, group: str, clients: set[str], txns: Collection[str] = ()) -> bool:
    if txns and e.details.get("transactional_id") in txns:
        return True
    if e.group is not None:
        return e.group == group
    if e.kind == "leader_moved":  # offsets-topic moves show up as the group's own unload/load events
        return e.details.get("topic") != OFFSETS_TOPIC
    return e.kind in CLUSTER_WIDE or (e.client_id is not None and e.client_id in clients)


def _short(value: str) -> str:
    """Member ids and other uuids cut to their first 8 hex digits."""
    return _UUID.sub(r"\1", value)


def _ranges(parts: Sequence[Any]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (partition lists)."""
    if not all(isinstance(p, int) for p in parts):
        return ",".join(str(p) for p in parts)
    out: list[str] = []
    nums = sorted(parts)
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(out)


def format_assignment(assignment: Mapping[str, Sequence[int]] | None) -> str:
    """``{"orders": [0, 1, 2]}`` -> ``"orders[0-2]"``; empty -> ``"-"``."""
    if not assignment:
        return "-"
    return " ".join(f"{t}[{_ranges(ps)}]" for t, ps in sorted(assignment.items()))


def _value(v: Any) -> str:
    if isinstance(v, dict) and all(isinstance(x, (list, tuple)) for x in v.values()):
        return format_assignment(v)
    if isinstance(v, (list, tuple)):
        return "[" + _ranges(list(v)) + "]"
    text = _short(str(v))
    return f'"{text}"' if " " in text else text


# Share groups' record events (KIP-932): their offsets are written as one place, topic[p]@first-last.
SHARE_RECORD_KINDS = frozenset(
    {"share_records_acquired", "share_records_acknowledged", "share_records_released", "share_records_archived"}
)


def share_place(details: Mapping[str, Any]) -> str:
    """``jobs[0]@5-9`` (``jobs[0]@5`` for one record, ``jobs[0]`` without offsets)."""
    place = f"{details.get('topic')}[{details.get('partition')}]"
    first, last = details.get("first"), details.get("last")
    if first is None:
        return place
    return place + f"@{first}" + (f"-{last}" if last is not None and last != first else "")


def _share_details(details: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"member": details["member"]} if "member" in details else {}
    out["at"] = share_place(details)
    for k, v in details.items():
        if k not in ("member", "topic", "partition", "first", "last"):
            out["delivery" if k == "delivery_count" else k] = v
    return out


def denial_text(details: Mapping[str, Any]) -> str:
    """An ``access_denied`` event in words: ``User:alice denied READ on GROUP billing``."""
    return (
        f"{details.get('principal')} denied {details.get('operation')} on "
        f"{details.get('resource_type')} {details.get('resource')}"
    )


def _details(e: Event, principal: str | None = None) -> str:
    """The details column; ``principal``: whom the client column names (a request's
    ``principal`` detail saying just that is left out; a login's is kept)."""
    if e.kind == "access_denied":
        d = e.details
        where = " ".join(f"{k}={_value(d[k])}" for k in ("api", "host") if d.get(k) is not None)
        return f"{denial_text(d)} {where}".rstrip()
    details = _share_details(e.details) if e.kind in SHARE_RECORD_KINDS else e.details
    said = principal if e.kind != "client_authenticated" else None
    return " ".join(
        f"{k}={_value(v)}"
        for k, v in details.items()
        if k not in ("group", "client_id") and v is not None and not (k == "principal" and v == said)
    )


class Principals:
    """Whom each client id authenticated as so far (its ``client_authenticated`` events, read in
    order), for the timeline's client column (``billing-1 as User:alice``) and the lanes' labels.
    A client id that several principals used (librdkafka's default ``rdkafka``, shared by an
    admin and a consumer) names them all, first seen first, joined by ``|``: which connection an
    event came from is not in the event. Before its first login, or on a listener without
    authentication, a client id has none."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, None]] = {}

    def see(self, e: Event) -> None:
        if e.kind == "client_authenticated" and e.client_id:
            principal = e.details.get("principal")
            if principal:
                self._seen.setdefault(e.client_id, {})[principal] = None

    def of(self, client_id: str | None) -> str | None:
        names = self._seen.get(client_id) if client_id else None
        return "|".join(names) if names else None

    def label(self, client_id: str | None) -> str:
        """``billing-1 as User:alice``, the bare client id without a principal, ``-`` without one."""
        if not client_id:
            return "-"
        who = self.of(client_id)
        return f"{client_id} as {who}" if who else client_id


def _secs(ms: float) -> str:
    return f"{'+' if ms >= 0 else '-'}{abs(ms) / 1000:.3f}s"


def _reread_rows(events: list[Event], rereads: Iterable[Any]) -> list[tuple[int, Event, str, str]]:
    """(seq, anchor event, member, text) per member, moment and cause: records a ledger saw
    processed again, placed after the newest event the log held when they were."""
    seqs = [e.seq for e in events]
    grouped: dict[tuple[int, str, str | None], list[Any]] = {}
    for r in rereads:
        i = bisect.bisect_right(seqs, r.events) - 1
        if i >= 0:
            grouped.setdefault((i, r.member, r.cause), []).append(r)
    out = []
    for (i, member, cause), rs in sorted(grouped.items(), key=lambda item: (item[0][0], item[0][1])):
        where: dict[tuple[str, int], list[int]] = {}
        for r in rs:
            where.setdefault((r.topic, r.partition), []).append(r.offset)
        places = " ".join(f"{t}[{p}]@{_ranges(sorted(offs))}" for (t, p), offs in sorted(where.items()))
        text = f"records={len(rs)} at={places}" + (f' cause="{cause}"' if cause else "")
        out.append((events[i].seq, events[i], member, text))
    return out


def timeline_text(
    events: Iterable[Event],
    *,
    group: str | None = None,
    kinds: Collection[str] | None = None,
    include_noise: bool = False,
    rereads: Iterable[Any] = (),
) -> str:
    """One aligned line per event: time since the first event by the cluster clock, broker,
    kind, group, client id (``billing-1 as User:alice`` once it authenticated: see
    :class:`Principals`), then the other details. Virtual-clock jumps get a line of their
    own; a run of identical events is one line with a count. With a virtual clock a
    ``wall`` column shows real time too (the cluster clock stands still between jumps).
    ``rereads`` (a delivery ledger's :meth:`~fakebroker.testing.ledger.DeliveryLedger.rereads`) adds a
    ``processed_again`` line where a member processed records it or another had before."""
    events = list(events)
    if not events:
        return "(no events)"
    t0, w0 = events[0].time_ms, events[0].wall
    virtual = any(e.kind == "clock_advanced" for e in events)
    rows: list[tuple[str, ...]] = []  # a jump is (time, text), an event a full row
    last_key: tuple[Any, ...] | None = None
    repeats = 0
    again = _reread_rows(events, rereads)

    def flush_repeats() -> None:
        if repeats and rows:
            rows[-1] = rows[-1][:-1] + (f"{rows[-1][-1]} (x{repeats + 1})".lstrip(),)

    def flush_rereads(before_seq: float) -> None:
        nonlocal repeats, last_key
        while again and again[0][0] < before_seq:
            flush_repeats()
            repeats, last_key = 0, None
            _, anchor, member, text = again.pop(0)
            wall = (_secs((anchor.wall - w0) * 1000),) if virtual else ()
            rows.append((_secs(anchor.time_ms - t0),) + wall + ("-", "processed_again", "-", member, text))

    shown = {id(e) for e in select_events(events, group=group, kinds=kinds, include_noise=include_noise)}
    principals = Principals()  # from every event, shown or not: a group's timeline names its clients' too
    for e in events:
        principals.see(e)
        if id(e) not in shown:
            continue
        flush_rereads(e.seq)
        rel = e.time_ms - t0
        if e.kind == "clock_advanced":
            flush_repeats()
            repeats, last_key = 0, None
            by = int(e.details.get("by_ms", 0))
            rows.append((_secs(rel), f"~~~~ virtual clock jumped {_secs(by)} (from {_secs(rel - by)}) ~~~~"))
            continue
        key = (e.kind, e.broker, e.group, principals.label(e.client_id), _details(e, principals.of(e.client_id)))
        if key == last_key:
            repeats += 1
            continue
        flush_repeats()
        repeats, last_key = 0, key
        row = (
            (_secs(rel),)
            + ((_secs((e.wall - w0) * 1000),) if virtual else ())
            + ("-" if e.broker is None else f"b{e.broker}", e.kind, e.group or "-", key[3], key[-1])
        )
        rows.append(row)
    flush_rereads(float("inf"))
    flush_repeats()
    header = ("time",) + (("wall",) if virtual else ()) + ("broker", "event", "group", "client", "details")
    table = [header] + [r for r in rows if len(r) == len(header)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header) - 1)]
    widths[0] = max([widths[0]] + [len(r[0]) for r in rows])

    def line(r: tuple[str, ...]) -> str:
        if len(r) == 2:
            return f"{r[0].rjust(widths[0])}  {r[1]}"
        cells = [r[0].rjust(widths[0])] + [c.ljust(w) for c, w in zip(r[1:-1], widths[1:])] + [r[-1]]
        return "  ".join(cells).rstrip()

    return "\n".join(line(r) for r in [header] + rows)

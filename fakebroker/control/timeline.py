"""Timelines of a cluster's event log: a text one for logs and failure messages, and a
swim-lane picture of a group's members, generations and assignments over time.

Both are pure functions over a list of :class:`~fakebroker.server.runtime.Event` (anything
with ``kind``, ``broker``, ``details``, ``time_ms``, ``seq``, ``wall``, ``group`` and
``client_id``), so they work on a live cluster's ``cluster.events`` and on events read back
from the control endpoint alike. Drawing needs matplotlib (``pip install fakebroker[charts]``),
imported only when a picture is asked for.

>>> from fakebroker.server.runtime import Event
>>> events = [Event("member_joined", 1, {"group": "g", "member": "c1-1", "client_id": "c1"}, 1000, 1),
...           Event("generation_started", 1, {"group": "g", "generation": 1, "members": 1}, 1250, 2)]
>>> print(timeline_text(events))
   time  broker  event               group  client  details
+0.000s  b1      member_joined       g      c1      member=c1-1
+0.250s  b1      generation_started  g      -       generation=1 members=1
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.runtime import Event

OFFSETS_TOPIC = "__consumer_offsets"
# Hidden unless asked for: one per connection, and they say nothing about the group.
NOISE = frozenset({"client_connected"})
# Events about no group that still shape every group's story (kept when filtering by group).
CLUSTER_WIDE = frozenset({"broker_stopped", "broker_started", "clock_advanced", "network_cut", "network_healed",
                          "leader_moved", "partitions_created", "topic_deleted"})
_UUID = re.compile(r"([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
CHARTS_MISSING = "drawing a timeline needs matplotlib: pip install 'fakebroker[charts]'"


# -- selecting and formatting ---------------------------------------------------------------------
def select_events(events: Iterable[Event], *, group: str | None = None, kinds: Collection[str] | None = None,
                  include_noise: bool = False) -> list[Event]:
    """The events a timeline shows. ``group``: that group's events, the cluster-wide ones
    (brokers, clock, network, leaders of user topics) and those of its members' clients
    (faults, errors, closed connections). ``kinds``: only these kinds (noise included)."""
    events = list(events)
    if group is not None:
        clients = {e.client_id for e in events if e.group == group and e.client_id}
        events = [e for e in events if _related(e, group, clients)]
    if kinds is not None:
        return [e for e in events if e.kind in kinds]
    return events if include_noise else [e for e in events if e.kind not in NOISE]


def _related(e: Event, group: str, clients: set[str]) -> bool:
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


def format_assignment(assignment: dict[str, Sequence[int]] | None) -> str:
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


def _details(e: Event) -> str:
    return " ".join(f"{k}={_value(v)}" for k, v in e.details.items()
                    if k not in ("group", "client_id") and v is not None)


def _secs(ms: float) -> str:
    return f"{'+' if ms >= 0 else '-'}{abs(ms) / 1000:.3f}s"


def timeline_text(events: Iterable[Event], *, group: str | None = None, kinds: Collection[str] | None = None,
                  include_noise: bool = False) -> str:
    """One aligned line per event: time since the first event by the cluster clock, broker,
    kind, group, client id, then the other details. Virtual-clock jumps get a line of their
    own; a run of identical events is one line with a count. With a virtual clock a
    ``wall`` column shows real time too (the cluster clock stands still between jumps)."""
    events = list(events)
    if not events:
        return "(no events)"
    t0, w0 = events[0].time_ms, events[0].wall
    virtual = any(e.kind == "clock_advanced" for e in events)
    rows: list[tuple[str, ...]] = []  # a jump is (time, text), an event a full row
    last_key: tuple[Any, ...] | None = None
    repeats = 0

    def flush_repeats() -> None:
        if repeats and rows:
            rows[-1] = rows[-1][:-1] + (f"{rows[-1][-1]} (x{repeats + 1})".lstrip(),)

    for e in select_events(events, group=group, kinds=kinds, include_noise=include_noise):
        rel = e.time_ms - t0
        if e.kind == "clock_advanced":
            flush_repeats()
            repeats, last_key = 0, None
            by = int(e.details.get("by_ms", 0))
            rows.append((_secs(rel), f"~~~~ virtual clock jumped {_secs(by)} (from {_secs(rel - by)}) ~~~~"))
            continue
        key = (e.kind, e.broker, e.group, e.client_id, _details(e))
        if key == last_key:
            repeats += 1
            continue
        flush_repeats()
        repeats, last_key = 0, key
        row = (_secs(rel),) + ((_secs((e.wall - w0) * 1000),) if virtual else ()) + (
            "-" if e.broker is None else f"b{e.broker}", e.kind, e.group or "-", e.client_id or "-", key[-1])
        rows.append(row)
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


# -- the swim lanes as data -----------------------------------------------------------------------
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

    @property
    def label(self) -> str:
        tail = _UUID.search(self.member_id)
        short = tail.group(1) if tail else self.member_id[-8:]
        return f"{self.client_id} ({short})"


@dataclass
class Marker:
    x: float
    kind: str
    label: str
    group: str | None = None
    client_id: str | None = None


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


def swimlanes(events: Iterable[Event], *, group: str | None = None, until: float | None = None) -> Swimlanes:
    """Lanes per member, generation segments, markers and group-state spans (what the
    picture draws), from the event log alone; ``until`` (a wall time, e.g. ``time.time()``)
    extends the last spans to that moment rather than the last event."""
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
    group_xs: list[float] = []
    clients = {e.client_id for e in events if e.group == group and e.client_id} if group is not None else set()

    def close(lane: Lane, x: float) -> None:
        if lane.segments and lane.segments[-1].end is None:
            lane.segments[-1].end = x

    def lanes_of(gid: str) -> list[Lane]:
        return [lane for (g, _), lane in lane_of.items() if g == gid]

    for e, x in zip(events, xs):
        gid, d = e.group, e.details
        if e.kind == "leader_moved" and d.get("topic") == OFFSETS_TOPIC:
            last_offsets_leader = d.get("leader")
        if group is not None and not _related(e, group, clients):
            continue
        if gid is not None:
            group_xs.append(x)
        member = d.get("member")
        if e.kind == "member_joined" and gid:
            key = d.get("instance") or member
            lane = lanes.get((gid, key))
            if lane is None or lane.ended:
                lane = lanes[(gid, key)] = Lane(gid, key, e.client_id or str(member), member)
                all_lanes.append(lane)
            lane_of[(gid, member)] = lane
            if not lane.segments or lane.segments[-1].end is not None:
                lane.segments.append(Segment(x))
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
        elif e.kind in ("member_expired", "member_left") and gid:
            verb = "expired" if e.kind == "member_expired" else "left"
            markers.append(Marker(x, e.kind, f"{e.client_id or member} {verb}", gid, e.client_id))
            if (gid, member) in lane_of:
                lane_of[(gid, member)].ended = verb
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
        elif e.kind in ("group_deleted",) and gid:
            for lane in lanes_of(gid):
                close(lane, x)
            _state_to(states, state_now, gid, x, "Dead")
        elif e.kind == "fault_fired":
            first = d.get("rule") not in fault_rules_marked
            fault_rules_marked.add(d.get("rule"))
            label = f"fault {d.get('rule')}: {d.get('api')} {d.get('action')}" if first else ""
            markers.append(Marker(x, "fault_fired", label, gid, e.client_id))
        elif e.kind in ("broker_stopped", "broker_started"):
            markers.append(Marker(x, e.kind, f"b{e.broker} {e.kind.split('_')[1]}"))
        elif e.kind in ("network_cut", "network_healed"):
            markers.append(Marker(x, e.kind, f"{'cut' if e.kind == 'network_cut' else 'healed'} {e.client_id or ''}".strip()))
        elif e.kind == "clock_advanced":
            markers.append(Marker(x, e.kind, f"clock {_secs(d.get('by_ms', 0))}"))
    end = max(xs + ([until_x] if until_x is not None else [])) if xs else 0.0
    start = min(group_xs) if group_xs else (min(xs) if xs else 0.0)
    for lane in all_lanes:
        close(lane, end)
    for gid, (since, state) in state_now.items():
        states.setdefault(gid, []).append((since, end, state))
    shown = [m for m in markers if m.x >= start]  # the picture starts with the group
    return Swimlanes(all_lanes, shown, states, start, end, x_label)


def _state_to(states: dict[str, list[tuple[float, float, str]]], now: dict[str, tuple[float, str]],
              gid: str, x: float, state: str) -> None:
    if gid in now:
        since, old = now[gid]
        states.setdefault(gid, []).append((since, x, old))
    now[gid] = (x, state)


# -- the picture ----------------------------------------------------------------------------------
STATE_COLOURS = {"Empty": "#d9d9d9", "PreparingRebalance": "#f4a261", "CompletingRebalance": "#e9c46a",
                 "Stable": "#8ecae6", "Dead": "#444444", "Unloaded": "#ffffff"}
MARKER_STYLES = {  # kind -> (colour, line style)
    "rebalance_started": ("#e76f51", ":"), "member_expired": ("#d62828", "-"), "member_left": ("#7b2cbf", "-"),
    "fault_fired": ("#c1121f", "--"), "broker_stopped": ("#333333", "-."), "broker_started": ("#2a9d8f", "-."),
    "coordinator_moved": ("#8d5524", "--"), "network_cut": ("#333333", "--"), "network_healed": ("#2a9d8f", "--"),
    "clock_advanced": ("#1d3557", ":"),
}


def draw_timeline(events: Iterable[Event], path: str | Path, *, group: str | None = None,
                  title: str | None = None, until: float | None = None) -> Path:
    """Draw the swim-lane chart to ``path`` (.svg, .png or .pdf by its suffix): a lane per
    member with bars coloured by generation and the assigned partitions written in them,
    hatched where the group was rebalancing, the group state as a band on top, and vertical
    markers for rebalances, expiries, leaves, faults, broker stops and coordinator moves.
    ``until``: the wall time the picture ends at (default: the last event)."""
    path = Path(path)
    if path.suffix.lower() not in (".svg", ".png", ".pdf"):
        raise ValueError(f"{path}: a timeline picture is .svg, .png or .pdf")
    try:
        import matplotlib
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as exc:
        raise RuntimeError(CHARTS_MISSING) from exc
    data = swimlanes(events, group=group, until=until)
    lanes = sorted(data.lanes, key=lambda lane: (lane.group, lane.segments[0].start if lane.segments else 0.0))
    groups = sorted(data.states) or sorted({lane.group for lane in lanes})
    labelled = sorted((m for m in data.markers if m.label), key=lambda m: m.x)
    span = max(data.end - data.start, 1e-3)
    lo, hi = data.start - span * 0.02, data.end + span * 0.02
    width_in, plot_in = 13.0, 13.0 * (0.85 - 0.16)
    # Heights in inches: marker labels (rotated), the state band, the lanes; then margins.
    per_char = span * 1.04 / plot_in * 0.062  # data units one 8 pt character takes, roughly
    rows = _label_rows(labelled, per_char * 7 / 8, hi)
    strip_in = 0.08 + 0.17 * (max((r for r, _ in rows), default=0) + 1)
    band_in, lanes_in = 0.32 * max(len(groups), 1), 0.5 * max(len(lanes), 1) + 0.1
    top_in, bottom_in = 0.45, 0.55
    height_in = top_in + strip_in + band_in + lanes_in + bottom_in
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9, "svg.hashsalt": "fakebroker"}):
        # svg.fonttype none: the SVG keeps its text as text (searchable, small); hashsalt: stable ids
        fig = Figure(figsize=(width_in, height_in))
        strip, band, ax = fig.subplots(3, 1, sharex=True, gridspec_kw={
            "height_ratios": [strip_in, band_in, lanes_in], "hspace": 0.0})
        fig.subplots_adjust(left=0.16, right=0.85, top=1 - top_in / height_in, bottom=bottom_in / height_in)
        _draw_labels(strip, labelled, rows)
        state_handles = _draw_states(band, data, groups)
        gens = sorted({s.generation for lane in lanes for s in lane.segments if s.generation is not None})
        colours = _generation_colours(gens)
        for y, lane in enumerate(lanes):
            for seg in lane.segments:
                _draw_segment(ax, y, seg, colours, per_char)
            if lane.ended in ("expired", "left") and lane.segments:
                ax.plot([lane.segments[-1].end], [y], marker="X" if lane.ended == "expired" else "o", markersize=9,
                        color=MARKER_STYLES[f"member_{lane.ended}"][0], zorder=5)
        for m in data.markers:
            _draw_marker(ax, band, m, lanes)
        ax.set_yticks(range(len(lanes)), [(f"{lane.group}: " if len(groups) > 1 else "") + lane.label for lane in lanes])
        ax.set_ylim(len(lanes) - 0.5 if lanes else 0.5, -0.5)
        ax.set_xlim(lo, hi)
        ax.set_xlabel(data.x_label)
        ax.grid(axis="x", alpha=0.3)
        if not lanes:
            ax.text(0.5, 0.5, "no group members in these events", transform=ax.transAxes, ha="center", va="center")
        handles = [Patch(facecolor=colours[g], label=f"generation {g}") for g in gens]
        handles += [Patch(facecolor="#eeeeee", edgecolor="#999999", hatch="..", label="joining"),
                    Patch(facecolor="white", edgecolor="#777777", hatch="//", label="rebalancing")]
        ax.legend(handles=handles + state_handles, loc="upper left", fontsize=8, frameon=False,
                  bbox_to_anchor=(1.005, 1.0 + (strip_in + band_in) / lanes_in))
        fig.suptitle(title or ("timeline of group " + ", ".join(groups) if groups else "timeline"), fontsize=11,
                     y=1 - 0.08 / height_in, va="top")
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    return path


LABEL_CHARS = 30  # longer marker labels are cut


def _generation_colours(gens: list[int]) -> dict[int, str]:
    palette = ["#4e79a7", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#e15759",
               "#86bcb6", "#d4a6c8", "#a0cbe8"]  # adjacent generations always differ; 12 before it repeats
    return {g: palette[i % len(palette)] for i, g in enumerate(gens)}


def _draw_segment(ax: Any, y: int, seg: Segment, colours: dict[int, str], per_char: float) -> None:
    end = seg.end if seg.end is not None else seg.start
    if seg.generation is None:
        ax.barh(y, max(end - seg.start, 0), left=seg.start, height=0.36, color="#eeeeee", edgecolor="#999999",
                hatch="..", linewidth=0.6)
        return
    colour = colours[seg.generation]
    solid_end = seg.rebalancing_from if seg.rebalancing_from is not None else end
    ax.barh(y, max(solid_end - seg.start, 0), left=seg.start, height=0.6, color=colour, edgecolor="white", linewidth=0.8)
    if seg.rebalancing_from is not None:
        ax.barh(y, max(end - solid_end, 0), left=solid_end, height=0.6, color=colour, alpha=0.35, hatch="//",
                edgecolor="#555555", linewidth=0.4)
    # The generation and the assignment on one line, else on two, else the generation alone.
    gen, parts = f"g{seg.generation}", format_assignment(seg.assignment) if seg.assignment else ""
    room = end - seg.start
    texts = [f"{gen}  {parts}", f"{gen}\n{parts}"] if parts else []
    text = next((t for t in texts if max(map(len, t.split("\n"))) * per_char <= room), gen)
    if len(gen) * per_char <= room * 1.6:  # a little overflow into the gap is fine; more would collide
        ax.text(seg.start + per_char * 0.6, y, text, va="center", ha="left", fontsize=8 if "\n" not in text else 7,
                color="black", clip_on=True, linespacing=1.0)


def _label_rows(labelled: list[Marker], per_char: float, hi: float) -> list[tuple[int, bool]]:
    """(row, written leftwards) for each label, left to right: the first row where it overlaps
    no other; a label that would run off the right edge ends at its line instead."""
    ends: list[float] = []  # per row, where its last label ends
    rows = []
    for m in labelled:
        width = (len(_cut(m.label)) + 1.5) * per_char
        leftwards = m.x + width > hi
        start = m.x - width if leftwards else m.x
        row = next((i for i, e in enumerate(ends) if e <= start), len(ends))
        if row == len(ends):
            ends.append(float("-inf"))
        ends[row] = start + width
        rows.append((row, leftwards))
    return rows


def _cut(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…"


def _draw_labels(strip: Any, labelled: list[Marker], rows: list[tuple[int, bool]]) -> None:
    """The markers' labels above the chart, in rows, each on a thin stem down to its line."""
    strip.set_axis_off()
    strip.set_ylim(0, max((r for r, _ in rows), default=0) + 1)
    for m, (row, leftwards) in zip(labelled, rows):
        colour = MARKER_STYLES.get(m.kind, ("#555555", "--"))[0]
        strip.plot([m.x, m.x], [0, row + 0.5], color=colour, linewidth=0.6, alpha=0.7)
        text = _cut(m.label) + " " if leftwards else " " + _cut(m.label)
        strip.text(m.x, row + 0.5, text, fontsize=7, color=colour, ha="right" if leftwards else "left", va="center",
                   bbox={"boxstyle": "square,pad=0.05", "facecolor": "white", "linewidth": 0})


def _draw_marker(ax: Any, band: Any, m: Marker, lanes: list[Lane]) -> None:
    colour, style = MARKER_STYLES.get(m.kind, ("#555555", "--"))
    if m.kind == "fault_fired":  # can fire often: a small mark on the client's lane, a line only for a rule's first
        for y, lane in enumerate(lanes):
            if m.client_id and lane.client_id == m.client_id:
                ax.plot([m.x], [y - 0.38], marker="v", markersize=5, color=colour, zorder=6)
        if not m.label:
            return
    for axes in (ax, band):
        axes.axvline(m.x, color=colour, linestyle=style, linewidth=1.1, alpha=0.85, zorder=4)


def _draw_states(band: Any, data: Swimlanes, groups: list[str]) -> list[Any]:
    from matplotlib.patches import Patch

    seen: dict[str, None] = {}
    for row, gid in enumerate(groups):
        for start, end, state in data.states.get(gid, []):
            seen[state] = None
            band.barh(row, max(end - start, 0), left=start, height=0.8, color=STATE_COLOURS.get(state, "#cccccc"),
                      edgecolor="white", linewidth=0.5)
            if (end - start) > (data.end - data.start) * 0.07:
                band.text(start + (end - start) / 2, row, state, ha="center", va="center", fontsize=7, clip_on=True)
    band.set_yticks(range(len(groups)), [f"{g} state" for g in groups])
    band.set_ylim(len(groups) - 0.5 if groups else 0.5, -0.5)
    band.tick_params(axis="x", labelbottom=False, bottom=False)
    return [Patch(facecolor=STATE_COLOURS.get(s, "#cccccc"), edgecolor="#999999", label=f"state {s}") for s in seen]


# -- the FakeCluster methods ----------------------------------------------------------------------
class TimelineMethods:
    """``cluster.timeline()`` and ``cluster.write_timeline(path)`` (mixed into FakeCluster)."""

    events: list[Event]

    def timeline(self, group: str | None = None, *, kinds: Collection[str] | None = None,
                 include_noise: bool = False) -> str:
        """The text timeline of every event so far (or of one group's story)."""
        return timeline_text(self.events, group=group, kinds=kinds, include_noise=include_noise)

    def write_timeline(self, path: str | Path, group: str | None = None, *, title: str | None = None) -> Path:
        """Write the timeline to ``path``: text for ``.txt``/``.log``, the swim-lane chart
        for ``.svg``/``.png``/``.pdf`` (needs ``fakebroker[charts]``). Returns the path."""
        path = Path(path)
        if path.suffix.lower() in (".svg", ".png", ".pdf"):
            return draw_timeline(self.events, path, group=group, title=title, until=time.time())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.timeline(group) + "\n")
        return path

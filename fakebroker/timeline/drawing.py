"""The swim-lane picture (SVG, PNG or PDF) drawn with matplotlib, imported only when a
picture is asked for (``pip install fakebroker[charts]``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .lanes import Lane, Marker, Segment, Swimlanes, swimlanes
from .text import format_assignment

if TYPE_CHECKING:  # the events' type only: a timeline needs no running cluster
    from ..cluster import Event

LineStyle = Literal["-", "--", "-.", ":", ""]  # matplotlib's names of the ones drawn here
CHARTS_MISSING = "drawing a timeline needs matplotlib: pip install 'fakebroker[charts]'"


STATE_COLOURS = {
    "Empty": "#d9d9d9",
    "PreparingRebalance": "#f4a261",
    "CompletingRebalance": "#e9c46a",
    "Stable": "#8ecae6",
    "Dead": "#444444",
    "Unloaded": "#ffffff",
}
MARKER_STYLES: dict[str, tuple[str, LineStyle]] = {  # kind -> (colour, line style)
    "rebalance_started": ("#e76f51", ":"),
    "member_expired": ("#d62828", "-"),
    "member_left": ("#7b2cbf", "-"),
    "fault_fired": ("#c1121f", "--"),
    "access_denied": ("#b5179e", "--"),
    "broker_stopped": ("#333333", "-."),
    "broker_started": ("#2a9d8f", "-."),
    "coordinator_moved": ("#8d5524", "--"),
    "network_cut": ("#333333", "--"),
    "network_healed": ("#2a9d8f", "--"),
    "clock_advanced": ("#1d3557", ":"),
    "txn_fenced": ("#9d0208", "-."),
    "txn_timed_out": ("#f77f00", "-."),
    "txn_aborted": ("#6c757d", ":"),
    "share_lock_expired": ("#f77f00", "--"),
    "share_archived": ("#6a040f", ":"),
    "duplicate": ("#ff006e", ""),
    "redelivered": ("#3a86ff", ""),
}
# what a client keeps meeting (a rule that fires for it, a denial it retries): a small mark on its
# lane each time, a line only for the first (the labelled marker); kind -> legend of the mark
CLIENT_MARKS = {"fault_fired": "fault on this client", "access_denied": "access denied to this client"}
# marks drawn on a member's lane (by client id), not as lines: kind -> (symbol, offset from the lane's middle, legend)
LANE_MARKS = {
    "duplicate": ("D", 0.3, "records processed again"),
    "redelivered": ("^", -0.3, "records redelivered"),
}


def draw_timeline(
    events: Iterable[Event],
    path: str | Path,
    *,
    group: str | None = None,
    title: str | None = None,
    until: float | None = None,
    ledger: Any = None,
) -> Path:
    """Draw the swim-lane chart to ``path`` (.svg, .png or .pdf by its suffix): a lane per
    member with bars coloured by generation and the assigned partitions written in them,
    hatched where the group was rebalancing, the group state as a band on top, and vertical
    markers for rebalances, expiries, leaves, faults, broker stops and coordinator moves.
    ``until``: the wall time the picture ends at (default: the last event). ``ledger``: a
    :class:`~fakebroker.testing.ledger.DeliveryLedger` whose repeated processings are marked on the
    lane of the member that re-read them (its member names are the consumers' client ids)."""
    path = Path(path)
    if path.suffix.lower() not in (".svg", ".png", ".pdf"):
        raise ValueError(f"{path}: a timeline picture is .svg, .png or .pdf")
    try:
        import matplotlib
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as exc:
        raise RuntimeError(CHARTS_MISSING) from exc
    data = swimlanes(events, group=group, until=until, rereads=ledger.rereads() if ledger is not None else ())
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
        strip, band, ax = fig.subplots(
            3, 1, sharex=True, gridspec_kw={"height_ratios": [strip_in, band_in, lanes_in], "hspace": 0.0}
        )
        fig.subplots_adjust(left=0.16, right=0.85, top=1 - top_in / height_in, bottom=bottom_in / height_in)
        _draw_labels(strip, labelled, rows)
        state_handles = _draw_states(band, data, groups)
        gens = sorted({s.generation for lane in lanes for s in lane.segments if s.generation is not None})
        colours = _generation_colours(gens)
        for y, lane in enumerate(lanes):
            for seg in lane.segments:
                _draw_segment(ax, y, seg, colours, per_char)
            if lane.ended in ("expired", "left") and lane.segments:
                ax.plot(
                    [lane.segments[-1].end],
                    [y],
                    marker="X" if lane.ended == "expired" else "o",
                    markersize=9,
                    color=MARKER_STYLES[f"member_{lane.ended}"][0],
                    zorder=5,
                )
        for m in data.markers:
            _draw_marker(ax, band, m, lanes)
        ax.set_yticks(
            range(len(lanes)), [(f"{lane.group}: " if len(groups) > 1 else "") + lane.label for lane in lanes]
        )
        ax.set_ylim(len(lanes) - 0.5 if lanes else 0.5, -0.5)
        ax.set_xlim(lo, hi)
        ax.set_xlabel(data.x_label)
        ax.grid(axis="x", alpha=0.3)
        if not lanes:
            ax.text(0.5, 0.5, "no group members in these events", transform=ax.transAxes, ha="center", va="center")
        handles = [Patch(facecolor=colours[g], label=f"generation {g}") for g in gens]
        handles += [
            Patch(facecolor="#eeeeee", edgecolor="#999999", hatch="..", label="joining"),
            Patch(facecolor="white", edgecolor="#777777", hatch="//", label="rebalancing"),
        ]
        ax.legend(
            handles=handles + state_handles + _marker_handles(data, lanes),
            loc="upper left",
            fontsize=8,
            frameon=False,
            bbox_to_anchor=(1.005, 1.0 + (strip_in + band_in) / lanes_in),
        )
        fig.suptitle(
            title or ("timeline of group " + ", ".join(groups) if groups else "timeline"),
            fontsize=11,
            y=1 - 0.08 / height_in,
            va="top",
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    return path


LABEL_CHARS = 30  # longer marker labels are cut
MARKER_MEANINGS = {  # kind -> what its line means, in the legend
    "rebalance_started": "rebalance started",
    "member_expired": "member's session expired",
    "member_left": "member left",
    "fault_fired": "fault rule fired",
    "access_denied": "access denied (ACLs)",
    "broker_stopped": "broker stopped",
    "broker_started": "broker started",
    "coordinator_moved": "coordinator moved",
    "network_cut": "network cut",
    "network_healed": "network healed",
    "clock_advanced": "virtual clock advanced",
    "txn_fenced": "transaction fenced",
    "txn_timed_out": "transaction timed out",
    "txn_aborted": "transaction aborted",
    "share_lock_expired": "acquisition lock expired",
    "share_archived": "records archived",
}


def _marker_handles(data: Swimlanes, lanes: list[Lane]) -> list[Any]:
    """Legend entries for the marks in this picture: each kind of vertical line, and the
    symbols at a lane's end (expired, left) and on a lane (a fault fired on that client)."""
    from matplotlib.lines import Line2D

    handles = []
    kinds = {m.kind for m in data.markers if m.kind not in CLIENT_MARKS or m.label}
    for kind, (colour, style) in MARKER_STYLES.items():
        if kind in kinds and kind not in LANE_MARKS:  # a lane's marks have a symbol entry below
            label = MARKER_MEANINGS.get(kind, kind.replace("_", " "))
            handles.append(Line2D([], [], color=colour, linestyle=style, linewidth=1.1, label=label))
    ended = {lane.ended for lane in lanes if lane.segments}
    for how, symbol in (("expired", "X"), ("left", "o")):
        if how in ended:
            colour = MARKER_STYLES[f"member_{how}"][0]
            handles.append(
                Line2D([], [], color=colour, marker=symbol, linestyle="none", markersize=8, label=f"member {how} here")
            )
    clients = {lane.client_id for lane in lanes}
    for kind, meaning in CLIENT_MARKS.items():
        if any(m.kind == kind and m.client_id in clients for m in data.markers):
            colour = MARKER_STYLES[kind][0]
            handles.append(Line2D([], [], color=colour, marker="v", linestyle="none", markersize=5, label=meaning))
    for kind, (symbol, _, meaning) in LANE_MARKS.items():
        if any(m.kind == kind and m.client_id in clients for m in data.markers):
            colour = MARKER_STYLES[kind][0]
            handles.append(Line2D([], [], color=colour, marker=symbol, linestyle="none", markersize=5, label=meaning))
    return handles


def _generation_colours(gens: list[int]) -> dict[int, str]:
    palette = [
        "#4e79a7",
        "#59a14f",
        "#f28e2b",
        "#b07aa1",
        "#76b7b2",
        "#edc948",
        "#ff9da7",
        "#9c755f",
        "#e15759",
        "#86bcb6",
        "#d4a6c8",
        "#a0cbe8",
    ]  # adjacent generations always differ; 12 before it repeats
    return {g: palette[i % len(palette)] for i, g in enumerate(gens)}


def _draw_segment(ax: Any, y: int, seg: Segment, colours: dict[int, str], per_char: float) -> None:
    end = seg.end if seg.end is not None else seg.start
    if seg.generation is None:
        ax.barh(
            y,
            max(end - seg.start, 0),
            left=seg.start,
            height=0.36,
            color="#eeeeee",
            edgecolor="#999999",
            hatch="..",
            linewidth=0.6,
        )
        return
    colour = colours[seg.generation]
    solid_end = seg.rebalancing_from if seg.rebalancing_from is not None else end
    ax.barh(
        y, max(solid_end - seg.start, 0), left=seg.start, height=0.6, color=colour, edgecolor="white", linewidth=0.8
    )
    if seg.rebalancing_from is not None:
        ax.barh(
            y,
            max(end - solid_end, 0),
            left=solid_end,
            height=0.6,
            color=colour,
            alpha=0.35,
            hatch="//",
            edgecolor="#555555",
            linewidth=0.4,
        )
    # The generation and the assignment on one line, else on two, else the generation alone.
    gen, parts = f"g{seg.generation}", format_assignment(seg.assignment) if seg.assignment else ""
    room = end - seg.start
    texts = [f"{gen}  {parts}", f"{gen}\n{parts}"] if parts else []
    text = next((t for t in texts if max(map(len, t.split("\n"))) * per_char <= room), gen)
    if len(gen) * per_char <= room * 1.6:  # a little overflow into the gap is fine; more would collide
        ax.text(
            seg.start + per_char * 0.6,
            y,
            text,
            va="center",
            ha="left",
            fontsize=8 if "\n" not in text else 7,
            color="black",
            clip_on=True,
            linespacing=1.0,
        )


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
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _draw_labels(strip: Any, labelled: list[Marker], rows: list[tuple[int, bool]]) -> None:
    """The markers' labels above the chart, in rows, each on a thin stem down to its line."""
    strip.set_axis_off()
    strip.set_ylim(0, max((r for r, _ in rows), default=0) + 1)
    for m, (row, leftwards) in zip(labelled, rows):
        colour = MARKER_STYLES.get(m.kind, ("#555555", "--"))[0]
        strip.plot([m.x, m.x], [0, row + 0.5], color=colour, linewidth=0.6, alpha=0.7)
        text = _cut(m.label) + " " if leftwards else " " + _cut(m.label)
        strip.text(
            m.x,
            row + 0.5,
            text,
            fontsize=7,
            color=colour,
            ha="right" if leftwards else "left",
            va="center",
            bbox={"boxstyle": "square,pad=0.05", "facecolor": "white", "linewidth": 0},
        )


def _draw_marker(ax: Any, band: Any, m: Marker, lanes: list[Lane]) -> None:
    colour, style = MARKER_STYLES.get(m.kind, ("#555555", "--"))
    if m.kind in LANE_MARKS:  # on the member's lane (re-read, or redelivered), with how many records, no line
        symbol, dy, _ = LANE_MARKS[m.kind]
        for y, lane in enumerate(lanes):
            if lane.client_id == m.client_id and any(s.start <= m.x <= (s.end or m.x) for s in lane.segments):
                ax.plot([m.x], [y + dy], marker=symbol, markersize=5, color=colour, zorder=6)
                if m.count > 1:
                    ax.annotate(
                        str(m.count),
                        (m.x, y + dy),
                        xytext=(4, -1),
                        textcoords="offset points",
                        fontsize=7,
                        color=colour,
                        va="center",
                    )
        return
    if m.kind in CLIENT_MARKS:  # can happen often: a small mark on the client's lane, a line only for the first
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
            band.barh(
                row,
                max(end - start, 0),
                left=start,
                height=0.8,
                color=STATE_COLOURS.get(state, "#cccccc"),
                edgecolor="white",
                linewidth=0.5,
            )
            if (end - start) > (data.end - data.start) * 0.07:
                band.text(start + (end - start) / 2, row, state, ha="center", va="center", fontsize=7, clip_on=True)
    band.set_yticks(range(len(groups)), [f"{g} state" for g in groups])
    band.set_ylim(len(groups) - 0.5 if groups else 0.5, -0.5)
    band.tick_params(axis="x", labelbottom=False, bottom=False)
    return [Patch(facecolor=STATE_COLOURS.get(s, "#cccccc"), edgecolor="#999999", label=f"state {s}") for s in seen]

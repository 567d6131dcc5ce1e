"""What a campaign leaves behind: the summary (runs, failures by kind with the smallest failing
seed of each, its minimal schedule, the command that replays it and in how many tries that run
failed again), and in the output folder the rows as Parquet partitioned by verdict, one replay
test per failing kind, and a small HTML report with a picture of the failures by fault mix and
setting."""

from __future__ import annotations

import html
import shlex
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .replay import write_replay

if TYPE_CHECKING:
    from .spark import CampaignResult


@dataclass(frozen=True)
class Finding:
    """One failing kind: its smallest failing run, the run to replay (the shrunk one when
    shrinking found it), the replay command, and how often that run failed again."""

    kind: str
    count: int
    smallest: Mapping[str, Any]
    replayed: Mapping[str, Any]
    shrunk: str  # "" or "shrunk in R rounds (N runs) to S step(s)" (and "; fails in K of T tries" of
    # its last round when the campaign did not replay it again)
    command: str
    reproduced: str = ""  # "" (not replayed again) or "fails in K of T tries" (and what the others gave)


def findings(result: CampaignResult, campaign_path: str, out: Path, tries: int = 3) -> list[Finding]:
    """Each failing kind, with its replay test written under ``out/replays``."""
    counts = Counter(r["verdict"] for r in result.failed)
    replayed_runs = result.replayed()
    found = []
    for kind, row in sorted(result.smallest_failing().items(), key=lambda kv: -counts[kv[0]]):
        shrunk = result.shrunk.get(kind)
        again = result.reproduced.get(kind)
        replayed = replayed_runs[kind]
        path = write_replay(replayed, campaign_path, out / "replays", tries=tries)
        note = ""
        if shrunk is not None:
            note = f"shrunk in {shrunk.rounds} rounds ({shrunk.runs} runs) to {len(shrunk.schedule)} step(s)"
            if again is None:
                note += f"; fails in {shrunk.reproduced} of {shrunk.tries} tries"
        command = f"python -m pytest {shlex.quote(str(path))}"
        found.append(Finding(kind, counts[kind], row, replayed, note, command, again.describe() if again else ""))
    return found


def summary_lines(result: CampaignResult, found: list[Finding]) -> list[str]:
    """The summary as plain lines (the table's content)."""
    runs = result.runs
    lines = [
        f"{len(runs)} runs of {result.campaign.name} in {result.seconds:g} s"
        + (" (cut short by --max-minutes)" if result.cut_short else ""),
    ]
    for f in found:
        cell = ", ".join(f"{k}={v}" for k, v in sorted(f.smallest["cell"].items())) or "-"
        lines.append(
            f"{f.kind}: {f.count} run(s); smallest seed {f.smallest['seed']} (mix {f.smallest['mix']}, {cell})"
        )
        if f.shrunk:
            lines.append(f"  {f.shrunk}:")
        lines += [f"    {line}" for line in str(f.replayed["schedule_text"]).splitlines()]
        lines.append(f"  replay: {f.command}" + (f" ({f.reproduced})" if f.reproduced else ""))
    return lines


def print_summary(result: CampaignResult, found: list[Finding], console: Any) -> None:
    """The summary as a rich table on ``console``."""
    from rich.table import Table

    table = Table(title=f"campaign {result.campaign.name}: {len(result.runs)} runs in {result.seconds:g} s")
    for column in ("verdict", "runs", "smallest seed", "schedule to replay", "replay", "replay fails"):
        table.add_column(column, overflow="fold")
    verdicts = Counter(r["verdict"] for r in result.runs)
    table.add_row("ok", str(verdicts.get("ok", 0)), "", "", "", "")
    for f in found:
        cell = ", ".join(f"{k}={v}" for k, v in sorted(f.smallest["cell"].items()))
        schedule = str(f.replayed["schedule_text"]) + (f"\n({f.shrunk})" if f.shrunk else "")
        table.add_row(
            f.kind,
            str(f.count),
            f"{f.smallest['seed']} ({f.smallest['mix']}; {cell})",
            schedule,
            f.command,
            f.reproduced.removeprefix("fails in ") or "-",
        )
    console.print(table)


def failures_by_setting(result: CampaignResult) -> dict[str, Counter[str]]:
    """For each fault mix and grid cell (a label), the runs by verdict."""
    out: dict[str, Counter[str]] = {}
    for row in result.runs:
        cell = ", ".join(f"{k}={v}" for k, v in sorted(row["cell"].items()))
        label = f"{row['mix']}" + (f"\n{cell}" if cell else "")
        out.setdefault(label, Counter())[row["verdict"]] += 1
    return out


def draw_failures(result: CampaignResult, path: Path) -> Path | None:
    """A bar chart of the runs by verdict for each fault mix and setting; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    data = failures_by_setting(result)
    labels = list(data)
    kinds = [k for k in ("lost", "duplicated", "out_of_order", "stuck", "crashed") if any(data[x][k] for x in labels)]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(labels) + 2), 3.6))
    bottom = [0] * len(labels)
    colours = {
        "lost": "#c0392b",
        "duplicated": "#e67e22",
        "out_of_order": "#8e44ad",
        "stuck": "#7f8c8d",
        "crashed": "#2c3e50",
    }
    for kind in kinds:
        values = [data[x][kind] for x in labels]
        ax.bar(labels, values, bottom=bottom, label=kind, color=colours[kind])
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    for i, label in enumerate(labels):
        total = sum(data[label].values())
        ax.text(i, bottom[i], f"{bottom[i]} of {total}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("failing runs")
    ax.set_title(f"{result.campaign.name}: failures by fault mix and setting")
    if kinds:
        ax.legend(fontsize=8)
    ax.set_ylim(0, max([*bottom, 1]) * 1.2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_html(result: CampaignResult, found: list[Finding], out: Path) -> Path:
    """``out/report.html``: the summary, the picture and the failing runs."""
    picture = draw_failures(result, out / "failures.png")
    esc = html.escape
    rows = []
    for f in found:
        rows.append(
            f"<tr><td>{esc(f.kind)}</td><td>{f.count}</td><td>{f.smallest['seed']}</td>"
            f"<td><pre>{esc(str(f.replayed['schedule_text']))}</pre>{esc(f.shrunk)}</td>"
            f"<td><code>{esc(f.command)}</code></td><td>{esc(f.reproduced or '-')}</td></tr>"
        )
    failing = []
    for row in sorted(result.failed, key=lambda r: r["seed"])[:200]:
        cell = ", ".join(f"{k}={v}" for k, v in sorted(row["cell"].items()))
        failing.append(
            f"<tr><td>{row['seed']}</td><td>{esc(row['mix'])}</td><td>{esc(cell)}</td><td>{esc(row['verdict'])}</td>"
            f"<td><pre>{esc(str(row.get('schedule_text', '')))}</pre></td>"
            f"<td><pre>{esc(str(row.get('error', ''))[:600])}</pre></td></tr>"
        )
    verdicts = Counter(r["verdict"] for r in result.runs)
    body = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>fakebroker campaign {esc(result.campaign.name)}</title>
<style>body{{font-family:sans-serif;margin:2em}} td,th{{border:1px solid #ccc;padding:4px;vertical-align:top}}
table{{border-collapse:collapse}} pre{{margin:0;font-size:12px}}</style></head><body>
<h1>Campaign {esc(result.campaign.name)}</h1>
<p>{len(result.runs)} runs in {result.seconds:g} s; {sum(n for v, n in verdicts.items() if v != "ok")} failed
({esc(", ".join(f"{v}: {n}" for v, n in verdicts.most_common()))}).</p>
{f'<img src="{picture.name}" alt="failures by fault mix and setting">' if picture else ""}
<h2>Findings</h2>
<table><tr><th>verdict</th><th>runs</th><th>smallest seed</th><th>schedule to replay</th><th>replay</th>
<th>replay fails</th></tr>
{"".join(rows) or "<tr><td colspan=6>none</td></tr>"}</table>
<h2>Failing runs</h2>
<table><tr><th>seed</th><th>mix</th><th>setting</th><th>verdict</th><th>schedule</th><th>what</th></tr>
{"".join(failing) or "<tr><td colspan=6>none</td></tr>"}</table>
</body></html>
"""
    path = out / "report.html"
    path.write_text(body)
    return path

"""A campaign on Spark: every run of the grid (seed x fault mix x client settings) is a Spark
task, each starting its own cluster on loopback in a process of its own on the executor
(:mod:`.isolate`), its row collected as it finishes; shrinking runs its rounds as Spark jobs too.

The campaign module reaches the executors as Spark ships Python code: a ``.py`` file is zipped
with the ``.py`` files beside it (the application and harness it imports) and added with
``addPyFile``; a module name must be importable there already (``--py-files``, or a packed
environment through ``spark.archives``). fakebroker itself must be installed where the
executors run (on ``local[*]`` it is the driver's own environment).

Spark's own retries do not apply to verdicts: a run's failure is a row, not a failed task. A
task fails only if its Python worker dies, and the rows of the tasks done before are kept."""

from __future__ import annotations

import tempfile
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .isolate import run_isolated
from .runs import VERDICTS, Campaign, CampaignError, Job, load_campaign
from .shrink import Shrunk, shrink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FAILURES = tuple(v for v in VERDICTS if v != "ok")


@dataclass
class Progress:
    """Where a campaign is: runs done of all, verdicts so far, seconds since it started."""

    total: int
    done: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)
    phase: str = "runs"

    @property
    def failed(self) -> int:
        return sum(n for v, n in self.verdicts.items() if v != "ok")

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate else None


@dataclass
class CampaignResult:
    """What a campaign found: every row (its runs, then its shrinking runs, ``tag`` tells them
    apart), the shrunk failure of each kind, and whether ``max_minutes`` cut it short."""

    campaign: Campaign
    rows: list[dict[str, Any]]
    shrunk: dict[str, Shrunk]
    seconds: float
    cut_short: bool = False

    @property
    def runs(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if not r.get("tag")]

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.runs if r["verdict"] != "ok"]

    def smallest_failing(self) -> dict[str, dict[str, Any]]:
        """Each failing kind's run with the smallest seed (then the first cell)."""
        out: dict[str, dict[str, Any]] = {}
        for row in sorted(self.failed, key=lambda r: (r["seed"], sorted(r["cell"].items()), r["mix"])):
            out.setdefault(row["verdict"], row)
        return out


def grid_cells(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in order."""
    cells: list[dict[str, Any]] = [{}]
    for key, values in grid.items():
        cells = [{**c, key: v} for c in cells for v in values]
    return cells


def jobs_of(
    campaign: Campaign,
    seeds: int | Sequence[int],
    grid: Mapping[str, Sequence[Any]] | None,
    mixes: Sequence[str] | None,
) -> list[Job]:
    """The campaign's runs: each seed with each mix and each grid cell (``grid`` over the
    module's ``GRID``: a key given here replaces the module's values)."""
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seed_list:
        raise CampaignError("seeds: give at least one")
    chosen = {m.name: m for m in campaign.mixes}
    for name in mixes or ():
        if name not in chosen:
            raise CampaignError(f"mix {name!r}: the campaign's mixes are {', '.join(chosen)}")
    names = list(mixes or chosen)
    full = {**campaign.grid, **{k: list(v) for k, v in (grid or {}).items()}}
    cells = grid_cells(full)
    return [Job(campaign.spec, s, m, c, None, campaign.timeout) for s in seed_list for m in names for c in cells]


def ship(spark: SparkSession, spec: str) -> str:
    """Make the campaign importable on the executors; the name they import it by."""
    if not spec.endswith(".py"):
        return spec
    path = Path(spec).resolve()
    folder = Path(tempfile.mkdtemp(prefix="fakebroker-campaign-"))
    bundle = folder / f"{path.stem}_campaign.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        for source in sorted(path.parent.glob("*.py")):
            z.write(source, source.name)
    spark.sparkContext.addPyFile(str(bundle))
    return path.stem


def _run_partition(jobs: Iterable[dict[str, Any]], tally: Any) -> Iterator[dict[str, Any]]:
    for data in jobs:
        row = run_isolated(Job.from_json(data))
        tally.add(Counter({row["verdict"]: 1}))
        yield row


class _CounterParam:
    """An accumulator of verdict counts (merged at the driver as tasks finish)."""

    def zero(self, value: Counter[str]) -> Counter[str]:
        return Counter()

    def addInPlace(self, a: Counter[str], b: Counter[str]) -> Counter[str]:  # noqa: N802 (Spark's name)
        a.update(b)
        return a


def execute_on_spark(
    spark: SparkSession,
    jobs: list[Job],
    executor_spec: str,
    *,
    progress: Callable[[Progress], None] | None = None,
    phase: str = "runs",
) -> list[dict[str, Any]]:
    """Run ``jobs`` as one Spark job, a task each; their rows (with the driver's campaign spec).
    A run's failure is its row: the job fails only if a Python worker dies."""
    from pyspark.accumulators import AccumulatorParam

    class Param(_CounterParam, AccumulatorParam[Counter[str]]):
        pass

    if not jobs:
        return []
    sc = spark.sparkContext
    tally = sc.accumulator(Counter(), Param())
    data = [{**j.to_json(), "campaign": executor_spec} for j in jobs]
    rdd = sc.parallelize(data, len(data)).mapPartitions(lambda it: _run_partition(it, tally))
    state: dict[str, Any] = {}

    def collect() -> None:
        sc.setJobDescription(f"fakebroker campaign: {len(jobs)} {phase}")  # Spark's UI shows it
        try:
            state["rows"] = rdd.collect()
        except Exception as exc:  # a dead worker
            state["error"] = exc

    worker = threading.Thread(target=collect, name="campaign-collect", daemon=True)
    shown = Progress(len(jobs), phase=phase)
    worker.start()
    while worker.is_alive():
        worker.join(0.25)
        shown.verdicts = Counter(tally.value)
        shown.done = sum(shown.verdicts.values())
        if progress is not None:
            progress(shown)
    if "rows" not in state:
        raise CampaignError(f"the Spark job failed: {state.get('error')!r}")
    rows: list[dict[str, Any]] = state["rows"]
    for row in rows:
        row["campaign"] = jobs[0].campaign
    return rows


def run_campaign(
    spark: SparkSession,
    module: str,
    *,
    seeds: int | Sequence[int] = 100,
    grid: Mapping[str, Sequence[Any]] | None = None,
    mixes: Sequence[str] | None = None,
    shrink_failures: bool = False,
    tries: int = 3,
    max_minutes: float | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> CampaignResult:
    """Run a campaign on ``spark``: its runs, then (``shrink_failures``) the shrinking of the
    smallest failing run of each kind. With ``max_minutes``, runs go in waves and no new wave
    starts past the time (the runs done are kept)."""
    campaign = load_campaign(module)
    jobs = jobs_of(campaign, seeds, grid, mixes)
    started = time.monotonic()
    deadline = started + max_minutes * 60 if max_minutes else None
    executor_spec = ship(spark, module)
    rows: list[dict[str, Any]] = []
    cut_short = False
    wave = len(jobs) if deadline is None else max(8, 4 * spark.sparkContext.defaultParallelism)
    tally = Progress(len(jobs))
    for first in range(0, len(jobs), wave):
        if deadline is not None and time.monotonic() > deadline:
            cut_short = True
            break
        done_before = Counter(tally.verdicts)

        def shown(p: Progress, before: Counter[str] = done_before) -> None:
            tally.verdicts = before + p.verdicts
            tally.done = sum(tally.verdicts.values())
            if progress is not None:
                progress(tally)

        got = execute_on_spark(spark, jobs[first : first + wave], executor_spec, progress=shown)
        rows += got
        tally.verdicts = done_before + Counter(r["verdict"] for r in got)
    result = CampaignResult(campaign, rows, {}, 0.0, cut_short)
    if shrink_failures:
        for kind, start in result.smallest_failing().items():
            if kind in ("stuck", "crashed"):
                continue  # their schedules are shrunk only by hand: a stuck run takes its whole timeout

            def execute(js: list[Job], kind: str = kind) -> list[dict[str, Any]]:
                got = execute_on_spark(spark, js, executor_spec, progress=progress, phase=f"shrinking {kind}")
                result.rows.extend(got)
                return got

            result.shrunk[kind] = shrink(start, execute, tries=tries)
    result.seconds = round(time.monotonic() - started, 1)
    return result


ROW_SCHEMA = (
    "campaign string, seed long, mix string, cell map<string,string>, schedule string, timeout double, "
    "tag string, verdict string, produced long, processed long, lost long, duplicated long, out_of_order long, "
    "seconds double, schedule_text string, actions array<string>, timeline string, error string, output string, "
    "version string, host string"
)


def to_dataframe(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """The rows as a DataFrame (the cells' values as text)."""
    columns = [c.split()[0] for c in ROW_SCHEMA.split(", ")]
    clean = []
    for row in rows:
        out = {c: row.get(c) for c in columns}
        out["cell"] = {str(k): str(v) for k, v in (row.get("cell") or {}).items()}
        out["actions"] = [str(a) for a in row.get("actions") or []]
        for c in ("produced", "processed", "lost", "duplicated", "out_of_order"):
            out[c] = int(out[c] or 0)
        out["seconds"] = float(out["seconds"] or 0.0)
        out["timeout"] = float(out["timeout"]) if out["timeout"] is not None else None
        out["tag"] = out["tag"] or ""
        clean.append(out)
    return spark.createDataFrame(clean, ROW_SCHEMA)


def campaign(
    spark: SparkSession,
    scenario: str,
    *,
    seeds: int | Sequence[int] = 100,
    grid: Mapping[str, Sequence[Any]] | None = None,
    mixes: Sequence[str] | None = None,
    shrink: bool = False,
    tries: int = 3,
    max_minutes: float | None = None,
) -> DataFrame:
    """A campaign's rows as a DataFrame: one per run, verdict kind, counts, timings, the
    expanded schedule, a compact timeline, the seed and fakebroker's version (``tag`` names the
    shrinking runs). ``scenario`` is a campaign module: a ``.py`` path or a module name."""
    result = run_campaign(
        spark,
        scenario,
        seeds=seeds,
        grid=grid,
        mixes=mixes,
        shrink_failures=shrink,
        tries=tries,
        max_minutes=max_minutes,
    )
    return to_dataframe(spark, result.rows)

"""A campaign on Spark: every run of the grid (seed x fault mix x client settings) is a Spark
task, each starting its own cluster on loopback in a process of its own on the executor
(:mod:`.isolate`), its row collected as it finishes; shrinking runs its rounds as Spark jobs too.

The campaign module reaches the executors as Spark ships Python code: a ``.py`` file is zipped
with the ``.py`` files beside it (the application and harness it imports) and added with
``addPyFile``; a module name must be importable there already (``--py-files``, or a packed
environment through ``spark.archives``). fakebroker itself must be installed where the
executors run (on ``local[*]`` it is the driver's own environment).

Spark's own retries do not apply to verdicts: a run's failure is a row, not a failed task. A
task fails only if its Python worker dies (or its executor is lost); the rows of the tasks done
are kept, the dead task's run is a ``crashed`` row with Spark's error, and the runs not done are
run in a new job. ``fakebroker campaign`` sets ``spark.task.maxFailures=1`` so Spark does not
retry such a task first; a session given to :func:`campaign` keeps its own setting."""

from __future__ import annotations

import functools
import re
import tempfile
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..version import __version__
from .isolate import OUTPUT_TAIL, run_isolated
from .reproduce import Reproduced, reproduce
from .runs import VERDICTS, Campaign, CampaignError, Job, load_campaign, schedule_of
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
    """What a campaign found: every row (its runs, then its shrinking and replaying runs, ``tag``
    tells them apart), the shrunk failure of each kind, how often each kind's replayed run failed
    again, and whether ``max_minutes`` cut it short."""

    campaign: Campaign
    rows: list[dict[str, Any]]
    shrunk: dict[str, Shrunk]
    seconds: float
    cut_short: bool = False
    reproduced: dict[str, Reproduced] = field(default_factory=dict)

    def replayed(self) -> dict[str, dict[str, Any]]:
        """Each failing kind's run its replay test runs: the smallest failing schedule shrinking
        found, or else the run with the smallest seed."""
        return {
            kind: dict(self.shrunk[kind].minimal) if kind in self.shrunk else row
            for kind, row in self.smallest_failing().items()
        }

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


def _run_partition(jobs: Iterable[tuple[int, dict[str, Any]]], done: Any) -> Iterator[int]:
    for index, data in jobs:
        done.add([(index, run_isolated(Job.from_json(data)))])
        yield index


class _RowsParam:
    """An accumulator of (job index, row) pairs. The driver merges each task's as the task
    finishes, and keeps them when a later task of the job fails: the rows come back this way,
    not through the action's result."""

    def zero(self, value: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
        return []

    def addInPlace(  # noqa: N802 (Spark's name)
        self, a: list[tuple[int, dict[str, Any]]], b: list[tuple[int, dict[str, Any]]]
    ) -> list[tuple[int, dict[str, Any]]]:
        a.extend(b)
        return a


# How Spark names the task of a failed job: "Task 3 in stage 7.0 failed 1 times, most recent
# failure: Lost task 3.0 in stage 7.0 (TID 12) ..."; a task's index is its partition's, here its job's.
FAILED_TASK = re.compile(r"Lost task (\d+)\.\d+ in stage|Task (\d+) in stage \S+ failed")
MAX_REDOS = 20  # Spark jobs one execute_on_spark may start after failed ones (each failure is a row)


def failed_task(error: BaseException) -> int | None:
    """The partition index of the task that failed a Spark job, from its message; None if not named."""
    found = FAILED_TASK.search(str(error))
    return int(found[1] or found[2]) if found else None


def crashed_row(job: Job, error: BaseException, spec: str) -> dict[str, Any]:
    """The row of a run whose Spark task died (its Python worker killed, its executor lost):
    crashed, with Spark's account of it as the run's output."""
    text = str(error)
    first = next((line for line in text.splitlines() if line.strip()), "")
    schedule = schedule_of(load_campaign(spec), job)  # the driver loaded the campaign already
    return {
        **job.to_json(),
        "campaign": spec,
        "verdict": "crashed",
        "schedule": schedule.to_json(),
        "schedule_text": schedule.describe(),
        "error": f"the Spark task running it failed: {first[:300]}",
        "output": text[-OUTPUT_TAIL:],
        "seconds": 0.0,
        "version": __version__,
    }


def execute_on_spark(
    spark: SparkSession,
    jobs: list[Job],
    executor_spec: str,
    *,
    progress: Callable[[Progress], None] | None = None,
    phase: str = "runs",
) -> list[dict[str, Any]]:
    """Run ``jobs`` as a Spark job, a task each; their rows, in order (with the driver's campaign
    spec). A run's failure is its row. A task that dies (its Python worker killed, its executor
    lost) fails the Spark job: the rows of the tasks done are kept, the dead task's run is a
    ``crashed`` row with Spark's error as its output, and the runs not done go in a new job."""
    from pyspark.accumulators import AccumulatorParam

    class Param(_RowsParam, AccumulatorParam[list[tuple[int, dict[str, Any]]]]):
        pass

    if not jobs:
        return []
    sc = spark.sparkContext
    spec = jobs[0].campaign
    rows: dict[int, dict[str, Any]] = {}
    shown = Progress(len(jobs), phase=phase)

    def poll(got: list[tuple[int, dict[str, Any]]]) -> None:
        shown.verdicts = Counter(r["verdict"] for r in rows.values()) + Counter(r["verdict"] for _, r in got)
        shown.done = sum(shown.verdicts.values())
        if progress is not None:
            progress(shown)

    todo = list(range(len(jobs)))
    error: BaseException | None = None
    for _ in range(MAX_REDOS + 1):
        data = [(i, {**jobs[i].to_json(), "campaign": executor_spec}) for i in todo]
        got, error = _spark_job(sc, Param(), data, f"fakebroker campaign: {len(todo)} {phase}", poll)
        rows.update(got)
        if error is None:
            break
        dead = failed_task(error)
        if dead is None or dead >= len(todo) or todo[dead] in rows:
            # no task of it named as the one that failed: the job never ran (the driver could
            # not ship it) or was cancelled; not a run's finding
            raise CampaignError(f"the Spark job failed: {error!r}")
        rows[todo[dead]] = crashed_row(jobs[todo[dead]], error, spec)
        todo = [i for i in todo if i not in rows]
        if not todo:
            break
    if error is not None:  # MAX_REDOS jobs failed in a row: the runs left are crashed too
        rows.update((i, crashed_row(jobs[i], error, spec)) for i in todo if i not in rows)
    out = [rows[i] for i in range(len(jobs))]
    for row in out:
        row["campaign"] = spec
    return out


def _spark_job(
    sc: Any,
    param: Any,
    data: list[tuple[int, dict[str, Any]]],
    description: str,
    poll: Callable[[list[tuple[int, dict[str, Any]]]], None],
) -> tuple[list[tuple[int, dict[str, Any]]], BaseException | None]:
    """One Spark job over ``data``, a task each; the (index, row) pairs of the tasks that
    finished, and the error that failed the job (None if none did). ``poll`` sees the pairs
    so far four times a second."""
    done = sc.accumulator([], param)
    rdd = sc.parallelize(data, len(data)).mapPartitions(functools.partial(_run_partition, done=done))
    state: dict[str, BaseException] = {}

    def count() -> None:
        sc.setJobDescription(description)  # Spark's UI shows it
        try:
            rdd.count()
        except Exception as exc:  # a task died: its worker, or its executor
            state["error"] = exc

    worker = threading.Thread(target=count, name="campaign-job", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.25)
        poll(list(done.value))
    return list(done.value), state.get("error")


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
    reproduce_failures: bool = False,
) -> CampaignResult:
    """Run a campaign on ``spark``: its runs, then (``shrink_failures``) the shrinking of the
    smallest failing run of each kind, then (``reproduce_failures``) each kind's replayed run
    (:meth:`CampaignResult.replayed`) ``tries`` times more, to say how often it fails again
    (:attr:`CampaignResult.reproduced`). With ``max_minutes``, runs go in waves and no new wave
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
    if reproduce_failures:

        def again(js: list[Job]) -> list[dict[str, Any]]:
            got = execute_on_spark(spark, js, executor_spec, progress=progress, phase="replaying")
            result.rows.extend(got)
            return got

        result.reproduced = reproduce(result.replayed(), again, tries=tries)
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
    reproduce: bool = False,
) -> DataFrame:
    """A campaign's rows as a DataFrame: one per run, verdict kind, counts, timings, the
    expanded schedule, a compact timeline, the seed and fakebroker's version (``tag`` names the
    shrinking runs, and with ``reproduce`` the tries of each failing kind's replayed run).
    ``scenario`` is a campaign module: a ``.py`` path or a module name."""
    result = run_campaign(
        spark,
        scenario,
        seeds=seeds,
        grid=grid,
        mixes=mixes,
        shrink_failures=shrink,
        tries=tries,
        max_minutes=max_minutes,
        reproduce_failures=reproduce,
    )
    return to_dataframe(spark, result.rows)

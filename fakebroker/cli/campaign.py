"""``fakebroker campaign MODULE``: a fault campaign on Spark (:mod:`fakebroker.campaign`).
Nothing heavy is imported until the command runs: PySpark, the campaign package and rich."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import click

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _parse_grid(texts: tuple[str, ...]) -> dict[str, list[str]]:
    grid: dict[str, list[str]] = {}
    for text in texts:
        key, sep, values = text.partition("=")
        listed = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key.strip() or not listed:
            raise click.BadParameter(
                f"{text!r}: give KEY=V1,V2,..., e.g. --grid protocol=classic,consumer", param_hint="--grid"
            )
        grid[key.strip()] = listed
    return grid


@click.command(context_settings=CONTEXT)
@click.argument("module")
@click.option(
    "--seeds", type=click.IntRange(min=1), default=100, show_default=True, help="Seeds per fault mix and grid cell."
)
@click.option(
    "--grid",
    "grids",
    multiple=True,
    help="Client settings to try: KEY=V1,V2 (repeatable; replaces the module's GRID[KEY]).",
)
@click.option("--mix", "mixes", multiple=True, help="Only these fault mixes of the module's FAULT_MIXES (repeatable).")
@click.option(
    "--master",
    default=None,
    help="Spark master: local[*] (the default outside spark-submit), local[N], spark://HOST:PORT, k8s://..., yarn.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="fakebroker-campaign",
    show_default=True,
    help="Folder for the runs (Parquet, by verdict), the replay tests and report.html.",
)
@click.option("--shrink", is_flag=True, help="Shrink each kind of failure to its smallest failing schedule.")
@click.option(
    "--tries",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Runs of each shrinking candidate and of a replay; each failing kind's replayed run is run this many "
    "times more, and the summary says in how many it failed again.",
)
@click.option(
    "--max-minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Start no new runs after this long.",
)
def campaign(
    module: str,
    seeds: int,
    grids: tuple[str, ...],
    mixes: tuple[str, ...],
    master: str | None,
    out: str,
    shrink: bool,
    tries: int,
    max_minutes: float | None,
) -> None:
    """Run a fault campaign: MODULE's scenario (a .py file or a module name) over seeds x fault
    mixes x client settings, each run a Spark task with a cluster of its own.

    The last line is `campaign: N runs, M failed`; the exit status is 1 when any run failed.
    """
    grid = _parse_grid(grids)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise click.UsageError("campaign needs PySpark: pip install 'fakebroker[spark]'") from None
    from rich.console import Console

    from ..campaign import CampaignError, load_campaign
    from ..campaign.report import findings, print_summary, write_html
    from ..campaign.spark import jobs_of, run_campaign, to_dataframe

    try:
        loaded = load_campaign(module)
        total = len(jobs_of(loaded, seeds, grid, mixes))
    except CampaignError as exc:
        raise click.UsageError(str(exc)) from None
    console = Console(stderr=True)
    spark = _spark(master)
    folder = Path(out)
    try:
        with _progress(console, total) as show:
            result = run_campaign(
                spark,
                module,
                seeds=seeds,
                grid=grid,
                mixes=mixes or None,
                shrink_failures=shrink,
                tries=tries,
                max_minutes=max_minutes,
                progress=show,
                reproduce_failures=True,
            )
        folder.mkdir(parents=True, exist_ok=True)
        to_dataframe(spark, result.rows).write.mode("overwrite").partitionBy("verdict").parquet(str(folder / "runs"))
        found = findings(result, _replay_spec(module, loaded.module), folder, tries)
        report = write_html(result, found, folder)
    except CampaignError as exc:
        raise click.UsageError(str(exc)) from None
    finally:
        spark.stop()
    print_summary(result, found, Console() if sys.stdout.isatty() else Console(width=160))
    recorder = Console(record=True, width=140, file=io.StringIO())  # the summary as a picture, in --out
    print_summary(result, found, recorder)
    recorder.save_svg(str(folder / "summary.svg"), title="fakebroker campaign")
    click.echo(f"runs: {folder / 'runs'} (Parquet, by verdict); report: {report}")
    click.echo(f"campaign: {len(result.runs)} runs, {len(result.failed)} failed")
    sys.exit(1 if result.failed else 0)


def _replay_spec(module: str, loaded: Any) -> str:
    """What a replay test loads the campaign by: a .py path as given; for a module name, its file
    when it is a top-level module on disk (the replay then runs from any folder), else the name
    (a package's module, or one inside a --py-files zip: importable where the replay runs)."""
    if module.endswith(".py"):
        return module
    source = getattr(loaded, "__file__", None)
    if source and Path(source).is_file() and source.endswith(".py") and not loaded.__package__:
        return str(source)
    return module


def _spark(master: str | None) -> Any:
    """A SparkSession: spark-submit's (its master and settings) when run under it, else one on
    ``master`` (``local[*]`` by default) whose executors use this Python."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("fakebroker campaign")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this Python
    if master is None and not submitted:
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
    builder = builder.config("spark.task.maxFailures", "1").config("spark.ui.showConsoleProgress", "false")
    if master is not None and master.startswith("local"):  # this machine: its Python, loopback only
        builder = builder.config("spark.pyspark.python", sys.executable)
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class _progress:
    """Runs done, failures by kind, rate and ETA: a rich bar on a terminal, a line every 10 %
    otherwise (logs)."""

    def __init__(self, console: Any, total: int):
        self.console, self.total = console, total
        self._bar: Any = None
        self._task: Any = None
        self._shown_tenth = -1

    def __enter__(self) -> Any:
        if self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                TextColumn("{task.fields[failed]}"), console=self.console, transient=True,
            )  # fmt: skip
            self._bar.__enter__()
            self._task = self._bar.add_task("runs", total=self.total, failed="")
        return self.show

    def show(self, progress: Any) -> None:
        failed = ", ".join(f"{k} {n}" for k, n in sorted(progress.verdicts.items()) if k != "ok")
        failed = f"failed: {failed}" if failed else "no failure yet"
        if self._bar is not None:
            self._bar.update(
                self._task, description=progress.phase, completed=progress.done, total=progress.total, failed=failed
            )
            return
        tenth = progress.done * 10 // max(1, progress.total)
        if tenth != self._shown_tenth:
            self._shown_tenth = tenth
            eta = f", about {progress.eta_s:.0f} s left" if progress.eta_s else ""
            self.console.print(
                f"{progress.phase}: {progress.done}/{progress.total} ({progress.rate:.1f}/s{eta}); {failed}",
                highlight=False,
            )

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

"""How a fault campaign scales with Spark's cores: the same campaign (the same seeds, grid and
schedules) on ``local[1]`` and on ``local[2]``, wall time side by side in one run.

    python benchmarks/campaign.py [--seeds 16] [--module examples/campaigns/correct.py]

Each master gets a fresh SparkSession (its start is not counted: the clock starts at the first
run's submission). The table shows the runs, the wall time, the runs per second and the ratio of
``local[1]``'s time to ``local[2]``'s (2.0 would be a perfect doubling; the runs are real
clients' rebalances, so each run's own time varies a little from master to master). The last
line is ``speedup_2_cores: X``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]


def run_on(master: str, module: str, seeds: int) -> tuple[float, Counter[str]]:
    from pyspark.sql import SparkSession

    from fakebroker.campaign.spark import run_campaign

    spark = (
        SparkSession.builder.master(master)
        .appName(f"campaign benchmark {master}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.sparkContext.parallelize([0], 1).count()  # the session is up before the clock starts
        started = time.monotonic()
        result = run_campaign(spark, module, seeds=seeds, grid={"protocol": ["classic"]})
        return time.monotonic() - started, Counter(r["verdict"] for r in result.runs)
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--module", default=str(ROOT / "examples" / "campaigns" / "correct.py"))
    args = parser.parse_args()
    times = {}
    table = Table(title=f"campaign {Path(args.module).stem}: {args.seeds} seeds (protocol=classic)")
    for column in ("master", "runs", "wall s", "runs/s", "verdicts"):
        table.add_column(column)
    for master in ("local[1]", "local[2]"):
        seconds, verdicts = run_on(master, args.module, args.seeds)
        times[master] = seconds
        runs = sum(verdicts.values())
        table.add_row(
            master,
            str(runs),
            f"{seconds:.1f}",
            f"{runs / seconds:.2f}",
            ", ".join(f"{k} {n}" for k, n in verdicts.items()),
        )
    Console().print(table)
    print(f"speedup_2_cores: {times['local[1]'] / times['local[2]']:.2f}")


if __name__ == "__main__":
    main()

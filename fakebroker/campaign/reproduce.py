"""How often a failure reproduces: the run a replay test replays (each failing kind's smallest
failing run, or the smallest schedule shrinking found for it) run again ``tries`` times, as
the campaign's other runs (on Spark: one job, a task each), counting the tries that fail the same
way. Where real clients' timing decides, a failure found once may come back in only some tries;
the summary says in how many, so a reader knows how often to run its replay."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .runs import Job

Execute = Callable[[list[Job]], list[dict[str, Any]]]


@dataclass(frozen=True)
class Reproduced:
    """The tries of one failing kind's replayed run: how many failed as it did (``failed`` of
    ``tries``) and the verdicts of all of them."""

    kind: str
    run: Mapping[str, Any]
    failed: int
    tries: int
    verdicts: Counter[str] = field(default_factory=Counter)

    def describe(self) -> str:
        """``fails in K of T tries``, and what the other tries gave when they did not pass."""
        others = ", ".join(f"{n} {v}" for v, n in sorted(self.verdicts.items()) if v != self.kind)
        return f"fails in {self.failed} of {self.tries} tries" + (f" ({others})" if others else "")


def reproduce(runs: Mapping[str, Mapping[str, Any]], execute: Execute, *, tries: int = 3) -> dict[str, Reproduced]:
    """Each kind's run (kind -> its row) again ``tries`` times, all in one ``execute`` (jobs ->
    rows, in order); how often each failed the same way. The jobs are tagged
    ``replay:<kind>:<try>``."""
    jobs = [
        Job(
            str(row["campaign"]),
            int(row["seed"]),
            str(row["mix"]),
            dict(row["cell"]),
            row["schedule"],
            row.get("timeout"),
            f"replay:{kind}:{i}",
        )
        for kind, row in runs.items()
        for i in range(tries)
    ]
    if not jobs:
        return {}
    rows = execute(jobs)
    out: dict[str, Reproduced] = {}
    for k, (kind, run) in enumerate(runs.items()):
        verdicts = Counter(r["verdict"] for r in rows[k * tries : (k + 1) * tries])
        out[kind] = Reproduced(kind, run, verdicts[kind], tries, verdicts)
    return out

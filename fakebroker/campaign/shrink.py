"""Shrinking a failure: run its schedule again with a step left out or an argument halved, keep
the smallest that still fails the same way, and start over from it until nothing smaller fails.
Each round's candidates run together (on Spark, as one job: ``execute``), each up to ``tries``
times, since real clients' timing can hide a failure once in a while."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .runs import Job
from .schedule import Schedule

Execute = Callable[[list[Job]], list[dict[str, Any]]]


@dataclass(frozen=True)
class Shrunk:
    """What shrinking one kind of failure found: the run it started from, the smallest failing
    run, how many rounds and runs it took, and how many tries of the smallest failed."""

    kind: str
    start: Mapping[str, Any]
    minimal: Mapping[str, Any]
    rounds: int
    runs: int
    reproduced: int  # of ``tries`` runs of the minimal schedule, how many failed so
    tries: int

    @property
    def schedule(self) -> Schedule:
        return Schedule.from_json(self.minimal["schedule"])


def shrink(start: Mapping[str, Any], execute: Execute, *, tries: int = 3, max_rounds: int = 20) -> Shrunk:
    """The smallest schedule that still fails as ``start`` did (its ``verdict``), found with
    ``execute`` (jobs -> rows)."""
    kind = start["verdict"]
    current, reproduced = dict(start), 1
    rounds = runs = 0
    while rounds < max_rounds:
        candidates = list(Schedule.from_json(current["schedule"]).smaller())
        if not candidates:
            break
        rounds += 1
        jobs = [
            Job(
                current["campaign"],
                current["seed"],
                current["mix"],
                dict(current["cell"]),
                c.to_json(),
                current.get("timeout"),
                f"shrink:{kind}:{rounds}:{i}",
            )  # fmt: skip
            for i, c in enumerate(candidates)
            for _ in range(tries)
        ]
        rows = execute(jobs)
        runs += len(rows)
        failed: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            failed.setdefault(row["schedule"], [])
            if row["verdict"] == kind:
                failed[row["schedule"]].append(row)
        found = [(Schedule.from_json(s).size(), s) for s, hits in failed.items() if hits]
        if not found:
            break
        _, smallest = min(found)
        current, reproduced = dict(failed[smallest][0]), len(failed[smallest])
    shrunk = current["schedule"] != start["schedule"]
    return Shrunk(kind, start, current, rounds, runs, reproduced if shrunk else 1, tries if shrunk else 1)

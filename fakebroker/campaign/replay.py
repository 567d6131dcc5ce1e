"""Replaying a campaign's failure on one machine, under pytest: the run again, in this process,
with the same seed, grid cell and schedule, its timeline drawn. A campaign writes one small test
file per failing kind (:func:`replay_test_source`); ``python -m pytest that_file.py`` fails while
the failure reproduces, with the verdict, the schedule and the picture's path in its message, and
passes once the consumer is fixed.

Where real clients' timing decides, a run may need a few tries to fail again: ``tries`` runs it
up to that many times and fails at the first failing one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .runs import Job, run_job


def replay(
    campaign: str,
    *,
    seed: int,
    mix: str,
    cell: Mapping[str, Any],
    schedule: Any,
    tries: int = 3,
    picture: str | None = None,
) -> dict[str, Any]:
    """Run the job up to ``tries`` times, until one fails; the row of the last run (its
    timeline drawn to ``picture`` when it failed and a path is given)."""
    text = schedule if isinstance(schedule, str) else json.dumps(list(schedule))
    job = Job(campaign, seed, mix, dict(cell), text)
    row: dict[str, Any] = {}
    for attempt in range(1, tries + 1):
        row = run_job(job, picture=picture)
        row["attempt"] = attempt
        if row["verdict"] != "ok":
            break
    return row


def assert_replays_ok(campaign: str, **job: Any) -> None:
    """The pytest check a replay file makes: the run passes (``tries`` times over), or the test
    fails with what the run found."""
    row = replay(campaign, **job)
    if row["verdict"] != "ok":
        lines = [
            f"{row['verdict']} again (run {row['attempt']} of {job.get('tries', 3)}): seed {row['seed']}, "
            f"mix {row['mix']}, cell {row['cell']}",
            "schedule:",
            row["schedule_text"],
            row["error"],
        ]
        if job.get("picture"):
            lines.append(f"timeline picture: {job['picture']}")
        raise AssertionError("\n".join(lines))


def replay_test_source(row: Mapping[str, Any], campaign_path: str, picture: str, tries: int = 3) -> str:
    """A pytest file that replays ``row``'s run (``campaign_path``: where the campaign module
    is on this machine)."""
    name = f"test_{row['verdict']}_seed_{row['seed']}"
    schedule = json.loads(row["schedule"]) if isinstance(row["schedule"], str) else row["schedule"]
    return f'''"""Replays a fakebroker campaign's {row["verdict"]} run: fails while it reproduces."""

from fakebroker.campaign.replay import assert_replays_ok


def {name}():
    assert_replays_ok(
        {campaign_path!r},
        seed={row["seed"]!r},
        mix={row["mix"]!r},
        cell={dict(row["cell"])!r},
        schedule={schedule!r},
        tries={tries!r},
        picture={picture!r},
    )
'''


def write_replay(row: Mapping[str, Any], campaign_path: str, folder: Path, tries: int = 3) -> Path:
    """Write the replay test of ``row`` into ``folder``; its path. ``campaign_path``: a ``.py``
    file (written as its absolute path) or a module name (importable where the test runs)."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"replay_{row['verdict']}_seed_{row['seed']}"
    path = folder / f"test_{stem}.py"
    picture = str((folder / f"{stem}.png").resolve())
    spec = str(Path(campaign_path).resolve()) if campaign_path.endswith(".py") else campaign_path
    path.write_text(replay_test_source(row, spec, picture, tries))
    return path

"""Fault campaigns: thousands of seeded churn runs against a team's own consumer, spread over
Spark, each failure shrunk to a minimal fault schedule and replayable under pytest.

A campaign module names a scenario (see :mod:`.runs`); :func:`drive` plays a run's schedule on
its members; the seed, the fault mix and the grid cell expand to that schedule the same way
everywhere (:mod:`.schedule`)."""

from __future__ import annotations

from .runs import VERDICTS, Campaign, CampaignError, Job, drive, load_campaign, run_job
from .schedule import DEFAULT_MIXES, FaultMix, Schedule, Step, expand

__all__ = [
    "DEFAULT_MIXES",
    "VERDICTS",
    "Campaign",
    "CampaignError",
    "FaultMix",
    "Job",
    "Schedule",
    "Step",
    "drive",
    "expand",
    "load_campaign",
    "run_job",
]

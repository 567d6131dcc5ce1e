"""Fault schedules (issue 38): a seed, a mix and a grid cell expand to the same schedule in every
process; a schedule is data (JSON both ways) that plays each step with its own seed and
arguments; shrinking makes it smaller one step at a time until nothing smaller fails."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from fakebroker.campaign.schedule import FaultMix, Schedule, Step, expand, play
from fakebroker.campaign.shrink import shrink
from fakebroker.testing.churn import BLOCKS, Block

MIX = FaultMix("all", tuple(b.name for b in BLOCKS), steps=4)


def test_a_seed_expands_to_the_same_schedule_in_another_process_with_another_hash_seed():
    here = expand(17, MIX, {"protocol": "consumer"}).to_json()
    code = (
        "from fakebroker.campaign.schedule import FaultMix, expand; from fakebroker.testing.churn import BLOCKS;"
        "print(expand(17, FaultMix('all', tuple(b.name for b in BLOCKS), steps=4), {'protocol': 'consumer'}).to_json())"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "12345"}
    )
    assert there.stdout.strip() == here


def test_the_schedule_depends_on_the_seed_the_mix_and_the_cell():
    base = expand(1, MIX, {"protocol": "classic"})
    assert len(base) == 4 and len({s.block for s in base.steps}) == 4  # each block before any repeats
    assert expand(2, MIX, {"protocol": "classic"}) != base
    assert expand(1, MIX, {"protocol": "consumer"}) != base
    assert expand(1, FaultMix("other", MIX.blocks, 4), {"protocol": "classic"}) != base
    for step in base.steps:  # the arguments are drawn within the blocks' own ranges
        for name, value in step.params:
            assert value > 0, (step, name)


def test_a_schedule_is_json_both_ways_and_describes_itself():
    schedule = Schedule((Step("member_stall", 5, (("seconds", 1.5),)), Step("partition_growth", 6, (("add", 2),))))
    assert Schedule.from_json(schedule.to_json()) == schedule
    assert json.loads(schedule.to_json())[0] == {"block": "member_stall", "seed": 5, "seconds": 1.5}
    assert schedule.describe() == "1. member_stall seconds=1.5 (seed 5)\n2. partition_growth add=2 (seed 6)"
    assert Schedule().describe() == "(no steps)"


def test_smaller_schedules_leave_a_step_out_or_halve_an_argument_down_to_a_floor():
    schedule = Schedule((Step("member_stall", 5, (("seconds", 1.5),)), Step("partition_growth", 6, (("add", 1),))))
    smaller = [s.to_json() for s in schedule.smaller()]
    assert smaller == [
        Schedule(schedule.steps[1:]).to_json(),
        Schedule(schedule.steps[:1]).to_json(),
        Schedule((Step("member_stall", 5, (("seconds", 0.8),)), schedule.steps[1])).to_json(),
    ]  # add=1 is not halved further
    assert list(Schedule((Step("broker_bounce", 1, (("down", 0.1),)),)).smaller()) == [Schedule()]


def test_play_runs_each_step_with_its_own_seed_and_arguments():
    seen = []

    def probe(target, rng, **params):
        seen.append((rng.random(), params))
        return f"probed {params}"

    schedule = Schedule((Step("probe", 1, (("seconds", 0.5),)), Step("probe", 2)))
    lines = play(object(), schedule, [Block("probe", probe)])
    assert lines == ["probe: probed {'seconds': 0.5}", "probe: probed {}"]
    assert seen == [(random.Random(1).random(), {"seconds": 0.5}), (random.Random(2).random(), {})]
    with pytest.raises(ValueError, match="no such block"):
        play(object(), Schedule((Step("nope", 1),)))


def test_shrinking_keeps_the_smallest_schedule_that_still_fails_the_same_way():
    """A fake campaign that loses a record whenever a broker is down 0.4 s or more."""
    start_schedule = Schedule(
        (
            Step("member_stall", 1, (("seconds", 2.0),)),
            Step("broker_bounce", 2, (("down", 1.6),)),
            Step("network_cut", 3, (("seconds", 1.0),)),
        )
    )

    def fails(schedule: Schedule) -> bool:
        return any(s.block == "broker_bounce" and dict(s.params)["down"] >= 0.4 for s in schedule.steps)

    def execute(jobs):
        return [{**j.to_json(), "verdict": "lost" if fails(Schedule.from_json(j.schedule)) else "ok"} for j in jobs]

    start = {
        "campaign": "c",
        "seed": 9,
        "mix": "all",
        "cell": {},
        "schedule": start_schedule.to_json(),
        "verdict": "lost",
    }
    found = shrink(start, execute, tries=2)
    assert found.schedule == Schedule((Step("broker_bounce", 2, (("down", 0.4),)),))
    assert (found.kind, found.reproduced, found.tries) == ("lost", 2, 2)
    assert found.rounds == 5 and found.runs > 0  # two steps left out, then 1.6 -> 0.8 -> 0.4, then nothing smaller

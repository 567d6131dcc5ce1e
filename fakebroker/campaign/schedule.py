"""A run's fault schedule: the churn blocks it plays, in order, each with its own seed and its
durations and counts drawn up front, so a schedule is data: printed with a failing run, written
to its row, replayed exactly, and made smaller when shrinking (a step left out, a duration
halved).

A seed, a fault mix and a grid cell expand to one schedule, the same on every machine and in
every process (the expansion seeds ``random.Random`` with a string, which Python hashes with
SHA-512, not with the per-process ``hash()``):

    >>> mix = FaultMix("restarts", ("rolling_restart", "member_stall"), steps=2)
    >>> print(expand(7, mix, {"protocol": "classic"}).describe())
    1. rolling_restart pause=0.2 (seed 2290308425)
    2. member_stall seconds=0.9 (seed 727170400)
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..testing.churn import BLOCKS, Block, Target, resolve_blocks

# What each built-in block takes as arguments, and how a seed draws them: (low, high, kind);
# kind "s" is a duration in seconds (one decimal), "n" a count. They match the blocks' own draws.
PARAMETERS: dict[str, dict[str, tuple[float, float, str]]] = {
    "rolling_restart": {"pause": (0.2, 0.2, "s")},
    "member_stall": {"seconds": (0.5, 3.0, "s")},
    "coordinator_failover_storm": {"moves": (2, 4, "n")},
    "partition_growth": {"add": (1, 3, "n")},
    "broker_bounce": {"down": (0.2, 1.5, "s")},
    "network_cut": {"seconds": (0.5, 2.0, "s")},
}
SMALLEST = {"s": 0.1, "n": 1}  # below this a duration or a count is not halved further


@dataclass(frozen=True)
class FaultMix:
    """Which blocks a run may play and how many steps: ``FaultMix("restarts",
    ("rolling_restart", "member_stall"), steps=3)``. A campaign module names its mixes in
    ``FAULT_MIXES``; by default one, ``all``, of every built-in block."""

    name: str
    blocks: tuple[str, ...]
    steps: int = 3


DEFAULT_MIXES = (FaultMix("all", tuple(b.name for b in BLOCKS), 3),)


@dataclass(frozen=True)
class Step:
    """One block of a schedule: its name, the seed of its own ``random.Random`` (which member,
    which broker) and the arguments drawn for it."""

    block: str
    seed: int
    params: tuple[tuple[str, float], ...] = ()

    def describe(self) -> str:
        args = "".join(f" {k}={_shown(v)}" for k, v in self.params)
        return f"{self.block}{args} (seed {self.seed})"

    def to_json(self) -> dict[str, Any]:
        return {"block": self.block, "seed": self.seed, **dict(self.params)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        params = tuple((k, v) for k, v in data.items() if k not in ("block", "seed"))
        return cls(str(data["block"]), int(data["seed"]), params)


@dataclass(frozen=True)
class Schedule:
    """The steps a run plays, in order."""

    steps: tuple[Step, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.steps)

    def describe(self) -> str:
        return "\n".join(f"{i + 1}. {s.describe()}" for i, s in enumerate(self.steps)) or "(no steps)"

    def to_json(self) -> str:
        return json.dumps([s.to_json() for s in self.steps], sort_keys=True)

    @classmethod
    def from_json(cls, text: str | Sequence[Mapping[str, Any]]) -> Schedule:
        data = json.loads(text) if isinstance(text, str) else text
        return cls(tuple(Step.from_json(s) for s in data))

    def size(self) -> tuple[int, float]:
        """What shrinking makes smaller: the steps, then the sum of their arguments."""
        return len(self.steps), sum(v for s in self.steps for _, v in s.params)

    def smaller(self) -> Iterator[Schedule]:
        """The schedules one shrinking step away: each step left out, then each argument halved
        (durations to one decimal, counts rounded down; not below 0.1 s or 1)."""
        for i in range(len(self.steps)):
            yield Schedule(self.steps[:i] + self.steps[i + 1 :])
        for i, step in enumerate(self.steps):
            for j, (name, value) in enumerate(step.params):
                kind = PARAMETERS.get(step.block, {}).get(name, (0, 0, "s"))[2]
                half = max(SMALLEST[kind], round(value / 2, 1) if kind == "s" else int(value // 2))
                if half < value:
                    params = step.params[:j] + ((name, half),) + step.params[j + 1 :]
                    yield Schedule(self.steps[:i] + (replace(step, params=params),) + self.steps[i + 1 :])


def expansion_key(seed: int, mix: FaultMix, cell: Mapping[str, Any]) -> str:
    """What a schedule is drawn from: the seed, the mix and the cell (sorted), as text."""
    settings = ",".join(f"{k}={cell[k]}" for k in sorted(cell))
    return f"{seed}|{mix.name}:{','.join(mix.blocks)}:{mix.steps}|{settings}"


def expand(seed: int, mix: FaultMix, cell: Mapping[str, Any]) -> Schedule:
    """The schedule a seed makes for a mix and a grid cell: ``mix.steps`` blocks drawn from the
    mix (each used before any repeats, as :func:`~fakebroker.testing.churn.plan` draws them),
    each with a seed and its arguments."""
    rng = random.Random(expansion_key(seed, mix, cell))
    names: list[str] = []
    while len(names) < mix.steps:
        names.extend(rng.sample(list(mix.blocks), min(len(mix.blocks), mix.steps - len(names))))
    steps = []
    for name in names:
        params = []
        for arg, (low, high, kind) in PARAMETERS.get(name, {}).items():
            value = rng.randint(int(low), int(high)) if kind == "n" else round(rng.uniform(low, high), 1)
            params.append((arg, value))
        steps.append(Step(name, rng.randrange(2**32), tuple(params)))
    return Schedule(tuple(steps))


def play(target: Target, schedule: Schedule, blocks: Sequence[Block] = ()) -> list[str]:
    """Play ``schedule`` on ``target``: each step's block with its own seeded rng and its
    arguments; ``blocks`` are the campaign's own (by name) beside the built-in ones. Returns
    each block's line, as :func:`~fakebroker.testing.churn.churn` reports them."""
    own = resolve_blocks(list(blocks)) if blocks else []
    known = {b.name: b for b in (*BLOCKS, *own)}
    lines = []
    for step in schedule.steps:
        block = known.get(step.block)
        if block is None:
            raise ValueError(f"schedule step {step.block!r}: no such block (known: {', '.join(sorted(known))})")
        rng = random.Random(step.seed)
        run: Any = block.run
        line = run(target, rng, **dict(step.params)) if step.params else run(target, rng)
        lines.append(f"{step.block}: {line}")
    return lines


def _shown(value: float) -> str:
    return str(value)

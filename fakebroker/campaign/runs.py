"""One campaign run, in this process: load the campaign module, start a fresh cluster on
loopback (free ports, so runs on one host never collide), expand the run's schedule, call the
module's scenario and turn what it returns, raises or never returns into a row: a verdict kind,
counts, timings, the schedule and a compact timeline.

A campaign module is a Python file or module with:

- ``scenario(cluster, seed, schedule, cell) -> Verdict`` (required): start *your* consumer with
  its real client against ``cluster``, play ``schedule`` on it (:func:`drive` does it with the
  churn kit's members and ledger), return the :class:`~fakebroker.testing.ledger.Verdict`
  (or the :class:`~fakebroker.testing.churn.ChurnReport` that carries it). An exactly-once
  pipeline judged by a downstream read_committed reader makes its ledger without ``group=``
  (its offsets are committed before the reader sees the output, by design);
- ``GRID``: the client settings to try, ``{"protocol": ["classic", "consumer"]}`` (optional);
- ``FAULT_MIXES``: :class:`~.schedule.FaultMix` values (optional; default: every built-in block, 3 steps);
- ``DELIVERY``: ``"at_least_once"`` (default: losses are not allowed, and duplicates only where
  commits after processing allow them: the verdict's ``duplicates_beyond_policy``, read from the
  cluster's events, are ``duplicated``) or ``"exactly_once"`` (every duplicate is ``duplicated``);
- ``CLUSTER``: keyword arguments of :class:`~fakebroker.cluster.FakeCluster` (default 3 brokers;
  no ``port``: each run's cluster takes free ports on loopback, so runs on one host never collide);
- ``BLOCKS``: blocks of its own, by name in its mixes (optional; the scenario passes them to
  :func:`drive` as ``blocks=BLOCKS``);
- ``TIMEOUT``: seconds a run may take before it counts as ``stuck`` (default 120).
"""

from __future__ import annotations

import importlib
import importlib.util
import socket
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..cluster import FakeCluster
from ..testing.churn import CLUSTER_BLOCKS, ChurnReport, Member, Target, check_arguments, resolve_blocks
from ..testing.ledger import DeliveryLedger, Verdict
from ..version import __version__
from .schedule import DEFAULT_MIXES, FaultMix, Schedule, expand, play

VERDICTS = ("ok", "lost", "duplicated", "out_of_order", "stuck", "crashed")
DELIVERIES = ("at_least_once", "exactly_once")
DEFAULT_TIMEOUT = 120.0
DEFAULT_CLUSTER: dict[str, Any] = {"brokers": 3}
TIMELINE_LINES = 80  # of a row's compact timeline
SHOWN_EVENTS = {
    "member_joined",
    "member_left",
    "member_removed",
    "generation_started",
    "group_epoch_bumped",
    "coordinator_moved",
    "broker_stopped",
    "broker_started",
    "leader_changed",
    "client_cut",
    "client_healed",
    "offsets_committed",
    "partitions_added",
}


class CampaignError(ValueError):
    """A campaign module or its arguments are not usable; the message says what is valid."""


@dataclass(frozen=True)
class Campaign:
    """A loaded campaign module and what it declares."""

    spec: str  # as given: a .py path or a module name
    module: ModuleType
    scenario: Callable[..., Any]
    grid: dict[str, list[Any]]
    mixes: tuple[FaultMix, ...]
    delivery: str
    cluster: dict[str, Any]
    blocks: tuple[Any, ...]
    timeout: float

    @property
    def name(self) -> str:
        return self.module.__name__


def load_campaign(spec: str) -> Campaign:
    """The campaign in ``spec``: a ``.py`` file (imported under its stem, its folder first on
    ``sys.path``) or a module name."""
    try:
        if spec.endswith(".py"):
            path = Path(spec).resolve()
            if not path.is_file():
                raise CampaignError(f"{spec}: no such file")
            name = path.stem
            if str(path.parent) not in sys.path:
                sys.path.insert(0, str(path.parent))
            module = sys.modules.get(name)
            if module is None or getattr(module, "__file__", None) != str(path):
                loader_spec = importlib.util.spec_from_file_location(name, path)
                assert loader_spec is not None and loader_spec.loader is not None
                module = importlib.util.module_from_spec(loader_spec)
                sys.modules[name] = module
                loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except CampaignError:
        raise
    except ImportError as exc:
        raise CampaignError(f"{spec}: cannot import it: {exc}") from None
    scenario = getattr(module, "scenario", None)
    if not callable(scenario):
        raise CampaignError(f"{spec}: a campaign module needs scenario(cluster, seed, schedule, cell) -> Verdict")
    grid = dict(getattr(module, "GRID", {}) or {})
    for key, values in grid.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise CampaignError(f"{spec}: GRID[{key!r}] must be a non-empty list of values, not {values!r}")
    mixes = tuple(getattr(module, "FAULT_MIXES", DEFAULT_MIXES) or DEFAULT_MIXES)
    if not all(isinstance(m, FaultMix) for m in mixes) or len({m.name for m in mixes}) != len(mixes):
        raise CampaignError(f"{spec}: FAULT_MIXES must be FaultMix values with different names")
    cluster = dict(getattr(module, "CLUSTER", DEFAULT_CLUSTER))
    if cluster.get("port", 0) != 0:
        raise CampaignError(
            f"{spec}: CLUSTER port={cluster['port']!r}: a campaign's clusters take free ports (leave port out), "
            "or the runs that share a host collide"
        )
    delivery = getattr(module, "DELIVERY", "at_least_once")
    if delivery not in DELIVERIES:
        raise CampaignError(f"{spec}: DELIVERY={delivery!r}: the policies are {', '.join(DELIVERIES)}")
    return Campaign(
        spec,
        module,
        scenario,
        {k: list(v) for k, v in grid.items()},
        mixes,
        delivery,
        cluster,
        tuple(getattr(module, "BLOCKS", ()) or ()),
        float(getattr(module, "TIMEOUT", DEFAULT_TIMEOUT)),
    )


@dataclass(frozen=True)
class Job:
    """One run to do: the campaign, the seed, the mix (by name), the grid cell and, when
    shrinking or replaying, the schedule itself (else the seed expands it)."""

    campaign: str
    seed: int
    mix: str
    cell: dict[str, Any] = field(default_factory=dict)
    schedule: str | None = None  # Schedule.to_json()
    timeout: float | None = None
    tag: str = ""  # what asked for it ("", or "shrink:<kind>:<round>")

    def to_json(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "seed": self.seed,
            "mix": self.mix,
            "cell": self.cell,
            "schedule": self.schedule,
            "timeout": self.timeout,
            "tag": self.tag,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        timeout = data.get("timeout")
        return cls(
            str(data["campaign"]),
            int(data["seed"]),
            str(data["mix"]),
            dict(data.get("cell") or {}),
            data.get("schedule"),
            float(timeout) if timeout is not None else None,
            str(data.get("tag") or ""),
        )


def schedule_of(campaign: Campaign, job: Job) -> Schedule:
    if job.schedule is not None:
        return Schedule.from_json(job.schedule)
    mix = next((m for m in campaign.mixes if m.name == job.mix), None)
    if mix is None:
        raise CampaignError(f"mix {job.mix!r}: the campaign's mixes are {', '.join(m.name for m in campaign.mixes)}")
    return expand(job.seed, mix, job.cell)


def kind_of(verdict: Verdict, delivery: str) -> str:
    """A verdict's kind: the worst thing it shows, losses first. At least once, a duplicate is a
    failure only beyond what commits after processing allow (``duplicates_beyond_policy``)."""
    if verdict.lost:
        return "lost"
    if verdict.duplicates_beyond_policy or (verdict.duplicates and delivery == "exactly_once"):
        return "duplicated"
    if verdict.out_of_order:
        return "out_of_order"
    return "ok"


def run_job(job: Job, picture: str | None = None) -> dict[str, Any]:
    """Do one run here and now; its row (never raises for what the scenario does). With
    ``picture``, a failing run's timeline is drawn there (needs ``fakebroker[charts]``)."""
    started = time.monotonic()
    row: dict[str, Any] = {
        **job.to_json(),
        "cell": dict(job.cell),
        "verdict": "crashed",
        "produced": 0,
        "processed": 0,
        "lost": 0,
        "duplicated": 0,
        "out_of_order": 0,
        "seconds": 0.0,
        "schedule_text": "",
        "actions": [],
        "timeline": "",
        "error": "",
        "output": "",
        "version": __version__,
        "host": socket.gethostname(),
    }
    campaign = load_campaign(job.campaign)
    schedule = schedule_of(campaign, job)
    row["schedule"], row["schedule_text"] = schedule.to_json(), schedule.describe()
    cluster = FakeCluster(**campaign.cluster)
    try:
        with cluster.run_in_thread():
            try:
                result = campaign.scenario(cluster, job.seed, schedule, dict(job.cell))
            finally:
                row["timeline"] = compact_timeline(cluster)
                events = list(cluster.events)
    except BaseException as exc:  # a run's failure is a finding, whatever it raises
        if isinstance(exc, KeyboardInterrupt):
            raise
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        row["error"] = text[-4000:]
        row["verdict"] = "stuck" if "did not settle" in str(exc) or isinstance(exc, TimeoutError) else "crashed"
        row["seconds"] = round(time.monotonic() - started, 3)
        return row
    report = result if isinstance(result, ChurnReport) else None
    verdict = report.verdict if report is not None else result
    if report is not None:
        row["actions"] = list(report.actions)
    if not isinstance(verdict, Verdict):
        row["error"] = f"scenario returned {result!r}, not a Verdict or a ChurnReport with one"
        row["seconds"] = round(time.monotonic() - started, 3)
        return row
    if picture is not None and kind_of(verdict, campaign.delivery) != "ok":
        from ..timeline import write_timeline  # matplotlib, only for a picture

        write_timeline(events, picture, title=f"{campaign.name} seed {job.seed} {job.cell}")
    row.update(
        verdict=kind_of(verdict, campaign.delivery),
        produced=verdict.produced,
        processed=verdict.processed,
        lost=len(verdict.lost),
        duplicated=len(verdict.duplicates),
        out_of_order=len(verdict.out_of_order),
        error=verdict.summary() if kind_of(verdict, campaign.delivery) != "ok" else "",
        seconds=round(time.monotonic() - started, 3),
    )
    return row


def compact_timeline(cluster: FakeCluster) -> str:
    """The run's group and fault events, one line each, the last ``TIMELINE_LINES`` of them."""
    lines = [e.describe() for e in cluster.events if e.kind in SHOWN_EVENTS]
    return "\n".join(lines[-TIMELINE_LINES:])


def drive(
    cluster: FakeCluster,
    members: Sequence[Member],
    *,
    group: str,
    topic: str,
    seed: int,
    schedule: Schedule,
    ledger: DeliveryLedger,
    blocks: Sequence[Any] = (),
    between: Callable[[], Any] | None = None,
    after: Callable[[], Any] | None = None,
    settle_timeout: float = 30.0,
    drain_timeout: float = 15.0,
) -> ChurnReport:
    """Start ``members``, wait until the group settles, play ``schedule`` on them (calling
    ``between()`` after each step), call ``after()`` once it has played (stop producing, say),
    then wait until every acknowledged record is processed (or ``drain_timeout`` passes) and
    return the report with the ledger's verdict. What :func:`~fakebroker.testing.churn.churn`
    does for a seed, for a schedule."""
    own = {b.name: b for b in resolve_blocks(list(blocks))} if blocks else {}
    played = [own.get(s.block, s.block) for s in schedule.steps]  # an unknown name is named by the check
    check_arguments(
        cluster,
        members,
        group=group,
        topic=topic,
        blocks=played or list(CLUSTER_BLOCKS),
        seed=seed,
        steps=len(schedule),
        between=between,
        ledger=ledger,
        settle_timeout=settle_timeout,
        drain_timeout=drain_timeout,
    )
    target = Target(cluster, group, topic, members, settle_timeout)
    for member in members:
        member.start()
        target.running.add(member.name)
    actions: list[str] = []
    target.settle()
    for line in play(target, schedule, blocks):
        actions.append(line)
        if between is not None:
            between()
    if after is not None:
        after()
    return ChurnReport(seed, tuple(actions), drain(target, ledger, drain_timeout))


def drain(target: Target, ledger: DeliveryLedger, timeout: float, sure_s: float = 1.0) -> Verdict:
    """The ledger's verdict once every acknowledged record is processed, or once what is missing
    is lost for good (the group settled, and each missing record behind its partition's
    committed offset, for ``sure_s``: no member will read it again), or after ``timeout``."""
    deadline = time.monotonic() + timeout
    sure_since: float | None = None
    while (verdict := ledger.verdict()).lost and (now := time.monotonic()) < deadline:
        committed = target.cluster.committed(target.group)
        behind = all(r.offset < committed.get((r.topic, r.partition), -1) for r in verdict.lost)
        if behind and target.settled():
            sure_since = sure_since if sure_since is not None else now
            if now - sure_since >= sure_s:
                break
        else:
            sure_since = None
        time.sleep(0.05)
    return verdict

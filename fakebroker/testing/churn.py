"""Churn as reusable building blocks: the bad days a consumer group meets, each a function of
the cluster and handles to *your* members, and a seeded runner that composes them.

A member handle is any object with ``name`` and ``client_id`` attributes and ``start()`` (join the
group, again after a stop), ``stop()`` (leave cleanly) and ``stall(seconds)`` (stop polling
that long, as slow processing does) methods: a thin wrapper over the consumer of the
application under test (see :class:`Member`).

>>> import random
>>> [step.name for step in plan(random.Random(3), 4, BLOCKS)]
['member_stall', 'broker_bounce', 'network_cut', 'partition_growth']

Every block waits until the group is whole again (all running members Stable with every
partition owned) before it returns, so one block's effects do not blur into the next's, and
says what it did in one line. :func:`churn` runs ``steps`` blocks chosen by ``seed`` and
returns a :class:`ChurnReport` with those lines, the seed to replay them and, given a
:class:`~fakebroker.testing.ledger.DeliveryLedger`, its verdict (lost records, duplicates and the group
event behind each).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..cluster import FakeCluster
    from .ledger import DeliveryLedger, Verdict


class Member(Protocol):
    """What the blocks need of one of your consumers."""

    name: str
    client_id: str

    def start(self) -> None: ...  # join the group (again)

    def stop(self) -> None: ...  # leave the group cleanly (close)

    def stall(self, seconds: float) -> None: ...  # process slowly: no poll for that long


@dataclass
class Target:
    """What the blocks act on: the group, the topic it reads and its members."""

    cluster: FakeCluster
    group: str
    topic: str
    members: Sequence[Member]
    settle_timeout: float = 30.0
    running: set[str] = field(default_factory=set)  # names of the members started

    def member(self, rng: random.Random) -> Member:
        return rng.choice([m for m in self.members if m.name in self.running] or list(self.members))

    def settled(self) -> bool:
        """Every running member in one Stable generation and every partition owned once. The
        group's members are matched by client id, not counted: a member that stopped without
        leaving stays until its session expires, beside its own replacement."""
        group = self.cluster.group(self.group)
        running = sorted(m.client_id for m in self.members if m.name in self.running)
        if group is None or group.state != "Stable" or sorted(m.client_id for m in group.members) != running:
            return False
        owned = [p for m in group.members for p in (m.assignment or {}).get(self.topic, [])]
        return sorted(owned) == list(range(self.cluster.topics()[self.topic]))

    def settle(self) -> None:
        """Until :meth:`settled` (the members poll on their own threads meanwhile)."""
        deadline = time.monotonic() + self.settle_timeout
        while not self.settled():
            if time.monotonic() > deadline:
                group = self.cluster.group(self.group)
                raise AssertionError(f"group {self.group} did not settle within {self.settle_timeout} s: {group}")
            time.sleep(0.02)


# -- the blocks: each does one bad day and returns what it did ---------------------------------------
def rolling_restart(target: Target, rng: random.Random, *, pause: float = 0.2) -> str:
    """Each running member in turn stops and starts again (a deploy); the group settles in between."""
    names = []
    for member in [m for m in target.members if m.name in target.running]:
        member.stop()
        time.sleep(pause)
        member.start()
        target.settle()
        names.append(member.name)
    return f"rolling restart of {', '.join(names)}"


def member_stall(target: Target, rng: random.Random, *, seconds: float | None = None) -> str:
    """One member stops polling for a while (slow processing; past the rebalance timeout, the
    coordinator or the client itself takes it out), while another restarts to force a rebalance."""
    stalled = target.member(rng)
    seconds = seconds if seconds is not None else round(rng.uniform(0.5, 3.0), 1)
    stalled.stall(seconds)
    others = [m for m in target.members if m.name in target.running and m is not stalled]
    if others:
        bounced = rng.choice(others)
        bounced.stop()
        bounced.start()
    time.sleep(seconds)
    target.settle()
    return f"{stalled.name} stalled {seconds} s" + (f" while {bounced.name} restarted" if others else "")


def coordinator_failover_storm(target: Target, rng: random.Random, *, moves: int | None = None) -> str:
    """The group's coordinator moves several times in a row (brokers failing over)."""
    moves = moves if moves is not None else rng.randint(2, 4)
    to = []
    for _ in range(moves):
        time.sleep(rng.uniform(0.1, 0.5))  # clients find the new coordinator, or are still looking
        to.append(target.cluster.move_coordinator(target.group))
    target.settle()
    return f"coordinator moved {moves} times (to {', '.join(map(str, to))})"


def partition_growth(target: Target, rng: random.Random, *, add: int | None = None) -> str:
    """Partitions are added to the topic while the group reads it."""
    before = target.cluster.topics()[target.topic]
    add = add if add is not None else rng.randint(1, 3)
    target.cluster.add_partitions(target.topic, before + add)
    target.settle()
    return f"{target.topic} grew from {before} to {before + add} partitions"


def broker_bounce(target: Target, rng: random.Random, *, down: float | None = None) -> str:
    """A broker stops (its partitions and groups fail over) and comes back."""
    broker = rng.choice([b.node_id for b in target.cluster.brokers() if b.alive])
    down = down if down is not None else round(rng.uniform(0.2, 1.5), 1)
    target.cluster.stop_broker(broker)
    time.sleep(down)
    target.cluster.start_broker(broker)
    target.settle()
    return f"broker {broker} down for {down} s"


def network_cut(target: Target, rng: random.Random, *, seconds: float | None = None) -> str:
    """One member loses its connections to every broker for a while, then the network heals."""
    member = target.member(rng)
    seconds = seconds if seconds is not None else round(rng.uniform(0.5, 2.0), 1)
    target.cluster.cut(member.client_id)
    time.sleep(seconds)
    target.cluster.heal(member.client_id)
    target.settle()
    return f"{member.name} cut off for {seconds} s"


@dataclass(frozen=True)
class Block:
    name: str
    run: Callable[[Target, random.Random], str]


BLOCKS: tuple[Block, ...] = tuple(
    Block(f.__name__, f)
    for f in (rolling_restart, member_stall, coordinator_failover_storm, partition_growth, broker_bounce, network_cut)
)


CLUSTER_BLOCKS: tuple[Block, ...] = tuple(
    b for b in BLOCKS if b.name in ("coordinator_failover_storm", "partition_growth", "broker_bounce", "network_cut")
)
"""The blocks that need nothing of a member but its client id: what churn can do to members
running elsewhere (another process, another language; see :func:`remote_members`)."""


class RemoteMember:
    """A group member that runs elsewhere: churn can cut its connections (by client id) but
    cannot restart or stall it. ``name`` is its member id."""

    def __init__(self, member_id: str, client_id: str) -> None:
        self.name, self.client_id = member_id, client_id

    def start(self) -> None:  # it is running already
        pass

    def stop(self) -> None:
        raise RuntimeError(f"member {self.name} runs elsewhere: only {', '.join(b.name for b in CLUSTER_BLOCKS)}")

    def stall(self, seconds: float) -> None:
        self.stop()


def remote_members(cluster: FakeCluster, group: str) -> list[RemoteMember]:
    """Handles to the group's current members, for :func:`churn` with :data:`CLUSTER_BLOCKS`."""
    view = cluster.group(group)
    if view is None:
        raise LookupError(f"no group {group!r}")
    return [RemoteMember(m.member_id, m.client_id) for m in view.members]


def plan(rng: random.Random, steps: int, blocks: Sequence[Block]) -> list[Block]:
    """``steps`` blocks drawn from ``blocks`` (each used before any repeats)."""
    out: list[Block] = []
    while len(out) < steps:
        out.extend(rng.sample(list(blocks), min(len(blocks), steps - len(out))))
    return out


@dataclass(frozen=True)
class ChurnReport:
    seed: int
    actions: tuple[str, ...]
    verdict: Verdict | None = None  # the ledger's verdict, when a ledger was given

    def __str__(self) -> str:
        lines = [f"churn seed {self.seed} (replay: churn(..., seed={self.seed}))"]
        lines += [f"  {i + 1}. {a}" for i, a in enumerate(self.actions)]
        if self.verdict is not None:
            lines.append(self.verdict.summary())
        return "\n".join(lines)


def churn(
    cluster: FakeCluster,
    members: Sequence[Member],
    *,
    group: str,
    topic: str,
    seed: int | None = None,
    steps: int = 6,
    blocks: Sequence[Block] = BLOCKS,
    between: Callable[[], Any] | None = None,
    ledger: DeliveryLedger | None = None,
    settle_timeout: float = 30.0,
    drain_timeout: float = 30.0,
) -> ChurnReport:
    """Start the members, run ``steps`` blocks chosen by ``seed`` (a random one if None; it is in
    the report), calling ``between()`` after each (produce more records, check something), and
    return what happened. With a :class:`~fakebroker.testing.ledger.DeliveryLedger` the report carries
    its verdict, taken once every record acknowledged so far has been processed (or after
    ``drain_timeout`` seconds, when the verdict names what is lost). Members are left running."""
    seed = seed if seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    target = Target(cluster, group, topic, members, settle_timeout)
    for member in members:
        member.start()
        target.running.add(member.name)
    actions: list[str] = []
    try:
        target.settle()
        for block in plan(rng, steps, blocks):
            actions.append(f"{block.name}: {block.run(target, rng)}")
            if between is not None:
                between()
    except BaseException as exc:
        if hasattr(exc, "add_note"):  # Python 3.11+: the seed and the steps so far beside the error
            exc.add_note(str(ChurnReport(seed, tuple(actions))))
        raise
    if ledger is None:
        return ChurnReport(seed, tuple(actions))
    deadline = time.monotonic() + drain_timeout
    while (verdict := ledger.verdict()).lost and time.monotonic() < deadline:
        time.sleep(0.05)
    return ChurnReport(seed, tuple(actions), verdict)

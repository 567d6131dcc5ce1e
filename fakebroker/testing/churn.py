"""Churn as reusable building blocks: the bad days a consumer group meets, each a function
``block(target, rng) -> str`` of a :class:`Target` (the cluster, the group, the topic it reads
and handles to *your* members) and a seeded ``random.Random``, returning one line saying what it
did; and a seeded runner that composes them. :func:`churn` takes the blocks by name too (the
names the control endpoint takes: ``"rolling_restart"``, ``"member_stall"``,
``"coordinator_failover_storm"``, ``"partition_growth"``, ``"broker_bounce"``,
``"network_cut"``), and checks every argument before it starts a member.

A member handle is any object with ``name`` and ``client_id`` attributes and ``start()`` (join the
group, again after a stop), ``stop()`` (leave cleanly) and ``stall(seconds)`` (stop polling
that long, as slow processing does) methods: a thin wrapper over the consumer of the
application under test (see :class:`Member`), or over its whole process
(:class:`~fakebroker.testing.process_member.ProcessMember`: a Kafka Streams app's jar).

The plan a seed makes (which blocks, in which order):

    >>> import random
    >>> [step.name for step in plan(random.Random(3), 4, BLOCKS)]
    ['member_stall', 'broker_bounce', 'network_cut', 'partition_growth']

Every block waits until the group is whole again (all running members Stable with every
partition owned; for a streams group, every task active once) before it returns, so one
block's effects do not blur into the next's, and says what it did in one line. A block of
your own is a :class:`Block` (a name and such a function) or the function itself (named by
its ``__name__``). :func:`churn` runs ``steps``
blocks chosen by ``seed`` and returns a :class:`ChurnReport` with those lines, the seed to
replay them and, given a :class:`~fakebroker.testing.ledger.DeliveryLedger`, its verdict (lost
records, duplicates and the group event behind each).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from numbers import Real
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
        if group is not None and group.group_type == "streams":
            return self._streams_settled()
        if group is None or group.state != "Stable" or not self._members_are_ours(m.client_id for m in group.members):
            return False
        owned = [p for m in group.members for p in (m.assignment or {}).get(self.topic, [])]
        return sorted(owned) == list(range(self.cluster.topics()[self.topic]))

    def _members_are_ours(self, client_ids: Iterable[str]) -> bool:
        """The group's members are exactly the running handles': one member per handle, or,
        for a Kafka Streams app, one per stream thread (client id
        ``<client.id>-StreamThread-<n>-consumer``)."""
        running = [m.client_id for m in self.members if m.name in self.running]

        def handle_of(client_id: str) -> str | None:
            return next((r for r in running if client_id == r or client_id.startswith(f"{r}-StreamThread-")), None)

        ids = list(client_ids)
        owners = [handle_of(c) for c in ids]
        if None in owners or set(owners) != set(running):
            return False
        # a plain consumer's handle is one member (two handles may share a client id; a member
        # that stopped without leaving, beside its replacement, is one too many)
        threads = {o for o, c in zip(owners, ids) if o != c}
        plain = sorted(c for o, c in zip(owners, ids) if o == c)
        return plain == sorted(r for r in running if r not in threads)

    def _streams_settled(self) -> bool:
        """A streams group (KIP-1071): Stable, every member at its target, every task active
        once, and its members are the running handles' stream threads."""
        view = self.cluster.streams_group(self.group)
        if view is None or view.state != "Stable" or not view.settled:
            return False
        if not self._members_are_ours([m.client_id for m in view.members]):
            return False
        active = [t for m in view.members for t in m.tasks.active]
        return len(active) == len(set(active)) == sum(s.tasks for s in view.subtopologies)

    def settle(self) -> None:
        """Until :meth:`settled` (the members poll on their own threads meanwhile). While the
        group does not exist, its members showing up in another group is a wrong group name:
        :class:`~fakebroker.cluster.ClusterUsageError` at once, naming the groups there are."""
        deadline = time.monotonic() + self.settle_timeout
        look = time.monotonic() + 2.0  # when to look for the members in another group (first: after they joined)
        while not self.settled():
            now = time.monotonic()
            if now > look:
                look = now + 0.5
                self._members_elsewhere()
            if now > deadline:
                group = self.cluster.group(self.group)
                if group is None:
                    raise AssertionError(
                        f"group {self.group!r} did not settle within {self.settle_timeout:g} s: it does not exist"
                        f"{_did_you_mean(self.group, self.cluster.groups())}; groups: {self.cluster.groups() or 'none'}"
                    )
                raise AssertionError(f"group {self.group!r} did not settle within {self.settle_timeout:g} s: {group}")
            time.sleep(0.02)

    def _members_elsewhere(self) -> None:
        if self.cluster.group(self.group) is not None:
            return
        ours = {m.client_id: m.name for m in self.members if m.name in self.running}
        for other in self.cluster.groups():
            view = self.cluster.group(other)
            found = sorted({ours[m.client_id] for m in (view.members if view else ()) if m.client_id in ours})
            if ours and len(found) == len(ours):  # every one of them: not a namesake's consumer
                from ..cluster import ClusterUsageError

                raise ClusterUsageError(
                    f"no group {self.group!r}, but members {', '.join(found)} joined group {other!r}: "
                    f"is group={other!r} meant? (groups: {', '.join(map(repr, self.cluster.groups()))})"
                )


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
    """A churn block: ``run(target, rng)`` does one bad day to ``target`` (a :class:`Target`),
    drawing its choices from ``rng``, waits until the group settles (``target.settle()``) and
    returns one line saying what it did; ``name`` is what reports and :func:`churn` call it."""

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


BlockLike = Block | str | Callable[[Target, random.Random], str]
"""What :func:`churn` takes as a block: a :class:`Block`, the name of one of :data:`BLOCKS`, or a
function ``(target, rng) -> str`` (named by its ``__name__``)."""


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    from ..cluster.settings import close_matches

    close = close_matches(word, choices, n=2) if isinstance(word, str) else []
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def resolve_blocks(blocks: BlockLike | Sequence[BlockLike]) -> list[Block]:
    """``blocks`` as :class:`Block` objects: names looked up in :data:`BLOCKS`, functions named by
    their ``__name__``; :class:`~fakebroker.cluster.ClusterUsageError` naming the valid blocks for
    anything else."""
    from ..cluster import ClusterUsageError

    names = [b.name for b in BLOCKS]
    valid = f"the blocks are {', '.join(names)} (or a Block, or a function (target, rng) -> str)"
    given = [blocks] if isinstance(blocks, (str, Block)) or callable(blocks) else blocks
    if not isinstance(given, Sequence):  # a set has no order: the seed could not replay it
        raise ClusterUsageError(f"blocks={blocks!r}: give a list of block names or blocks; {valid}")
    out: list[Block] = []
    problems: list[str] = []
    for i, b in enumerate(given):
        where = f"blocks[{i}]" if given is blocks else "blocks"
        if isinstance(b, Block):
            out.append(b)
        elif isinstance(b, str):
            found = next((x for x in BLOCKS if x.name == b), None)
            if found is None:
                problems.append(f"no churn block {b!r}{_did_you_mean(b, names)}")
            else:
                out.append(found)
        elif callable(b):
            out.append(Block(getattr(b, "__name__", repr(b)), b))
        else:
            problems.append(f"{where} is {b!r} ({type(b).__name__}), not a block name, Block or function")
    if problems:
        raise ClusterUsageError("; ".join(problems) + f"; {valid}")
    if not out:
        raise ClusterUsageError(f"blocks is empty: give at least one; {valid}")
    return out


def check_arguments(
    cluster: FakeCluster,
    members: Sequence[Member],
    *,
    group: str,
    topic: str,
    blocks: BlockLike | Sequence[BlockLike] = BLOCKS,
    seed: int | None = None,
    steps: int = 6,
    between: Callable[[], Any] | None = None,
    ledger: DeliveryLedger | None = None,
    settle_timeout: float = 30.0,
    drain_timeout: float = 30.0,
) -> list[Block]:
    """What :func:`churn` checks before it starts anything: every problem with its arguments in one
    :class:`~fakebroker.cluster.ClusterUsageError` naming the valid choices (block names, the
    cluster's topics and groups, what a member handle needs). Returns the blocks resolved."""
    from ..cluster import ClusterUsageError

    problems: list[str] = []
    resolved: list[Block] = []
    try:
        resolved = resolve_blocks(blocks)
    except ClusterUsageError as exc:
        problems.append(str(exc))
    topics = sorted(t for t in cluster.topics() if not t.startswith("__"))
    if not isinstance(topic, str) or topic not in topics:
        shown = ", ".join(map(repr, topics)) or "none"
        problems.append(f"no topic {topic!r}{_did_you_mean(topic, topics)}; topics: {shown}")
    if not isinstance(group, str) or not group:
        groups = cluster.groups()
        problems.append(f"group={group!r}: give the group id your members join (groups now: {groups or 'none'})")
    elif cluster.group(group) is None and any(isinstance(m, RemoteMember) for m in _as_list(members)):
        groups = cluster.groups()
        problems.append(
            f"no group {group!r}{_did_you_mean(group, groups)} for members that run elsewhere; "
            f"groups: {', '.join(map(repr, groups)) or 'none'}"
        )
    problems += _member_problems(members, resolved)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        problems.append(f"steps={steps!r}: give how many blocks to run, a whole number from 0")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        problems.append(f"seed={seed!r}: give a whole number (or None for a random one)")
    for name, value in (("settle_timeout", settle_timeout), ("drain_timeout", drain_timeout)):
        if isinstance(value, bool) or not isinstance(value, Real) or not value > 0:
            problems.append(f"{name}={value!r}: give seconds, more than 0")
    if between is not None and not callable(between):
        problems.append(f"between={between!r}: give a function of no arguments (or None)")
    if ledger is not None and not callable(getattr(ledger, "verdict", None)):
        problems.append(f"ledger={ledger!r}: give a DeliveryLedger (or None)")
    if len(problems) == 1:
        raise ClusterUsageError(f"churn(): {problems[0]}")
    if problems:
        raise ClusterUsageError(f"churn(): {len(problems)} problems:\n" + "\n".join(f"- {p}" for p in problems))
    return resolved


def _as_list(members: Any) -> list[Any]:
    return list(members) if isinstance(members, Sequence) and not isinstance(members, str) else []


def _member_problems(members: Any, blocks: list[Block]) -> list[str]:
    need = "a member handle has name, client_id, start(), stop() and stall(seconds) (see churn.Member)"
    if not isinstance(members, Sequence) or isinstance(members, str) or not members:
        return [f"members={members!r}: give a non-empty list of member handles; {need}"]
    problems = []
    for i, m in enumerate(members):
        lacks = [a for a in ("start", "stop", "stall") if not callable(getattr(m, a, None))]
        lacks += [f"{a} (a string)" for a in ("name", "client_id") if not isinstance(getattr(m, a, None), str)]
        if lacks:
            problems.append(f"members[{i}] ({m!r}) lacks {', '.join(lacks)}; {need}")
    if problems:
        return problems
    names = [m.name for m in members]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        problems.append(f"members share names {twice}: each needs its own name")
    remote = [m.name for m in members if isinstance(m, RemoteMember)]
    cannot = [b.name for b in blocks if b not in CLUSTER_BLOCKS]
    if remote and cannot:
        problems.append(
            f"members {', '.join(remote)} run elsewhere: churn cannot restart or stall them ({', '.join(cannot)}); "
            f"their blocks are {', '.join(b.name for b in CLUSTER_BLOCKS)}"
        )
    return problems


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
    blocks: BlockLike | Sequence[BlockLike] = BLOCKS,
    between: Callable[[], Any] | None = None,
    ledger: DeliveryLedger | None = None,
    settle_timeout: float = 30.0,
    drain_timeout: float = 30.0,
) -> ChurnReport:
    """Start the members, run ``steps`` blocks chosen by ``seed`` (a random one if None; it is in
    the report) from ``blocks`` (names such as ``"rolling_restart"``, :class:`Block` objects or
    functions ``(target, rng) -> str``), calling ``between()`` after each (produce more records,
    check something), and return what happened. With a
    :class:`~fakebroker.testing.ledger.DeliveryLedger` the report carries its verdict, taken once
    every record acknowledged so far has been processed (or after ``drain_timeout`` seconds, when
    the verdict names what is lost). Members are left running.

    Every argument is checked before anything starts (:func:`check_arguments`): an unknown block
    name or topic, a group id that is not a string, a member handle lacking a method, a member
    running elsewhere given a block that must restart it, raise
    :class:`~fakebroker.cluster.ClusterUsageError` naming the valid choices. A group that does not
    exist yet is created by the members joining it; if they join another one instead, the error
    says which, at once rather than after ``settle_timeout``."""
    chosen = check_arguments(
        cluster,
        members,
        group=group,
        topic=topic,
        blocks=blocks,
        seed=seed,
        steps=steps,
        between=between,
        ledger=ledger,
        settle_timeout=settle_timeout,
        drain_timeout=drain_timeout,
    )
    seed = seed if seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    target = Target(cluster, group, topic, members, settle_timeout)
    for member in members:
        member.start()
        target.running.add(member.name)
    actions: list[str] = []
    try:
        target.settle()
        for block in plan(rng, steps, chosen):
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

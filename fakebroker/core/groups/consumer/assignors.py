"""The server-side assignors of KIP-848: ``uniform`` (the default) and ``range``.

An assignor gets the members (id, instance id, subscribed topics), the partition count of
every subscribed topic, and the current target; it returns the new target. ``uniform``
balances partitions across members while keeping each member's current partitions where the
balance allows (sticky), as Kafka's ``UniformAssignor`` does; ``range`` gives each member a
contiguous range of every topic it subscribes to, members ordered by instance id when they
have one (so a static member that restarts keeps its range).

>>> members = [AssignorMember("a", None, {"t"}), AssignorMember("b", None, {"t"}), AssignorMember("c", None, {"t"})]
>>> {m: sorted(a["t"]) for m, a in uniform(members, {"t": 6}, {}).items()}
{'a': [0, 3], 'b': [1, 4], 'c': [2, 5]}
>>> {m: sorted(a["t"]) for m, a in range_assignor(members, {"t": 7}, {}).items()}
{'a': [0, 1, 2], 'b': [3, 4], 'c': [5, 6]}
"""

from __future__ import annotations

from collections.abc import Callable

from ....lazy_dataclasses import dataclass
from .model import Assignment


@dataclass(frozen=True)
class AssignorMember:
    member_id: str
    instance_id: str | None
    topics: frozenset[str] | set[str]


Assignor = Callable[[list[AssignorMember], dict[str, int], dict[str, Assignment]], dict[str, Assignment]]


def uniform(
    members: list[AssignorMember], partitions: dict[str, int], current: dict[str, Assignment]
) -> dict[str, Assignment]:
    ordered = sorted(members, key=lambda m: m.member_id)
    out: dict[str, Assignment] = {m.member_id: {} for m in ordered}
    counts = {m.member_id: 0 for m in ordered}
    every = [(t, p) for t in sorted(partitions) for p in range(partitions[t])]
    eligible = {tp: [m for m in ordered if tp[0] in m.topics] for tp in every}
    wanted = [tp for tp in every if eligible[tp]]
    # A member's fair share: partitions divided by members, the remainder to the first ones.
    quota = {m.member_id: 0 for m in ordered}
    if ordered:
        base, extra = divmod(len(wanted), len(ordered))
        for i, m in enumerate(ordered):
            quota[m.member_id] = base + (1 if i < extra else 0)
    free = []
    for tp in wanted:  # keep what a member already has while it is within its share
        keeper = next(
            (
                m
                for m in eligible[tp]
                if tp[1] in current.get(m.member_id, {}).get(tp[0], ()) and counts[m.member_id] < quota[m.member_id]
            ),
            None,
        )
        if keeper is None:
            free.append(tp)
        else:
            out[keeper.member_id].setdefault(tp[0], set()).add(tp[1])
            counts[keeper.member_id] += 1
    for tp in free:  # the rest to the least loaded member that subscribes to the topic
        taker = min(
            eligible[tp], key=lambda m: (counts[m.member_id] >= quota[m.member_id], counts[m.member_id], m.member_id)
        )
        out[taker.member_id].setdefault(tp[0], set()).add(tp[1])
        counts[taker.member_id] += 1
    return out


def range_assignor(
    members: list[AssignorMember], partitions: dict[str, int], current: dict[str, Assignment]
) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {m.member_id: {} for m in members}
    for topic in sorted(partitions):
        subscribers = sorted(
            (m for m in members if topic in m.topics),
            key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id),
        )
        if not subscribers:
            continue
        base, extra = divmod(partitions[topic], len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            size = base + (1 if i < extra else 0)
            if size:
                out[m.member_id][topic] = set(range(start, start + size))
            start += size
    return out


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_assignor}

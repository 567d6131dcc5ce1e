"""Kafka's ``simple`` share assignor (SimpleAssignor): balance first, then stickiness.

With M members and P partitions each partition is shared by ``S = ceil(M/P)`` members and
member i wants ``ceil(q(i+1)) - ceil(qi)`` partitions, ``q = S*P/M``: two members split four
partitions 2+2, three members all share one partition. Members keep what they hold where
that stays balanced.
"""

from __future__ import annotations

from .model import Assignment

TopicPartition = tuple[str, int]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _homogeneous(
    members: list[str], current: dict[str, Assignment], partitions: list[TopicPartition]
) -> dict[str, set[TopicPartition]]:
    m, p = len(members), len(partitions)
    out: dict[str, set[TopicPartition]] = {mid: set() for mid in members}
    if not p or not m:
        return out
    share = _ceil_div(m, p)
    desired = {mid: _ceil_div(share * p * (i + 1), m) - _ceil_div(share * p * i, m) for i, mid in enumerate(members)}
    valid = set(partitions)
    kept: dict[str, list[TopicPartition]] = {}
    for mid in members:
        held = sorted((t, q) for t, ps in current.get(mid, {}).items() for q in ps if (t, q) in valid)
        kept[mid] = held[: desired[mid]]
    holders: dict[TopicPartition, int] = dict.fromkeys(partitions, 0)
    for mid in members:
        for tp in list(kept[mid]):
            if holders[tp] >= share:  # shared by more members than balance allows
                kept[mid].remove(tp)
            else:
                holders[tp] += 1
    for tp in partitions:
        while holders[tp] < share:
            hungry = [mid for mid in members if len(kept[mid]) < desired[mid] and tp not in kept[mid]]
            if not hungry:
                break
            taker = min(hungry, key=lambda mid: (len(kept[mid]) - desired[mid], members.index(mid)))
            kept[taker].append(tp)
            holders[tp] += 1
    for mid in members:
        out[mid] = set(kept[mid])
    return out


def assign(
    subscriptions: dict[str, set[str]], current: dict[str, Assignment], partitions: dict[str, int]
) -> dict[str, Assignment]:
    """Target assignment: member id -> topic -> partitions. ``subscriptions``: each member's
    topics; ``current``: the previous target (for stickiness); ``partitions``: the assignable
    partition count of each topic (initialized share partitions only)."""
    members = sorted(subscriptions)
    if len({frozenset(s) for s in subscriptions.values()}) <= 1:
        topics = sorted(next(iter(subscriptions.values()), set()) & set(partitions))
        tps = [(t, q) for t in topics for q in range(partitions[t])]
        result = _homogeneous(members, current, tps)
    else:  # members subscribe to different topics: each topic is balanced among its subscribers
        result = {mid: set() for mid in members}
        for topic in sorted(set(partitions)):
            subscribers = [mid for mid in members if topic in subscriptions[mid]]
            tps = [(topic, q) for q in range(partitions[topic])]
            mine = {mid: {topic: current.get(mid, {}).get(topic, set())} for mid in subscribers}
            for mid, got in _homogeneous(subscribers, mine, tps).items():
                result[mid] |= got
    out: dict[str, Assignment] = {}
    for mid, tps_of in result.items():
        assignment: Assignment = {}
        for t, q in tps_of:
            assignment.setdefault(t, set()).add(q)
        out[mid] = assignment
    return out

"""A classic group's running counts (members parked in JoinGroup, members offering each
protocol) equal a recount after any sequence of membership changes, however they are made."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.core.groups.classic.model import ClassicGroup, GroupState, Member
from fakebroker.core.timers import Pending

NAMES = ("range", "roundrobin", "sticky")
protocols = st.lists(st.sampled_from(NAMES), max_size=3).map(lambda ns: [(n, n.encode()) for n in ns])
ids = st.integers(0, 5).map(lambda i: f"m{i}")
ops = st.one_of(
    st.tuples(st.just("add"), ids, protocols, st.booleans(), st.booleans()),
    st.tuples(st.just("put"), ids, protocols, st.booleans(), st.booleans()),
    st.tuples(st.just("remove"), ids),
    st.tuples(st.just("park"), ids, st.booleans()),
    st.tuples(st.just("protocols"), ids, protocols),
    st.tuples(st.just("replace"), ids, ids, protocols),
    st.tuples(st.just("touch_removed"), ids, protocols, st.booleans()),
)


def old_supports(group: ClassicGroup, protocol_type: str, names: list[str]) -> bool:
    """supports_protocols as it was before the running counts: a loop over every member."""
    if group.state == GroupState.EMPTY:
        return bool(protocol_type) and bool(names)
    counts: Counter[str] = Counter()
    for m in group.members.values():
        counts.update({n for n, _ in m.protocols})
    return protocol_type == group.protocol_type and any(counts[n] == len(group.members) for n in names)


def member(mid: str, protos: list[tuple[str, bytes]], parked: bool, static: bool = False) -> Member:
    m = Member(mid, f"i-{mid}" if static else None, "c", "h", 1000, 1000, "consumer", protos)
    m.join_pending = Pending() if parked else None
    return m


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=40), st.lists(st.sampled_from(NAMES), max_size=3))
def test_running_counts_equal_a_recount(steps: list[tuple], offered: list[str]) -> None:
    group = ClassicGroup("g")
    group.transition_to(GroupState.PREPARING_REBALANCE, 0)
    removed: list[Member] = []
    for op, mid, *rest in steps:
        present = group.members.get(mid)
        if op in ("add", "put") and present is None:
            protos, parked, static = rest
            (group.add if op == "add" else group.put)(member(mid, protos, parked, static))
        elif op == "remove" and present is not None:
            removed.append(group.remove(mid))  # type: ignore[arg-type]
        elif op == "park" and present is not None:
            present.join_pending = Pending() if rest[0] else None
        elif op == "protocols" and present is not None:
            present.protocols = rest[0]
        elif op == "replace" and present is not None and rest[0] not in group.members:
            group.replace(mid, member(rest[0], rest[1], parked=False))
        elif op == "touch_removed" and removed:
            # a member that left the group no longer moves its counts
            removed[-1].protocols, removed[-1].join_pending = rest[0], Pending() if rest[1] else None
        assert (group.awaiting_join_count(), group._protocol_counts) == group.recount()
        assert group.supports_protocols("consumer", offered) == old_supports(group, "consumer", offered)
    assert list(group.members) == [m.member_id for m in group.members.values()]  # order and keys agree

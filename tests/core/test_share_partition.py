"""The share partition's record states under random acquisitions, acknowledgements, releases
and lock expiries (hypothesis): ranges always tile the in-flight window, one owner per
acquired record, delivery counts only grow and stay within the limit, and nothing accepted
or archived is ever delivered again."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.core.groups.share.partition import (
    TERMINAL,
    AckBatch,
    AckError,
    AckType,
    LogBatch,
    RecordState,
    SharePartition,
)

LIMIT = 3
MEMBERS = ("a", "b", "c")


def log_of(batch_sizes: list[int]) -> list[LogBatch]:
    out, offset = [], 0
    for size in batch_sizes:
        out.append(LogBatch(offset, offset + size - 1, b"x" * size))
        offset += size
    return out


def check_tiling(sp: SharePartition) -> None:
    at = sp.start
    for r in sp.ranges:
        assert r.first == at and r.last >= r.first, (sp.start, sp.ranges)
        at = r.last + 1
        if r.state == RecordState.ACQUIRED:
            assert r.member and r.lock and 1 <= r.count <= LIMIT
        else:
            assert not r.member and not r.lock
    assert at == sp.end
    assert not sp.ranges or sp.ranges[0].state not in TERMINAL  # the start moved over finished ones


operation = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 12)),
    st.tuples(
        st.just("ack"),
        st.sampled_from(MEMBERS),
        st.integers(0, 40),
        st.integers(0, 6),
        st.lists(
            st.sampled_from([AckType.ACCEPT, AckType.RELEASE, AckType.REJECT, AckType.GAP]), min_size=1, max_size=1
        ),
    ),
    st.tuples(st.just("release"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("expire"), st.integers(1, 30)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=10), st.lists(operation, max_size=60))
def test_record_states_stay_consistent(batch_sizes, operations):
    log = log_of(batch_sizes)
    total = log[-1].last + 1
    sp = SharePartition("g", "t", 0, 0)
    counts: dict[int, int] = {}
    finished: set[int] = set()
    locks = 0
    for op in operations:
        if op[0] == "acquire":
            locks += 1
            got, _ = sp.acquire(
                op[1],
                locks,
                op[2],
                op[2],
                iter([b for b in log if b.last >= sp.read_from()]),
                delivery_limit=LIMIT,
                max_locks=20,
            )
            for a in got:
                for offset in range(a.first, a.last + 1):
                    assert offset not in finished  # nothing accepted or archived comes back
                    assert a.count == counts.get(offset, 0) + 1 <= LIMIT
                    counts[offset] = a.count
        elif op[0] == "ack":
            _, member, first, length, types = op
            batch = AckBatch(first, first + length, tuple(types))
            before = {o: (r.state, r.member) for r in sp.ranges for o in range(r.first, r.last + 1)}
            try:
                changed = sp.acknowledge(member, [batch], LIMIT)
            except AckError:
                after = {o: (r.state, r.member) for r in sp.ranges for o in range(r.first, r.last + 1)}
                assert after == before  # all or nothing
                continue
            for o in range(max(batch.first, sp.start), min(batch.last, sp.end - 1) + 1):
                assert before[o] == (RecordState.ACQUIRED, member)  # only the owner's acquired records
            for f, last, _, _, _ in changed:
                for o in range(f, last + 1):
                    state = next(r.state for r in sp.ranges if r.first <= o <= r.last)
                    if state in TERMINAL:
                        finished.add(o)
            sp.finish()
        else:
            released = sp.release(LIMIT, member=op[1]) if op[0] == "release" else sp.release(LIMIT, lock=op[1])
            for r, archived in released:
                assert r.count <= LIMIT and archived == (r.count >= LIMIT)
                if archived:
                    finished.update(range(r.first, r.last + 1))
            sp.finish()
        for r in sp.ranges:
            if r.state in TERMINAL:
                finished.update(range(r.first, r.last + 1))
        check_tiling(sp)
        assert sp.end <= total
        assert all(o in finished for o in range(0, sp.start) if o in counts)  # below the start: done


def test_a_range_split_by_acknowledgements_merges_back():
    sp = SharePartition("g", "t", 0, 0)
    got, _ = sp.acquire("a", 1, 10, 10, iter(log_of([10])), delivery_limit=5, max_locks=100)
    assert [(a.first, a.last, a.count) for a in got] == [(0, 9, 1)]
    sp.acknowledge("a", [AckBatch(3, 3, (AckType.RELEASE,))], 5)
    sp.finish()
    assert [(r.first, r.last, r.state) for r in sp.ranges] == [
        (0, 2, RecordState.ACQUIRED),
        (3, 3, RecordState.AVAILABLE),
        (4, 9, RecordState.ACQUIRED),
    ]
    sp.acknowledge("a", [AckBatch(0, 2, (AckType.ACCEPT,)), AckBatch(4, 9, (AckType.ACCEPT,))], 5)
    sp.finish()
    assert (sp.start, [(r.first, r.last, r.state, r.count) for r in sp.ranges]) == (
        3,
        [(3, 3, RecordState.AVAILABLE, 1), (4, 9, RecordState.ACKNOWLEDGED, 1)],
    )
    again, _ = sp.acquire("b", 2, 10, 10, iter(log_of([10])), delivery_limit=5, max_locks=100)
    assert [(a.first, a.last, a.count) for a in again] == [(3, 3, 2)]
    sp.acknowledge("b", [AckBatch(3, 3, (AckType.ACCEPT,))], 5)
    sp.finish()
    assert (sp.start, sp.end, sp.ranges) == (10, 10, [])

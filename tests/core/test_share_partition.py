"""The share partition's record states under random acquisitions, acknowledgements, releases
and lock expiries (hypothesis): ranges always tile the in-flight window, one owner per
acquired record, delivery counts only grow and stay within the limit, and nothing accepted
or archived is ever delivered again."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.core.groups.share.partition import SharePartition
from fakebroker.core.groups.share.records import TERMINAL, AckBatch, AckError, AckType, LogBatch, RecordState

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


# -- Kafka 4.4's in-flight batches, as the conformance probes saw them (probes_share.py) -------------
def test_batches_are_cut_at_batch_size_and_answer_whole_or_per_offset():
    sp = SharePartition("g", "t", 0, 0)
    log = log_of([3, 2, 4])
    got, _ = sp.acquire("a", 1, 500, 2, iter(log), delivery_limit=5, max_locks=2000)
    assert [(x.first, x.last, x.count) for x in got] == [(0, 2, 1), (3, 4, 1), (5, 8, 1)]

    def ack(member, first, last, *types):
        try:
            sp.acknowledge(member, [AckBatch(first, last, tuple(types))], 5)
        except AckError as exc:
            return exc.message
        sp.finish()
        return None

    assert ack("a", 0, 2, AckType.RELEASE) is None  # a whole batch: stays one batch
    assert ack("a", 1, 1, AckType.ACCEPT) == "The batch cannot be acknowledged. The batch is not in the acquired state."
    assert ack("a", 0, 4, AckType.ACCEPT) == "The batch cannot be acknowledged. The batch is not in the acquired state."
    assert ack("a", 3, 4, AckType.ACCEPT, AckType.ACCEPT) is None  # a type per offset
    assert ack("a", 5, 6, AckType.REJECT) is None  # part of a batch: tracked per offset from now on
    assert ack("a", 5, 5, AckType.ACCEPT) == "The offset cannot be acknowledged. The offset is not acquired."
    assert ack("b", 7, 7, AckType.ACCEPT) == "Member is not the owner of offset"
    again, _ = sp.acquire("a", 2, 500, 2, iter(log), delivery_limit=5, max_locks=2000)
    assert [(x.first, x.last, x.count) for x in again] == [(0, 2, 2)]
    assert ack("b", 0, 2, AckType.ACCEPT) == "Member is not the owner of batch record"


def test_redelivery_is_throttled_then_the_last_delivery_goes_alone():
    sp = SharePartition("g", "t", 0, 0)
    log = log_of([3])
    seen = []
    for lock in range(1, 12):
        got, _ = sp.acquire("a", lock, 500, 500, iter(log), delivery_limit=5, max_locks=2000)
        seen.append([(x.first, x.last, x.count) for x in got])
        if not got:
            break
        sp.acknowledge("a", [AckBatch(x.first, x.last, (AckType.RELEASE,)) for x in got], 5)
        sp.finish()
    assert seen == [
        [(0, 2, 1)],
        [(0, 2, 2)],
        [(0, 2, 3)],
        [(0, 0, 4)],
        [(0, 0, 5)],
        [(1, 1, 4)],
        [(1, 1, 5)],
        [(2, 2, 4)],
        [(2, 2, 5)],
        [],
    ]


def test_acknowledgements_of_one_request_see_each_other_and_fail_together():
    sp = SharePartition("g", "t", 0, 0)
    sp.acquire("a", 1, 500, 500, iter(log_of([5])), delivery_limit=5, max_locks=2000)
    try:
        sp.acknowledge("a", [AckBatch(0, 2, (AckType.ACCEPT,)), AckBatch(2, 3, (AckType.ACCEPT,))], 5)
    except AckError as exc:
        assert exc.message == "The offset cannot be acknowledged. The offset is not acquired."
    else:
        raise AssertionError("the second batch acknowledges offset 2 again")
    assert [(r.first, r.last, r.state) for r in sp.ranges] == [(0, 4, RecordState.ACQUIRED)]  # undone


def test_record_limit_leaves_the_rest_of_the_log_batch_available():
    sp = SharePartition("g", "t", 0, 0)
    got, _ = sp.acquire("a", 1, 2, 500, iter(log_of([3])), delivery_limit=5, max_locks=2000, record_limit=True)
    assert [(x.first, x.last, x.count) for x in got] == [(0, 1, 1)]
    assert [(r.first, r.last, r.state, r.count) for r in sp.ranges] == [
        (0, 1, RecordState.ACQUIRED, 1),
        (2, 2, RecordState.AVAILABLE, 0),
    ]
    more, _ = sp.acquire("b", 2, 5, 500, iter(log_of([3])), delivery_limit=5, max_locks=2000, record_limit=True)
    assert [(x.first, x.last, x.count) for x in more] == [(2, 2, 1)]

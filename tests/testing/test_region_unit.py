"""The checkpointing-consumer harness (fakebroker.testing.region) with scripted consumers: drain, merge,
merge timeout, synchronous commits whose failure resets, resets to a checkpoint and to the
initial state, and (hypothesis) exactness under random rebalances, crashes and commit failures."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.testing.region import CommitFailed, Record, Region


class Log:
    """Partitions of records, and a group that hands them out to scripted consumers."""

    def __init__(self, partitions: int, per_partition: int):
        self.records = {
            p: [Record(p, o, f"k{o % 3}", o + 10 * p) for o in range(per_partition)] for p in range(partitions)
        }
        self.members: list[Scripted] = []
        self.committed: dict[int, int] = {}

    def rebalance(self) -> None:
        """Eager: everyone loses everything, then the live members share the partitions."""
        live = [m for m in self.members if not m.closed]
        for member in live:
            member.revoke_all()
        for i, member in enumerate(live):
            member.assign([p for p in self.records if p % len(live) == i])


class Scripted:
    def __init__(self, log: Log, batch_cap: int = 5):
        self.log, self.batch_cap = log, batch_cap
        self.positions: dict[int, int] = {}
        self.closed = False
        self.fail_commits = 0
        self.polls = 0

    def subscribe(self, on_assign, on_revoke) -> None:
        self.on_assign, self.on_revoke = on_assign, on_revoke
        self.log.members.append(self)
        self.log.rebalance()

    def assign(self, partitions: list[int]) -> None:
        self.positions = dict(self.on_assign(partitions))

    def revoke_all(self) -> None:
        if self.positions:
            self.on_revoke(sorted(self.positions))
        self.positions = {}

    def poll(self, max_records: int, timeout: float) -> list[Record]:
        self.polls += 1
        out = []
        for p, pos in self.positions.items():
            got = self.log.records[p][pos : pos + min(max_records, self.batch_cap)]
            self.positions[p] = pos + len(got)
            out += got
        return out

    def seek(self, partition: int, offset: int) -> bool:
        if partition not in self.positions:
            return False
        self.positions[partition] = offset
        return True

    def commit(self, offsets: dict[int, int]) -> None:
        if self.fail_commits:
            self.fail_commits -= 1
            raise CommitFailed("REBALANCE_IN_PROGRESS")
        self.log.committed.update(offsets)

    def close(self) -> None:
        self.closed = True
        self.revoke_all()
        self.log.rebalance()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def summed(state: dict[str, int], record: Record) -> dict[str, int]:
    state[record.key] = state.get(record.key, 0) + record.value
    return state


def truth(log: Log) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for p, records in log.records.items():
        out[p] = {}
        for r in records:
            summed(out[p], r)
    return out


def make(clock: Clock, **kw) -> Region:
    return Region(initial=lambda p: {}, fold=summed, clock=clock, interval=1.0, merge_timeout=2.0, batch=5, **kw)


def run_until_caught_up(region: Region, log: Log, clock: Clock, steps: int = 500) -> None:
    ends = {p: len(r) for p, r in log.records.items()}
    for _ in range(steps):
        clock.now += 0.5
        region.step()
        if region.store.latest.offsets == ends and log.committed == ends:
            return
    raise AssertionError(f"not caught up: checkpoint {region.store.latest.offsets}, committed {log.committed}")


def test_a_checkpoint_drains_merges_and_commits_synchronously():
    clock, log = Clock(), Log(partitions=2, per_partition=12)
    region = make(clock)
    a, b = Scripted(log), Scripted(log)
    region.add("a", a)
    region.add("b", b)
    clock.now = 0.5
    region.step()  # each polls 5 records and folds them
    assert region.live_state() == {0: {"k0": 0 + 3, "k1": 1 + 4, "k2": 2}, 1: {"k0": 10 + 13, "k1": 11 + 14, "k2": 12}}
    clock.now = 1.0  # a checkpoint begins: both drain (no new poll) and hand in
    polls = a.polls, b.polls
    region.step()
    assert (a.polls, b.polls) == polls
    assert region.store.latest.offsets == {0: 5, 1: 5}
    assert log.committed == {0: 5, 1: 5}
    run_until_caught_up(region, log, clock)
    assert region.store.latest.state == truth(log)
    assert region.resets == ["a lost partitions [0, 1]"]  # when b joined, before any work


def test_a_drain_folds_what_the_member_holds_before_handing_in():
    clock, log = Clock(), Log(partitions=2, per_partition=12)
    region = make(clock)  # folds at most 5 records a step
    member = region.add("a", Scripted(log))
    clock.now = 0.5
    region.step()  # polls 10 (5 of each partition), folds 5
    assert member.processed == 5 and len(member.held) == 5
    clock.now = 1.0
    region.step()  # the checkpoint: the 5 held are folded first, nothing new is polled
    assert member.processed == 10 and member.held == []
    assert region.store.latest.offsets == {0: 5, 1: 5}


def test_a_member_that_misses_the_merge_resets_the_region_and_is_left_out():
    clock, log = Clock(), Log(partitions=2, per_partition=40)
    region = make(clock)
    region.add("a", Scripted(log))
    region.add("b", Scripted(log))
    clock.now = 0.5
    region.step()
    region.crash("b")  # never steps again; the region is not told
    clock.now = 1.0
    region.step()  # checkpoint 1 begins and waits for b
    assert region.pending is not None and region.pending.handed_in == {"a"}
    clock.now = 3.5
    region.step()
    assert region.resets[-1] == "checkpoint 1 not merged within 2.0 s: no part from b"
    assert region.aborted == 1 and not region.members["b"].responsive
    clock.now = 4.5
    region.step()  # the next checkpoint expects a alone, and completes with a's partition only
    assert region.store.latest.offsets.keys() == {0}
    # b's partition moves to a once the group notices (its session expires): exact from 0
    region.remove("b")
    run_until_caught_up(region, log, clock)
    assert region.store.latest.state == truth(log)


def test_a_failed_commit_resets_the_region_to_the_last_checkpoint():
    clock, log = Clock(), Log(partitions=1, per_partition=30)
    region = make(clock)
    consumer = Scripted(log)
    member = region.add("a", consumer)
    consumer.fail_commits = 1
    clock.now = 0.5
    region.step()
    clock.now = 1.0
    region.step()  # checkpoint 1 (offset 5) completes; its commit fails
    assert region.resets == ["a's commit failed: REBALANCE_IN_PROGRESS"]
    assert member.failed_commits == 1 and log.committed == {}
    clock.now = 1.5
    region.step()  # back to checkpoint 1: the position moves to 5 again, nothing is lost
    assert member.next_offset == {0: 10} and consumer.positions == {0: 10}
    run_until_caught_up(region, log, clock)
    assert region.store.latest.state == truth(log)


def test_a_reset_to_the_initial_state_starts_over():
    clock, log = Clock(), Log(partitions=1, per_partition=10)
    region = make(clock)
    region.add("a", Scripted(log))
    run_until_caught_up(region, log, clock)
    region.reset("operator asked", to_initial=True)
    assert region.store.latest.offsets == {}
    clock.now += 0.5
    region.step()
    member = region.members["a"]
    assert member.discarded == 0 and member.next_offset == {0: 5}  # from offset 0: initial state, 5 folded
    run_until_caught_up(region, log, clock)
    assert region.store.latest.state == truth(log)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="merge_timeout must be > 0"):
        Region(initial=dict, fold=summed, merge_timeout=0)
    region = Region(initial=dict, fold=summed)
    with pytest.raises(ValueError, match=r"no member 'x'; members: \[\]"):
        region.remove("x")


@settings(max_examples=150, deadline=None)
@given(
    plan=st.lists(
        st.tuples(
            st.sampled_from(["step", "join", "leave", "crash", "fail_commit", "rebalance", "reset"]), st.integers(0, 3)
        ),
        max_size=40,
    ),
    partitions=st.integers(1, 4),
)
def test_the_last_checkpoint_is_exact_whatever_happens(plan, partitions):
    clock, log = Clock(), Log(partitions=partitions, per_partition=25)
    region = make(clock)
    names = iter(f"m{i}" for i in range(100))
    region.add(next(names), Scripted(log))
    for action, n in plan:
        live = [m for m in region.members.values() if m.alive]
        if action == "step":
            for _ in range(n + 1):
                clock.now += 0.4
                region.step()
        elif action == "join":
            region.add(next(names), Scripted(log))
        elif action in ("leave", "crash") and len(live) > 1:
            who = live[n % len(live)].name
            if action == "leave":
                region.remove(who)
            else:  # the group finds out later (its session expires): a rebalance without it
                region.crash(who)
                region.members[who].consumer.closed = True
        elif action == "fail_commit" and live:
            live[n % len(live)].consumer.fail_commits += 1
        elif action == "rebalance":
            log.rebalance()
        elif action == "reset":
            region.reset("test", to_initial=n == 0)
    log.rebalance()  # crashed members' partitions reach the live ones
    run_until_caught_up(region, log, clock, steps=2000)
    assert region.store.latest.state == truth(log)
    assert region.live_state() == truth(log)

"""The duplicates at-least-once does not allow (``Verdict.duplicates_beyond_policy``), on synthetic
event logs: a member that goes back to records it processed with nothing that sets a position in
between (``rewind``), a reader of records the group had committed past before its position was
set (``behind_commit``); and the repeats a consumer committing after processing does make, which
stay allowed: after a rebalance, a rejoin, a coordinator or leader move, a rebalance while a
batch is in hand (before or after its first record was processed), an old owner's late commit.

The cluster is the ledger tests' stub: a real ``EventLog`` the ledger counts and reads."""

from __future__ import annotations

import time

import pytest

from fakebroker.campaign.runs import kind_of
from fakebroker.core import events as ev
from fakebroker.testing.ledger import BeyondPolicy, DeliveryLedger

from .test_ledger_unit import M1, M2, StubCluster, produce_all


def commit(cluster: StubCluster, offset: int, partition: int = 0, group: str = "g") -> None:
    cluster.emit("offset_committed", group=group, topic="t", partition=partition, offset=offset)


def consume(cluster: StubCluster, ledger: DeliveryLedger, member: str, offsets, partition: int = 0) -> None:
    """``member`` processes each offset, then commits past it (at least once)."""
    for o in offsets:
        ledger.processed(member, "t", partition, o)
        commit(cluster, o + 1, partition)


def rebalance(cluster: StubCluster, generation: int, member: str = M2) -> None:
    cluster.emit("rebalance_started", group="g", reason=f"member {member} joined", generation=generation - 1)
    cluster.emit("member_joined", group="g", member=member, instance=None, client_id=member.split("-")[0])
    cluster.emit("generation_started", group="g", generation=generation, members=2)


def started() -> tuple[StubCluster, DeliveryLedger]:
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    rebalance(cluster, 1, M1)
    return cluster, ledger


# -- rewind: the same member, nothing in between -------------------------------------------------------
def test_a_member_that_seeks_back_after_committing_is_beyond_the_policy():
    """c1 reads 0-5 (its first run in the partition), goes back to 3 and reads on to 8 (not judged:
    the batch of a first run may have been handed out before the member's assignment settled),
    then goes back to 6 with nothing in between: 6, 7 and 8 again are beyond the policy."""
    cluster, ledger = started()
    consume(cluster, ledger, "c1", range(6))
    consume(cluster, ledger, "c1", range(3, 9))
    mark = cluster.event_count
    consume(cluster, ledger, "c1", range(6, 10))
    v = ledger.verdict()
    assert [(b.member, b.offset, b.rule) for b in v.duplicates_beyond_policy] == [
        ("c1", o, "rewind") for o in (6, 7, 8)
    ]
    # the window opens at c1's processing before the run that held its earlier reads (offset 5 of
    # the first run, when the log held the rebalance's 3 events and the commits of 0 to 4)
    first = v.duplicates_beyond_policy[0]
    assert first == BeyondPolicy("c1", "t", 0, 6, mark, "rewind", None, 8)
    assert first.describe() == (
        f"t[0]@6: c1 processed it again after event #{mark}, having processed it before, and nothing set its "
        "position back after event #8 (no rebalance, rejoin, coordinator or leader move)"
    )
    assert v.at_least_once and len(v.duplicates) == 6
    assert kind_of(v, "at_least_once") == "duplicated"
    assert "3 processed again beyond the commit policy" in v.summary().splitlines()[0]
    assert "processed again beyond the commit policy: t[0]@6 by c1 (rewind)" in v.summary()
    with pytest.raises(AssertionError) as failed:
        ledger.assert_at_least_once()
    lines = str(failed.value).splitlines()
    assert lines[0] == "3 records processed again beyond what at least once allows:"
    assert lines[1].startswith("a record was processed again though no position was set at or below it")
    assert lines[2] == f"  {first.describe()}"
    assert "pass allow_duplicates_beyond_policy=True" in str(failed.value)
    assert ledger.assert_at_least_once(allow_duplicates_beyond_policy=True) == v
    with pytest.raises(AssertionError, match=r"^not exactly once:\n"):  # it fails on any duplicate already
        ledger.assert_exactly_once()


def rewound(cluster: StubCluster, ledger: DeliveryLedger, member: str = "c1", upto: int = 6) -> None:
    """``member`` reads 0 to ``upto - 1``, then all of them again: from here on, its runs are judged."""
    consume(cluster, ledger, member, range(upto))
    consume(cluster, ledger, member, range(upto))


def test_a_rebalance_or_rejoin_between_the_two_reads_allows_the_repeat():
    cluster, ledger = started()
    rewound(cluster, ledger, upto=4)
    ledger.processed("c1", "t", 0, 4)  # its commit fails: the group is rebalancing
    rebalance(cluster, 2)
    ledger.processed("c1", "t", 0, 4)  # c1 kept the partition, read from the committed offset, 4
    # a static member's restart: no rebalance, but it rejoins and reads from the committed offset
    ledger.processed("c1", "t", 0, 5)
    cluster.emit("static_member_rejoined", group="g", member=M1, instance="i1")
    ledger.processed("c1", "t", 0, 5)
    v = ledger.assert_at_least_once(max_duplicates=6)
    assert v.duplicates_beyond_policy == [] and kind_of(v, "at_least_once") == "ok"


@pytest.mark.parametrize(
    ("kind", "details", "allowed"),
    [
        ("group_unloaded", {"group": "g"}, True),  # the coordinator moved
        ("member_reconciled", {"group": "g", "member": M1, "epoch": 3, "state": "stable", "assignment": {}}, True),
        ("broker_stopped", {"broker": 2}, True),
        ("leader_moved", {"topic": "t", "partition": 0, "leader": 2, "epoch": 4}, True),
        ("records_deleted", {"topic": "t", "partition": 0, "before": 2}, True),
        ("leader_moved", {"topic": "t", "partition": 1, "leader": 2, "epoch": 4}, False),  # another partition
        ("generation_started", {"group": "other", "generation": 7, "members": 1}, False),  # another group
        ("offset_committed", {"group": "g", "topic": "t", "partition": 0, "offset": 3}, False),  # a commit
        ("network_cut", {"client_id": "c1"}, False),  # a cut moves no position
    ],
)
def test_what_sets_a_position_back_and_what_does_not(kind, details, allowed):
    cluster, ledger = started()
    rewound(cluster, ledger, upto=3)
    cluster.emit(kind, **details)
    ledger.processed("c1", "t", 0, 2)
    assert (ledger.verdict().duplicates_beyond_policy == []) is allowed


def test_a_rebalance_while_the_batch_was_in_hand_allows_reading_the_batch_again():
    """aiokafka's rebalance runs beside the application: c1 went back to 3 (a rebalance) and was
    handed 3-9 in one batch; while it processed them, another rebalance set its position to 6
    (the committed offset then), so after the batch it reads 6-9 again. The move came after c1's
    first read of 6, but after its processing before the run that read it (5), too."""
    cluster, ledger = started()
    consume(cluster, ledger, "c1", range(6))
    rebalance(cluster, 2)
    consume(cluster, ledger, "c1", range(3, 5))  # the batch 3-9 in hand
    rebalance(cluster, 3)  # the position set to the committed 5 while the batch is processed
    consume(cluster, ledger, "c1", range(5, 10))
    consume(cluster, ledger, "c1", range(5, 12))
    v = ledger.assert_at_least_once()
    assert len(v.duplicates) == 7 and v.duplicates_beyond_policy == []
    # a move before the processing before that run (5, of the first) is no excuse
    cluster, ledger = started()
    consume(cluster, ledger, "c1", range(4))
    rebalance(cluster, 2)
    consume(cluster, ledger, "c1", range(4, 6))
    consume(cluster, ledger, "c1", range(3, 10))
    consume(cluster, ledger, "c1", range(5, 12))
    assert [b.offset for b in ledger.verdict().duplicates_beyond_policy] == [5, 6, 7, 8, 9]


def test_a_first_run_handed_out_before_a_rebalance_settled_is_not_judged():
    """c1 is handed 0-3 of its new partition, and a second rebalance completes (keeping the
    partition with c1) before it processes the first of them: the position it then set is where
    c1 reads 0-3 again from. Nothing tells that batch from one handed out after the rebalance."""
    cluster, ledger = started()
    rebalance(cluster, 2)
    consume(cluster, ledger, "c1", range(4))
    consume(cluster, ledger, "c1", range(6))
    assert ledger.verdict().duplicates_beyond_policy == []


def test_a_repeat_after_an_unexplained_rewind_and_a_rebalance_is_allowed():
    cluster, ledger = started()
    rewound(cluster, ledger)
    ledger.processed("c1", "t", 0, 1)  # back to 1, nothing in between
    rebalance(cluster, 2)  # a rebalance while it re-reads: what follows is explained by it
    ledger.processed("c1", "t", 0, 2)
    assert [b.offset for b in ledger.verdict().duplicates_beyond_policy] == [1]


# -- behind_commit: read again below a commit older than the reader's position --------------------------
def test_a_new_owner_that_starts_below_the_committed_offset_is_beyond_the_policy():
    """c1 processes and commits 0-5; c2 joins and takes the partition, but starts from the
    beginning (an offset of its own) instead of the committed 6."""
    cluster, ledger = started()
    consume(cluster, ledger, "c1", range(6))
    rebalance(cluster, 2)
    rebalance_at = cluster.event_count - 2
    consume(cluster, ledger, "c2", range(8))
    v = ledger.verdict()
    # c2 commits 1, 2, ... as it goes; what counts is the committed offset until it began reading
    assert [(b.member, b.offset, b.rule, b.committed, b.since) for b in v.duplicates_beyond_policy] == [
        ("c2", o, "behind_commit", 6, rebalance_at) for o in range(6)
    ]
    assert v.duplicates_beyond_policy[0].describe() == (
        f"t[0]@0: c2 processed it again after event #{v.duplicates_beyond_policy[0].events}, though the group's "
        f"committed offset had stayed at 6 or above from event #{rebalance_at}, before c2's position there was set, "
        "until it read on from it"
    )
    assert kind_of(v, "at_least_once") == "duplicated"
    with pytest.raises(AssertionError, match="6 records processed again beyond what at least once allows"):
        ledger.assert_at_least_once()
    # the group's commits are needed: without group=, only rewinds are judged
    alone = DeliveryLedger(cluster)
    alone.processed("c2", "t", 0, 0)
    alone.processed("c3", "t", 0, 0)
    assert alone.verdict().duplicates_beyond_policy == []


def test_a_new_owner_reading_from_the_committed_offset_is_allowed():
    cluster, ledger = started()
    consume(cluster, ledger, "c1", range(4))
    ledger.processed("c1", "t", 0, 4)  # c1 dies before committing 4
    ledger.processed("c1", "t", 0, 5)
    cluster.emit("member_removed", group="g", member=M1, reason="left the group")
    rebalance(cluster, 2)
    consume(cluster, ledger, "c2", range(4, 10))
    v = ledger.assert_at_least_once(max_duplicates=2)
    assert [d.offset for d in v.duplicates] == [4, 5] and v.duplicates_beyond_policy == []


def test_an_old_owners_late_commit_does_not_make_the_new_owners_reads_beyond_the_policy():
    """The rebalance started with 2 committed; c2 looked its position up (2), then c1's last
    commit (6) landed, and only then did c2 read 2-5 again (and a second rebalance started
    meanwhile: c2 had begun reading before it)."""
    cluster, ledger = started()
    consume(cluster, ledger, "c1", range(2))
    rebalance(cluster, 2)
    ledger.processed("c2", "t", 0, 2)
    for o in range(2, 6):
        ledger.processed("c1", "t", 0, o)  # the batch c1 had in hand
    commit(cluster, 6)  # c1's late commit, with the new generation
    rebalance(cluster, 3, "c3-5a5a5a5a-1111-4222-8333-444455556666")
    consume(cluster, ledger, "c2", range(3, 10))
    v = ledger.assert_at_least_once()
    assert [d.offset for d in v.duplicates] == [2, 3, 4, 5] and v.duplicates_beyond_policy == []


def test_the_rebalance_that_counts_is_the_latest_to_complete_before_the_reader_began():
    """As above, but c2 begins reading only after a second rebalance started: it has not
    completed, so c2's position is still the one the first gave it (2). Once it completed
    before c2 began, c2's position came from it (6), and reading 2-5 again is beyond the policy."""
    for completed, beyond in ((False, []), (True, [2, 3, 4, 5])):
        cluster, ledger = started()
        consume(cluster, ledger, "c1", range(2))
        rebalance(cluster, 2)
        for o in range(2, 6):
            ledger.processed("c1", "t", 0, o)
        commit(cluster, 6)
        cluster.emit("rebalance_started", group="g", reason="member c3 joined", generation=2)
        if completed:
            cluster.emit("generation_started", group="g", generation=3, members=3)
        consume(cluster, ledger, "c2", range(2, 10))
        assert [b.offset for b in ledger.verdict().duplicates_beyond_policy] == beyond


def test_a_commit_lowered_between_the_rebalance_and_the_read_allows_it():
    cluster, ledger = started()
    consume(cluster, ledger, "c1", range(6))
    rebalance(cluster, 2)
    commit(cluster, 2)  # committed 2 (a lower offset) before the new owner looked its position up
    consume(cluster, ledger, "c2", range(2, 8))
    assert ledger.verdict().duplicates_beyond_policy == []
    cluster, ledger = started()
    consume(cluster, ledger, "c1", range(6))
    rebalance(cluster, 2)
    cluster.emit("offset_deleted", group="g", topic="t", partition=0)  # no offset: reset to earliest
    consume(cluster, ledger, "c2", range(8))
    assert ledger.verdict().duplicates_beyond_policy == []


# -- where the rule does not judge -----------------------------------------------------------------------
def test_without_a_cluster_nothing_is_judged_beyond_the_policy():
    ledger = DeliveryLedger()
    produce_all(ledger, 3)
    for o in (0, 1, 2, 0, 1, 2):
        ledger.processed("c1", "t", 0, o)
    v = ledger.assert_at_least_once()
    assert len(v.duplicates) == 3 and v.duplicates_beyond_policy == []


def test_a_share_groups_repeats_are_not_judged_so():
    cluster, ledger = started()
    for delivery in (1, 2, 3):  # a record released and delivered again to the same member
        ledger.processed("c1", "t", 0, 0, delivery_count=delivery)
    assert ledger.verdict().duplicates_beyond_policy == []


def test_a_window_the_event_log_dropped_counts_as_explained():
    cluster = StubCluster()
    cluster.log = ev.EventLog(capacity=4)
    ledger = DeliveryLedger(cluster, group="g")
    for o in (0, 1, 0, 1):  # its first run, then its second
        ledger.processed("c1", "t", 0, o)
    for o in range(1, 7):
        commit(cluster, o)  # the log keeps the last 4 commits only
    for o in (1, 2, 3, 3):  # back to 1 (and 3): whatever moved c1 may be among the dropped events
        ledger.processed("c1", "t", 0, o)
    assert ledger.verdict().duplicates_beyond_policy == []
    ledger.processed("c1", "t", 0, 3)  # its window is in the log: nothing in it
    assert [(b.offset, b.since) for b in ledger.verdict().duplicates_beyond_policy] == [(3, 6)]


def test_many_rewinds_and_commits_are_judged_quickly():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    for p in range(4):
        for o in range(3000):
            ledger.produced("t", p, o)
    for o in range(3000):
        for p in range(4):
            ledger.processed("c1", "t", p, o)
            commit(cluster, o + 1, p)
            if o % 100 == 99:  # back 10, every 100 records
                for again in range(o - 9, o + 1):
                    ledger.processed("c1", "t", p, again)
    began = time.perf_counter()
    v = ledger.verdict()
    assert time.perf_counter() - began < 5
    assert len(v.duplicates_beyond_policy) == 4 * 30 * 10  # no group event at all: even the first runs back
    assert {b.rule for b in v.duplicates_beyond_policy} == {"rewind"}

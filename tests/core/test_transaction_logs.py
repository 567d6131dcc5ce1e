"""What transactions leave in partitions and groups: the partition log's last stable offset and
aborted-transaction index, offsets committed in transactions, and the KIP-447 checks of
TxnOffsetCommit (``OffsetMetadataManager``; §n = a section of the research notes)."""

from __future__ import annotations

from fakebroker.core.groups.placement import OFFSETS_TOPIC
from fakebroker.core.groups.requests import CommitRequest, ConsumerHeartbeatRequest
from fakebroker.protocol.error_codes import ErrorCode as E

from ..apis.support import batch
from .txn_cluster import T0, T1, Cluster

# -- the last stable offset and the aborted-transaction index (§7) -----------------------------------


def test_an_open_transaction_holds_the_last_stable_offset_at_its_first_offset():
    c = Cluster()
    _, idem_pid, _ = c.state.init_producer_id(None, now_ms=0)
    log = c.log()
    data = batch(b"a", producer_id=idem_pid, producer_epoch=0, base_sequence=0)
    c.state.append(c.state.partition(*T0), data, produce_version=9, transactional_id=None, now_ms=0)
    assert log.last_stable_offset == log.log_end_offset == 1
    pid, epoch = c.ongoing()  # offset 1
    _, pid2, epoch2 = c.init("tx2")
    assert c.add(pid2, epoch2, tid="tx2") == E.NONE
    assert c.produce(pid2, epoch2, T0, b"x", b"y", tid="tx2").error == E.NONE  # offsets 2-3
    assert c.produce(pid, epoch, T0, b"z").error == E.NONE  # offset 4
    assert log.open_txns == {pid: 1, pid2: 2}
    assert (log.last_stable_offset, log.high_watermark) == (1, 5)
    # the second transaction commits first: the LSO still waits for the first
    assert c.end(pid2, epoch2, True, tid="tx2").error == E.NONE  # marker at 5
    assert log.last_stable_offset == 1
    assert c.end(pid, epoch, False).error == E.NONE  # marker at 6
    assert log.last_stable_offset == log.log_end_offset == 7
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_txns] == [(pid, 1, 6)]


def test_aborted_between_lists_the_aborted_transactions_a_read_overlaps():
    c = Cluster()
    log = c.log()
    for n, tid in enumerate(["a", "b", "c"]):
        pid, epoch = c.ongoing(tid)  # data at 2n, marker at 2n + 1
        assert c.end(pid, epoch, n == 1, tid=tid).error == E.NONE
    pid_a, pid_c = c.txn("a").producer_id, c.txn("c").producer_id
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_txns] == [
        (pid_a, 0, 1),
        (pid_c, 4, 5),
    ]
    assert [a.first_offset for a in log.aborted_between(0, 6)] == [0, 4]
    assert [a.first_offset for a in log.aborted_between(2, 4)] == []  # c starts at 4: not below the end
    assert [a.first_offset for a in log.aborted_between(1, 3)] == [0]  # a's marker at 1 is in the read
    assert [a.first_offset for a in log.aborted_between(2, 5)] == [4]


def test_committed_transactions_leave_no_aborted_entry_and_markers_without_data_none_either():
    c = Cluster()
    pid, epoch = c.ongoing()
    assert c.end(pid, epoch, True).error == E.NONE
    assert c.log().aborted_txns == []
    # a transaction that added t-1 but wrote nothing there: its marker aborts nothing in t-1
    _, pid2, epoch2 = c.init("tx2")
    assert c.add(pid2, epoch2, T1, tid="tx2") == E.NONE
    assert c.end(pid2, epoch2, False, tid="tx2").error == E.NONE
    assert c.log(T1).aborted_txns == []
    assert c.markers(T1) == [("ABORT", pid2, epoch2)]


def test_delete_records_and_retention_forget_aborted_transactions_below_the_start():
    c = Cluster()
    pids = []
    for tid in ["a", "b"]:
        pid, epoch = c.ongoing(tid, now=0)  # a: 0 + marker 1; b: 2 + marker 3
        assert c.end(pid, epoch, False, tid=tid, now=0).error == E.NONE
        pids.append(pid)
    log = c.log()
    c.state.delete_records(c.state.partition(*T0), 1)
    assert [a.producer_id for a in log.aborted_txns] == pids  # a's marker (1) is still in the log
    c.state.delete_records(c.state.partition(*T0), 2)
    assert [a.producer_id for a in log.aborted_txns] == pids[1:]
    c.state.topics["t"].config.overrides["retention.ms"] = "10"
    c.state.apply_retention(10**9)
    assert log.aborted_txns == []


def test_the_last_stable_offset_never_falls_below_the_log_start_offset():
    # UnifiedLog.updateFirstUnstableOffset: max(first unstable offset, log start offset)
    c = Cluster()
    pid, epoch = c.ongoing()  # offset 0, open
    assert c.produce(pid, epoch, T0, b"more").error == E.NONE  # offset 1
    log = c.log()
    assert log.last_stable_offset == 0
    c.state.delete_records(c.state.partition(*T0), 1)
    assert (log.log_start_offset, log.last_stable_offset) == (1, 1)
    assert c.end(pid, epoch, True).error == E.NONE
    assert log.last_stable_offset == log.high_watermark == 3


# -- offsets committed in a transaction (§5) -----------------------------------------------------------


def offsets_cluster():
    c = Cluster()
    c.state.offsets_topic()
    _, pid, epoch = c.init()
    group_tp = (OFFSETS_TOPIC, c.state.groups.partition_of("g"))
    assert c.add(pid, epoch, group_tp) == E.NONE
    return c, pid, epoch


def txn_commit(c: Cluster, pid: int, offset: int, *, group="g", tp=T0, now=0):
    assert validate(c.state, group, now=now) == E.NONE
    return c.state.groups.offsets.commit_in_txn(now, group, pid, *tp, offset, -1, "m")


def fetched(c: Cluster, group="g", tp=T0) -> int:
    [(_, _, committed)] = c.state.groups.offsets.fetch(group, [tp])
    return -1 if committed is None else committed.offset


def test_txn_offsets_are_visible_only_when_the_commit_marker_arrives():
    c, pid, epoch = offsets_cluster()
    assert txn_commit(c, pid, 42) == E.NONE
    assert fetched(c) == -1
    assert c.state.groups.offsets.has_pending("g", *T0)
    assert not c.state.groups.offsets.has_pending("g", *T1)
    assert c.end(pid, epoch, True).error == E.NONE
    assert fetched(c) == 42
    assert not c.state.groups.offsets.has_pending("g", *T0)


def test_txn_offsets_are_dropped_at_abort():
    c, pid, epoch = offsets_cluster()
    c.state.groups.offsets.commit(0, "g", *T0, 7, -1, "")
    assert txn_commit(c, pid, 42) == E.NONE
    assert c.end(pid, epoch, False).error == E.NONE
    assert fetched(c) == 7
    assert not c.state.groups.offsets.has_pending("g", *T0)


def test_a_later_plain_commit_wins_over_an_older_pending_txn_offset():
    c, pid, epoch = offsets_cluster()
    assert txn_commit(c, pid, 42) == E.NONE
    c.state.groups.offsets.commit(1, "g", *T0, 50, -1, "")
    assert c.end(pid, epoch, True, now=2).error == E.NONE
    assert fetched(c) == 50


def test_a_txn_offset_newer_than_a_plain_commit_wins():
    c, pid, epoch = offsets_cluster()
    c.state.groups.offsets.commit(0, "g", *T0, 50, -1, "")
    assert txn_commit(c, pid, 42, now=1) == E.NONE
    assert c.end(pid, epoch, True, now=2).error == E.NONE
    assert fetched(c) == 42


def test_a_timed_out_transaction_drops_its_pending_offsets():
    c, pid, epoch = offsets_cluster()
    assert txn_commit(c, pid, 42) == E.NONE
    assert c.state.abort_timed_out(60_001) == 1
    assert fetched(c) == -1
    assert not c.state.groups.offsets.has_pending("g", *T0)


# -- validate_txn_commit (§5 step 5) ------------------------------------------------------------------


def validate(state, group="g", member="", generation=-1, instance=None, precise=False, now=0):
    coordinator = state.groups.coordinator_of(group)
    commit = CommitRequest(group, member, instance, generation, 5, transactional=True, precise_errors=precise)
    return state.groups.txn_commit_error(now, coordinator, commit)


def test_txn_commit_to_a_missing_group():
    c = Cluster()
    assert validate(c.state, "new", generation=-1) == E.NONE
    assert "new" in c.state.groups.classic.groups  # a simple classic group
    assert validate(c.state, "other", generation=0) == E.ILLEGAL_GENERATION
    assert "other" not in c.state.groups.classic.groups


def classic_stable(state, group="g") -> tuple[str, int]:
    """A one-member classic group, through the handlers: (member id, generation)."""
    from ..apis.test_group_apis import stable

    state.create_topic("orders", 1, 1)
    member = stable(state, group)
    return member, state.groups.classic.groups[group].generation_id


def test_txn_commit_checks_the_classic_member_and_generation():
    from ..apis.support import cluster

    state = cluster(1)
    member, generation = classic_stable(state)
    assert validate(state, member=member, generation=generation) == E.NONE
    assert validate(state, member=member, generation=generation + 1) == E.ILLEGAL_GENERATION
    assert validate(state, member="nobody", generation=generation) == E.UNKNOWN_MEMBER_ID
    # no membership given at all: accepted (transactional commits need none), no REBALANCE_IN_PROGRESS
    assert validate(state) == E.NONE


def test_txn_commit_with_no_generation_to_an_empty_classic_group_is_accepted_whatever_the_member():
    c = Cluster()
    assert validate(c.state, generation=-1) == E.NONE  # creates an Empty simple group
    assert validate(c.state, member="some-member", generation=-1) == E.NONE


def consumer_member(state, group="cg") -> tuple[str, int]:
    state.create_topic("orders", 2, 1)
    result = state.groups.consumer.heartbeat(
        0,
        ConsumerHeartbeatRequest(
            group_id=group,
            member_id="m1",
            member_epoch=0,
            instance_id=None,
            rack_id=None,
            rebalance_timeout_ms=30_000,
            subscribed_names=["orders"],
            subscribed_regex=None,
            server_assignor=None,
            owned={},
            client_id="m1",
            client_host="/127.0.0.1",
            version=1,
        ),
    )
    assert result.error == E.NONE
    return result.member_id, result.member_epoch


def test_txn_commit_to_a_consumer_group_answers_stale_member_epoch_only_from_v6():
    c = Cluster()
    member, epoch = consumer_member(c.state)
    assert validate(c.state, "cg", member=member, generation=epoch) == E.NONE
    assert validate(c.state, "cg", member=member, generation=epoch + 1) == E.ILLEGAL_GENERATION  # v5 and older
    newer = validate(c.state, "cg", member=member, generation=epoch + 1, precise=True)
    assert newer == E.STALE_MEMBER_EPOCH  # v6 (KIP-1319)
    # an older epoch passes the group check; each partition is then judged by when it was assigned
    assert validate(c.state, "cg", member=member, generation=epoch - 1) == E.NONE
    assert (
        c.state.groups.partition_commit_error(CommitRequest("cg", member, None, epoch - 1, 6), "orders", 0)
        == E.STALE_MEMBER_EPOCH
    )
    assert validate(c.state, "cg", member="nobody", generation=epoch) == E.UNKNOWN_MEMBER_ID
    assert validate(c.state, "cg", member="", generation=-1) == E.NONE

"""Probes of transactions: InitProducerId, AddPartitionsToTxn, EndTxn, TxnOffsetCommit,
read_committed Fetch and ListOffsets, DescribeTransactions, ListTransactions, DescribeProducers.

Kafka ends a transaction after answering EndTxn (the markers follow a few milliseconds later,
and CONCURRENT_TRANSACTIONS is its answer meanwhile); fakebroker ends it inside EndTxn. So every
probe waits for the settled state (``Target.settle``) after an EndTxn before its next step, and
compares settled answers only.
"""

from __future__ import annotations

import time
import uuid

from .probing import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    DESCRIBE_PRODUCERS,
    LIST_TRANSACTIONS,
    TXN_OFFSET_COMMIT,
    WRITE_TXN_MARKERS,
    Target,
    offset_fetch,
    probe,
)


@probe
def probe_init_producer_id(s: Target) -> None:
    """Timeouts out of range, first call and bumps, stale and future epochs, idempotent ids, old versions."""
    tid = s.name("t")
    s.find_coordinator(tid)
    invalid = {"error_code": "INVALID_TRANSACTION_TIMEOUT"}
    s.init_pid(tid, 0, 5, label="InitProducerId v5 timeout 0", expect=invalid)
    s.init_pid(tid, 900001, 5, label="InitProducerId v5 timeout above the maximum", expect=invalid)
    s.init_pid(tid, -5, 4, label="InitProducerId v4 timeout -5", expect=invalid)
    r = s.init_pid(tid, 60000, 5, label="InitProducerId v5 first", expect={"error_code": "NONE", "producer_epoch": 0})
    pid, ep = r["producer_id"], r["producer_epoch"]
    s.init_pid(tid, 60000, 5, label="InitProducerId v5 again", expect={"producer_id": "P0", "producer_epoch": 1})
    s.init_pid(
        tid,
        60000,
        3,
        pid=pid,
        epoch=ep + 1,
        label="InitProducerId v3 current (pid, epoch)",
        expect={"producer_epoch": 2},
    )
    s.init_pid(
        tid,
        60000,
        3,
        pid=pid,
        epoch=ep,
        label="InitProducerId v3 stale epoch",
        expect={"error_code": "INVALID_PRODUCER_EPOCH"},
    )
    fenced = {"error_code": "PRODUCER_FENCED"}
    s.init_pid(tid, 60000, 4, pid=pid, epoch=ep, label="InitProducerId v4 stale epoch", expect=fenced)
    s.init_pid(tid, 60000, 5, pid=pid, epoch=ep, label="InitProducerId v5 stale epoch", expect=fenced)
    bad = {"error_code": "INVALID_REQUEST"}
    s.init_pid(tid, 60000, 3, pid=-1, epoch=3, label="InitProducerId v3 pid -1 with an epoch", expect=bad)
    s.init_pid(tid, 60000, 3, pid=pid, epoch=-1, label="InitProducerId v3 pid without an epoch", expect=bad)
    s.init_pid(tid, 60000, 4, pid=pid + 777, epoch=ep + 2, label="InitProducerId v4 wrong pid", expect=fenced)
    s.init_pid(tid, 60000, 4, pid=pid, epoch=ep + 9, label="InitProducerId v4 future epoch", expect=fenced)
    s.init_pid(
        None, 0, 5, label="InitProducerId v5 idempotent, timeout 0", expect={"error_code": "NONE", "producer_epoch": 0}
    )
    s.init_pid(None, -1, 5, label="InitProducerId v5 idempotent, timeout -1", expect={"error_code": "NONE"})
    s.init_pid(
        tid, 60000, 2, label="InitProducerId v2 (librdkafka)", expect={"error_code": "NONE", "producer_id": "P0"}
    )
    # while a transaction is ongoing: the first call aborts it (CONCURRENT_TRANSACTIONS), a retry bumps
    tid2, topic = s.name("ongoing"), s.name("t")
    s.create_topic(topic)
    s.find_coordinator(tid2)
    pid2, ep2 = s.init_ok(tid2)
    s.add_partitions(tid2, pid2, ep2, {topic: [0]}, 3, label="AddPartitionsToTxn v3", expect={})
    s.produce_ok(topic, 0, pid2, ep2, 0, ["x"], 11, tid2)
    s.init_pid(
        tid2, 60000, 5, label="InitProducerId v5 while Ongoing", expect={"error_code": "CONCURRENT_TRANSACTIONS"}
    )
    s.wait_state(tid2, {"CompleteAbort"})
    s.init_pid(
        tid2, 60000, 5, label="InitProducerId v5 after the abort", expect={"error_code": "NONE", "producer_epoch": 2}
    )
    s.describe_txns([tid2], label="DescribeTransactions after")
    s.fetch(topic, 0, 0, 0, ver=12, label="Fetch v12 read_uncommitted: the abort marker")


@probe
def probe_init_producer_id_timeout(s: Target) -> None:
    """A transaction the coordinator aborts on its timeout, for each EndTxn version and result:
    EndTxn, a late Produce with the old epoch, InitProducerId again (Kafka 4.4.0 has no KAFKA-20785)."""
    topic = s.name("t")
    s.create_topic(topic, 4)
    cases = [("v4commit", 4, True), ("v4abort", 4, False), ("v5commit", 5, True), ("v5abort", 5, False)]
    started = {}
    for part, (case, ver, commit) in enumerate(cases):
        tid = s.name(case)
        s.find_coordinator(tid)
        pid, ep = s.init_ok(tid, timeout=1000)
        if ver == 4:
            s.add_partitions(tid, pid, ep, {topic: [part]}, 3)
            s.produce_ok(topic, part, pid, ep, 0, [case], 11, tid)
        else:
            s.produce_ok(topic, part, pid, ep, 0, [case], 12, tid)
        started[case] = (tid, pid, ep)
    for case, *_ in cases:
        s.wait_state(started[case][0], {"CompleteAbort"})
    for part, (case, ver, commit) in enumerate(cases):
        tid, pid, ep = started[case]
        s.describe_txns([tid], label=f"{case}: DescribeTransactions after the timeout")
        what = "commit" if commit else "abort"
        s.end_txn(tid, pid, ep, commit, ver, label=f"{case}: EndTxn v{ver} {what} after the timeout")
        s.end_txn(tid, pid, ep, commit, ver, label=f"{case}: EndTxn v{ver} {what} again")
        s.produce(
            topic, part, pid, ep, 1, [case + "-late"], 12 if ver == 5 else 11, tid, label=f"{case}: Produce old epoch"
        )
        s.init_pid(tid, 1000, 5, label=f"{case}: InitProducerId after the timeout", expect={"error_code": "NONE"})
        s.fetch(topic, part, 0, 0, ver=12, label=f"{case}: Fetch v12 read_uncommitted")


@probe
def probe_add_partitions_to_txn(s: Target) -> None:
    """AddPartitionsToTxn v0-v5: unknown topics and partitions, internal topics, epochs, ids,
    and the batched v4/v5 form (accepted from a client when there is no authorizer)."""
    tid, topic = s.name("t"), s.name("t")
    s.create_topic(topic, 2)
    s.find_coordinator(tid)
    s.find_coordinator(s.name("g"), 0)
    pid, ep = s.init_ok(tid)
    s.add_partitions(tid, pid, ep, {s.name("nosuch"): [0], topic: [0]}, 3, label="v3 unknown topic and a known one")
    s.add_partitions(tid, pid, ep, {topic: [0, 7]}, 3, label="v3 a missing partition")
    s.add_partitions(tid, pid, ep, {"__consumer_offsets": [0]}, 3, label="v3 __consumer_offsets")
    s.add_partitions(tid, pid, ep, {"__transaction_state": [0]}, 3, label="v3 __transaction_state")
    s.add_partitions(tid, pid, ep + 1, {topic: [0]}, 3, label="v3 epoch+1")
    s.add_partitions(tid, pid, 32767, {topic: [0]}, 3, label="v3 another epoch")
    s.add_partitions(tid, pid + 555, ep, {topic: [0]}, 3, label="v3 wrong pid")
    s.add_partitions(s.name("unknown"), pid, ep, {topic: [0]}, 3, label="v3 unknown transactional id")
    s.add_partitions(tid, pid, ep, {topic: [0]}, 3, label="v3 added")
    s.add_partitions(tid, pid, ep, {topic: [0]}, 3, label="v3 added again")
    s.add_partitions(tid, pid, ep, {topic: [1]}, 0, label="v0 another partition")
    s.add_partitions(tid, pid, ep, {topic: [0]}, 2, label="v2 a partition already added")
    for ver in (4, 5):
        for verify in (False, True):
            body = {
                "transactions": [
                    {
                        "transactional_id": tid,
                        "producer_id": pid,
                        "producer_epoch": ep,
                        "verify_only": verify,
                        "topics": [{"name": topic, "partitions": [0, 1]}],
                    },
                    {
                        "transactional_id": s.name("unknown"),
                        "producer_id": pid,
                        "producer_epoch": ep,
                        "verify_only": verify,
                        "topics": [{"name": topic, "partitions": [0]}],
                    },
                ]
            }
            s.req(f"v{ver} batched, verify_only={verify}", ADD_PARTITIONS_TO_TXN, ver, body)
    tid3 = s.name("t3")
    s.find_coordinator(tid3)
    pid3, ep3 = s.init_ok(tid3)
    for ver in (4, 5):
        body = {
            "transactions": [
                {
                    "transactional_id": tid3,
                    "producer_id": pid3,
                    "producer_epoch": ep3,
                    "verify_only": True,
                    "topics": [{"name": topic, "partitions": [0]}],
                }
            ]
        }
        s.req(f"v{ver} verify_only for a partition not in the transaction", ADD_PARTITIONS_TO_TXN, ver, body)
    body["transactions"][0].update(verify_only=False, topics=[{"name": topic, "partitions": [1]}])
    s.req("v5 verify_only=false adds", ADD_PARTITIONS_TO_TXN, 5, body)
    s.describe_txns([tid, tid3], label="DescribeTransactions")
    s.add_partitions(tid, pid, ep, {}, 3, label="v3 no topics")
    s.end_ok(tid, pid, ep, False, 4)
    s.end_ok(tid3, pid3, ep3, False, 4)


@probe
def probe_end_txn(s: Target) -> None:
    """EndTxn v4/v5 in every settled state: Empty, after a TV1 and a TV2 commit, after an abort,
    with wrong epochs, pids and ids, and across versions."""
    topic = s.name("t")
    s.create_topic(topic)

    def T(i: int) -> str:
        return s.name(f"e{i}")

    for i in range(10):
        s.find_coordinator(T(i))
    for i, (ver, commit) in enumerate([(4, True), (4, False), (5, True), (5, False)]):
        pid, ep = s.init_ok(T(i))
        what = "commit" if commit else "abort"
        s.end_txn(T(i), pid, ep, commit, ver, label=f"Empty: EndTxn v{ver} {what}")
        s.settle(T(i))
        s.describe_txns([T(i)], label=f"Empty: DescribeTransactions after EndTxn v{ver} {what}")
    # TV1 commit
    pid, ep = s.init_ok(T(4))
    s.add_partitions(T(4), pid, ep, {topic: [0]}, 3)
    s.produce_ok(topic, 0, pid, ep, 0, ["a"], 11, T(4))
    s.end_txn(T(4), pid, ep, True, 4, label="TV1: EndTxn v4 commit", expect={"error_code": "NONE"})
    s.wait_state(T(4), {"CompleteCommit"})
    s.end_txn(T(4), pid, ep, True, 4, label="TV1: EndTxn v4 commit retry", expect={"error_code": "NONE"})
    s.end_txn(T(4), pid, ep, False, 4, label="TV1: EndTxn v4 abort after the commit")
    s.end_txn(T(4), pid, ep + 1, True, 4, label="TV1: EndTxn v4 commit epoch+1")
    s.end_txn(T(4), pid, ep, True, 5, label="TV1: EndTxn v5 commit retry")
    s.describe_txns([T(4)], label="TV1: DescribeTransactions")
    # TV2 commit
    pid, ep = s.init_ok(T(5))
    s.produce_ok(topic, 0, pid, ep, 0, ["b"], 12, T(5))
    s.end_txn(T(5), pid, ep, True, 5, label="TV2: EndTxn v5 commit", expect={"error_code": "NONE", "producer_epoch": 1})
    s.wait_state(T(5), {"CompleteCommit"})
    s.end_txn(T(5), pid, ep, True, 5, label="TV2: EndTxn v5 commit retry, old epoch")
    s.end_txn(T(5), pid, ep, False, 5, label="TV2: EndTxn v5 abort, old epoch")
    s.end_txn(T(5), pid, ep + 1, True, 5, label="TV2: EndTxn v5 commit, new epoch")
    s.end_txn(T(5), pid, ep + 1, False, 5, label="TV2: EndTxn v5 abort, new epoch")
    s.settle(T(5))
    s.end_txn(T(5), pid, ep, True, 4, label="TV2: EndTxn v4 commit, old epoch")
    s.describe_txns([T(5)], label="TV2: DescribeTransactions")
    # wrong epochs, pids and ids while Ongoing; then fenced by a new InitProducerId
    pid, ep = s.init_ok(T(6))
    s.produce_ok(topic, 0, pid, ep, 0, ["c"], 12, T(6))
    s.end_txn(T(6), pid, ep + 3, True, 5, label="Ongoing: EndTxn v5 epoch+3", expect={"error_code": "PRODUCER_FENCED"})
    s.end_txn(T(6), pid, ep + 3, True, 4, label="Ongoing: EndTxn v4 epoch+3", expect={"error_code": "PRODUCER_FENCED"})
    s.end_txn(T(6), pid + 99, ep, True, 5, label="Ongoing: EndTxn v5 wrong pid")
    s.end_txn(s.name("nosuch"), pid, ep, True, 5, label="EndTxn v5 unknown transactional id")
    pid_b, ep_b = s.init_ok(T(6))
    s.end_txn(T(6), pid, ep, True, 5, label="fenced: EndTxn v5 commit")
    s.end_txn(T(6), pid, ep, True, 4, label="fenced: EndTxn v4 commit")
    s.end_txn(T(6), pid, ep, False, 3, label="fenced: EndTxn v3 abort")
    s.end_txn(T(6), pid_b, ep_b, False, 5, label="re-initialised: EndTxn v5 abort")
    s.settle(T(6))
    # mixed versions
    pid, ep = s.init_ok(T(7))
    s.produce_ok(topic, 0, pid, ep, 0, ["d"], 12, T(7))
    s.end_txn(T(7), pid, ep, True, 4, label="TV2-begun: EndTxn v4 commit")
    s.settle(T(7))
    s.describe_txns([T(7)], label="TV2-begun: DescribeTransactions")
    pid, ep = s.init_ok(T(8))
    s.add_partitions(T(8), pid, ep, {topic: [0]}, 3)
    s.produce_ok(topic, 0, pid, ep, 0, ["e"], 11, T(8))
    s.end_txn(T(8), pid, ep, True, 5, label="TV1-begun: EndTxn v5 commit")
    s.settle(T(8))
    s.describe_txns([T(8)], label="TV1-begun: DescribeTransactions")
    # TV2 abort
    pid, ep = s.init_ok(T(9))
    s.produce_ok(topic, 0, pid, ep, 0, ["f"], 12, T(9))
    s.end_txn(T(9), pid, ep, False, 5, label="TV2: EndTxn v5 abort Ongoing", expect={"error_code": "NONE"})
    s.wait_state(T(9), {"CompleteAbort"})
    s.end_txn(T(9), pid, ep, False, 5, label="TV2: EndTxn v5 abort retry, old epoch")
    s.end_txn(T(9), pid, ep, True, 5, label="TV2: EndTxn v5 commit after the abort, old epoch")
    s.fetch(topic, 0, 0, 0, ver=12, label="Fetch v12 read_uncommitted: the whole log with its markers")


def txn_offset_commit(
    s: Target, label: str, ver: int, tid: str, group: str, pid: int, ep: int, topic: str, offset: int, **kw
):
    gen, member, topic_id = kw.pop("gen", -1), kw.pop("member", ""), kw.pop("topic_id", None)
    body = {
        "transactional_id": tid,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": ep,
        "generation_id_or_member_epoch": gen,
        "member_id": member,
        "group_instance_id": None,
        "topics": [
            {
                **({"topic_id": topic_id} if ver >= 6 else {"name": topic}),
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "m",
                    }
                ],
            }
        ],
    }
    return s.req(label, TXN_OFFSET_COMMIT, ver, body, **kw)


@probe
def probe_txn_offset_commit(s: Target) -> None:
    """TxnOffsetCommit v3/v4/v5 without AddOffsetsToTxn (v5 adds the offsets partition itself),
    after AddOffsetsToTxn on a missing group, OffsetFetch while pending, after commit and abort."""
    topic = s.name("t")
    s.create_topic(topic)

    def T(i: int) -> str:
        return s.name(f"f{i}")

    def G(i: int) -> str:
        return s.name(f"fg{i}")

    for i in range(8):
        s.find_coordinator(T(i))
        s.find_coordinator(G(i), 0)
    expected = {3: "INVALID_TXN_STATE", 4: "TRANSACTION_ABORTABLE", 5: "NONE"}
    for i, ver in enumerate((3, 4, 5)):
        pid, ep = s.init_ok(T(i))
        s.add_partitions(T(i), pid, ep, {topic: [0]}, 3)
        s.produce_ok(topic, 0, pid, ep, 0, ["x"], 11, T(i))
        txn_offset_commit(
            s,
            f"TxnOffsetCommit v{ver} without AddOffsetsToTxn (Ongoing)",
            ver,
            T(i),
            G(i),
            pid,
            ep,
            topic,
            5,
            expect={"topics.0.partitions.0.error_code": expected[ver]},
        )
        s.describe_txns([T(i)], label=f"DescribeTransactions after TxnOffsetCommit v{ver}")
        s.end_ok(T(i), pid, ep, False, 4)
    pid, ep = s.init_ok(T(3))
    txn_offset_commit(s, "TxnOffsetCommit v5 without AddOffsetsToTxn (Empty)", 5, T(3), G(3), pid, ep, topic, 5)
    s.describe_txns([T(3)], label="DescribeTransactions after TxnOffsetCommit v5 from Empty")
    txn_offset_commit(s, "TxnOffsetCommit v3 after the v5", 3, T(3), G(3), pid, ep, topic, 5)
    s.end_ok(T(3), pid, ep, False, 5)
    # AddOffsetsToTxn, then TxnOffsetCommit to a group nobody joined
    pid, ep = s.init_ok(T(4))
    add = {"transactional_id": T(4), "producer_id": pid, "producer_epoch": ep, "group_id": G(4)}
    s.req("AddOffsetsToTxn v3", ADD_OFFSETS_TO_TXN, 3, add, expect={"error_code": "NONE"})
    s.req("AddOffsetsToTxn v4 again", ADD_OFFSETS_TO_TXN, 4, add, expect={"error_code": "NONE"})
    s.describe_txns([T(4)], label="DescribeTransactions after AddOffsetsToTxn")
    args = (T(4), G(4), pid, ep, topic, 7)
    txn_offset_commit(s, "TxnOffsetCommit v3 missing group, generation 5", 3, *args, gen=5, member="m1")
    txn_offset_commit(s, "TxnOffsetCommit v3 missing group, generation -1", 3, *args)
    txn_offset_commit(s, "TxnOffsetCommit v3 epoch+1", 3, T(4), G(4), pid, ep + 1, topic, 7)
    txn_offset_commit(s, "TxnOffsetCommit v3 wrong pid", 3, T(4), G(4), pid + 1, ep, topic, 7)
    txn_offset_commit(s, "TxnOffsetCommit v3 unknown topic", 3, T(4), G(4), pid, ep, s.name("nosuch"), 7)
    for ver, stable in ((8, True), (9, True), (8, False), (7, True), (6, True)):
        offset_fetch(s, f"OffsetFetch v{ver} require_stable={stable} while pending", ver, G(4), topic, stable=stable)
    s.end_ok(T(4), pid, ep, True, 4)
    for _ in range(100):  # Kafka writes the group's marker after the transaction completes
        r = offset_fetch(s, None, 8, G(4), topic, stable=True)
        if r["groups"][0]["topics"][0]["partitions"][0]["error_code"] == 0:
            break
        time.sleep(0.05)
    offset_fetch(s, "OffsetFetch v8 require_stable after the commit", 8, G(4), topic, stable=True)
    offset_fetch(s, "OffsetFetch v9 after the commit", 9, G(4), topic, stable=False)
    # a group other than the one added
    pid, ep = s.init_ok(T(5))
    add = {"transactional_id": T(5), "producer_id": pid, "producer_epoch": ep, "group_id": G(5)}
    s.req("AddOffsetsToTxn v4", ADD_OFFSETS_TO_TXN, 4, add)
    for ver in (3, 4, 5):
        txn_offset_commit(s, f"TxnOffsetCommit v{ver} to a group not added", ver, T(5), G(6), pid, ep, topic, 9)
    s.req("AddOffsetsToTxn v4 wrong epoch", ADD_OFFSETS_TO_TXN, 4, {**add, "producer_epoch": ep + 1})
    s.req(
        "AddOffsetsToTxn v4 unknown transactional id",
        ADD_OFFSETS_TO_TXN,
        4,
        {**add, "transactional_id": s.name("nosuch")},
    )
    s.end_ok(T(5), pid, ep, False, 5)
    # abort: the offsets stay unset
    pid, ep = s.init_ok(T(7))
    txn_offset_commit(s, "TxnOffsetCommit v5 from Empty", 5, T(7), G(7), pid, ep, topic, 11)
    s.end_ok(T(7), pid, ep, False, 5)
    for _ in range(100):
        r = offset_fetch(s, None, 8, G(7), topic, stable=True)
        if r["groups"][0]["topics"][0]["partitions"][0]["error_code"] == 0:
            break
        time.sleep(0.05)
    offset_fetch(s, "OffsetFetch v8 after the abort", 8, G(7), topic, stable=True)


@probe
def probe_read_committed(s: Target) -> None:
    """A log with a committed, an aborted and an open transaction between plain records: Fetch
    and ListOffsets with both isolation levels (LSO, aborted_transactions), DescribeProducers."""
    topic = s.name("t")
    s.create_topic(topic)
    tA, tB, tC = s.name("A"), s.name("B"), s.name("C")
    for t in (tA, tB, tC):
        s.find_coordinator(t)
    a, b, c = s.init_ok(tA), s.init_ok(tB), s.init_ok(tC)
    s.produce_ok(topic, 0, *a, 0, ["A1", "A2"], 12, tA)
    s.produce_ok(topic, 0, *b, 0, ["B1"], 12, tB)
    s.end_ok(tA, *a, True, 5)
    s.end_ok(tB, *b, False, 5)
    s.produce_ok(topic, 0, -1, -1, -1, ["plain"], 12, None, transactional=False)
    s.produce_ok(topic, 0, *c, 0, ["C1"], 12, tC)
    s.produce_ok(topic, 0, -1, -1, -1, ["plain2"], 12, None, transactional=False)
    for ver in (12, 16, 17):
        for iso in (1, 0):
            expect = {"responses.0.partitions.0.last_stable_offset": 6, "responses.0.partitions.0.high_watermark": 8}
            s.fetch(topic, 0, 0, iso, ver=ver, label=f"Fetch v{ver} isolation={iso} from 0", expect=expect)
    s.fetch(topic, 0, 3, 1, ver=12, label="Fetch v12 read_committed from inside the aborted transaction")
    s.list_offsets(
        topic, 0, -1, 1, 7, label="ListOffsets v7 latest read_committed", expect={"topics.0.partitions.0.offset": 6}
    )
    s.list_offsets(
        topic, 0, -1, 0, 7, label="ListOffsets v7 latest read_uncommitted", expect={"topics.0.partitions.0.offset": 8}
    )
    s.list_offsets(topic, 0, -2, 1, 7, label="ListOffsets v7 earliest read_committed")
    s.list_offsets(topic, 0, -1, 1, 2, label="ListOffsets v2 latest read_committed")
    s.list_offsets(topic, 0, -1, 1, 9, label="ListOffsets v9 latest read_committed")
    s.fetch(topic, 0, 6, 1, ver=12, label="Fetch v12 read_committed from the LSO")
    s.fetch(topic, 0, 7, 1, ver=12, label="Fetch v12 read_committed from LSO+1, below the high watermark")
    s.fetch(topic, 0, 99, 1, ver=12, label="Fetch v12 read_committed out of range")
    s.req("DescribeProducers", DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
    s.end_ok(tC, *c, False, 5)
    s.fetch(topic, 0, 0, 1, ver=16, label="Fetch v16 read_committed after C aborted")
    s.list_offsets(topic, 0, -1, 1, 7, label="ListOffsets v7 latest read_committed after C aborted")
    s.req(
        "DescribeProducers after C aborted, with a missing partition",
        DESCRIBE_PRODUCERS,
        0,
        {"topics": [{"name": topic, "partition_indexes": [0, 5]}]},
    )
    s.req(
        "DescribeProducers unknown topic",
        DESCRIBE_PRODUCERS,
        0,
        {"topics": [{"name": s.name("nosuch"), "partition_indexes": [0]}]},
    )


@probe
def probe_transaction_admin(s: Target) -> None:
    """DescribeTransactions and ListTransactions v0-v2 (pattern, state, pid and duration filters)."""
    topic = s.name("t")
    s.create_topic(topic)
    tO, tE, tC = s.name("iOpen"), s.name("iEmpty"), s.name("iDone")
    for t in (tO, tE, tC):
        s.find_coordinator(t)
    o = s.init_ok(tO)
    s.produce_ok(topic, 0, *o, 0, ["o"], 12, tO)
    s.init_ok(tE, timeout=30000)
    c = s.init_ok(tC)
    s.produce_ok(topic, 0, *c, 0, ["c"], 12, tC)
    s.end_ok(tC, *c, True, 5)
    s.describe_txns([tO, tE, tC], label="DescribeTransactions open, empty, done")
    s.describe_txns([], label="DescribeTransactions no ids")
    mine = s.prefix + "-i"

    def listing(label: str, ver: int, **body) -> None:
        full = {
            "state_filters": body.get("state_filters", []),
            "producer_id_filters": body.get("producer_id_filters", []),
            "duration_filter": body.get("duration_filter", -1),
            "transactional_id_pattern": body.get("pattern", f"{mine}.*") if ver >= 2 else None,
        }
        r = s.req(None, LIST_TRANSACTIONS, ver, full)
        if r.get("transaction_states") is not None:  # only this probe's ids (the broker serves the whole session)
            r["transaction_states"] = sorted(
                (x for x in r["transaction_states"] if x["transactional_id"].startswith(mine)),
                key=lambda x: x["transactional_id"],
            )
        s.record(label, s.norm(r), LIST_TRANSACTIONS, ver)

    for ver in (0, 1, 2):
        listing(f"ListTransactions v{ver}", ver)
    listing("ListTransactions v1 duration_filter=0", 1, duration_filter=0)
    listing("ListTransactions v1 duration_filter=3600000", 1, duration_filter=3600000)
    listing("ListTransactions v2 state Ongoing", 2, state_filters=["Ongoing"])
    listing("ListTransactions v2 an unknown state", 2, state_filters=["Bogus"])
    listing("ListTransactions v2 the open producer id", 2, producer_id_filters=[o[0]])
    listing("ListTransactions v2 pattern '['", 2, pattern="[")
    listing("ListTransactions v2 pattern ''", 2, pattern="")
    s.req("DescribeProducers", DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
    s.end_ok(tO, *o, False, 5)
    s.describe_txns([tO], label="DescribeTransactions after the abort")
    s.describe_txns([s.name("nosuch")], label="DescribeTransactions unknown id")


@probe
def probe_txn_offset_commit_v6(s: Target) -> None:
    """TxnOffsetCommit v6 (Kafka 4.4, KIP-1319): topics by id, an unknown id, and the errors v6
    answers where v5 says ILLEGAL_GENERATION (a missing group at a generation)."""
    topic = s.name("t")
    s.create_topic(topic)
    tid, group = s.name("tx6"), s.name("g6")
    s.find_coordinator(tid)
    s.find_coordinator(group, 0)
    pid, ep = s.init_ok(tid)

    def commit(label: str, ver: int, topic_id, **kw) -> dict:
        return txn_offset_commit(s, label, ver, tid, group, pid, ep, topic, 3, topic_id=topic_id, **kw)

    known = s.topic_ids[topic]
    commit(
        "TxnOffsetCommit v6 unknown topic id",
        6,
        uuid.uuid4(),
        expect={"topics.0.partitions.0.error_code": "UNKNOWN_TOPIC_ID"},
    )
    commit(
        "TxnOffsetCommit v6 missing group, generation 5",
        6,
        known,
        gen=5,
        member="m1",
        expect={"topics.0.partitions.0.error_code": "GROUP_ID_NOT_FOUND"},
    )
    commit(
        "TxnOffsetCommit v5 missing group, generation 5",
        5,
        known,
        gen=5,
        member="m1",
        expect={"topics.0.partitions.0.error_code": "ILLEGAL_GENERATION"},
    )
    commit("TxnOffsetCommit v6 by topic id", 6, known, expect={"topics.0.partitions.0.error_code": "NONE"})
    s.end_ok(tid, pid, ep, True, 5)
    for _ in range(100):  # Kafka writes the group's marker after the transaction completes
        r = offset_fetch(s, None, 8, group, topic, stable=True)
        if r["groups"][0]["topics"][0]["partitions"][0]["error_code"] == 0:
            break
        time.sleep(0.05)
    offset_fetch(s, "OffsetFetch v8 after the v6 commit", 8, group, topic, stable=True)


@probe
def probe_write_txn_markers(s: Target) -> None:
    """WriteTxnMarkers v1-v2 sent by a client (Kafka without an authorizer lets it through): to an
    unknown partition, and an ABORT for a producer's open transaction, whose marker the log then
    shows; a marker with an older coordinator epoch than the partition has seen is fenced."""
    topic, tid = s.name("t"), s.name("wm")
    s.create_topic(topic)
    s.find_coordinator(tid)
    pid, ep = s.init_ok(tid)
    s.add_partitions(tid, pid, ep, {topic: [0]}, 3)
    s.produce_ok(topic, 0, pid, ep, 0, ["x"], 11, tid)

    def markers(label: str, ver: int, name: str, commit: bool, coordinator_epoch: int, **kw) -> None:
        marker = {
            "producer_id": pid,
            "producer_epoch": ep,
            "transaction_result": commit,
            "topics": [{"name": name, "partition_indexes": [0]}],
            "coordinator_epoch": coordinator_epoch,
        }
        if ver >= 2:
            marker["transaction_version"] = 1
        s.req(label, WRITE_TXN_MARKERS, ver, {"markers": [marker]}, **kw)

    markers("WriteTxnMarkers v1 an unknown partition", 1, s.name("nosuch"), False, 5)
    markers("WriteTxnMarkers v1 ABORT", 1, topic, False, 5)
    s.fetch(topic, 0, 0, 0, ver=12, label="Fetch v12 read_uncommitted after the client's marker")
    markers("WriteTxnMarkers v2 an older coordinator epoch", 2, topic, False, 1)

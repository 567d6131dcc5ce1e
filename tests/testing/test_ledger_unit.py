"""The delivery ledger's verdict, without a broker: lost records, duplicates and their causes,
per-key order, commits beyond what was processed, thread safety and the client adapters.

The cluster link is played by a stub holding a real ``EventLog``: the ledger reads only
``event_count`` and ``events_since`` from a cluster."""

from __future__ import annotations

import threading
import time
from collections import Counter
from types import SimpleNamespace

import pytest

import fakebroker
from fakebroker.core import events as ev
from fakebroker.testing.ledger import CommitBeyond, DeliveryLedger, Duplicate, OutOfOrder, RecordId, Reread
from fakebroker.timeline import swimlanes, timeline, write_timeline

M1 = "c1-0e9080ea-1111-4222-8333-444455556666"
M2 = "c2-5a5a5a5a-1111-4222-8333-444455556666"


class StubCluster:
    """What the ledger needs of a FakeCluster: an event log it can count and read."""

    def __init__(self) -> None:
        self.log = ev.EventLog()

    @property
    def event_count(self) -> int:
        return len(self.log)

    def events_since(self, count: int) -> list[ev.Event]:
        return self.log.since(count)

    @property
    def events(self) -> list[ev.Event]:  # what the timeline reads
        return self.log.since(0)

    def emit(self, kind: str, **details) -> None:
        self.log.append(ev.make(kind, **details))


def produce_all(ledger: DeliveryLedger, n: int, topic: str = "t", partition: int = 0) -> None:
    for i in range(n):
        ledger.produced(topic, partition, i, key=b"k%d" % (i % 2))


# -- lost, counts, verdict properties ----------------------------------------------------------------
def test_a_clean_run_is_exactly_once():
    ledger = DeliveryLedger()
    produce_all(ledger, 4)
    for i in range(4):
        ledger.processed("c1", "t", 0, i, key=b"k%d" % (i % 2))
    v = ledger.assert_exactly_once()
    assert (v.produced, v.processed, v.lost, v.duplicates, v.out_of_order) == (4, 4, [], [], [])
    assert v.exactly_once and v.at_least_once
    assert v.summary().splitlines()[0].startswith("delivery: 4 produced, 4 processed; 0 lost, 0 duplicated")


def test_lost_records_are_the_acknowledged_ones_never_processed_sorted():
    ledger = DeliveryLedger()
    produce_all(ledger, 4, partition=1)
    produce_all(ledger, 3, topic="a", partition=0)
    ledger.processed("c1", "t", 1, 1)
    ledger.processed("c1", "x", 9, 9)  # processed but never seen produced: not a problem
    v = ledger.verdict()
    assert v.lost == [("a", 0, 0), ("a", 0, 1), ("a", 0, 2), ("t", 1, 0), ("t", 1, 2), ("t", 1, 3)]
    assert v.lost[0] == RecordId("a", 0, 0) and v.lost[0].offset == 0
    assert not v.at_least_once and not v.exactly_once
    with pytest.raises(AssertionError, match=r"not at least once:\n.*6 lost") as raised:
        ledger.assert_at_least_once()
    assert "lost (first 5 of 6): a[0]@0, a[0]@1, a[0]@2, t[1]@0, t[1]@2" in str(raised.value)
    with pytest.raises(AssertionError, match="not exactly once"):
        ledger.assert_exactly_once()


# -- duplicates ----------------------------------------------------------------------------------------
def test_duplicates_without_a_cluster_have_no_cause():
    ledger = DeliveryLedger()
    produce_all(ledger, 2)
    for member, offset in [("c1", 0), ("c1", 1), ("c2", 1), ("c2", 1)]:
        ledger.processed(member, "t", 0, offset)
    v = ledger.verdict()
    assert v.duplicates == [Duplicate("t", 0, 1, b"k1", 3, ("c1", "c2", "c2"), None)]
    assert v.at_least_once and not v.exactly_once
    assert v.duplicates_by_cause() == Counter({None: 2})
    assert "2 x no cause found" in v.summary()
    assert ledger.assert_at_least_once(max_duplicates=2).processed == 4
    with pytest.raises(AssertionError, match=r"2 duplicates \(at most 1 allowed\)"):
        ledger.assert_at_least_once(max_duplicates=1)


def test_a_duplicate_after_a_member_left_names_the_generation_and_the_member():
    cluster = StubCluster()
    cluster.emit("generation_started", group="g", generation=1, members=2)
    ledger = DeliveryLedger(cluster, group="g")
    produce_all(ledger, 2)
    ledger.processed("c1", "t", 0, 0)
    ledger.processed("c1", "t", 0, 1)
    cluster.emit("member_removed", group="g", member=M1, reason="left the group")
    cluster.emit("rebalance_started", group="g", reason="members left", generation=1)
    cluster.emit("generation_started", group="g", generation=2, members=1)
    ledger.processed("c2", "t", 0, 1)
    v = ledger.verdict()
    assert v.duplicates == [
        Duplicate("t", 0, 1, b"k1", 2, ("c1", "c2"), "generation 2 (rebalance: member c1-0e9080ea left)")
    ]
    assert v.duplicates_by_cause() == {"generation 2 (rebalance: member c1-0e9080ea left)": 1}
    assert "1 x generation 2 (rebalance: member c1-0e9080ea left)" in v.summary()


def test_a_rebalance_that_began_before_the_first_processing_gives_its_reason():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    cluster.emit("rebalance_started", group="g", reason=f"member {M2} joined", generation=1)
    ledger.processed("c1", "t", 0, 0)  # the old generation goes on consuming during the rebalance
    cluster.emit("generation_started", group="g", generation=2, members=2)
    ledger.processed("c2", "t", 0, 0)
    assert ledger.verdict().duplicates[0].cause == "generation 2 (rebalance: member c2-5a5a5a5a joined)"


def test_a_member_removed_by_the_coordinator_is_the_cause():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    ledger.processed("c1", "t", 0, 0)
    cluster.emit("member_removed", group="g", member=M1, reason="did not rejoin in time")
    cluster.emit("generation_started", group="g", generation=5, members=1)
    ledger.processed("c2", "t", 0, 0)
    ledger.processed("c2", "t", 0, 1)
    cluster.emit("member_expired", group="g", member=M2, session_timeout_ms=6000)
    ledger.processed("c3", "t", 0, 1)
    causes = {d.offset: d.cause for d in ledger.verdict().duplicates}
    assert causes == {
        0: "generation 5 (member c1-0e9080ea removed: did not rejoin in time)",
        1: "member c2-5a5a5a5a removed: session expired",
    }


def test_a_coordinator_move_is_the_cause_and_other_groups_are_ignored():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    ledger.processed("c1", "t", 0, 0)
    cluster.emit("generation_started", group="other", generation=9, members=1)  # not our group
    cluster.emit("broker_stopped", broker=2)
    cluster.emit("group_unloaded", group="g")
    cluster.emit("group_loaded", group="g", state="Stable", generation=3)
    ledger.processed("c1", "t", 0, 0)
    ledger.processed("c1", "t", 0, 1)
    cluster.emit("client_connected", peer="x")  # not a group event: no cause
    ledger.processed("c1", "t", 0, 1)
    causes = {d.offset: d.cause for d in ledger.verdict().duplicates}
    assert causes == {0: "coordinator moved (broker 2 stopped)", 1: None}


# -- order -----------------------------------------------------------------------------------------------
def test_a_record_processed_first_after_a_later_one_of_its_key_is_out_of_order():
    ledger = DeliveryLedger()
    for offset, key in enumerate([b"a", b"b", b"a", b"a"]):
        ledger.produced("t", 0, offset, key)
    for offset in (1, 2, 0, 3, 2):  # 0 after 2 (same key a); 1 (key b) is fine; the repeat of 2 is not "first"
        ledger.processed("c1", "t", 0, offset)
    ledger.processed("c1", "t", 1, 5, key="z")  # a key known only from processing
    ledger.processed("c1", "t", 1, 4, key="z")
    v = ledger.verdict()
    assert v.out_of_order == [OutOfOrder(b"a", "t", 0, 0, 2), OutOfOrder("z", "t", 1, 4, 5)]
    assert v.exactly_once is False  # the repeat of offset 2
    assert "out of order: key b'a' t[0]@0 after @2" in v.summary()


# -- commits ---------------------------------------------------------------------------------------------
def test_an_app_commit_beyond_what_was_processed_is_reported():
    ledger = DeliveryLedger()
    produce_all(ledger, 5)
    ledger.processed("c1", "t", 0, 0)
    ledger.committed("c1", "t", 0, 1)  # fine: the next record after 0
    ledger.committed("c1", "t", 0, 3)  # 1 and 2 not processed yet
    ledger.committed("c1", "t", 0, 3)  # the same commit again: reported once
    for o in (1, 2, 3, 4):
        ledger.processed("c1", "t", 0, o)
    ledger.committed("c1", "t", 0, 5)
    ledger.committed("c1", "t", 0, 7)  # past the end, but every record produced was processed
    ledger.committed("c1", "x", 0, 4)  # a partition the ledger saw nothing produced in: the plain rule
    v = ledger.verdict()
    assert v.committed_beyond_processed == [
        CommitBeyond("t", 0, 3, 0, unprocessed=1, member="c1", outcome="processed later by c1"),
        CommitBeyond("x", 0, 4, -1, member="c1"),  # nothing seen produced there: no record to name
    ]
    assert v.at_least_once  # nothing was lost in the end
    assert "t[0] committed 3, processed up to 0" in v.summary()


def test_the_groups_own_commits_are_checked_with_a_cluster_and_group():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    produce_all(ledger, 4)
    ledger.processed("c1", "t", 0, 0)
    cluster.emit("offset_committed", group="g", topic="t", partition=0, offset=1)
    cluster.emit("offset_committed", group="g", topic="t", partition=0, offset=3)  # commit before process
    cluster.emit("offset_committed", group="h", topic="t", partition=0, offset=4)  # another group
    ledger.processed("c1", "t", 0, 1)
    ledger.processed("c1", "t", 0, 2)
    cluster.emit("offset_committed", group="g", topic="t", partition=0, offset=3)
    v = ledger.verdict()
    assert v.committed_beyond_processed == [
        CommitBeyond("t", 0, 3, 0, unprocessed=1, event=2, outcome="processed later by c1")
    ]
    assert v.lost == [("t", 0, 3)]
    # without a group, the cluster's commits are not the ledger's to judge
    alone = DeliveryLedger(cluster)
    alone.processed("c1", "t", 0, 0)
    cluster.emit("offset_committed", group="g", topic="t", partition=0, offset=3)
    assert alone.verdict().committed_beyond_processed == []


def _commit_first(cluster: StubCluster, ledger: DeliveryLedger, offsets: range) -> None:
    """A consumer of partition 0 that commits each record before processing it."""
    for o in offsets:
        cluster.emit("offset_committed", group="g", topic="t", partition=0, offset=o + 1)
        ledger.processed("c1", "t", 0, o)


def test_the_assertions_fail_on_commits_before_processing_though_nothing_was_lost():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    produce_all(ledger, 3)
    _commit_first(cluster, ledger, range(3))
    v = ledger.verdict()
    assert v.exactly_once and len(v.committed_beyond_processed) == 3
    for check in (ledger.assert_exactly_once, ledger.assert_at_least_once):
        with pytest.raises(AssertionError) as failed:
            check()
        text = str(failed.value)
        assert text.startswith("3 commits beyond what was processed:\na commit ran ahead of the processing"), text
        assert (
            "  t[0]: next offset 1 committed (offset_committed event #1) while offset 0 was not processed "
            "(processed up to -1); offset 0 was processed later by c1\n"
        ) in text
        assert "t[0]: next offset 3 committed (offset_committed event #3) while offset 2 was not processed" in text
        assert "pass allow_commits_beyond=True" in text and "delivery: 3 produced, 3 processed" in text
    assert ledger.assert_exactly_once(allow_commits_beyond=True) is not None
    assert ledger.assert_at_least_once(max_duplicates=0, allow_commits_beyond=True).processed == 3


def test_a_commit_before_a_crash_is_named_with_the_loss_and_the_rebalance_after_it():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    produce_all(ledger, 12)
    _commit_first(cluster, ledger, range(9))
    cluster.emit("offset_committed", group="g", topic="t", partition=0, offset=10)  # then c1 dies
    cluster.emit("member_removed", group="g", member=M1, reason="left the group")
    cluster.emit("rebalance_started", group="g", reason="members left", generation=1)
    cluster.emit("generation_started", group="g", generation=2, members=1)
    for o in (10, 11):  # the next owner starts after the record c1 never processed
        ledger.processed("c2", "t", 0, o)
        ledger.committed("c2", "t", 0, o + 1)
    with pytest.raises(AssertionError) as failed:
        ledger.assert_at_least_once()
    lines = str(failed.value).splitlines()
    assert lines[0] == "not at least once; 10 commits beyond what was processed:"
    assert lines[1].endswith("; first 5 of 10:")
    assert lines[2] == (
        "  t[0]: next offset 10 committed (offset_committed event #10) while offset 9 was not processed "
        "(processed up to 8); offset 9 was lost after generation 2 (rebalance: member c1-0e9080ea left)"
    )
    assert "lost: t[0]@9" in lines
    # told to allow the commits, the loss alone fails it
    with pytest.raises(AssertionError, match=r"^not at least once:\ndelivery: 12 produced, 11 processed; 1 lost"):
        ledger.assert_at_least_once(allow_commits_beyond=True)


def test_a_consumer_that_commits_after_processing_passes_both_assertions():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    produce_all(ledger, 5)
    for o in range(5):
        ledger.processed("c1", "t", 0, o)
        cluster.emit("offset_committed", group="g", topic="t", partition=0, offset=o + 1)
        ledger.committed("c1", "t", 0, o + 1)
    assert ledger.assert_exactly_once().committed_beyond_processed == []
    assert ledger.assert_at_least_once(max_duplicates=0).processed == 5


# -- threads and adapters ------------------------------------------------------------------------------
def test_recording_from_many_threads_loses_nothing():
    ledger = DeliveryLedger()
    threads, per = 8, 2000

    def work(n: int) -> None:
        for i in range(per):
            ledger.produced("t", n, i)
            ledger.processed(f"c{n}", "t", n, i)
            if i % 100 == 99:
                ledger.committed(f"c{n}", "t", n, i + 1)

    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=30)
    v = ledger.assert_exactly_once()
    assert (v.produced, v.processed, v.committed_beyond_processed) == (threads * per, threads * per, [])


class ConfluentMessage:
    """The shape of confluent_kafka.Message: methods."""

    def __init__(self, topic, partition, offset, key=None, error=None):
        self._v = (topic, partition, offset, key, error)

    def topic(self):
        return self._v[0]

    def partition(self):
        return self._v[1]

    def offset(self):
        return self._v[2]

    def key(self):
        return self._v[3]

    def error(self):
        return self._v[4]


def test_adapters_accept_each_clients_shape():
    ledger = DeliveryLedger()
    ledger.on_delivery(None, ConfluentMessage("t", 0, 0, b"a"))
    ledger.on_delivery("KafkaError{code=_MSG_TIMED_OUT}", ConfluentMessage("t", 0, -1001, b"b"))  # failed: ignored
    ledger.on_delivery(None, ConfluentMessage("t", 0, -1001, b"c"))  # no offset (acks=0): ignored
    # kafka-python / aiokafka RecordMetadata: attributes, no key
    ledger.produced_from(SimpleNamespace(topic="t", partition=1, offset=0), key=b"d")
    ledger.produced_from(SimpleNamespace(topic="t", partition=1, offset=1))
    ledger.record("conf", ConfluentMessage("t", 0, 0, b"a"))
    # kafka-python / aiokafka ConsumerRecord: attributes
    ledger.record("kp", SimpleNamespace(topic="t", partition=1, offset=0, key=b"d", value=b"x"))
    ledger.record("aio", SimpleNamespace(topic="t", partition=1, offset=1, key=None, value=b"y"))
    v = ledger.assert_exactly_once()
    assert (v.produced, v.processed) == (3, 3)
    with pytest.raises(ValueError, match="not a record but an error: partition EOF"):
        ledger.record("conf", ConfluentMessage("t", 0, 5, error="partition EOF"))
    assert ledger.verdict().processed == 3


def test_the_ledger_is_a_lazy_top_level_name():
    assert fakebroker.DeliveryLedger is DeliveryLedger
    assert "DeliveryLedger" in fakebroker.__all__


def test_a_long_run_with_a_commit_per_record_is_judged_in_linear_time():
    ledger = DeliveryLedger()
    n = 30_000
    for i in range(n):
        ledger.produced("t", i % 6, i // 6)
    for i in range(n):
        ledger.processed("c1", "t", i % 6, i // 6)
        ledger.committed("c1", "t", i % 6, i // 6 + 1)
    ledger.committed("c1", "t", 0, n // 6 + 3)  # beyond the end: every produced record was processed
    start = time.perf_counter()
    v = ledger.verdict()
    assert time.perf_counter() - start < 5  # a quadratic check would take minutes
    assert (v.produced, v.processed, v.committed_beyond_processed, v.exactly_once) == (n, n, [], True)


def test_many_commits_before_processing_with_losses_are_judged_in_linear_time():
    cluster = StubCluster()
    ledger = DeliveryLedger(cluster, group="g")
    n = 12_000
    for i in range(n):
        ledger.produced("t", i % 4, i // 4)
    for i in range(n):
        cluster.emit("offset_committed", group="g", topic="t", partition=i % 4, offset=i // 4 + 1)
        if i % 10 == 9:  # the member dies between commit and processing; the next generation goes on
            cluster.emit("member_removed", group="g", member=M1, reason="left the group")
            cluster.emit("generation_started", group="g", generation=i, members=1)
        else:
            ledger.processed("c1", "t", i % 4, i // 4)
    start = time.perf_counter()
    v = ledger.verdict()
    assert time.perf_counter() - start < 5
    lost = [c for c in v.committed_beyond_processed if c.outcome.startswith("lost")]
    assert len(v.lost) == len(lost) == n // 10 and len(v.committed_beyond_processed) == n
    assert lost[0].outcome == "lost after generation 9 (rebalance: member c1-0e9080ea left)"


def _member_left_and_reread() -> tuple[StubCluster, DeliveryLedger]:
    cluster = StubCluster()
    cluster.emit("member_joined", group="g", member=M1, instance=None, client_id="c1")
    cluster.emit("member_joined", group="g", member=M2, instance=None, client_id="c2")
    cluster.emit("generation_started", group="g", generation=1, members=2)
    ledger = DeliveryLedger(cluster, group="g")
    produce_all(ledger, 3)
    for offset in range(3):
        ledger.processed("c1", "t", 0, offset)
    cluster.emit("member_left", group="g", member=M1, client_id="c1")
    cluster.emit("member_removed", group="g", member=M1, reason="left the group", client_id="c1")
    cluster.emit("rebalance_started", group="g", reason="members left", generation=1)
    cluster.emit("generation_started", group="g", generation=2, members=1)
    for offset in (1, 2):
        ledger.processed("c2", "t", 0, offset)
    return cluster, ledger


def test_rereads_say_who_processed_a_record_again_when_and_why():
    cluster, ledger = _member_left_and_reread()
    cause = "generation 2 (rebalance: member c1-0e9080ea left)"
    seq = cluster.event_count
    assert ledger.rereads() == [Reread("c2", "t", 0, 1, seq, cause), Reread("c2", "t", 0, 2, seq, cause)]


def test_the_text_timeline_has_a_line_where_duplicates_were_reread():
    cluster, ledger = _member_left_and_reread()
    lines = timeline(cluster, ledger=ledger).splitlines()
    assert lines[-2].split()[2] == "generation_started"
    again = lines[-1].split(None, 5)
    assert again[2:5] == ["processed_again", "-", "c2"]
    assert again[5] == 'records=2 at=t[0]@1-2 cause="generation 2 (rebalance: member c1-0e9080ea left)"'
    assert "processed_again" not in timeline(cluster)


def test_the_picture_marks_duplicates_on_the_lane_of_the_member_that_reread_them(tmp_path):
    cluster, ledger = _member_left_and_reread()
    data = swimlanes(cluster.events, group="g", rereads=ledger.rereads())
    marks = [m for m in data.markers if m.kind == "duplicate"]
    assert [(m.client_id, m.count) for m in marks] == [("c2", 2)]
    assert marks[0].x == data.lanes[1].segments[-1].start  # c2's lane, at the generation the reread followed
    pytest.importorskip("matplotlib")
    svg = write_timeline(cluster, tmp_path / "t.svg", group="g", ledger=ledger).read_text()
    assert "records processed again" in svg

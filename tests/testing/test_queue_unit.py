"""The delivery ledger's queue semantics (share groups, KIP-932), without a broker: every record
processed at least once across the group or archived, each repeat explained by the share event
that brought the record back (released, lock expired, member left, session closed), archived
records with their reason and delivery count, and the assertion's messages.

The cluster link is played by a stub holding a real ``EventLog`` (as in ``test_ledger_unit``)."""

from __future__ import annotations

import pytest

from fakebroker.testing import Archived, DeliveryLedger, QueueVerdict, Repeat
from fakebroker.testing.ledger import RecordId
from fakebroker.testing.queue import ShareHistory
from fakebroker.timeline import timeline

from .test_ledger_unit import StubCluster

G, T = "workers", "jobs"
M1, M2 = "Wn3Y0FkVQvKdz7Hk2s1xAA", "k4T9hbQhSfWb1v0Rr2m7Bg"  # share member ids: 22 base64 characters


class Share:
    """A stub cluster plus a ledger, and the share events a broker would record."""

    def __init__(self, produced: int = 5) -> None:
        self.cluster = StubCluster()
        self.ledger = DeliveryLedger(self.cluster, group=G)
        for o in range(produced):
            self.ledger.produced(T, 0, o)

    def acquired(self, member: str, first: int, last: int, count: int = 1, client: str | None = None) -> None:
        self.cluster.emit(
            "share_records_acquired",
            group=G,
            member=member,
            topic=T,
            partition=0,
            first=first,
            last=last,
            delivery_count=count,
            client_id=client or {M1: "c1", M2: "c2"}.get(member),
        )

    def acked(self, member: str, first: int, last: int, outcome: str = "accept") -> None:
        self.cluster.emit(
            "share_records_acknowledged", group=G, member=member, topic=T, partition=0, first=first, last=last,
            outcome=outcome,
        )  # fmt: skip

    def released(self, member: str, records: int, reason: str) -> None:
        self.cluster.emit(
            "share_records_released", group=G, member=member, topic=T, partition=0, records=records, reason=reason
        )

    def archived(self, first: int, last: int, reason: str) -> None:
        self.cluster.emit(
            "share_records_archived", group=G, topic=T, partition=0, first=first, last=last, reason=reason
        )

    def process(self, name: str, first: int, last: int, count: int | None = 1) -> None:
        for o in range(first, last + 1):
            self.ledger.processed(name, T, 0, o, delivery_count=count)


def poison_run(limit: int = 3) -> Share:
    """Five records; the one at offset 3 is released at each delivery until the limit archives it."""
    s = Share()
    s.acquired(M1, 0, 4)
    s.process("w1", 0, 4)
    s.acked(M1, 0, 2)
    s.acked(M1, 3, 3, "release")
    s.acked(M1, 4, 4)
    for count in range(2, limit + 1):
        s.acquired(M1, 3, 3, count)
        s.process("w1", 3, 3, count)
        s.acked(M1, 3, 3, "release")
    s.archived(3, 3, "delivery limit")
    return s


def test_a_poison_record_is_archived_after_its_deliveries_and_each_repeat_was_a_release():
    ledger = poison_run().ledger
    v = ledger.assert_queue_delivery(archived={(T, 0, 3): "delivery limit"})
    assert isinstance(v, QueueVerdict)
    assert (v.produced, v.processed, v.lost) == (5, 7, [])
    assert v.archived == [Archived(T, 0, 3, "delivery limit", 3, 3)]
    assert v.repeats == [Repeat("w1", T, 0, 3, 2, "released", "c1", 5), Repeat("w1", T, 0, 3, 3, "released", "c1", 7)]
    assert v.repeats_by_cause() == {"released": 2}
    assert v.at_least_once and v.unexplained == []
    assert ledger.assert_queue_delivery(archived=1) == v
    assert ledger.assert_queue_delivery(archived=[(T, 0, 3)]) == v
    assert v.summary().splitlines() == [
        "queue delivery: 5 produced, 7 processed; 0 lost, 1 archived, 2 repeats (0 unexplained)",
        "repeats by cause:",
        "  2 x released",
        "archived: jobs[0]@3 after 3 deliveries (delivery limit)",
    ]


def test_the_assertion_names_what_was_archived_against_what_was_expected():
    ledger = poison_run().ledger
    with pytest.raises(AssertionError, match=r"archived records differ; archived unexpectedly: jobs\[0\]@3\n"):
        ledger.assert_queue_delivery()
    with pytest.raises(AssertionError, match=r"not archived: jobs\[0\]@1; archived unexpectedly: jobs\[0\]@3"):
        ledger.assert_queue_delivery(archived=[(T, 0, 1)])
    with pytest.raises(AssertionError, match=r"jobs\[0\]@3 archived for 'delivery limit', not 'rejected'"):
        ledger.assert_queue_delivery(archived={(T, 0, 3): "rejected"})
    with pytest.raises(AssertionError, match=r"1 record\(s\) archived, 2 expected"):
        ledger.assert_queue_delivery(archived=2)
    with pytest.raises(AssertionError, match=r"2 repeats \(at most 1 allowed\)"):
        ledger.assert_queue_delivery(archived=1, max_repeats=1)


def test_lost_records_are_those_neither_processed_nor_archived():
    s = Share(produced=4)
    s.acquired(M1, 0, 3)
    s.process("w1", 0, 1)
    s.acked(M1, 2, 2, "reject")
    s.archived(2, 2, "rejected")  # archived without the application seeing it: handled, not lost
    v = s.ledger.queue_verdict()
    assert v.lost == [RecordId(T, 0, 3)] and not v.at_least_once
    assert v.archived == [Archived(T, 0, 2, "rejected", 1, 0)]
    with pytest.raises(AssertionError, match=r"queue delivery broken: 1 record\(s\) neither processed nor archived"):
        s.ledger.assert_queue_delivery(archived={(T, 0, 2): "rejected"})
    assert "lost: jobs[0]@3" in v.summary()


def test_a_lock_expiry_ends_the_oldest_acquisition_of_its_member():
    s = Share(produced=4)
    s.acquired(M1, 0, 1)  # lock A
    s.process("w1", 0, 1)
    s.acquired(M1, 2, 3)  # lock B
    s.process("w1", 2, 3)
    s.released(M1, 2, "lock expired")  # A runs out first
    s.acked(M1, 2, 3)  # B is answered in time
    s.acquired(M2, 0, 1, 2)
    s.process("w2", 0, 1, 2)
    s.acked(M2, 0, 1)
    v = s.ledger.assert_queue_delivery()
    assert [(r.offset, r.member, r.cause, r.holder) for r in v.repeats] == [
        (0, "w2", "lock expired", "c1"),
        (1, "w2", "lock expired", "c1"),
    ]


def test_a_closed_session_is_a_member_that_left_unless_it_fetched_again():
    s = Share(produced=4)
    s.acquired(M1, 0, 1)
    s.process("w1", 0, 1)
    s.acquired(M2, 2, 3)
    s.process("w2", 2, 3)
    s.released(M2, 2, "session closed")  # w2's connection dropped; it comes back
    s.released(M1, 2, "session closed")  # w1 closed: gone
    s.acquired(M2, 0, 3, 2)
    s.process("w2", 0, 3, 2)
    s.acked(M2, 0, 3)
    v = s.ledger.assert_queue_delivery()
    assert {r.offset: r.cause for r in v.repeats} == {
        0: "member left",
        1: "member left",
        2: "session closed",
        3: "session closed",
    }
    assert v.repeats_by_cause() == {"member left": 2, "session closed": 2}


def test_without_delivery_counts_the_processings_are_placed_by_the_event_log():
    s = Share(produced=2)
    s.acquired(M1, 0, 1)
    s.process("w1", 0, 1, count=None)
    s.acked(M1, 0, 1, "release")
    s.acquired(M2, 0, 1, 2)
    s.process("w2", 0, 1, count=None)
    v = s.ledger.queue_verdict()
    assert [(r.delivery, r.cause, r.holder) for r in v.repeats] == [(None, "released", "c1")] * 2


def test_a_repeat_inside_one_delivery_is_unexplained():
    s = Share(produced=2)
    s.acquired(M1, 0, 1)
    s.process("w1", 0, 1)
    s.process("w1", 1, 1)  # the application handled one delivery twice
    v = s.ledger.queue_verdict()
    assert v.unexplained == [Repeat("w1", T, 0, 1, 1, None, None, 1)]
    with pytest.raises(AssertionError, match=r"1 repeat\(s\) no share event explains"):
        s.ledger.assert_queue_delivery()
    assert s.ledger.assert_queue_delivery(explained=False).repeats_by_cause() == {None: 1}
    assert "unexplained repeats: jobs[0]@1 by w1 (delivery 1)" in v.summary()


def test_without_a_cluster_repeats_have_no_cause_and_need_none():
    ledger = DeliveryLedger()
    ledger.produced(T, 0, 0)
    ledger.processed("w1", T, 0, 0, delivery_count=1)
    ledger.processed("w2", T, 0, 0, delivery_count=2)
    v = ledger.assert_queue_delivery()
    assert [(r.delivery, r.cause) for r in v.repeats] == [(2, None)]


def test_the_other_verdicts_and_the_timeline_give_share_causes_too():
    s = poison_run()
    duplicates = s.ledger.verdict().duplicates
    assert [(d.offset, d.times, d.cause) for d in duplicates] == [(3, 3, "released")]
    assert [(r.offset, r.cause) for r in s.ledger.rereads()] == [(3, "released"), (3, "released")]
    text = timeline(s.cluster, ledger=s.ledger)
    lines = [line.split() for line in text.splitlines() if "processed_again" in line]
    assert (
        lines == [["+0.000s", "-", "processed_again", "-", "w1", "records=1", "at=jobs[0]@3", 'cause="released"']] * 2
    )


def test_the_record_adapter_takes_a_share_consumers_delivery_count():
    class ShareMessage:
        def topic(self) -> str:
            return T

        def partition(self) -> int:
            return 0

        def offset(self) -> int:
            return 7

        def key(self) -> None:
            return None

        def error(self) -> None:
            return None

        def delivery_count(self) -> int:
            return 3

    ledger = DeliveryLedger()
    ledger.record("w1", ShareMessage())
    ledger.record("w1", ShareMessage())
    assert [r.delivery for r in ledger.queue_verdict().repeats] == [3]


def test_the_history_reads_only_its_groups_share_events():
    s = poison_run()
    assert ShareHistory(s.cluster.events, "other").deliveries == {}
    history = ShareHistory(s.cluster.events, G)
    assert [d.count for d in history.deliveries[(T, 0, 3)]] == [1, 2, 3]
    assert history.archived == {(T, 0, 3): "delivery limit"}

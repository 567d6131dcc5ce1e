"""The delivery ledger with real clients: confluent-kafka (a group losing a member, with the
commit after processing and with the commit before it), kafka-python and aiokafka.

Every test runs ``FakeCluster(brokers=3, topics={"orders": 6})`` in a thread; every loop has a
deadline. The confluent consumers are driven round-robin from the test's thread (one ``poll``
each per round) with ``cooperative-sticky`` assignment, so a rebalance moves only the leaving
member's partitions and the survivors keep their positions: which records are read twice (or
never) is then decided by the commit policy alone, and the tests assert it exactly.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer  # noqa: E402

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster  # noqa: E402
from fakebroker.timeline import swimlanes, timeline

from .kafka_python_join import knows_partitions

pytestmark = pytest.mark.clients

TOPIC = "orders"
PARTITIONS = 6
DEADLINE_S = 20.0
GROUP_TIMINGS = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 10000}


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}).run_in_thread() as c:
        yield c


def until(check: Callable[[], bool], what: str, step: Callable[[], None] = lambda: time.sleep(0.02)) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {DEADLINE_S}s waiting for {what}")
        step()


def produce_confluent(cluster: FakeCluster, ledger: DeliveryLedger, n: int, start: int = 0) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, "on_delivery": ledger.on_delivery}
    )
    for i in range(start, start + n):
        producer.produce(TOPIC, key=b"k%d" % (i % 12), value=b"v%d" % i)
        producer.poll(0)
    assert producer.flush(15) == 0


class Member:
    """A confluent consumer that records each message in the ledger; ``commit`` says when."""

    def __init__(self, cluster: FakeCluster, gid: str, name: str, ledger: DeliveryLedger, commit: str, every: int = 1):
        self.name, self.ledger, self.commit, self.every = name, ledger, commit, every
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": gid,
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "partition.assignment.strategy": "cooperative-sticky",
                "log_level": 3,
                **GROUP_TIMINGS,
            }
        )
        self.consumer.subscribe([TOPIC])
        self.count = 0
        self.uncommitted: list[tuple[int, int]] = []  # processed since this member's last commit
        self.crash_next = False
        self.crashed_on: tuple[int, int] | None = None
        self.closed = False

    def poll_once(self) -> None:
        if self.closed:
            return
        msg = self.consumer.poll(0.02)
        if msg is None or msg.error() is not None:
            return
        if self.commit == "before":  # at most once: commit, then process
            self._commit(msg)
            if self.crash_next:  # dies between its commit and its processing
                self.crashed_on = (msg.partition(), msg.offset())
                self.close()
                return
        self.ledger.record(self.name, msg)
        self.count += 1
        self.uncommitted.append((msg.partition(), msg.offset()))
        if self.commit == "after" and self.count % self.every == 0:
            self._commit(None)

    def _commit(self, msg) -> None:
        try:
            if msg is None:
                self.consumer.commit(asynchronous=False)  # the positions: everything processed so far
            else:
                self.consumer.commit(message=msg, asynchronous=False)
            self.uncommitted = []
        except KafkaException:
            pass  # overtaken by a rebalance: a later commit covers it (the ledger judges the outcome)

    def partitions(self) -> list[int]:
        return [] if self.closed else sorted(tp.partition for tp in self.consumer.assignment())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()  # no commit (enable.auto.commit is off), then LeaveGroup


def run_group(cluster: FakeCluster, gid: str, ledger: DeliveryLedger, commit: str, every: int = 1):
    a = Member(cluster, gid, f"{gid}-a", ledger, commit, every)
    b = Member(cluster, gid, f"{gid}-b", ledger, commit, every)
    members = [a, b]

    def poll_all() -> None:
        for m in members:
            m.poll_once()

    until(lambda: len(a.partitions()) == 3 and len(b.partitions()) == 3, "a 3/3 split", poll_all)
    return a, b, poll_all


# -- confluent-kafka ---------------------------------------------------------------------------------
def test_confluent_commit_after_processing_is_at_least_once_and_names_the_rebalance(cluster):
    """Members commit their positions after every 7 records they process; b closes (no commit)
    after 40, so exactly its last 40 % 7 = 5 records are read again by their new owner, and each
    of those duplicates is explained by the generation that b's leaving started."""
    gid = "ledger-after"
    ledger = DeliveryLedger(cluster, group=gid)
    a, b, poll_all = run_group(cluster, gid, ledger, commit="after", every=7)
    try:
        produce_confluent(cluster, ledger, 600)
        until(lambda: b.count >= 40, "b to process 40 records", poll_all)
        assert b.count == 40 and len(b.uncommitted) == 5
        replayed = set(b.uncommitted)
        mark = cluster.event_count
        b.close()
        until(lambda: len(a.partitions()) == 6, "a to own every partition", a.poll_once)
        until(lambda: ledger.verdict().lost == [], "every record processed", a.poll_once)
        end = time.monotonic() + 0.5  # a record read a third time would show up now
        while time.monotonic() < end:
            a.poll_once()
    finally:
        a.close()
        b.close()
    v = ledger.assert_at_least_once(max_duplicates=5)
    assert (v.produced, v.processed) == (600, 605)
    assert {(d.partition, d.offset) for d in v.duplicates} == replayed
    assert all(d.times == 2 and d.members == (b.name, a.name) for d in v.duplicates)
    # the first generation after b left: the one that handed its partitions to a
    generation = next(e.details["generation"] for e in cluster.events_since(mark) if e.kind == "generation_started")
    causes = v.duplicates_by_cause()
    assert len(causes) == 1 and causes.total() == 5
    (cause,) = causes
    assert cause.startswith(f"generation {generation} (rebalance: member {b.name}-") and cause.endswith(" left)"), cause
    assert v.out_of_order == [] and v.committed_beyond_processed == []
    assert f"5 x {cause}" in v.summary()
    # the timeline shows them where a re-read them: in its text and on a's lane in the picture
    again = [line for line in timeline(cluster, gid, ledger=ledger).splitlines() if " processed_again " in line]
    assert sum(int(re.search(r"records=(\d+)", line)[1]) for line in again) == 5
    assert all(f" {a.name} " in line and cause in line for line in again), again
    marks = [m for m in swimlanes(cluster.events, group=gid, rereads=ledger.rereads()).markers if m.kind == "duplicate"]
    assert sum(m.count for m in marks) == 5 and {m.client_id for m in marks} == {a.name}


def test_confluent_commit_before_processing_loses_the_record_of_a_crashed_member(cluster):
    """Members commit each record before processing it; b dies between the commit and the
    processing of one record: that record is lost (its new owner starts after it), and the
    broker's offset_committed events show commits beyond what had been processed."""
    gid = "ledger-before"
    ledger = DeliveryLedger(cluster, group=gid)
    a, b, poll_all = run_group(cluster, gid, ledger, commit="before")
    try:
        produce_confluent(cluster, ledger, 300)
        until(lambda: b.count >= 20, "b to process 20 records", poll_all)
        b.crash_next = True
        until(lambda: b.closed, "b to take one more record and crash", b.poll_once)
        until(lambda: len(a.partitions()) == 6, "a to own every partition", a.poll_once)
        until(lambda: ledger.verdict().processed >= 299, "the other records processed", a.poll_once)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            a.poll_once()
    finally:
        a.close()
        b.close()
    v = ledger.verdict()
    partition, offset = b.crashed_on
    assert v.lost == [(TOPIC, partition, offset)]
    assert not v.at_least_once and v.duplicates == [] and v.processed == 299
    crash_commit = [c for c in v.committed_beyond_processed if (c.partition, c.committed) == (partition, offset + 1)]
    assert len(crash_commit) == 1 and crash_commit[0].processed_up_to < offset
    # every commit of this policy runs ahead of the processing
    assert all(c.committed > c.processed_up_to + 1 for c in v.committed_beyond_processed)
    with pytest.raises(AssertionError, match=rf"lost: {TOPIC}\[{partition}\]@{offset}") as failed:
        ledger.assert_at_least_once()
    # the message leads with the commit that lost the record: its partition and offsets, the
    # broker's offset_committed event that made it, and the rebalance that handed the partition on
    lines = str(failed.value).splitlines()
    assert lines[0] == f"not at least once; {len(v.committed_beyond_processed)} commits beyond what was processed:"
    (event,) = [
        e.seq
        for e in cluster.events
        if e.kind == "offset_committed"
        and e.group == gid
        and (e.details["partition"], e.details["offset"]) == (partition, offset + 1)
    ]
    # the first generation after that commit: the one b's leaving started
    generation = next(
        e.details["generation"]
        for e in cluster.events_since(event)
        if e.kind == "generation_started" and e.group == gid
    )
    assert re.fullmatch(
        rf"  {TOPIC}\[{partition}\]: next offset {offset + 1} committed \(offset_committed event #{event}\) "
        rf"while offset {offset} was not processed \(processed up to {crash_commit[0].processed_up_to}\); "
        rf"offset {offset} was lost after generation {generation} \(rebalance: member {b.name}-[0-9a-f]{{8}} left\)",
        lines[2],
    ), lines[2]
    assert "pass allow_commits_beyond=True" in str(failed.value)


def test_confluent_commit_before_processing_fails_the_assertions_even_when_nothing_is_lost(cluster):
    """The same commit-first members, but none dies between its commit and its processing: every
    record is processed exactly once in this run, yet both assertions fail, naming commits whose
    record was processed only later; told the consumer is at most once on purpose, they pass."""
    gid = "ledger-first"
    ledger = DeliveryLedger(cluster, group=gid)
    a, b, poll_all = run_group(cluster, gid, ledger, commit="before")
    try:
        produce_confluent(cluster, ledger, 60)
        until(lambda: ledger.verdict().processed >= 60, "every record processed", poll_all)
    finally:
        a.close()
        b.close()
    v = ledger.verdict()
    assert (v.lost, v.duplicates, v.exactly_once) == ([], [], True)
    assert len(v.committed_beyond_processed) == 60  # each commit names the record about to be processed
    for check in (ledger.assert_exactly_once, ledger.assert_at_least_once):
        with pytest.raises(AssertionError) as failed:
            check()
        lines = str(failed.value).splitlines()
        assert lines[0] == "60 commits beyond what was processed:", lines[0]
        shown = [line for line in lines if line.startswith(f"  {TOPIC}[")]
        assert len(shown) == 5
        for line in shown:
            committed, skipped, member = re.fullmatch(
                rf"  {TOPIC}\[\d\]: next offset (\d+) committed \(offset_committed event #\d+\) while offset (\d+) "
                rf"was not processed \(processed up to -?\d+\); offset \d+ was processed later by ({gid}-[ab])",
                line,
            ).groups()
            assert int(committed) == int(skipped) + 1, line
    assert ledger.assert_exactly_once(allow_commits_beyond=True).processed == 60
    assert ledger.assert_at_least_once(max_duplicates=0, allow_commits_beyond=True).produced == 60


def test_confluent_records_read_again_below_the_groups_commits_are_beyond_the_commit_policy(cluster):
    """Two consumers that commit after processing but read committed records again with nothing
    that sets a position back: a seeks one partition back to its start after committing it, twice
    (``rewind``: the first time is not judged, a member's first run in a partition may have been
    handed out before its assignment settled), then b, joining after a left, starts every
    partition from the beginning instead of the group's committed offsets (``behind_commit``).
    Nothing is lost, yet at least once fails, and a campaign's verdict is ``duplicated``; told the
    re-processing is on purpose, the assertion passes. (A re-read after a rebalance stays
    allowed: the tests above assert it.)"""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    from fakebroker.campaign.runs import kind_of

    gid = "ledger-again"
    ledger = DeliveryLedger(cluster, group=gid)
    produce_confluent(cluster, ledger, 120)
    a = Member(cluster, gid, f"{gid}-a", ledger, "after")
    try:
        until(lambda: ledger.verdict().processed == 120, "a to process every record", a.poll_once)
        assert ledger.assert_at_least_once(max_duplicates=0).processed == 120
        partition = max(range(PARTITIONS), key=lambda p: cluster.offsets(TOPIC, p)[1])
        again = cluster.offsets(TOPIC, partition)[1]  # every record of the partition, committed
        for n in (1, 2):
            a.consumer.seek(TopicPartition(TOPIC, partition, 0))  # back to the first, though committed
            until(lambda n=n: ledger.verdict().processed == 120 + n * again, "a to read it again", a.poll_once)
            assert len(ledger.verdict().duplicates_beyond_policy) == (n - 1) * again
    finally:
        a.close()
    rewinds = ledger.verdict().duplicates_beyond_policy
    assert [(b.member, b.partition, b.rule) for b in rewinds] == [(a.name, partition, "rewind")] * again
    assert [b.offset for b in rewinds] == list(range(again))

    def from_the_beginning(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            tp.offset = OFFSET_BEGINNING  # the bug: not the committed offsets
        consumer.assign(partitions)

    b = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": gid, "client.id": f"{gid}-b",
         "enable.auto.commit": False, "log_level": 3, **GROUP_TIMINGS}
    )  # fmt: skip
    b.subscribe([TOPIC], on_assign=from_the_beginning)
    total = 120 + 2 * again

    def poll_b() -> None:
        msg = b.poll(0.05)
        if msg is not None and msg.error() is None:
            ledger.record("b", msg)

    try:
        until(lambda: ledger.verdict().processed == total + 120, "b to read everything again", poll_b)
    finally:
        b.close()
    v = ledger.verdict()
    behind = [x for x in v.duplicates_beyond_policy if x.member == "b"]
    assert len(behind) == 120 and {x.rule for x in behind} == {"behind_commit"}, v.summary()
    committed = cluster.committed(gid)
    assert all(x.committed == committed[(TOPIC, x.partition)] > x.offset for x in behind)
    assert v.lost == [] and v.at_least_once and kind_of(v, "at_least_once") == "duplicated"
    with pytest.raises(AssertionError) as failed:
        ledger.assert_at_least_once()
    lines = str(failed.value).splitlines()
    assert lines[0] == f"{120 + again} records processed again beyond what at least once allows:", lines[0]
    assert lines[2].startswith(f"  {TOPIC}[{partition}]@0: {a.name} processed it again after event #"), lines[2]
    assert ledger.assert_at_least_once(allow_duplicates_beyond_policy=True) == v


# -- kafka-python -------------------------------------------------------------------------------------
def test_kafka_python_records_through_the_ledger(cluster):
    from kafka import KafkaConsumer, KafkaProducer

    gid = "ledger-kp"
    ledger = DeliveryLedger(cluster, group=gid)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2)
    try:
        futures = [(producer.send(TOPIC, key=b"k%d" % (i % 12), value=b"v"), b"k%d" % (i % 12)) for i in range(120)]
        producer.flush(timeout=10)
        for future, key in futures:
            ledger.produced_from(future.get(timeout=10), key=key)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=gid,
        client_id="kp",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=50,
    )
    knows_partitions(consumer, TOPIC, PARTITIONS)  # kafka-python 3.0.12: see kafka_python_join.py
    try:

        def step() -> None:
            for records in consumer.poll(timeout_ms=200).values():
                for record in records:
                    ledger.record("kp", record)
            consumer.commit()  # after processing: the positions of what poll returned

        until(lambda: ledger.verdict().lost == [], "every record processed", step)
    finally:
        consumer.close(autocommit=False)
    v = ledger.assert_at_least_once(max_duplicates=0)
    assert (v.produced, v.processed, v.out_of_order, v.committed_beyond_processed) == (120, 120, [], [])
    assert any(e.kind == "offset_committed" and e.group == gid for e in cluster.events)


def test_kafka_python_commit_before_processing_then_restart_loses_a_record_and_the_assertion_says_where(cluster):
    """A kafka-python consumer commits each record's offset before processing it and dies after
    one such commit; its replacement in the group starts after that record: it is lost, and
    ``assert_exactly_once`` names the partition, the offsets, the commit event and the rebalance.
    A consumer that processes, then commits, passes on the same cluster."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    def consumer(gid: str, client_id: str) -> KafkaConsumer:
        kc = KafkaConsumer(
            TOPIC,
            bootstrap_servers=cluster.bootstrap_servers,
            group_id=gid,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=50,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
        )
        knows_partitions(kc, TOPIC, PARTITIONS)  # kafka-python 3.0.12: see kafka_python_join.py
        return kc

    def commit_first(
        kc: KafkaConsumer, member: str, ledger: DeliveryLedger, done: Callable[[], bool], die_after: int | None = None
    ) -> tuple[int, int] | None:
        """Commit each record, then process it, until ``done()``; with ``die_after``, after that
        many records commit one more and stop there (dead): returns its (partition, offset)."""
        count, died = 0, []

        def step() -> None:
            nonlocal count
            for records in kc.poll(timeout_ms=200).values():
                for r in records:
                    if died:
                        return
                    kc.commit({TopicPartition(r.topic, r.partition): OffsetAndMetadata(r.offset + 1, None, -1)})
                    if count == die_after:
                        died.append((r.partition, r.offset))
                        return
                    ledger.record(member, r)
                    count += 1

        until(lambda: bool(died) or done(), f"{member} to process", step)
        return died[0] if died else None

    gid = "ledger-kp-first"
    ledger = DeliveryLedger(cluster, group=gid)
    produce_confluent(cluster, ledger, 120)
    first = consumer(gid, "kp-first")
    try:
        crashed = commit_first(first, "kp-first", ledger, lambda: False, die_after=30)
    finally:
        first.close(autocommit=False)  # no commit; leaves the group
    second = consumer(gid, "kp-second")
    try:
        commit_first(second, "kp-second", ledger, lambda: ledger.verdict().processed >= 119)
    finally:
        second.close(autocommit=False)
    assert crashed is not None
    partition, offset = crashed
    v = ledger.verdict()
    assert (v.lost, v.processed, v.duplicates) == ([(TOPIC, partition, offset)], 119, [])
    with pytest.raises(AssertionError) as failed:
        ledger.assert_exactly_once()
    text = str(failed.value)
    lines = text.splitlines()
    assert lines[0] == f"not exactly once; {len(v.committed_beyond_processed)} commits beyond what was processed:"
    (event,) = [
        e.seq
        for e in cluster.events
        if e.kind == "offset_committed"
        and e.group == gid
        and (e.details["partition"], e.details["offset"]) == (partition, offset + 1)
    ]
    assert re.fullmatch(
        rf"  {TOPIC}\[{partition}\]: next offset {offset + 1} committed \(offset_committed event #{event}\) "
        rf"while offset {offset} was not processed \(processed up to -?\d+\); offset {offset} was lost after "
        rf"generation \d+ \(rebalance: member kp-first-[0-9a-f]{{8}} left\)",
        lines[2],
    ), lines[2]
    assert f"lost: {TOPIC}[{partition}]@{offset}" in lines

    # the same clients, processing before committing: both assertions pass
    gid = "ledger-kp-after"
    ledger = DeliveryLedger(cluster, group=gid)
    produce_confluent(cluster, ledger, 60)
    kc = consumer(gid, "kp-after")
    try:

        def step() -> None:
            for records in kc.poll(timeout_ms=200).values():
                for r in records:
                    ledger.record("kp-after", r)
                    kc.commit({TopicPartition(r.topic, r.partition): OffsetAndMetadata(r.offset + 1, None, -1)})

        until(lambda: ledger.verdict().processed >= 180, "every record processed", step)
    finally:
        kc.close(autocommit=False)
    v = ledger.assert_exactly_once()  # the 120 records before it too: they were produced before this ledger
    assert (v.produced, v.processed, v.committed_beyond_processed) == (60, 180, [])
    assert ledger.assert_at_least_once(max_duplicates=0) == v


# -- aiokafka -----------------------------------------------------------------------------------------
def test_aiokafka_records_through_the_ledger(cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    gid = "ledger-aio"
    ledger = DeliveryLedger(cluster, group=gid)

    async def main() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
        await producer.start()
        try:
            for i in range(120):
                key = b"k%d" % (i % 12)
                ledger.produced_from(await producer.send_and_wait(TOPIC, b"v", key=key), key=key)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            TOPIC,
            bootstrap_servers=cluster.bootstrap_servers,
            group_id=gid,
            client_id="aio",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=50,
        )
        await consumer.start()
        try:
            deadline = time.monotonic() + DEADLINE_S
            while ledger.verdict().lost:
                assert time.monotonic() < deadline, "timed out waiting for every record"
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    for record in records:
                        ledger.record("aio", record)
                await consumer.commit()  # after processing
        finally:
            await consumer.stop()

    asyncio.run(main())
    v = ledger.assert_at_least_once(max_duplicates=0)
    assert (v.produced, v.processed, v.out_of_order, v.committed_beyond_processed) == (120, 120, [], [])
    assert any(e.kind == "offset_committed" and e.group == gid for e in cluster.events)


# -- the module's usage example ------------------------------------------------------------------------
def test_the_module_docstring_example_runs(capsys):
    import textwrap

    import fakebroker.testing.ledger

    doc = fakebroker.testing.ledger.__doc__
    block = doc.split("::\n\n", 1)[1].split("\n\n``", 1)[0]
    code = textwrap.dedent(block)
    assert "DeliveryLedger(cluster" in code and "assert_exactly_once()" in code
    exec(compile(code, "fakebroker.testing.ledger example", "exec"), {"__name__": "ledger_example"})
    out = capsys.readouterr().out
    assert out.startswith("delivery: 100 produced, 100 processed; 0 lost, 0 duplicated (0 extra), "), out

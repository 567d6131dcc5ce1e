"""confluent-kafka (librdkafka) transactions against fakebroker's transaction coordinator.

librdkafka speaks the pre-KIP-890 protocol (AddPartitionsToTxn v0, EndTxn v0-1, TxnOffsetCommit
v0-3). The exactly-once app is the classic consume-transform-produce loop: each member is a
read_committed ``Consumer`` plus a transactional ``Producer``, run in its own thread; it copies
every record of ``in`` to the same partition of ``out`` and commits the input offsets in the
same transaction (``send_offsets_to_transaction`` with the consumer's group metadata, KIP-447).
On a revocation it commits what it has (librdkafka's transactions example does the same).

"Exactly once" is checked on what a read_committed reader sees (``cluster.records(committed=True)``):
every input key once, in input order per partition, and the group's committed offsets at the
input's end offsets. Every wait has a deadline.

Set ``FAKEBROKER_CGRP_DEBUG=1`` for librdkafka's debug log.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from fakebroker.cluster import FakeCluster

from .confluent_faults_support import close_abandoned
from .txn_support import assert_exactly_once, input_end, wait_until

pytestmark = pytest.mark.clients

IN, OUT = "in", "out"
PARTITIONS = 6
DEBUG = {"debug": "eos,cgrp,protocol", "log_level": 7} if os.environ.get("FAKEBROKER_CGRP_DEBUG") else {"log_level": 0}
GROUP = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 200, "max.poll.interval.ms": 6000}
BROKER_CONFIG = {
    "group.min.session.timeout.ms": 1000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}
T = 10  # seconds given to each blocking transactional call


@pytest.fixture
def cluster():
    topics = {IN: {"partitions": PARTITIONS, "replication_factor": 3}, OUT: {"partitions": PARTITIONS}}
    with FakeCluster(brokers=3, topics=topics, config=BROKER_CONFIG).run_in_thread() as c:
        yield c
        assert not [e.describe() for e in c.events if e.kind == "handler_error"]


def pick(cluster: FakeCluster, prefix: str) -> str:
    """A group id whose coordinator is not broker 0 (the first bootstrap broker)."""
    return next(f"{prefix}-{i}" for i in range(100) if cluster.coordinator(f"{prefix}-{i}") != 0)


def produce_input(cluster: FakeCluster, start: int, n: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 2, **DEBUG})
    for i in range(start, start + n):
        producer.produce(IN, key=b"k%d" % i, value=b"v%d" % i, partition=i % PARTITIONS)
    assert producer.flush(15) == 0


def txn_producer(cluster: FakeCluster, tid: str, **config) -> Producer:
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid, "linger.ms": 5, **DEBUG}
    return Producer({**conf, **config})


def events(cluster: FakeCluster, kind: str, tid: str, since: int = 0) -> list:
    return [e for e in cluster.events[since:] if e.kind == kind and e.details.get("transactional_id") == tid]


def kafka_error(exc_info) -> KafkaError:
    err = exc_info.value.args[0]
    assert isinstance(err, KafkaError)
    return err


class Worker:
    """One member of the exactly-once app, polling in its own thread."""

    def __init__(
        self,
        cluster: FakeCluster,
        gid: str,
        name: str,
        tid: str,
        *,
        batch: int = 20,
        pace: float = 0.005,
        **consumer_config,
    ):
        self.name, self.tid, self.batch, self.pace = name, tid, batch, pace  # pace: seconds per record
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": gid,
                "client.id": name,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 50,
                **GROUP,
                **DEBUG,
                **consumer_config,
            }
        )
        self.producer = txn_producer(cluster, tid, **{"client.id": f"{name}-p"})
        self.commits = 0
        self.aborted: list[KafkaError] = []  # abortable errors met (the batch was aborted and re-read)
        self.failure: BaseException | None = None
        self.pending = 0  # records produced in the open transaction
        self.in_txn = False
        self.before_commit: Callable[[Worker], None] | None = None
        self._stop = threading.Event()
        self._kill = threading.Event()
        self.zombie = threading.Event()  # set when the worker left with an open transaction
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Worker:
        self.thread.start()
        return self

    def stop(self, timeout: float = 20) -> None:
        """Commit what is open, close the consumer (leaving the group) and the thread."""
        self._stop.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.name} did not stop"
        if self.failure is not None:
            raise AssertionError(f"{self.name} failed") from self.failure

    def kill(self, timeout: float = 20) -> None:
        """Abandon the worker mid-transaction: its thread leaves after producing (and delivering)
        records in an open transaction, without committing, closing or polling again."""
        self._kill.set()
        assert self.zombie.wait(timeout), f"{self.name} never had an open transaction to abandon"
        self.thread.join(timeout)

    def _run(self) -> None:
        try:
            self.producer.init_transactions(T)
            self.consumer.subscribe([IN], on_revoke=self._on_revoke)
            while not self._stop.is_set():
                msg = self.consumer.poll(0.05)
                if msg is not None and msg.error() is None:
                    if not self.in_txn:
                        self.producer.begin_transaction()
                        self.in_txn = True
                    self.producer.produce(OUT, key=msg.key(), value=b"t-" + msg.value(), partition=msg.partition())
                    self.pending += 1
                    time.sleep(self.pace)
                if self._kill.is_set() and self.pending:
                    assert self.producer.flush(T) == 0
                    self.zombie.set()
                    return
                if self.pending >= self.batch or (self.pending and msg is None):
                    self.commit()
            self.commit()
            self.consumer.close()
        except BaseException as exc:  # reported by stop()
            self.failure = exc

    def _on_revoke(self, consumer, partitions) -> None:
        self.commit()

    def commit(self) -> None:
        if not self.in_txn:
            return
        try:
            positions = self.consumer.position(self.consumer.assignment())
            self.producer.send_offsets_to_transaction(positions, self.consumer.consumer_group_metadata(), T)
            if self.before_commit is not None:
                self.before_commit(self)
            self.producer.commit_transaction(T)
            self.commits += 1
        except KafkaException as exc:
            err = exc.args[0]
            if not err.txn_requires_abort():
                raise
            self.aborted.append(err)
            self.producer.abort_transaction(T)
            self.rewind()
        self.in_txn, self.pending = False, 0

    def rewind(self) -> None:
        """After an abort: back to the committed offsets, to read the aborted batch again."""
        assignment = self.consumer.assignment()
        if not assignment:
            return
        for tp in self.consumer.committed(assignment, T):
            self.consumer.seek(
                TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
            )


def run_until_done(cluster: FakeCluster, gid: str, workers: list[Worker], timeout: float = 40) -> None:
    def done() -> bool:
        for w in workers:
            if w.failure is not None:
                raise AssertionError(f"{w.name} failed") from w.failure
        return cluster.committed(gid) == input_end(cluster)

    wait_until(done, timeout, "the group to commit the input's end offsets")


# -- 1. a rebalance mid-stream -----------------------------------------------------------------------
def test_exactly_once_through_members_joining_and_leaving(cluster):
    gid = pick(cluster, "eos-rebalance")
    produce_input(cluster, 0, 300)
    a = Worker(cluster, gid, "a", "eos-a", pace=0.01).start()
    b = Worker(cluster, gid, "b", "eos-b", pace=0.01).start()
    wait_until(lambda: len(cluster.records(OUT, committed=True)) >= 60, 20, "the first committed output")
    c = Worker(cluster, gid, "c", "eos-c", pace=0.01).start()  # joins: a rebalance while a and b process
    produce_input(cluster, 300, 300)
    wait_until(lambda: c.commits >= 1, 20, "c to commit a transaction")
    before = cluster.group(gid).generation
    assert cluster.committed(gid) != input_end(cluster), "the input was not all processed yet"
    a.stop()  # leaves: another rebalance
    produce_input(cluster, 600, 300)
    run_until_done(cluster, gid, [b, c])
    assert cluster.group(gid).generation >= before + 1
    b.stop()
    c.stop()
    assert_exactly_once(cluster, gid, 900)
    assert sum(w.commits for w in (a, b, c)) >= 3 and c.commits >= 1
    committed = [e for e in cluster.events if e.kind == "txn_committed"]
    assert {e.details["transactional_id"] for e in committed} == {"eos-a", "eos-b", "eos-c"}


# -- 2. a member killed mid-transaction and replaced -----------------------------------------------------
def test_replacement_fences_a_zombie_and_output_stays_exactly_once(cluster):
    gid = pick(cluster, "eos-zombie")
    produce_input(cluster, 0, 600)
    workers = [Worker(cluster, gid, n, f"eos-{n}", batch=10, pace=0.01).start() for n in "abc"]
    wait_until(lambda: sum(w.commits for w in workers) >= 6, 20, "a few committed transactions")
    zombie = workers[0]
    zombie.kill()
    open_txn = cluster.transaction("eos-a")
    assert open_txn.state == "Ongoing" and open_txn.partitions, open_txn
    mark = len(cluster.events)
    replacement = Worker(cluster, gid, "a2", "eos-a").start()
    fenced = wait_until(lambda: events(cluster, "txn_fenced", "eos-a", mark), 15, "the zombie to be fenced")
    assert fenced[0].details["reason"] == "fenced by a new instance"
    assert fenced[0].details["epoch"] == open_txn.producer_epoch
    assert fenced[0].details["new_epoch"] == open_txn.producer_epoch + 1
    aborted = wait_until(lambda: events(cluster, "txn_aborted", "eos-a", mark), 15, "the zombie's transaction aborted")
    assert aborted[0].details["partitions"] == [f"{t}-{p}" for t, p in open_txn.partitions]
    # The zombie wakes up and tries to commit: EndTxn v1 answers INVALID_PRODUCER_EPOCH (what
    # PRODUCER_FENCED is below v2), which librdkafka raises as its fatal _FENCED error.
    with pytest.raises(KafkaException) as info:
        zombie.producer.commit_transaction(T)
    err = kafka_error(info)
    assert (err.code(), err.fatal(), err.txn_requires_abort()) == (KafkaError._FENCED, True, False), err
    run_until_done(cluster, gid, [replacement, *workers[1:]], timeout=60)
    for w in (replacement, *workers[1:]):
        w.stop()
    zombie.in_txn = False  # nothing for its revocation callback to commit
    close_abandoned(zombie.consumer)
    assert_exactly_once(cluster, gid, 600)
    assert replacement.commits >= 1


# -- 3. the transaction coordinator moves mid-transaction ----------------------------------------------
def test_commit_survives_a_transaction_coordinator_move(cluster):
    gid = pick(cluster, "eos-move")
    produce_input(cluster, 0, 300)
    moves: list[tuple[int, int]] = []

    def move_once(w: Worker) -> None:
        if not moves and w.commits >= 1:
            old = cluster.transaction(w.tid).coordinator
            moves.append((old, cluster.move_transaction_coordinator(w.tid, load_time_ms=1500)))

    workers = [Worker(cluster, gid, n, f"eos-move-{n}").start() for n in "ab"]
    workers[0].before_commit = move_once
    mark = len(cluster.events)
    run_until_done(cluster, gid, workers)
    for w in workers:
        w.stop()
    assert len(moves) == 1 and moves[0][0] != moves[0][1]
    assert cluster.transaction("eos-move-a").coordinator == moves[0][1]
    assert workers[0].aborted == [], "the commit after the move must not be aborted"
    moved = [
        e for e in cluster.events[mark:] if e.kind == "leader_moved" and e.details["topic"] == "__transaction_state"
    ]
    assert [e.details["leader"] for e in moved] == [moves[0][1]]
    refused = [e for e in cluster.events[mark:] if e.kind == "request_error" and e.client_id == "a-p"]
    errors = [e.details["error"] for e in refused if e.details["api"] == "EndTxn"]
    # The old coordinator refuses EndTxn; librdkafka looks the coordinator up again (about half a
    # second later) and the new one, still loading, answers COORDINATOR_LOAD_IN_PROGRESS.
    assert errors[0] == "NOT_COORDINATOR" and "COORDINATOR_LOAD_IN_PROGRESS" in errors, errors
    assert set(errors) == {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"}, errors
    committed = events(cluster, "txn_committed", "eos-move-a", mark)
    assert committed and committed[-1].broker == moves[0][1], "the new coordinator completed the commit"
    assert_exactly_once(cluster, gid, 300)


# -- 4. the transaction timeout --------------------------------------------------------------------------
def test_an_open_transaction_times_out_and_is_aborted(cluster):
    producer = txn_producer(cluster, "slow", **{"transaction.timeout.ms": 2000})
    producer.init_transactions(T)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(OUT, key=b"s%d" % i, value=b"x", partition=i % 2)
    assert producer.flush(T) == 0
    view = cluster.transaction("slow")
    assert (view.state, view.timeout_ms, view.partitions) == ("Ongoing", 2000, [(OUT, 0), (OUT, 1)])
    timed_out = cluster.wait_for_sync(lambda c: events(c, "txn_timed_out", "slow"), timeout=10)
    assert timed_out[0].details["timeout_ms"] == 2000
    cluster.wait_for_sync(lambda c: events(c, "txn_aborted", "slow"), timeout=10)
    assert cluster.transaction("slow").state == "CompleteAbort"
    assert cluster.transaction("slow").producer_epoch == view.producer_epoch + 1
    assert len(cluster.records(OUT)) == 10  # all stored, each partition ending with an abort marker:
    assert [cluster.offsets(OUT, p) for p in (0, 1)] == [(0, 6), (0, 6)]
    assert cluster.records(OUT, committed=True) == []
    with pytest.raises(KafkaException) as info:
        producer.commit_transaction(T)
    err = kafka_error(info)
    # The coordinator bumped the epoch when it aborted: EndTxn v1 answers INVALID_PRODUCER_EPOCH,
    # which librdkafka raises as fatal _FENCED, as against Kafka.
    assert (err.code(), err.fatal()) == (KafkaError._FENCED, True), err
    assert cluster.records(OUT, committed=True) == []


def test_kafkas_default_timeout_passes_in_virtual_time():
    """transaction.timeout.ms 60 s and Kafka's 10 s abort check, in well under a second of real time."""
    with FakeCluster(brokers=1, topics={OUT: 1}, virtual_time=True).run_in_thread() as c:
        producer = txn_producer(c, "patient")  # librdkafka's default transaction.timeout.ms: 60 s
        producer.init_transactions(T)
        producer.begin_transaction()
        producer.produce(OUT, key=b"k", value=b"v", partition=0)
        assert producer.flush(T) == 0
        started = c.clock.now_ms()
        c.clock.advance(59)  # within its timeout (and the next checks find it young enough)
        assert c.transaction("patient").state == "Ongoing" and not events(c, "txn_timed_out", "patient")
        c.clock.advance(11)  # past 60 s: the next 10-second check aborts it
        [timed_out] = events(c, "txn_timed_out", "patient")
        assert 60_000 < timed_out.time_ms - started <= 70_000
        assert c.transaction("patient").state == "CompleteAbort"
        assert c.records(OUT, committed=True) == []
        with pytest.raises(KafkaException) as info:
            producer.commit_transaction(T)
        assert (kafka_error(info).code(), kafka_error(info).fatal()) == (KafkaError._FENCED, True)


def test_markers_written_after_the_answer_make_the_next_transaction_wait():
    """As on Kafka, EndTxn is answered while the transaction is still PrepareCommit; the next one's
    AddPartitionsToTxn gets CONCURRENT_TRANSACTIONS until the markers are written, and librdkafka retries."""
    with FakeCluster(brokers=3, topics={OUT: 3}, transaction_marker_delay_ms=30).run_in_thread() as c:
        producer = txn_producer(c, "marker-delay")
        producer.init_transactions(T)
        for n in range(10):
            producer.begin_transaction()
            for p in range(3):
                producer.produce(OUT, key=b"%d-%d" % (n, p), value=b"v", partition=p)
            producer.commit_transaction(T)
        c.wait_for_sync(lambda cl: len(events(cl, "txn_committed", "marker-delay")) == 10, timeout=5)
        keys = sorted(k for _, _, k, _ in c.records(OUT, committed=True))
        assert keys == sorted(b"%d-%d" % (n, p) for n in range(10) for p in range(3))
        refused = [e for e in c.events if e.kind == "request_error" and e.details["error"] == "CONCURRENT_TRANSACTIONS"]
        assert refused and {e.details["api"] for e in refused} <= {"AddPartitionsToTxn", "InitProducerId"}


# -- 5. read_committed and read_uncommitted readers ----------------------------------------------------
def reader(cluster: FakeCluster, isolation: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            **DEBUG,
        }
    )
    consumer.assign([TopicPartition(OUT, 0, OFFSET_BEGINNING)])
    return consumer


def read_for(consumer: Consumer, expected: int, quiet: float = 0.5, timeout: float = 10) -> list[bytes]:
    """The keys ``consumer`` reads until it has ``expected`` records and then nothing more for
    ``quiet`` seconds (its fetches wait 50 ms at most: ten of them come back empty), or until
    ``timeout``: what it reads, with anything it should not have read arriving in the meantime."""
    got: list[bytes] = []
    now = time.monotonic()
    end, last = now + timeout, now
    while now < end and (len(got) < expected or now - last < quiet):
        msg = consumer.poll(0.05)
        now = time.monotonic()
        if msg is not None and msg.error() is None:
            got.append(msg.key())
            last = now
    return got


def test_read_committed_sees_committed_data_and_stops_at_the_lso(cluster):
    def txn(tid: str, keys: list[bytes], end: str | None) -> Producer:
        p = txn_producer(cluster, tid)
        p.init_transactions(T)
        p.begin_transaction()
        for k in keys:
            p.produce(OUT, key=k, value=b"x", partition=0)
        assert p.flush(T) == 0
        if end == "commit":
            p.commit_transaction(T)
        elif end == "abort":
            p.abort_transaction(T)
        return p

    keys = {name: [b"%s%d" % (name.encode(), i) for i in range(5)] for name in ("a", "c", "o", "d")}
    txn("aborted", keys["a"], "abort")
    txn("committed", keys["c"], "commit")
    open_producer = txn("open", keys["o"], None)  # offsets 12..16, still open: the LSO is 12
    txn("later", keys["d"], "commit")  # 17..21 and its marker: committed, but above the LSO
    lso, hw = 12, 23
    assert cluster.offsets(OUT, 0) == (0, hw)
    committed_reader, uncommitted_reader = reader(cluster, "read_committed"), reader(cluster, "read_uncommitted")
    try:
        assert read_for(committed_reader, 5) == keys["c"]
        assert read_for(uncommitted_reader, 20) == keys["a"] + keys["c"] + keys["o"] + keys["d"]
        # ListOffsets(latest) with the reader's isolation level: the LSO for read_committed.
        assert committed_reader.get_watermark_offsets(TopicPartition(OUT, 0), T, cached=False) == (0, lso)
        assert uncommitted_reader.get_watermark_offsets(TopicPartition(OUT, 0), T, cached=False) == (0, hw)
        assert committed_reader.position([TopicPartition(OUT, 0)])[0].offset == lso
        open_producer.commit_transaction(T)
        assert read_for(committed_reader, 10) == keys["o"] + keys["d"]
        assert committed_reader.get_watermark_offsets(TopicPartition(OUT, 0), T, cached=False) == (0, hw + 1)
    finally:
        committed_reader.close()
        uncommitted_reader.close()
    assert [k for _, _, k, _ in cluster.records(OUT, committed=True)] == keys["c"] + keys["o"] + keys["d"]


# -- 6. KIP-447: stale group metadata is refused -------------------------------------------------------
def test_offsets_sent_with_stale_group_metadata_are_refused(cluster):
    gid = pick(cluster, "eos-stale")
    produce_input(cluster, 0, 60)
    consumers = []

    def member(name: str) -> Consumer:
        c = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": gid,
                "client.id": name,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **GROUP,
                **DEBUG,
            }
        )
        c.subscribe([IN])
        consumers.append(c)
        return c

    def poll_all(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for c in consumers:
                c.poll(0.02)

    def stable_generation(size: int) -> int:
        def check():
            poll_all(0.1)
            view = cluster.group(gid)
            if view is None or view.state != "Stable" or len(view.members) != size:
                return None
            return sum(len(c.assignment()) for c in consumers) == PARTITIONS and view.generation

        return wait_until(check, 20, f"a stable group of {size}")

    first = member("first")
    gen1 = stable_generation(1)
    stale = first.consumer_group_metadata()
    producer = txn_producer(cluster, "stale-txn")
    producer.init_transactions(T)
    second = member("second")  # a rebalance: generation gen1 + 1
    assert stable_generation(2) > gen1
    offsets = [TopicPartition(IN, p, 5) for p in range(PARTITIONS)]

    producer.begin_transaction()
    producer.produce(OUT, key=b"z", value=b"z", partition=0)
    with pytest.raises(KafkaException) as info:
        producer.send_offsets_to_transaction(offsets, stale, T)
    err = kafka_error(info)
    assert (err.code(), err.txn_requires_abort(), err.fatal()) == (KafkaError.ILLEGAL_GENERATION, True, False), err
    producer.abort_transaction(T)

    # A member that has left: UNKNOWN_MEMBER_ID, also abortable.
    gone = second.consumer_group_metadata()
    consumers.remove(second)
    second.close()
    stable_generation(1)
    producer.begin_transaction()
    with pytest.raises(KafkaException) as info:
        producer.send_offsets_to_transaction(offsets, gone, T)
    err = kafka_error(info)
    assert (err.code(), err.txn_requires_abort(), err.fatal()) == (KafkaError.UNKNOWN_MEMBER_ID, True, False), err
    producer.abort_transaction(T)

    # The current metadata is accepted, and the offsets land only at the commit.
    producer.begin_transaction()
    producer.send_offsets_to_transaction(offsets, first.consumer_group_metadata(), T)
    assert cluster.committed(gid) == {}
    # OffsetFetch with require_stable (librdkafka's read_committed): UNSTABLE_OFFSET_COMMIT while
    # the transaction holds offsets; librdkafka retries it until its timeout.
    mark = len(cluster.events)
    with pytest.raises(KafkaException) as info:
        first.committed([TopicPartition(IN, 0)], 1.5)
    assert kafka_error(info).code() == KafkaError._TIMED_OUT
    unstable = [e for e in cluster.events[mark:] if e.kind == "request_error" and e.details["api"] == "OffsetFetch"]
    assert unstable and {e.details["error"] for e in unstable} == {"UNSTABLE_OFFSET_COMMIT"}
    producer.commit_transaction(T)
    assert cluster.committed(gid) == {(IN, p): 5 for p in range(PARTITIONS)}
    assert [tp.offset for tp in first.committed([TopicPartition(IN, 0)], T)] == [5]
    assert cluster.records(OUT, committed=True) == []  # the aborted record stays invisible
    first.close()


# -- 7. coordinator errors are retried ----------------------------------------------------------------
@pytest.mark.parametrize(
    "api,error",
    [
        ("InitProducerId", "COORDINATOR_LOAD_IN_PROGRESS"),
        ("InitProducerId", "CONCURRENT_TRANSACTIONS"),
        ("AddPartitionsToTxn", "CONCURRENT_TRANSACTIONS"),
        ("AddPartitionsToTxn", "NOT_COORDINATOR"),
        ("AddOffsetsToTxn", "COORDINATOR_LOAD_IN_PROGRESS"),
        ("TxnOffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS"),
        ("TxnOffsetCommit", "NOT_COORDINATOR"),
        ("EndTxn", "COORDINATOR_LOAD_IN_PROGRESS"),
        ("EndTxn", "NOT_COORDINATOR"),
        ("EndTxn", "CONCURRENT_TRANSACTIONS"),
    ],
)
def test_transactional_calls_retry_coordinator_errors(cluster, api, error):
    gid = pick(cluster, "eos-fault")
    produce_input(cluster, 0, 120)
    rule = cluster.faults.add(api=api, error=error, times=2)
    worker = Worker(cluster, gid, "w", "eos-fault", batch=30).start()
    run_until_done(cluster, gid, [worker])
    worker.stop()
    fired = [e for e in cluster.events if e.kind == "fault_fired" and e.details["rule"] == rule.id]
    assert len(fired) == 2
    assert worker.aborted == [], "a retriable error must not abort the transaction"
    assert_exactly_once(cluster, gid, 120)
    assert not events(cluster, "txn_aborted", "eos-fault")

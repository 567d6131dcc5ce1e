"""``fakebroker.testing.poll_until`` and ``poll_until_async`` with real clients: consumers kept
polling until their group is Stable with both members (then the assignment is asserted), the
records polled meanwhile handed to ``on_record`` or put back for the caller's next poll, and a
timeout that says what it waited for. confluent-kafka and kafka-python on the test's thread
(the cluster in its own); aiokafka and confluent-kafka in async tests with the cluster on the
test's own loop (asyncio and trio)."""

from __future__ import annotations

import time
from collections import Counter

import anyio
import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer

from fakebroker import DeliveryLedger, FakeCluster
from fakebroker.cluster import WaitTimeout
from fakebroker.cluster import conditions as cond
from fakebroker.testing import assert_assignment, poll_until, poll_until_async

from .kafka_python_join import knows_partitions

pytestmark = pytest.mark.clients
TOPIC, RECORDS = "orders", 60
FAST = {"heartbeat.interval.ms": 100, "session.timeout.ms": 6000, "log_level": 0}


@pytest.fixture
def cluster():
    with FakeCluster(topics={TOPIC: 6}).run_in_thread() as c:
        yield c


@pytest.fixture
def cluster_both_join():
    """A group's first join waits 1 s for the rest, as Kafka's does (3 s by default; fakebroker's
    0): both consumers start in one generation. Without that, one could read before the other
    joined, and with no commits the rebalance hands it those records again (at least once)."""
    with FakeCluster(topics={TOPIC: 6}, config={"group.initial.rebalance.delay.ms": 1000}).run_in_thread() as c:
        yield c


def produce(cluster: FakeCluster, ledger: DeliveryLedger | None = None, n: int = RECORDS) -> None:
    config = {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 2}
    if ledger is not None:
        config["on_delivery"] = ledger.on_delivery
    producer = Producer(config)
    for i in range(n):
        producer.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(10) == 0


class CountingConsumer(Consumer):
    """A confluent-kafka Consumer that counts the records its ``poll`` returned."""

    def __init__(self, config: dict) -> None:
        super().__init__(config)
        self.polled = 0

    def poll(self, *args, **kwargs):
        msg = super().poll(*args, **kwargs)
        if msg is not None and msg.error() is None:
            self.polled += 1
        return msg


def confluent(cluster: FakeCluster, gid: str, name: str, cls: type = Consumer) -> Consumer:
    c = cls(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": gid,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "partition.assignment.strategy": "range",
            **FAST,
        }
    )
    c.subscribe([TOPIC])
    return c


class CountingKafkaConsumer(KafkaConsumer):
    """kafka-python's KafkaConsumer, counting the records its ``poll`` returned."""

    polled = 0

    def poll(self, *args, **kwargs):
        batches = super().poll(*args, **kwargs)
        self.polled += sum(len(b) for b in batches.values())
        return batches


def kafka_python(cluster: FakeCluster, gid: str, name: str, cls: type = KafkaConsumer) -> KafkaConsumer:
    """A kafka-python consumer that knows the topic's partitions before its first JoinGroup
    (kafka-python 3.0.12 can lose a first leader's rejoin otherwise: kafka_python_join.py)."""
    consumer = cls(
        TOPIC,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=gid,
        client_id=name,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=50,
        heartbeat_interval_ms=100,
        session_timeout_ms=6000,
    )
    knows_partitions(consumer, TOPIC, 6)
    return consumer


# -- confluent-kafka -----------------------------------------------------------------------------------
def test_confluent_consumers_polled_until_the_group_is_stable_with_both(cluster):
    a, b = confluent(cluster, "g", "a"), confluent(cluster, "g", "b")
    try:
        view = poll_until([a, b], cond.GroupState("g", "Stable", members=2), cluster=cluster, timeout=20)
        assert (view.state, len(view.members)) == ("Stable", 2)
        # range over member ids "a-…" < "b-…": a takes the first half
        assert view.assignment == {"a": {TOPIC: [0, 1, 2]}, "b": {TOPIC: [3, 4, 5]}}
        assert_assignment(cluster, "g", {"a": {TOPIC: [0, 1, 2]}, "b": {TOPIC: [3, 4, 5]}})
        # and a predicate: until both clients have taken in their assignment
        mine = poll_until([a, b], lambda: len(a.assignment()) == 3 and len(b.assignment()) == 3, timeout=20)
        assert mine is True
        assert sorted(tp.partition for tp in a.assignment()) == [0, 1, 2]
    finally:
        a.close()
        b.close()


def test_confluent_records_polled_meanwhile_go_to_on_record_by_name(cluster_both_join):
    cluster = cluster_both_join
    ledger = DeliveryLedger(cluster)
    produce(cluster, ledger)
    a, b = confluent(cluster, "g", "a"), confluent(cluster, "g", "b")
    try:
        # on_record(name, record) is the ledger's record(member, message)
        done = poll_until({"a": a, "b": b}, lambda: not ledger.verdict().lost, on_record=ledger.record, timeout=20)
        assert done is True
    finally:
        a.close()
        b.close()
    verdict = ledger.assert_exactly_once()
    assert (verdict.produced, verdict.processed) == (RECORDS, RECORDS)


def test_confluent_records_polled_meanwhile_are_put_back_for_the_next_poll(cluster_both_join):
    cluster = cluster_both_join
    produce(cluster)
    a, b = (confluent(cluster, "g", n, CountingConsumer) for n in "ab")
    try:
        # poll_until itself polls every record (the predicate counts them), then puts them back
        poll_until([a, b], lambda: a.polled + b.polled >= RECORDS, timeout=20)
        assert a.polled + b.polled == RECORDS
        seen: Counter = Counter()
        deadline = time.monotonic() + 20
        while sum(seen.values()) < RECORDS and time.monotonic() < deadline:
            for c in (a, b):
                msg = c.poll(0.05)
                if msg is not None and msg.error() is None:
                    seen[(msg.partition(), msg.offset())] += 1
        assert sum(seen.values()) == RECORDS and max(seen.values()) == 1  # each record again, from offset 0
        assert min(o for p, o in seen) == 0
    finally:
        a.close()
        b.close()


def test_a_timeout_says_what_was_awaited_and_what_each_consumer_polled(cluster):
    produce(cluster, n=6)
    a = confluent(cluster, "g", "a")
    try:
        start = time.monotonic()
        with pytest.raises(WaitTimeout) as failed:
            poll_until({"a": a}, cond.GroupState("g", "Stable", members=2), cluster=cluster, timeout=3)
        assert 3 <= time.monotonic() - start < 8
        text = str(failed.value)
        assert text == (
            "poll_until waited 3 s for group 'g' is Stable with 2 members "
            "(last seen: Stable, generation 1, 1 members), polling a: 6 records (put back for the next poll)"
        ), text

        def never() -> bool:
            return False

        # the 6 records were put back: polled again (as many as came in half a second)
        with pytest.raises(
            WaitTimeout, match=r"^poll_until waited 0.5 s for never \(last value: False\), polling a: \d"
        ):
            poll_until({"a": a}, never, timeout=0.5)
        with pytest.raises(WaitTimeout, match=r"for <lambda> \(last exception: KeyError\('x'\)\), polling a: \d+ rec"):
            poll_until({"a": a}, lambda: {}["x"], timeout=0.3)  # an exception counts as "not yet"
    finally:
        a.close()


# -- kafka-python ----------------------------------------------------------------------------------------
def test_kafka_python_consumers_polled_until_the_group_is_stable_with_both(cluster):
    a, b = kafka_python(cluster, "kg", "a"), kafka_python(cluster, "kg", "b")
    try:
        view = poll_until({"a": a, "b": b}, cond.GroupState("kg", members=2), cluster=cluster, timeout=20)
        assert view.assignment == {"a": {TOPIC: [0, 1, 2]}, "b": {TOPIC: [3, 4, 5]}}  # range, its default first
        assert_assignment(cluster, "kg", view.assignment)
    finally:
        a.close(autocommit=False)
        b.close(autocommit=False)


def test_kafka_python_records_are_handed_over_or_put_back(cluster):
    ledger = DeliveryLedger(cluster)
    produce(cluster, ledger)
    a = kafka_python(cluster, "kg", "a", CountingKafkaConsumer)
    try:
        poll_until([a], lambda: a.polled >= RECORDS, timeout=20)  # polled, then put back
        got = []
        done = poll_until(a, lambda: len(got) >= RECORDS, on_record=lambda who, r: got.append((who, r)), timeout=20)
        assert done is True and {who for who, _ in got} == {a}
        for _, record in got:
            ledger.record("a", record)
    finally:
        a.close(autocommit=False)
    verdict = ledger.assert_exactly_once()  # every record handed over once, none skipped by the put back
    assert (verdict.produced, verdict.processed) == (RECORDS, RECORDS)


def test_kafka_python_reads_through_a_slow_sync_group(cluster):
    """Every SyncGroup answer held 0.5 s, ten times poll_until's interval: the consumer's polls
    time out mid-join and it still takes all six partitions and reads every record. (kafka-python
    throws away a join that completes between two polls and joins again, so on a loaded machine
    the group can take a few generations to get there.)"""
    produce(cluster)
    cluster.faults.add(api="SyncGroup", action="delay", delay=0.5)
    a = kafka_python(cluster, "kg", "a", CountingKafkaConsumer)
    try:
        got = []
        assert poll_until(a, lambda: len(got) >= RECORDS, on_record=lambda who, r: got.append(r), timeout=20) is True
        assert sorted(tp.partition for tp in a.assignment()) == list(range(6))
        assert len({(r.partition, r.offset) for r in got}) == RECORDS
        view = cluster.group("kg")
        assert (view.state, len(view.members)) == ("Stable", 1)
    finally:
        a.close(autocommit=False)


def test_two_kafka_python_consumers_read_through_a_slow_sync_group(cluster_both_join):
    """poll_until polls two kafka-python consumers at once, each in a thread of its own (polled
    in turn, a join that completes while the other is polled is thrown away and done again).
    Every SyncGroup answer held 0.33 s: both take their half and every record is handed over."""
    cluster = cluster_both_join
    ledger = DeliveryLedger(cluster)
    produce(cluster, ledger)
    cluster.faults.add(api="SyncGroup", action="delay", delay=0.33)
    consumers = {"a": kafka_python(cluster, "kg", "a"), "b": kafka_python(cluster, "kg", "b")}
    try:
        done = poll_until(consumers, lambda: not ledger.verdict().lost, on_record=ledger.record, timeout=30)
        assert done is True
        view = cluster.group("kg")
        assert view.state == "Stable" and view.assignment == {"a": {TOPIC: [0, 1, 2]}, "b": {TOPIC: [3, 4, 5]}}
        assert sorted(tp.partition for tp in consumers["a"].assignment()) == [0, 1, 2]
        assert sorted(tp.partition for tp in consumers["b"].assignment()) == [3, 4, 5]
    finally:
        for c in consumers.values():
            c.close(autocommit=False)
    verdict = ledger.verdict()  # at least once: no commits, so an extra generation reads again
    assert (verdict.produced, verdict.lost) == (RECORDS, [])


# -- async: the cluster on the test's own loop ---------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_aiokafka_consumers_polled_until_the_group_is_stable(anyio_backend):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor

    async with FakeCluster(topics={TOPIC: 6}) as cluster:
        ledger = DeliveryLedger(cluster)
        consumers = {}
        for name in "ab":
            consumers[name] = AIOKafkaConsumer(
                TOPIC,
                bootstrap_servers=cluster.bootstrap_servers,
                group_id="ag",
                client_id=name,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                heartbeat_interval_ms=100,
                partition_assignment_strategy=(RangePartitionAssignor,),
            )
            await consumers[name].start()
        try:
            with anyio.fail_after(30):
                view = await poll_until_async(consumers, cond.GroupState("ag", members=2), cluster=cluster, timeout=20)
                assert view.assignment == {"a": {TOPIC: [0, 1, 2]}, "b": {TOPIC: [3, 4, 5]}}

                async def produced() -> int:  # an async predicate is awaited
                    return ledger.verdict().produced

                producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "on_delivery": ledger.on_delivery})
                for i in range(RECORDS):
                    producer.produce(TOPIC, key=b"k%d" % i, value=b"v")
                await anyio.to_thread.run_sync(producer.flush, 10)
                assert await poll_until_async(consumers, produced, timeout=10) == RECORDS
                await poll_until_async(
                    consumers, lambda: not ledger.verdict().lost, on_record=ledger.record, timeout=20
                )
        finally:
            for c in consumers.values():
                await c.stop()
        verdict = ledger.assert_exactly_once()
        assert (verdict.produced, verdict.processed) == (RECORDS, RECORDS)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_confluent_consumers_polled_from_async_code_beside_the_cluster(anyio_backend):
    """A confluent consumer blocks in poll: poll_until_async polls it in a worker thread, so the
    cluster on this loop goes on answering."""
    async with FakeCluster(topics={TOPIC: 6}) as cluster:
        a, b = confluent(cluster, "cg", "a"), confluent(cluster, "cg", "b")
        try:
            with anyio.fail_after(30):
                view = await poll_until_async({"a": a, "b": b}, cond.GroupState("cg", members=2), cluster=cluster)
            assert view.assignment == {"a": {TOPIC: [0, 1, 2]}, "b": {TOPIC: [3, 4, 5]}}
            with pytest.raises(RuntimeError, match=r"poll_until blocks; in \w+ code use `await poll_until_async"):
                poll_until([a], lambda: True)
        finally:
            await anyio.to_thread.run_sync(a.close)
            await anyio.to_thread.run_sync(b.close)


# -- a share consumer: its records cannot be put back, so they go to on_record -----------------------------
def test_a_share_consumer_needs_on_record_and_hands_every_record_to_it():
    from confluent_kafka import ShareConsumer

    with FakeCluster(brokers=1, config={"group.share.heartbeat.interval.ms": 200}).run_in_thread() as cluster:
        cluster.create_topic("jobs", partitions=2)
        ledger = DeliveryLedger(cluster, group="workers")
        worker = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "workers", "log_level": 0})
        worker.subscribe(["jobs"])
        try:
            with pytest.raises(TypeError, match=r"a share consumer's records cannot be put back .* give on_record="):
                poll_until(worker, lambda: True)
            poll_until({"w1": worker}, cond.share_group_stable("workers", 1), cluster=cluster, on_record=ledger.record)
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "on_delivery": ledger.on_delivery})
            for i in range(20):  # share.auto.offset.reset is latest: produced after joining
                producer.produce("jobs", value=b"job-%d" % i, partition=i % 2)
            assert producer.flush(10) == 0
            poll_until({"w1": worker}, lambda: not ledger.queue_verdict().lost, on_record=ledger.record, timeout=20)
        finally:
            worker.close()
        verdict = ledger.assert_queue_delivery()
        assert (verdict.produced, verdict.processed, verdict.repeats) == (20, 20, [])

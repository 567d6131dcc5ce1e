"""Group shapes no other test covers, with librdkafka (confluent-kafka) consumers of the classic
protocol: more members than partitions, two groups reading one topic independently, partitions
added while a group consumes, and a regex subscription picking up a topic created after it
subscribed. Each asserts what a real broker gives: assignments, records and committed offsets.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients
TOPIC = "orders"


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={TOPIC: 6}).run_in_thread() as c:
        yield c


def consumer(cluster: FakeCluster, group: str, name: str, **extra) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
            "topic.metadata.refresh.interval.ms": 500,  # new partitions and topics are seen within a second
            "log_level": 3,
            **extra,
        }
    )


def produce(cluster: FakeCluster, topic: str, keys: range, partitions: int, acked: Callable | None = None) -> None:
    """``acked``: an ``on_delivery`` callback (a ledger's) for each record."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, "log_level": 3})
    for i in keys:
        producer.produce(
            topic, value=f"v-{i}".encode(), key=f"key-{i}".encode(), partition=i % partitions, on_delivery=acked
        )
    assert producer.flush(15) == 0


class Members:
    """Consumers polled in turn; each record read is kept as (member, topic, partition, key) and
    given to ``ledger``, then committed synchronously. A rebalance happens only inside a poll, so
    a record is always committed before its partition can move: the ledgers' verdicts are
    exactly once (no duplicates) in every test here."""

    def __init__(self, consumers: dict[str, Consumer], ledger: DeliveryLedger | None = None):
        self.consumers = consumers
        self.ledger = ledger
        self.records: list[tuple[str, str, int, str]] = []

    def subscribe(self, topics: list[str]) -> None:
        for c in self.consumers.values():
            c.subscribe(topics)

    def poll(self) -> None:
        for name, c in self.consumers.items():
            msg = c.poll(0.02)
            if msg is None or msg.error():
                continue
            self.records.append((name, msg.topic(), msg.partition(), msg.key().decode()))
            if self.ledger is not None:
                self.ledger.record(name, msg)
            c.commit(message=msg, asynchronous=False)

    def until(self, what: str, done: Callable[[], bool], timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"no {what} within {timeout} s"
            self.poll()

    def held(self) -> dict[str, list[tuple[str, int]]]:
        return {n: sorted((tp.topic, tp.partition) for tp in c.assignment()) for n, c in self.consumers.items()}

    def close(self) -> None:
        for c in self.consumers.values():
            c.close()


def stable(cluster: FakeCluster, group: str, members: int, partitions: int) -> bool:
    g = cluster.group(group)
    owned = g and sum(len(ps) for m in g.members for ps in (m.assignment or {}).values())
    return bool(g and g.state == "Stable" and len(g.members) == members and owned == partitions)


def test_eight_members_on_six_partitions_leave_two_idle_and_read_everything_once(cluster):
    ledger = DeliveryLedger(cluster, group="eight")
    members = Members({f"m{i}": consumer(cluster, "eight", f"m{i}") for i in range(8)}, ledger)
    try:
        members.subscribe([TOPIC])
        members.until("a Stable group of 8", lambda: stable(cluster, "eight", 8, 6))
        group = cluster.group("eight")
        shares = sorted(len(m.assignment.get(TOPIC, [])) for m in group.members)
        assert shares == [0, 0, 1, 1, 1, 1, 1, 1]  # range: one each, two members idle
        members.until(
            "the clients holding the coordinator's split", lambda: sorted(map(len, members.held().values())) == shares
        )

        produce(cluster, TOPIC, range(120), 6, ledger.on_delivery)
        members.until("120 records", lambda: len(members.records) >= 120)
        assert sorted(k for _, _, _, k in members.records) == sorted(f"key-{i}" for i in range(120))
        idle = {n for n, held in members.held().items() if not held}
        assert len(idle) == 2 and not {n for n, *_ in members.records} & idle
        members.until(
            "every offset committed", lambda: cluster.committed("eight") == {(TOPIC, p): 20 for p in range(6)}
        )
        assert cluster.group("eight").generation == group.generation  # no rebalance while reading
        verdict = ledger.assert_exactly_once()
        assert (verdict.produced, verdict.processed, verdict.committed_beyond_processed) == (120, 120, [])
    finally:
        members.close()


def test_two_groups_read_one_topic_independently(cluster):
    ledgers = {g: DeliveryLedger(cluster, group=g) for g in ("billing", "audit")}
    produce(
        cluster, TOPIC, range(60), 6, lambda err, msg: [ledger.on_delivery(err, msg) for ledger in ledgers.values()]
    )
    billing = Members({f"b{i}": consumer(cluster, "billing", f"b{i}") for i in range(2)}, ledgers["billing"])
    audit = Members({"a0": consumer(cluster, "audit", "a0")}, ledgers["audit"])
    try:
        billing.subscribe([TOPIC])
        audit.subscribe([TOPIC])
        billing.until("billing's 60", lambda: len(billing.records) >= 60)
        audit.until("audit's 60", lambda: len(audit.records) >= 60)
        everything = sorted(f"key-{i}" for i in range(60))
        assert sorted(k for *_, k in billing.records) == everything  # each group gets every record once
        assert sorted(k for *_, k in audit.records) == everything
        assert {n for n, *_ in billing.records} == {"b0", "b1"}
        expected = {(TOPIC, p): 10 for p in range(6)}
        billing.until("billing's commits", lambda: cluster.committed("billing") == expected)
        assert cluster.committed("audit") == expected
        # a group's rebalance does not touch the other
        audit_generation = cluster.group("audit").generation
        billing.consumers.pop("b1").close()
        billing.until("billing rebalanced to one member", lambda: stable(cluster, "billing", 1, 6))
        assert cluster.group("audit").generation == audit_generation
        assert len(cluster.group("audit").members) == 1
        for ledger in ledgers.values():  # each group: every record once (billing's leaver had committed all)
            verdict = ledger.assert_exactly_once()
            assert (verdict.produced, verdict.processed, verdict.committed_beyond_processed) == (60, 60, [])
    finally:
        billing.close()
        audit.close()


def test_partitions_added_while_consuming_are_assigned_and_read(cluster):
    ledger = DeliveryLedger(cluster, group="growing")
    members = Members({f"m{i}": consumer(cluster, "growing", f"m{i}") for i in range(2)}, ledger)
    try:
        members.subscribe([TOPIC])
        members.until("a Stable group", lambda: stable(cluster, "growing", 2, 6))
        generation = cluster.group("growing").generation
        produce(cluster, TOPIC, range(60), 6, ledger.on_delivery)
        members.until("the first 60", lambda: len(members.records) >= 60)

        cluster.add_partitions(TOPIC, 8)  # 6 -> 8 partitions while the group consumes
        members.until("the 8 partitions assigned", lambda: stable(cluster, "growing", 2, 8), timeout=30)
        assert cluster.group("growing").generation > generation  # the metadata change made the group rebalance
        members.until("the clients holding 8", lambda: sum(map(len, members.held().values())) == 8)
        produce(cluster, TOPIC, range(60, 140), 8, ledger.on_delivery)
        members.until("all 140", lambda: len({k for *_, k in members.records}) >= 140)
        read = sorted({k for *_, k in members.records})
        assert read == sorted(f"key-{i}" for i in range(140))
        assert {p for _, _, p, _ in members.records} == set(range(8))
        members.until(
            "commits on the new partitions",
            lambda: all(cluster.committed("growing").get((TOPIC, p), 0) > 0 for p in (6, 7)),
        )
        # the rebalance for the new partitions moved none uncommitted: every record once
        verdict = ledger.assert_exactly_once()
        assert (verdict.produced, verdict.processed, verdict.committed_beyond_processed) == (140, 140, [])
    finally:
        members.close()


def test_regex_subscription_picks_up_a_topic_created_after_it_subscribed(cluster):
    cluster.create_topic("orders-eu", 2)
    ledger = DeliveryLedger(cluster, group="regex")
    members = Members({f"m{i}": consumer(cluster, "regex", f"m{i}") for i in range(2)}, ledger)
    try:
        members.subscribe(["^orders-.*"])
        members.until("orders-eu assigned", lambda: stable(cluster, "regex", 2, 2))
        generation = cluster.group("regex").generation

        cluster.create_topic("orders-us", 4)  # matches the pattern; "orders" itself does not
        members.until("orders-us assigned too", lambda: stable(cluster, "regex", 2, 6), timeout=30)
        assert cluster.group("regex").generation > generation
        owned = {tp for m in cluster.group("regex").members for tp in m.assignment}
        assert owned == {"orders-eu", "orders-us"}
        produce(cluster, "orders-us", range(40), 4, ledger.on_delivery)
        produce(cluster, TOPIC, range(40, 50), 6)  # not subscribed
        members.until("orders-us's 40", lambda: len(members.records) >= 40)
        time.sleep(0.3)
        members.poll()
        assert sorted(k for *_, k in members.records) == sorted(f"key-{i}" for i in range(40))
        assert {t for _, t, _, _ in members.records} == {"orders-us"}
        verdict = ledger.assert_exactly_once()
        assert (verdict.produced, verdict.processed, verdict.committed_beyond_processed) == (40, 40, [])
    finally:
        members.close()

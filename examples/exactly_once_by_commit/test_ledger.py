"""Balances are exact under rebalances, a coordinator move, failing commits and a broker restart.

Each payment must be applied to the database once: a :class:`~fakebroker.DeliveryLedger` is fed
when ``apply`` applies one (a record read again is skipped there, not applied) and judges that.
Its ``group=`` also checks the Kafka commits (lag monitoring only): each is made after its
record was applied, so none is beyond what was applied."""

from __future__ import annotations

import random
import time
from collections import Counter

import ledger as payments_ledger
import pytest
from confluent_kafka import Producer
from ledger import LedgerMember, balances

from fakebroker import DeliveryLedger

pytestmark = pytest.mark.clients
PAYMENTS = 800
TIMINGS = {
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 300,
    "max.poll.interval.ms": 10000,
    "log_level": 2,
    "reconnect.backoff.max.ms": 500,
}


@pytest.mark.fakebroker(brokers=3)
def test_balances_are_exact_under_bad_days(fakebroker, tmp_path, monkeypatch):
    fakebroker.create_topic("payments", 4, replication_factor=3)
    deliveries = DeliveryLedger(fakebroker, group="ledger")
    apply = payments_ledger.apply

    def apply_and_record(db, topic, partition, offset, customer, amount) -> bool:
        applied = apply(db, topic, partition, offset, customer, amount)
        if applied:
            deliveries.processed("applied", topic, partition, offset, customer.encode())
        return applied

    monkeypatch.setattr(payments_ledger, "apply", apply_and_record)
    db_path = str(tmp_path / "ledger.db")
    rng = random.Random(7)
    expected: Counter[str] = Counter()
    producer = Producer(
        {
            "bootstrap.servers": fakebroker.bootstrap_servers,
            "enable.idempotence": True,
            "on_delivery": deliveries.on_delivery,
        }
    )
    for i in range(PAYMENTS):
        customer, amount = f"c{rng.randrange(20)}", rng.randrange(1, 100)
        expected[customer] += amount
        producer.produce("payments", key=customer.encode(), value=f"{customer}:{amount}".encode())
    assert producer.flush(10) == 0
    # Kafka commits fail half the time: without the database positions, work would repeat.
    fakebroker.faults.add(api="OffsetCommit", error="REQUEST_TIMED_OUT", probability=0.5, seed=3)

    def member(name: str) -> LedgerMember:
        return LedgerMember(fakebroker.bootstrap_servers, "ledger", "payments", name, db_path, **TIMINGS)

    members = [member("m1"), member("m2")]
    # each bad day happens once the ledger has applied that share of the payments
    bad_days = [
        (0.2, lambda: members.append(member("m3"))),
        (0.4, lambda: members.pop(0).stop()),
        (0.6, lambda: fakebroker.move_coordinator("ledger")),
        (0.8, lambda: fakebroker.restart_broker(fakebroker.leader("payments", 0))),
    ]
    total = sum(expected.values())
    deadline = time.monotonic() + 60
    while (current := balances(db_path)) != dict(expected):
        assert time.monotonic() < deadline, "balances never matched"
        while bad_days and sum(current.values()) >= bad_days[0][0] * total:
            bad_days.pop(0)[1]()
        for m in members:
            m.step(0.005)
    assert not bad_days, "every bad day happened before the ledger was complete"
    for m in members:
        m.stop()
    assert balances(db_path) == dict(expected)
    verdict = deliveries.assert_exactly_once()
    assert (verdict.produced, verdict.processed, verdict.committed_beyond_processed) == (PAYMENTS, PAYMENTS, [])
    fired = [e for e in fakebroker.events if e.kind == "fault_fired"]
    assert fired, "some Kafka commits failed"

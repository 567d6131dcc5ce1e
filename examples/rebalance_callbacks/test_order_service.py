"""The order service under member churn and a coordinator move: every order processed
exactly once. Uses the fakebroker pytest plugin's ``fakebroker`` fixture.

The service's guarantee is about the work that stands: work whose commit failed is undone in
the sink and read again. So a :class:`~fakebroker.DeliveryLedger` is fed when a commit lands
(the orders it covers, then the offsets it committed) and judges that: exactly once, nothing
committed beyond what stood."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Producer
from order_service import OrderService

from fakebroker import DeliveryLedger
from fakebroker.cluster import conditions as cond
from fakebroker.testing import partitions_covered_once

pytestmark = pytest.mark.clients
ORDERS = 600
TIMINGS = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "max.poll.interval.ms": 10000, "log_level": 3}


@pytest.mark.fakebroker(brokers=3, topics={"orders": 6}, coordinator_load_time_ms=300)
def test_every_order_processed_exactly_once_under_churn(fakebroker):
    processed: Counter[bytes] = Counter()

    def sink(key: bytes, value: bytes) -> None:
        processed[key] += 1

    def undo(work: list[tuple[bytes, bytes]]) -> None:
        for key, _ in work:
            processed[key] -= 1

    # No group=: an order is recorded after its commit landed, so after the coordinator's event.
    ledger = DeliveryLedger(fakebroker)

    def service(name: str) -> OrderService:
        s = OrderService(fakebroker.bootstrap_servers, "orders-svc", "orders", name, sink, **TIMINGS)
        undone: list[int] = []
        s.undo = lambda work: (undo(work), undone.append(len(work)))
        commit = s.commit

        def commit_then_record(attempts: int = 50) -> None:  # on_revoke's commits too
            work, offsets, failed = list(s.uncommitted), dict(s.pending), len(undone)
            commit(attempts)
            if len(undone) == failed:  # it landed: the work stands
                for key, _ in work:
                    i = int(key.removeprefix(b"order-"))
                    ledger.processed(name, "orders", i % 6, i // 6, key)
                for (topic, partition), offset in offsets.items():
                    ledger.committed(name, topic, partition, offset)

        s.commit = commit_then_record
        return s

    # order-i on partition i % 6 (offset i // 6: one idempotent producer keeps each partition's order)
    producer = Producer(
        {
            "bootstrap.servers": fakebroker.bootstrap_servers,
            "enable.idempotence": True,
            "on_delivery": ledger.on_delivery,
        }
    )
    members = [service("svc-1"), service("svc-2")]
    everyone = list(members)
    sent = 0
    deadline = time.monotonic() + 60
    moved = churned = False
    while sum(1 for n in processed.values() if n > 0) < ORDERS:
        assert time.monotonic() < deadline, f"processed {len(processed)} of {ORDERS}"
        if sent < ORDERS:
            for _ in range(10):
                producer.produce("orders", key=b"order-%d" % sent, value=b"%d" % sent, partition=sent % 6)
                sent += 1
            producer.poll(0)
        if sent == 200 and not churned:
            members.append(service("svc-3"))  # a member joins
            everyone.append(members[-1])
            members.pop(0).stop()  # and another leaves
            churned = True
        if sent == 400 and not moved:
            fakebroker.move_coordinator("orders-svc")  # 300 ms of COORDINATOR_LOAD_IN_PROGRESS
            moved = True
        for member in members:
            member.step()
    assert producer.flush(10) == 0
    # let the group settle, then check the owners and the result
    while not partitions_covered_once(fakebroker, "orders-svc", "orders"):
        assert time.monotonic() < deadline
        for member in members:
            member.step()
    for member in members:
        member.stop()
    assert len(processed) == ORDERS
    assert [k for k, n in processed.items() if n != 1] == []
    verdict = ledger.assert_exactly_once()
    assert (verdict.produced, verdict.processed, verdict.committed_beyond_processed) == (ORDERS, ORDERS, [])
    assert not verdict.out_of_order, verdict.summary()
    assert fakebroker.wait_for_sync(cond.GroupState("orders-svc", "Empty"), timeout=10)
    assert sum(fakebroker.committed("orders-svc").values()) == ORDERS
    # the story really happened: revocations, a leave, a reload on the new coordinator
    assert all(m.revocations >= 1 for m in everyone)
    kinds = {e.kind for e in fakebroker.events if e.group == "orders-svc"}
    assert {"member_left", "group_loaded", "rebalance_started"} <= kinds

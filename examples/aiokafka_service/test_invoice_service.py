"""The invoice service under anyio (asyncio backend) with the ``async_fakebroker`` fixture:
every order becomes exactly one invoice although invoice produces fail and a member
restarts while orders stream in.

The effect is the invoices topic, so a :class:`~fakebroker.DeliveryLedger` is fed from it after
the run (each invoice names its order) and judges every order invoiced exactly once; it has no
member or moment for an invoice, so a duplicate would get no cause."""

from __future__ import annotations

import asyncio
import json
import time

import anyio
import pytest
from aiokafka import AIOKafkaProducer
from invoice_service import CUSTOMERS, InvoiceService, enrich

from fakebroker import DeliveryLedger
from fakebroker.cluster import conditions as cond

pytestmark = [pytest.mark.clients, pytest.mark.anyio]
ORDERS = 400
TIMINGS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300, "fetch_max_wait_ms": 50}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiokafka runs on asyncio only


def order(i: int) -> bytes:
    customer = list(CUSTOMERS)[i % len(CUSTOMERS)]
    return f"o{i},{customer},{1 + i % 5},{100 + i}".encode()


async def produce_orders(bootstrap: str, count: int, sent: list[int], ledger: DeliveryLedger) -> None:
    """Orders 0..count-1 in small bursts, as a shop would send them (each acknowledged one in ``ledger``)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="shop", acks="all", enable_idempotence=True)
    await producer.start()
    try:
        for start in range(0, count, 10):
            burst = range(start, min(count, start + 10))
            acks = [await producer.send("orders", key=b"o%d" % i, value=order(i)) for i in burst]
            for i, metadata in zip(burst, await asyncio.gather(*acks)):
                ledger.produced_from(metadata, b"o%d" % i)
            sent[0] += len(acks)
            await anyio.sleep(0.05)
    finally:
        await producer.stop()


def committed_orders(cluster) -> int:
    return sum(offset for (topic, _), offset in cluster.committed("invoicing").items() if topic == "orders")


def member_id(cluster, client_id: str) -> str:
    return next(m.member_id for m in cluster.group("invoicing").members if m.client_id == client_id)


@pytest.mark.fakebroker(brokers=3, topics={"orders": 4, "invoices": 4})
async def test_every_order_invoiced_once_through_produce_errors_and_a_restart(async_fakebroker):
    cluster = async_fakebroker
    # The first two produce requests for invoices fail; the producer must retry them.
    not_leader = cluster.faults.add(api="Produce", topic="invoices", error="NOT_LEADER_OR_FOLLOWER", times=2)
    sent = [0]
    ledger = DeliveryLedger()
    started = time.monotonic()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def start(name: str) -> InvoiceService:
                service = InvoiceService(cluster.bootstrap_servers, name, **TIMINGS)
                await tg.start(service.run)
                return service

            first, second = await start("invoicer-1"), await start("invoicer-2")
            await cluster.wait_for(cond.GroupState("invoicing", "Stable", members=2))
            tg.start_soon(produce_orders, cluster.bootstrap_servers, ORDERS, sent, ledger)
            await cluster.wait_for(lambda c: not_leader.fired == 2)

            # Restart invoicer-1 mid-stream: it finishes its batch, commits and leaves.
            await cluster.wait_for(lambda c: committed_orders(c) >= ORDERS // 4)
            generation, since = cluster.group("invoicing").generation, len(cluster.events)
            leaving = member_id(cluster, "invoicer-1")
            first.stop()
            await cluster.wait_for(cond.event("member_left", group="invoicing", member=leaving, since=since))
            sent_at_restart = sent[0]
            restarted = await start("invoicer-1")
            await cluster.wait_for(cond.GroupState("invoicing", "Stable", members=2, generation_above=generation))

            await cluster.wait_for(lambda c: committed_orders(c) == ORDERS, timeout=20)
            second.stop()
            restarted.stop()
    elapsed = time.monotonic() - started

    placed = {key: (partition, offset) for partition, offset, key, _ in cluster.records("orders")}
    for _, _, key, value in cluster.records("invoices"):
        assert json.loads(value) == enrich(order(int(key[1:])))
        ledger.processed("invoicing", "orders", *placed[key], key)
    verdict = ledger.assert_exactly_once()
    assert (verdict.produced, verdict.processed) == (ORDERS, ORDERS), verdict.summary()
    # the restart was mid-stream, and all three service instances did part of the work
    assert sent_at_restart < ORDERS
    assert first.invoiced > 0 and second.invoiced > 0 and restarted.invoiced > 0
    assert first.invoiced + second.invoiced + restarted.invoiced == ORDERS
    fired = [e for e in cluster.events if e.kind == "fault_fired"]
    assert [(e.details["api"], e.details["error"]) for e in fired] == [("Produce", "NOT_LEADER_OR_FOLLOWER")] * 2
    services = (first, second, restarted)
    print(
        f"{elapsed:.1f} s; invoices by invoicer-1/-2/restarted: {'/'.join(str(s.invoiced) for s in services)}; "
        f"orders sent before the restart: {sent_at_restart}; revocations: {sum(s.revocations for s in services)}; "
        f"orders dropped unprocessed and read again: {sum(s.dropped for s in services)}"
    )

"""An aiokafka service: read orders, enrich them into invoices, produce, then commit.

Each order is ``"<order id>,<customer>,<quantity>,<unit price in cents>"``; its invoice is a
JSON object with the customer's country and VAT rate looked up, and the net, VAT and total
amounts worked out. The service handles one ``getmany()`` batch at a time: it produces every
invoice of the batch, waits until all are acknowledged, and only then commits the batch's
offsets. A failed send (after the producer's own retries) stops the service without
committing, so the orders are read again by whoever owns them next.

Two things keep invoices from being written twice without transactions:

- a rebalance waits for the batch in hand (``on_partitions_revoked`` takes the same lock
  as the batch), so a batch's invoices and its commit happen in the same generation, and a
  batch fetched before a revocation it did not wait for is dropped unprocessed;
- ``stop()`` lets the batch in hand finish and commit before the consumer leaves the group.

A crash between producing and committing would still repeat invoices; that needs a
transactional producer (``send_offsets_to_transaction``), which is a different example.
aiokafka runs on asyncio only, so under anyio this service needs the asyncio backend.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.structs import OffsetAndMetadata
from anyio.abc import TaskStatus

CUSTOMERS = {"acme": ("DE", 19), "globex": ("FR", 20), "initech": ("US", 0), "umbrella": ("GB", 20)}


def enrich(order: bytes) -> dict[str, Any]:
    """The invoice for one order (amounts in cents; VAT rounded half up)."""
    order_id, customer, quantity, unit_price = order.decode().split(",")
    country, vat_percent = CUSTOMERS[customer]
    net = int(quantity) * int(unit_price)
    vat = (net * vat_percent + 50) // 100
    return {"order": order_id, "customer": customer, "country": country, "net": net, "vat": vat, "total": net + vat}


class _WaitForBatch(ConsumerRebalanceListener):
    """Holds a rebalance until the batch in hand is produced and committed."""

    def __init__(self, service: InvoiceService):
        self.service = service

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        async with self.service.batch_lock:
            self.service.revocations += 1

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        self.service.assigned = sorted(tp.partition for tp in assigned)


class InvoiceService:
    def __init__(
        self,
        bootstrap: str,
        name: str,
        *,
        group: str = "invoicing",
        source: str = "orders",
        sink: str = "invoices",
        **settings: Any,
    ):
        self.name, self.group, self.source, self.sink = name, group, source, sink
        common = {
            "bootstrap_servers": bootstrap,
            "client_id": name,
            "retry_backoff_ms": 50,
            "request_timeout_ms": 10_000,
            "metadata_max_age_ms": 5_000,
        }
        self._consumer_settings = {
            **common,
            "group_id": group,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            **settings,
        }
        self._producer_settings = {**common, "acks": "all", "enable_idempotence": True, "linger_ms": 2}
        self.batch_lock = asyncio.Lock()
        self.invoiced = 0  # invoices acknowledged and committed
        self.revocations = 0  # on_partitions_revoked calls (aiokafka makes one on the first join too)
        self.dropped = 0  # orders fetched, then dropped unprocessed because of a revocation
        self.assigned: list[int] = []
        self._stop = anyio.Event()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until ``stop()``; reports "started" once both clients are connected."""
        consumer = AIOKafkaConsumer(**self._consumer_settings)
        producer = AIOKafkaProducer(**self._producer_settings)
        await producer.start()
        try:
            await consumer.start()
            try:
                consumer.subscribe([self.source], listener=_WaitForBatch(self))
                task_status.started()
                while not self._stop.is_set():
                    await self._one_batch(consumer, producer)
            finally:
                await consumer.stop()  # leaves the group
        finally:
            await producer.stop()

    async def _one_batch(self, consumer: AIOKafkaConsumer, producer: AIOKafkaProducer) -> None:
        # getmany() stays outside the lock: during a rebalance it waits for the new
        # assignment, which waits for on_partitions_revoked, which waits for the lock.
        batches = await consumer.getmany(timeout_ms=100, max_records=50)
        if not batches:
            return
        # getmany() returns records of the current assignment only (it waits out a rebalance).
        # If a revocation runs before we hold the lock, the batch is dropped: the partitions'
        # next owner, us included, starts again from the committed offsets.
        revocations = self.revocations
        async with self.batch_lock:
            if self.revocations != revocations:
                self.dropped += sum(len(records) for records in batches.values())
                return
            sends = [
                await producer.send(self.sink, key=r.key, value=json.dumps(enrich(r.value)).encode())
                for records in batches.values()
                for r in records
            ]
            await asyncio.gather(*sends)  # every invoice acknowledged before the orders are committed
            await consumer.commit(
                {tp: OffsetAndMetadata(records[-1].offset + 1, "") for tp, records in batches.items()}
            )
            self.invoiced += len(sends)

    def stop(self) -> None:
        """Finish the batch in hand, commit it and leave the group."""
        self._stop.set()

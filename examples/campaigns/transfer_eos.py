"""A campaign over a transactional consume-transform-produce loop with confluent-kafka: each batch
of orders becomes invoices written in one transaction together with the orders' offsets
(``send_offsets_to_transaction``). A read_committed reader of the invoices feeds the ledger, which
judges exactly once: a crash mid-transaction leaves it open until the member's next instance
fences it (same ``transactional.id``), so no order is invoiced twice or lost. Run it with:

    fakebroker campaign examples/campaigns/transfer_eos.py --seeds 50
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, Producer, TopicPartition
from harness import Feed
from orders_app import consumer_settings

from fakebroker import DeliveryLedger
from fakebroker.campaign import FaultMix, Schedule, drive
from fakebroker.cluster import FakeCluster
from fakebroker.testing.churn import Target

INPUT, OUTPUT, GROUP = "orders", "invoices", "invoicing"
GRID = {"protocol": ["classic", "consumer"]}
# Its own block beside the built-in ones (BLOCKS below). Not broker_bounce: librdkafka 2.16 lets go
# of a broker that leaves the metadata, and a transaction whose group coordinator it was hangs in
# send_offsets_to_transaction until the broker aborts it (librdkafka issue 5511): exactly once
# holds, but such a run takes 40 s. Not coordinator_failover_storm either: a member that stops
# while it looks for its coordinator does not leave, and the group waits out its session.
FAULT_MIXES = [
    FaultMix("churn", ("rolling_restart", "member_stall", "network_cut", "transaction_coordinator_move"), steps=2)
]
DELIVERY = "exactly_once"  # an order invoiced twice is a failure, as is one never invoiced
CLUSTER = {
    "brokers": 3,
    "topics": {INPUT: {"partitions": 4, "replication_factor": 3}, OUTPUT: {"partitions": 4, "replication_factor": 3}},
    "config": {
        "group.consumer.heartbeat.interval.ms": 250,  # KIP-848 members: rebalances in a fraction of a second
        "group.consumer.min.heartbeat.interval.ms": 250,
        # ... and a member that stopped without leaving (still reconnecting after a cut) expires
        # in 6 s, as classic members do here, not in 45 s: past the 30 s a block waits to settle
        "group.consumer.session.timeout.ms": 6000,
        "group.consumer.min.session.timeout.ms": 6000,
        # a transaction nobody ends is aborted after the producer's transaction.timeout.ms (10 s)
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
    },
}
TIMEOUT = 60
BATCH = 10  # orders per transaction, at most
WORK_S = 0.01  # transforming one order takes this long: a crash usually lands mid-transaction

Invoice = Callable[[Message], bytes]  # an order -> its invoice
Transfer = Callable[[Consumer, Producer, list[Message], Invoice], None]


def transfer(consumer: Consumer, producer: Producer, orders: list[Message], invoice: Invoice) -> None:
    """The application: one transaction per batch holds its invoices and the offsets after its
    orders, so both are committed or neither is."""
    producer.begin_transaction()
    try:
        for order in orders:
            producer.produce(OUTPUT, invoice(order), key=order.key())
        producer.send_offsets_to_transaction(next_offsets(orders), consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
    except KafkaException as exc:
        if not exc.args[0].txn_requires_abort():
            raise  # fatal: fenced (a newer instance of this transactional.id, or the transaction timed out)
        # e.g. a rebalance made the group metadata stale (KIP-447): nothing of the batch is
        # committed; abort, and read the batch again from its first order
        producer.abort_transaction(30)
        for tp in first_offsets(orders):
            consumer.seek(tp)


def next_offsets(orders: list[Message]) -> list[TopicPartition]:
    """Per partition, the offset after the batch's last order there: what to commit."""
    last = {(m.topic(), m.partition()): m.offset() for m in orders}
    return [TopicPartition(t, p, o + 1) for (t, p), o in last.items()]


def first_offsets(orders: list[Message]) -> list[TopicPartition]:
    """Per partition, the batch's first order there: where to read the batch again."""
    first: dict[tuple[str, int], int] = {}
    for m in orders:
        first.setdefault((m.topic(), m.partition()), m.offset())
    return [TopicPartition(t, p, o) for (t, p), o in first.items()]


class Crashed(Exception):
    """The member was stopped while transforming a batch."""


class TransferMember:
    """A churn member handle: a consumer and a transactional producer (``transactional.id``
    ``invoicing-<name>``, the same on every start) on a thread of its own. ``stop()`` is a crash
    mid-batch: the open transaction is neither committed nor aborted."""

    def __init__(self, cluster: FakeCluster, name: str, protocol: str, transfer: Transfer):
        self.cluster, self.name, self.client_id, self.transfer = cluster, name, name, transfer
        self.settings = consumer_settings(
            cluster.bootstrap_servers, GROUP, name, protocol, **{"isolation.level": "read_committed"}
        )
        self.producer: Producer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._stall = 0.0

    def start(self) -> None:
        self._stopping.clear()
        self.producer = Producer(
            {
                "bootstrap.servers": self.cluster.bootstrap_servers,
                "client.id": self.name,  # a network cut of the member cuts its producer too
                "transactional.id": f"{GROUP}-{self.name}",
                "transaction.timeout.ms": 10000,
                # no re-bootstrap when a cut leaves it no broker: librdkafka 2.16 would let go of
                # the group coordinator's broker and hang as above
                "metadata.recovery.strategy": "none",
                "linger.ms": 5,
                "reconnect.backoff.max.ms": 200,
                "log_level": 0,
            }
        )
        # fences the previous instance: the coordinator aborts the transaction it left open
        self.producer.init_transactions(30)
        consumer = Consumer(self.settings)
        self._thread = threading.Thread(target=self._loop, args=(consumer, self.producer), name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(30)

    def stall(self, seconds: float) -> None:
        self._stall = seconds

    def _invoice(self, order: Message) -> bytes:
        """The transformation: an order -> its invoice, naming the order's place (for the ledger)."""
        if self._stopping.wait(WORK_S):  # stopped mid-batch: a crash
            raise Crashed
        source = [order.topic(), order.partition(), order.offset()]
        return json.dumps({"order": order.key().decode(), "source": source, "by": self.name}).encode()

    def _loop(self, consumer: Consumer, producer: Producer) -> None:
        consumer.subscribe([INPUT])
        try:
            while not self._stopping.is_set():
                if self._stall:
                    stall, self._stall = self._stall, 0.0
                    time.sleep(stall)
                orders = [m for m in consumer.consume(BATCH, 0.05) if m.error() is None]
                if orders:
                    self.transfer(consumer, producer, orders, self._invoice)
        except Crashed:
            pass  # the transaction stays open, as a crashed process leaves it
        finally:
            consumer.close()


class InvoiceReader:
    """Downstream: a read_committed consumer of every invoice partition from the start (no group).
    Each invoice it sees is its order processed once, in the ledger, by the member that wrote it."""

    def __init__(self, cluster: FakeCluster, ledger: DeliveryLedger):
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "invoice-reader",  # never joins nor commits: assign() below
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
                "log_level": 0,
            }
        )
        partitions = cluster.topics()[OUTPUT]
        self.consumer.assign([TopicPartition(OUTPUT, p, OFFSET_BEGINNING) for p in range(partitions)])
        self.ledger = ledger
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            msg = self.consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                invoice = json.loads(msg.value())
                self.ledger.processed(invoice["by"], *invoice["source"], key=invoice["order"].encode())
        self.consumer.close()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(30)


def transaction_coordinator_move(target: Target, rng: random.Random) -> str:
    """A member's transaction coordinator moves to another broker (300 ms loading there) while the
    member writes: its transaction in flight goes on with the new coordinator, or aborts."""
    member = target.member(rng)
    broker = target.cluster.move_transaction_coordinator(f"{GROUP}-{member.name}", load_time_ms=300)
    time.sleep(0.5)
    target.settle()
    return f"{member.name}'s transaction coordinator moved to broker {broker}"


BLOCKS = [transaction_coordinator_move]


def make_scenario(transfer: Transfer) -> Callable[..., Any]:
    """The scenario for the loop ``transfer``: two members, a steady feed of orders, the reader."""

    def scenario(cluster: FakeCluster, seed: int, schedule: Schedule, cell: dict[str, Any]):
        # no group=: the ledger would check the group's commits against the reader, which sees
        # each transaction's invoices only after its offsets are committed
        ledger = DeliveryLedger(cluster)
        protocol = cell.get("protocol", "classic")
        members = [TransferMember(cluster, name, protocol, transfer) for name in ("m0", "m1")]
        reader = InvoiceReader(cluster, ledger)
        feed = Feed(cluster, ledger, INPUT)
        try:
            return drive(
                cluster,
                members,
                group=GROUP,
                topic=INPUT,
                seed=seed,
                schedule=schedule,
                ledger=ledger,
                blocks=BLOCKS,
                after=feed.stop,
            )
        finally:
            feed.stop()
            for member in members:
                member.stop()
            reader.stop()

    return scenario


scenario = make_scenario(transfer)

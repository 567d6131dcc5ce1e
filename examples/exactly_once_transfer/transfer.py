"""Exactly-once transfer from topic ``payments`` to topic ``ledger`` with Kafka transactions.

Each member of consumer group ``transfer`` reads payments (``isolation.level=read_committed``,
no auto-commit), turns every one into a ledger entry, and writes a batch of entries together
with the input offsets they consumed in one transaction (``send_offsets_to_transaction`` with
the consumer's group metadata, so a member whose generation is over is fenced, KIP-447).
Either both the entries and the offsets are committed, or neither is: when a transaction has
to be aborted (a rebalance made the group metadata stale, a coordinator moved, the producer
was fenced by a newer instance of the same ``transactional.id``), the member aborts and
rewinds its partitions to the committed offsets, so the batch is transformed again, once.

    member = TransferMember("127.0.0.1:9092", "m1")
    while running:
        member.step()
    member.close()

A payment: key = customer, value = ``"<payment id>:<customer>:<amount cents>"``. A ledger entry:
key = customer, value = JSON ``{"payment", "customer", "cents", "source"}`` where ``source`` is
``"payments-<partition>@<offset>"``.

``python transfer.py --bootstrap B --name N [--hold-in-transaction K]`` (and JSON
``--consumer-settings`` / ``--producer-settings``) runs one member as a
process until it is killed; with ``--hold-in-transaction K`` it stops inside its K-th
transaction, after producing and sending the offsets but before committing, prints
``holding`` and waits there (what a process killed mid-transaction leaves behind).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

GROUP = "transfer"
SOURCE = "payments"
SINK = "ledger"
CLIENT_SETTINGS = {"log_level": 2, "reconnect.backoff.max.ms": 500}


def to_ledger(message: Message) -> tuple[bytes, bytes]:
    """The transformation: a payment record -> (key, value) of its ledger entry."""
    payment, customer, cents = message.value().decode().split(":")
    entry = {
        "payment": payment,
        "customer": customer,
        "cents": int(cents),
        "source": f"{message.topic()}-{message.partition()}@{message.offset()}",
    }
    return customer.encode(), json.dumps(entry, sort_keys=True).encode()


class TransferMember:
    """One member: a read_committed consumer and a transactional producer of its own.

    :param transactional_id: defaults to ``transfer-<name>``; a restarted member that reuses it
        fences its previous instance's open transaction (InitProducerId aborts it).
    :param batch: commit once the open transaction holds this many records (or more: one
        poll adds up to ``batch``).
    :param polls_per_transaction: ... or has lasted this many polls (above 1, a transaction stays
        open across polls, so a rebalance can come in the middle of it: ``on_revoke`` aborts it).
    """

    def __init__(
        self,
        bootstrap: str,
        name: str,
        *,
        transactional_id: str | None = None,
        batch: int = 25,
        polls_per_transaction: int = 1,
        consumer_settings: dict | None = None,
        producer_settings: dict | None = None,
    ):
        self.name = name
        self.batch = batch
        self.transactional_id = transactional_id or f"{GROUP}-{name}"
        self.committed = 0  # transactions committed
        self.aborted = 0  # transactions aborted (then rewound)
        self.records_out = 0  # ledger entries in committed transactions
        self.producer_settings = {
            "bootstrap.servers": bootstrap,
            "client.id": name,
            "transactional.id": self.transactional_id,
            **CLIENT_SETTINGS,
            **(producer_settings or {}),
        }
        self.producer = self._new_producer()
        self.in_transaction = False
        self.polls_per_transaction = polls_per_transaction
        self.polls = 0  # polls in the open transaction
        self.pending = 0  # records in the open transaction
        self.first: dict[tuple[str, int], int] = {}  # (topic, partition) -> first offset in the open transaction
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "client.id": name,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **CLIENT_SETTINGS,
                **(consumer_settings or {}),
            }
        )
        self.consumer.subscribe([SOURCE], on_revoke=self._on_revoke)

    def _new_producer(self) -> Producer:
        producer = Producer(self.producer_settings)
        producer.init_transactions(30)
        return producer

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # The open transaction holds work of the partitions being taken away: abort it. The
        # partitions this member keeps (cooperative rebalancing) are rewound; the others start
        # from the committed offsets at their next owner.
        if self.in_transaction:
            self._abort()
            self._rewind(keep={(tp.topic, tp.partition) for tp in consumer.assignment()} - self._keys(partitions))

    @staticmethod
    def _keys(partitions: list[TopicPartition]) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in partitions}

    def step(self, timeout: float = 0.05, *, hold: bool = False) -> int:
        """Poll once and transfer what arrived in the open transaction (beginning one if
        needed); commit it once it holds ``batch`` records or has lasted ``polls_per_transaction``
        polls. Returns the ledger entries committed by this step. ``hold``: stop inside the
        transaction before committing and return -1 (for the demo of a member killed
        mid-transaction)."""
        messages = [m for m in self.consumer.consume(self.batch, timeout) if m.error() is None]
        if not messages and not self.in_transaction:
            return 0
        try:
            if messages and not self.in_transaction:
                self.producer.begin_transaction()
                self.in_transaction = True
                self.polls = 0
            for message in messages:
                key, value = to_ledger(message)
                self.producer.produce(SINK, value, key=key)
                self.first.setdefault((message.topic(), message.partition()), message.offset())
                self.pending += 1
            self.polls += 1
            if self.pending < self.batch and self.polls < self.polls_per_transaction and not hold:
                return 0
            # The offsets to commit: the next record to read in every partition of the transaction.
            positions = self.consumer.position([TopicPartition(t, p) for t, p in sorted(self.first)])
            self.producer.send_offsets_to_transaction(positions, self.consumer.consumer_group_metadata(), 30)
            if hold:
                self.producer.flush(30)
                return -1
            self._commit()
        except KafkaException as exc:
            self._recover(exc.args[0])
            return 0
        done, self.pending = self.pending, 0
        self.first.clear()
        self.committed += 1
        self.records_out += done
        return done

    def _commit(self) -> None:
        for _ in range(10):  # a retriable error (a timeout) leaves the commit to be retried
            try:
                self.producer.commit_transaction(30)
                self.in_transaction = False
                return
            except KafkaException as exc:
                if not exc.args[0].retriable():
                    raise
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "commit_transaction kept timing out"))

    def _recover(self, error: KafkaError) -> None:
        """Abort (or, when fenced, replace the producer) and rewind to the committed offsets."""
        if error.fatal():
            # Fenced: a newer instance of this transactional id exists, or the epoch is gone.
            # Kafka has aborted the open transaction; only a new producer can go on.
            self.producer = self._new_producer()
            self.in_transaction = False
            self.aborted += 1
        else:
            self._abort()
        self._rewind(keep={(tp.topic, tp.partition) for tp in self.consumer.assignment()})

    def _abort(self) -> None:
        for attempt in range(10):
            try:
                self.producer.abort_transaction(30)
                break
            except KafkaException as exc:
                error = exc.args[0]
                if error.fatal():  # fenced meanwhile: the transaction is aborted for us
                    self.producer = self._new_producer()
                    break
                if not error.retriable() or attempt == 9:
                    raise
        self.in_transaction = False
        self.aborted += 1

    def _rewind(self, keep: set[tuple[str, int]]) -> None:
        """Seek the partitions of the aborted transaction that are in ``keep`` back to its first
        record there (their committed offset), so that work is read and done again."""
        for (topic, partition), offset in self.first.items():
            if (topic, partition) in keep:
                self.consumer.seek(TopicPartition(topic, partition, offset))
        self.first.clear()
        self.pending = 0

    def close(self) -> None:
        if self.in_transaction:
            self._abort()
        self.consumer.close()
        self.producer.flush(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one member of the exactly-once transfer")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--hold-in-transaction", type=int, default=0, metavar="K")
    parser.add_argument("--consumer-settings", default="{}", help="JSON: more consumer settings")
    parser.add_argument("--producer-settings", default="{}", help="JSON: more producer settings")
    args = parser.parse_args(argv)
    member = TransferMember(
        args.bootstrap,
        args.name,
        consumer_settings=json.loads(args.consumer_settings),
        producer_settings=json.loads(args.producer_settings),
    )
    print("started", flush=True)
    while True:
        hold = args.hold_in_transaction and member.committed + 1 >= args.hold_in_transaction
        if member.step(hold=bool(hold)) == -1:
            print("holding", flush=True)
            time.sleep(3600)  # until killed
            return 1


if __name__ == "__main__":
    sys.exit(main())

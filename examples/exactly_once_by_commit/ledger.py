"""Exactly-once results without Kafka transactions: keep the offsets with the results.

Each payment record adds its amount to a customer's balance in SQLite. The balance update
and the partition's next offset are written in one database transaction, and the update
only applies if the record's offset is the one the database expects next. A record read
twice (after a rebalance, a crash, a coordinator move) is then skipped instead of counted
again, and a new owner of a partition starts where the database says, not where the last
Kafka commit says. Kafka commits are still made, asynchronously, for lag monitoring only.
"""

from __future__ import annotations

import sqlite3

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

SCHEMA = """
create table if not exists balances (customer text primary key, amount integer not null);
create table if not exists positions (topic text, partition integer, next_offset integer,
                                      primary key (topic, partition));
"""


def open_db(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    db.executescript(SCHEMA)
    return db


def apply(db: sqlite3.Connection, topic: str, partition: int, offset: int, customer: str, amount: int) -> bool:
    """Add the payment if ``offset`` is the next one for its partition; False if already applied."""
    db.execute("begin immediate")
    try:
        row = db.execute(
            "select next_offset from positions where topic=? and partition=?", (topic, partition)
        ).fetchone()
        expected = row[0] if row else 0
        if offset < expected:
            db.execute("rollback")
            return False
        db.execute(
            "insert into balances values (?, ?) on conflict(customer) do update set amount = amount + excluded.amount",
            (customer, amount),
        )
        db.execute(
            "insert into positions values (?, ?, ?) "
            "on conflict(topic, partition) do update set next_offset = excluded.next_offset",
            (topic, partition, offset + 1),
        )
        db.execute("commit")
        return True
    except BaseException:
        db.execute("rollback")
        raise


class LedgerMember:
    def __init__(self, bootstrap: str, group: str, topic: str, name: str, db_path: str, **settings: object):
        self.db = open_db(db_path)
        self.skipped = 0
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **settings,
            }
        )
        self.consumer.subscribe([topic], on_assign=self._on_assign)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Start from the database's position, whatever Kafka's committed offset says.
        for tp in partitions:
            row = self.db.execute(
                "select next_offset from positions where topic=? and partition=?", (tp.topic, tp.partition)
            ).fetchone()
            tp.offset = row[0] if row else OFFSET_BEGINNING
        consumer.assign(partitions)

    def step(self, timeout: float = 0.05) -> None:
        message = self.consumer.poll(timeout)
        if message is None or message.error():
            return
        customer, amount = message.value().decode().split(":")
        if apply(self.db, message.topic(), message.partition(), message.offset(), customer, int(amount)):
            self.consumer.commit(message, asynchronous=True)  # for lag dashboards only
        else:
            self.skipped += 1

    def stop(self) -> None:
        self.consumer.close()
        self.db.close()


def balances(db_path: str) -> dict[str, int]:
    with sqlite3.connect(db_path) as db:
        return dict(db.execute("select customer, amount from balances"))

"""A confluent-kafka consumer service that survives rebalances without losing or repeating work.

The pattern: process a record, remember the next offset to commit for its partition, commit
every ``commit_every`` records, and commit synchronously in ``on_revoke`` before the
partitions go to someone else. A commit that fails because the coordinator is moving is
retried; one that fails because the member is no longer in the generation means another
member owns the partition now, so the work since the last commit is dropped from the sink
(it will be read again) — that is what "processed once" takes with at-least-once commits.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

RETRIABLE = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError.REBALANCE_IN_PROGRESS,
}


class OrderService:
    """One member of the ``group``; ``sink(key, value)`` is the side effect of processing."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        name: str,
        sink: Callable[[bytes, bytes], None],
        *,
        commit_every: int = 20,
        **settings: object,
    ):
        self.name = name
        self.sink = sink
        self.commit_every = commit_every
        self.pending: dict[tuple[str, int], int] = {}  # partition -> next offset, not yet committed
        self.uncommitted: list[tuple[bytes, bytes]] = []  # work done since the last commit
        self.assigned: set[int] = set()
        self.revocations = 0
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
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.undo: Callable[[list[tuple[bytes, bytes]]], None] = lambda work: None

    # -- rebalance callbacks --------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.assigned = {tp.partition for tp in partitions}

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.revocations += 1
        self.commit()
        self.assigned = set()

    # -- work -------------------------------------------------------------------------------
    def step(self, timeout: float = 0.05) -> None:
        """Poll once, process what came."""
        message = self.consumer.poll(timeout)
        if message is None or message.error():
            return
        self.sink(message.key(), message.value())
        self.uncommitted.append((message.key(), message.value()))
        self.pending[(message.topic(), message.partition())] = message.offset() + 1
        if len(self.uncommitted) >= self.commit_every:
            self.commit()

    def commit(self, attempts: int = 50) -> None:
        if not self.pending:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in self.pending.items()]
        for _ in range(attempts):
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
                break
            except KafkaException as exc:
                code = exc.args[0].code()
                if code not in RETRIABLE:
                    # Not in the generation any more: the new owner reads from the last commit.
                    self.undo(self.uncommitted)
                    break
                time.sleep(0.05)
        else:
            self.undo(self.uncommitted)
        self.pending.clear()
        self.uncommitted.clear()

    def stop(self) -> None:
        """Leave the group cleanly (on_revoke commits what was processed)."""
        self.consumer.close()

"""The test kit on share groups (KIP-932), driven by confluent-kafka's ShareConsumer: the delivery
ledger's queue semantics (every record processed at least once across the group or archived,
each repeat explained: released, lock expired, member left, session closed), the
``share_group`` view and the share conditions a test waits on, and fault rules matching the
share APIs by group."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import AcknowledgeType, KafkaException, Message, Producer, ShareConsumer

from fakebroker import DeliveryLedger, FakeCluster
from fakebroker.cluster import conditions

pytestmark = pytest.mark.clients

GROUP, TOPIC = "workers", "jobs"
QUICK_HEARTBEATS = {"group.share.heartbeat.interval.ms": 300}  # members reach a new target sooner


def earliest(cluster: FakeCluster, **configs: str) -> None:
    """The group's configs, as kafka-configs --entity-type groups sets them: the records produced
    before the members joined are theirs, and a member joining gets its assignment at once."""
    cluster.set_group_configs(GROUP, share_auto_offset_reset="earliest", share_assignment_interval_ms=0, **configs)


def produce(cluster: FakeCluster, ledger: DeliveryLedger, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "on_delivery": ledger.on_delivery})
    for value in values:
        producer.produce(TOPIC, value=value, partition=0)
    assert producer.flush(15) == 0


class Worker:
    """A ShareConsumer that records what it processes in the ledger; ``decide`` picks each
    record's acknowledgement (explicit mode; None leaves it unacknowledged)."""

    def __init__(
        self, cluster: FakeCluster, ledger: DeliveryLedger, name: str, decide: Callable[[Message], int | None]
    ):
        self.consumer = ShareConsumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": GROUP,
                "client.id": name,
                "share.acknowledgement.mode": "explicit",
                "log_level": 0,
            }
        )
        self.consumer.subscribe([TOPIC])
        self.ledger, self.name, self.decide = ledger, name, decide
        self.seen = 0
        self.closed = False

    def poll(self, timeout: float = 0.05) -> None:
        got = False
        for message in self.consumer.poll(timeout):
            if message.error():
                continue
            self.ledger.record(self.name, message)
            self.seen += 1
            got = True
            ack = self.decide(message)
            if ack is not None:
                self.consumer.acknowledge(message, ack)
        if got:
            try:
                self.consumer.commit_sync(10)
            except KafkaException:
                pass  # a dropped connection: the broker released the records, they come again

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


def polling(*workers: Worker) -> Callable[[float], None]:
    """``wait_for_sync``'s poll: every open worker polls in turn."""

    def poll(seconds: float) -> None:
        for w in workers:
            if not w.closed:
                w.poll(seconds / len(workers))

    return poll


def accept(message: Message) -> int:
    return AcknowledgeType.ACCEPT


def test_the_poison_message_is_archived_after_5_tries_and_nothing_else_is_lost() -> None:
    with FakeCluster(topics={TOPIC: 1}).run_in_thread() as cluster:
        earliest(cluster)
        ledger = DeliveryLedger(cluster, group=GROUP)
        produce(cluster, ledger, [b"poison" if i == 3 else b"job-%d" % i for i in range(10)])

        def decide(message: Message) -> int:
            return AcknowledgeType.RELEASE if message.value() == b"poison" else AcknowledgeType.ACCEPT

        worker = Worker(cluster, ledger, "w1", decide)
        try:
            cluster.wait_for_sync(conditions.record_archived(GROUP, TOPIC, 0, 3), 30, poll=polling(worker))
            cluster.wait_for_sync(conditions.share_start_offset(GROUP, TOPIC, 0), 30, poll=polling(worker))
        finally:
            worker.close()
        # the three lines
        verdict = ledger.assert_queue_delivery(archived={(TOPIC, 0, 3): "delivery limit"})
        assert verdict.archived[0].deliveries == 5 and verdict.archived[0].processed == 5
        assert verdict.repeats_by_cause() == {"released": 4}
        assert [r.delivery for r in verdict.repeats] == [2, 3, 4, 5]
        assert cluster.share_group(GROUP).partition(TOPIC, 0).start_offset == 10


def test_records_of_a_member_that_leaves_come_back_and_the_ledger_says_member_left() -> None:
    with FakeCluster(topics={TOPIC: 1}, config=QUICK_HEARTBEATS).run_in_thread() as cluster:
        earliest(cluster)
        ledger = DeliveryLedger(cluster, group=GROUP)
        produce(cluster, ledger, [b"r%d" % i for i in range(10)])
        holder = Worker(cluster, ledger, "holder", lambda message: None)  # never acknowledges
        other = None
        try:
            cluster.wait_for_sync(conditions.record_delivered(GROUP, TOPIC, 0, 9), 30, poll=polling(holder))
            # the broker handed them out; librdkafka may not have given them to the app yet
            cluster.wait_for_sync(lambda _: holder.seen == 10, 30, poll=polling(holder))
            other = Worker(cluster, ledger, "other", accept)  # now: it could fetch the records first
            view = cluster.wait_for_sync(conditions.share_group_stable(GROUP, members=2), 30, poll=polling(other))
            assert sorted(m.client_id for m in view.members) == ["holder", "other"]
            assert view.assignment == {"holder": {TOPIC: [0]}, "other": {TOPIC: [0]}}  # a partition, shared
            [run] = view.partition(TOPIC, 0).in_flight
            assert (run.first, run.last, run.state, run.delivery_count, run.client_id) == (
                0,
                9,
                "acquired",
                1,
                "holder",
            )
            assert next(m for m in view.members if m.client_id == "holder").acquired == 10
            holder.close()  # its share session closes: its records go back to the group
            cluster.wait_for_sync(conditions.share_start_offset(GROUP, TOPIC, 0, 10), 30, poll=polling(other))
        finally:
            holder.close()
            if other is not None:
                other.close()
        verdict = ledger.assert_queue_delivery()
        assert verdict.repeats_by_cause() == {"member left": 10}
        assert {(r.member, r.delivery, r.holder) for r in verdict.repeats} == {("other", 2, "holder")}


def test_records_whose_lock_expires_come_back_and_the_ledger_says_lock_expired() -> None:
    with FakeCluster(topics={TOPIC: 1}, virtual_time=True, config=QUICK_HEARTBEATS).run_in_thread() as cluster:
        earliest(cluster, share_record_lock_duration_ms="15000")
        ledger = DeliveryLedger(cluster, group=GROUP)
        produce(cluster, ledger, [b"r%d" % i for i in range(5)])
        stuck = Worker(cluster, ledger, "stuck", lambda message: None)
        other = None
        try:
            cluster.wait_for_sync(conditions.record_delivered(GROUP, TOPIC, 0, 4), 30, poll=polling(stuck))
            other = Worker(cluster, ledger, "other", accept)
            cluster.wait_for_sync(conditions.share_group_stable(GROUP, members=2), 30, poll=polling(other))
            cluster.clock.advance(16)  # the 15 s lock, at once
            cluster.wait_for_sync(conditions.share_start_offset(GROUP, TOPIC, 0, 5), 30, poll=polling(other))
        finally:
            if other is not None:
                other.close()
            stuck.close()
        verdict = ledger.assert_queue_delivery()
        assert verdict.repeats_by_cause() == {"lock expired": 5}
        assert verdict.at_least_once and not verdict.unexplained


def test_a_fault_on_the_groups_share_acknowledge_closes_the_session_and_its_records_come_again() -> None:
    with FakeCluster(topics={TOPIC: 1}).run_in_thread() as cluster:
        earliest(cluster)
        ledger = DeliveryLedger(cluster, group=GROUP)
        produce(cluster, ledger, [b"r%d" % i for i in range(5)])
        other_group = cluster.faults.add(api="ShareAcknowledge", group="elsewhere", action="drop")
        rule = cluster.faults.add(api="ShareAcknowledge", group=GROUP, action="drop", times=1)
        worker = Worker(cluster, ledger, "w1", accept)
        try:
            cluster.wait_for_sync(conditions.share_start_offset(GROUP, TOPIC, 0, 5), 30, poll=polling(worker))
        finally:
            worker.close()
        assert (rule.fired, other_group.matched) == (1, 0)
        verdict = ledger.assert_queue_delivery()
        assert set(verdict.repeats_by_cause()) == {"session closed"}
        assert len(verdict.repeats) == 5

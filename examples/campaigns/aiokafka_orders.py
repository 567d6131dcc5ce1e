"""A campaign over an aiokafka orders consumer that processes each partition's batch, then commits
past it (at least once: a crash mid-batch re-reads the batch, and no seed loses a record). aiokafka
speaks the classic group protocol only. Run it with:

    fakebroker campaign examples/campaigns/aiokafka_orders.py --seeds 50
"""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from aiokafka_harness import AiokafkaMember, Process
from harness import Feed

from fakebroker import DeliveryLedger
from fakebroker.campaign import FaultMix, Schedule, drive
from fakebroker.cluster import FakeCluster

TOPIC, GROUP = "orders", "billing"
DELIVERY = "at_least_once"  # duplicates are allowed; a lost record is a failure
# Not coordinator_failover_storm or broker_bounce: they pass too, but an aiokafka member stopped
# while it looks for its coordinator does not leave the group, which waits out its session (6 s),
# and such a run takes 10 s or more.
FAULT_MIXES = [FaultMix("churn", ("rolling_restart", "member_stall", "network_cut", "partition_growth"), steps=2)]
CLUSTER = {"brokers": 3, "topics": {TOPIC: {"partitions": 4, "replication_factor": 3}}}
TIMEOUT = 60


async def process_then_commit(
    consumer: AIOKafkaConsumer, tp: TopicPartition, records: list[Any], process: Process
) -> None:
    """The application: process a partition's batch, then commit the offset after its last record."""
    for record in records:
        await process(record)
    try:
        await consumer.commit({tp: records[-1].offset + 1})
    except KafkaError:
        pass  # a commit racing a rebalance is not retried: the batch is read again (at least once)


def scenario(cluster: FakeCluster, seed: int, schedule: Schedule, cell: dict[str, Any]):
    """Two members, a steady feed of orders, the schedule played on them; the ledger's verdict."""
    ledger = DeliveryLedger(cluster, group=GROUP)
    members = [AiokafkaMember(cluster, name, ledger, TOPIC, GROUP, process_then_commit) for name in ("m0", "m1")]
    feed = Feed(cluster, ledger, TOPIC)
    try:
        return drive(
            cluster, members, group=GROUP, topic=TOPIC, seed=seed, schedule=schedule, ledger=ledger, after=feed.stop
        )
    finally:
        feed.stop()
        for member in members:
            member.stop()

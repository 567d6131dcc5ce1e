"""What the orders campaigns share: the grid, the fault mix, the cluster, and the scenario
around the application's consumer (two members, a steady producer, the schedule played on them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness import ConsumerMember, Feed
from orders_app import consumer_settings

from fakebroker import DeliveryLedger
from fakebroker.campaign import FaultMix, Schedule, drive
from fakebroker.cluster import FakeCluster

TOPIC, GROUP = "orders", "billing"
GRID = {"protocol": ["classic", "consumer"]}
FAULT_MIXES = [FaultMix("churn", ("rolling_restart", "member_stall", "network_cut"), steps=2)]
DELIVERY = "at_least_once"  # duplicates are allowed; a lost record is a failure
CLUSTER = {
    "brokers": 3,
    "topics": {TOPIC: {"partitions": 4, "replication_factor": 3}},
    # KIP-848 members heartbeat every 5 s by default: a run's rebalances would take seconds each;
    # and a member stopped while it reconnects after a network cut does not leave: its session
    # (45 s by default) must end well inside the 30 s a block waits for the group to settle
    "config": {
        "group.consumer.heartbeat.interval.ms": 250,
        "group.consumer.min.heartbeat.interval.ms": 250,
        "group.consumer.session.timeout.ms": 6000,
        "group.consumer.min.session.timeout.ms": 6000,
    },
}


def make_scenario(handle: Callable[..., None], **settings: Any) -> Callable[..., Any]:
    """The scenario for a consumer that handles each record with ``handle``."""

    def scenario(cluster: FakeCluster, seed: int, schedule: Schedule, cell: dict[str, Any]):
        ledger = DeliveryLedger(cluster, group=GROUP)
        members = [
            ConsumerMember(
                cluster,
                name,
                ledger,
                consumer_settings(cluster.bootstrap_servers, GROUP, name, cell.get("protocol", "classic"), **settings),
                TOPIC,
                handle,
            )
            for name in ("m0", "m1")
        ]
        feed = Feed(cluster, ledger, TOPIC)
        try:
            return drive(
                cluster, members, group=GROUP, topic=TOPIC, seed=seed, schedule=schedule, ledger=ledger, after=feed.stop
            )
        finally:
            feed.stop()
            for member in members:
                member.stop()

    return scenario

"""Group shapes with the Java consumer (kafka-clients, classic protocol) that
tests/clients/test_group_shapes.py shows with librdkafka: here a ``subscribe(Pattern)`` picking
up a topic created after it subscribed. The Java client matches the pattern against its own
metadata, so ``metadata.max.age.ms`` (500 ms here) bounds how soon it notices the new topic;
the leader's next metadata refresh makes the group rebalance with it.
"""

from __future__ import annotations

import time

import pytest

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster

from .group_state import events, group_off_first_broker, live_group
from .java_ledger import LedgerDriver, produced
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={"orders": 6, "orders-eu": 2}).run_in_thread() as c:
        yield c


def wait_assignment(cluster: FakeCluster, gid: str, topics: dict[str, int], timeout: float = 30) -> dict:
    """Until the group is Stable with two members owning every partition of ``topics`` once."""
    deadline = time.monotonic() + timeout
    while True:
        g = live_group(cluster, gid)
        owned = g and sorted((t, p) for m in g["members"].values() for t, ps in m["assignment"].items() for p in ps)
        if g and g["state"] == "Stable" and len(g["members"]) == 2:
            if owned == sorted((t, p) for t, n in topics.items() for p in range(n)):
                return g
        assert time.monotonic() < deadline, f"group {gid} never owned {topics}: {g}"
        time.sleep(0.05)


def test_pattern_subscription_picks_up_a_topic_created_after_subscribing(cluster, java_client_jar):  # noqa: F811
    """Delivery: exactly once. Each member commits (commitSync) after each poll, a rebalance
    happens only inside a poll, and none happens while the records are read (the group took in
    orders-us before they were produced)."""
    gid = group_off_first_broker(cluster, "java-regex")
    ledger = DeliveryLedger(cluster)  # no group=: the JVM's lines reach it a pipe after the commits
    with LedgerDriver(java_client_jar, cluster, ledger) as driver:
        for name in "ab":  # Pattern.matches: the whole name, so "orders" itself is not read
            driver.call("start", name=name, group=gid, regex="orders-.*", metadataMaxAge=500, report="true")
        before = wait_assignment(cluster, gid, {"orders-eu": 2})

        cluster.create_topic("orders-us", 4)
        after = wait_assignment(cluster, gid, {"orders-eu": 2, "orders-us": 4})
        assert after["generation"] > before["generation"]
        # range, per topic, by member id: the first member takes the first half of each topic
        assert [after["members"][m]["assignment"] for m in sorted(after["members"])] == [
            {"orders-eu": [0], "orders-us": [0, 1]},
            {"orders-eu": [1], "orders-us": [2, 3]},
        ]
        started = events(cluster, "generation_started", gid)
        assert started[-1]["generation"] == after["generation"] and started[-1]["members"] == 2

        driver.call("produce", topic="orders-us", n=40, partitions=4)  # key-i on partition i % 4
        produced(ledger, "orders-us", 0, 40, 4)  # only what the pattern matches is owed
        driver.call("produce", topic="orders", first=40, n=12, partitions=6)  # not matched
        driver.call("waitConsumed", total=40)
        driver.call("waitCommitted", group=gid, topic="orders-us")
        time.sleep(0.5)  # a chance for anything from "orders" to show up
        records = driver.call("consumed")["records"]
        generation = live_group(cluster, gid)["generation"]

    assert sorted((p, off, key) for _, p, off, key in records) == sorted(
        (i % 4, i // 4, f"key-{i}") for i in range(40)
    ), "each orders-us record once, none of orders"
    owner = {
        p: m["client_id"].removeprefix("fakebroker-java-")
        for m in after["members"].values()
        for p in m["assignment"]["orders-us"]
    }
    assert all(owner[p] == name for name, p, _, _ in records), "each record read by its partition's owner"
    assert cluster.committed(gid) == {("orders-us", p): 10 for p in range(4)}
    assert generation == after["generation"]  # no rebalance while reading
    verdict = ledger.assert_exactly_once()
    assert (verdict.produced, verdict.processed, verdict.committed_beyond_processed) == (40, 40, []), verdict.summary()

"""Java consumers (kafka-clients, classic protocol) through the rebalances a team meets when it
changes its consumers: a rolling upgrade of the assignment strategy, and a slow member holding a
rebalance back until its next poll.

- Rolling upgrade range -> cooperative-sticky, as Kafka documents it (KIP-429): a first rolling
  bounce to ``[cooperative-sticky, range]``, a second to ``[cooperative-sticky]``. The protocol
  the coordinator picks for each generation is asserted: ``range`` while any member offers only
  range (the only protocol all offer), ``cooperative-sticky`` once every member prefers it.
- A member busy processing (inside ``max.poll.interval.ms``) when a newcomer joins rejoins only
  at its next ``poll``: the coordinator waits for it (it is not removed) and the new generation
  starts when its processing ends.
"""

from __future__ import annotations

import time

import pytest

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster

from .group_state import events, group_off_first_broker, live_group
from .java_ledger import LedgerDriver, produced
from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_groups import Driver

pytestmark = [pytest.mark.clients, pytest.mark.java]
TOPIC, PARTITIONS = "orders", 6


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}).run_in_thread() as c:
        yield c


def protocols(cluster: FakeCluster, gid: str) -> list[str]:
    """The protocol of each generation the group started, in order."""
    return [e["protocol"] for e in events(cluster, "generation_started", gid)]


def settle(driver: Driver, cluster: FakeCluster, gid: str) -> dict:
    driver.call("waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS)
    deadline = time.monotonic() + 15
    while not ((g := live_group(cluster, gid)) and g["state"] == "Stable" and len(g["members"]) == 3):
        assert time.monotonic() < deadline, f"group {gid} not Stable with 3 members: {g}"
        time.sleep(0.05)
    return g


def test_rolling_upgrade_from_range_to_cooperative_sticky(cluster, java_client_jar):  # noqa: F811
    gid = group_off_first_broker(cluster, "java-upgrade")
    ledger = DeliveryLedger(cluster)  # no group=: the JVM's lines reach it a pipe after the commits
    with LedgerDriver(java_client_jar, cluster, ledger) as driver:
        for name in "abc":
            driver.call("start", name=name, group=gid, topic=TOPIC, assignors="range", report="true")
        assert settle(driver, cluster, gid)["protocol"] == "range"
        driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS)
        produced(ledger, TOPIC, 0, 300, PARTITIONS)

        seen: dict[str, list[str]] = {}
        for bounce, assignors in (("first", "cooperative-sticky,range"), ("second", "cooperative-sticky")):
            before = len(protocols(cluster, gid))
            for name in "abc":
                driver.call("close", name=name)
                driver.call("start", name=name, group=gid, topic=TOPIC, assignors=assignors, report="true")
                settle(driver, cluster, gid)
            seen[bounce] = protocols(cluster, gid)[before:]

        # first bounce: range until the last member offers cooperative-sticky too, then it wins every vote
        assert seen["first"][-1] == "cooperative-sticky", seen
        assert set(seen["first"][:-1]) == {"range"}, seen
        assert len(seen["first"]) >= 3, seen  # at least one generation per bounced member
        assert set(seen["second"]) == {"cooperative-sticky"}, seen  # range never comes back
        group = live_group(cluster, gid)
        assert group["protocol"] == "cooperative-sticky"
        assert sorted(len(m["assignment"][TOPIC]) for m in group["members"].values()) == [2, 2, 2]

        driver.call("produce", topic=TOPIC, n=300, partitions=PARTITIONS, first=300)
        produced(ledger, TOPIC, 300, 300, PARTITIONS)
        driver.call("waitConsumed", total=600, timeoutMs=30000)
        driver.call("waitCommitted", group=gid, topic=TOPIC)
        failed = driver.of_type("commit_failed")
        assert not driver.of_type("consumer_failed"), driver.diagnostics()

    verdict = ledger.verdict()
    assert verdict.produced == 600 and verdict.at_least_once, verdict.summary()
    assert not verdict.committed_beyond_processed, verdict.summary()
    extra = verdict.processed - verdict.produced
    # commitSync after every poll of at most 50 records (max.poll.records): a record is read twice
    # only if its poll's commit did not land before its partition moved, i.e. the commit failed in
    # a rebalance or a close woke it up (a commit_failed line each); 0 repeats in every run so far
    assert extra <= 50 * len(failed), f"{extra} repeats with {len(failed)} failed commits\n{verdict.summary()}"


def test_a_slow_member_holds_the_rebalance_until_its_next_poll(cluster, java_client_jar):  # noqa: F811
    gid = group_off_first_broker(cluster, "java-slow")
    with Driver(java_client_jar, cluster) as driver:
        for name in "ab":
            driver.call("start", name=name, group=gid, topic=TOPIC, maxPoll=20000)
        driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS)
        driver.call("stall", name="a", ms=4000)  # processing that stays inside max.poll.interval.ms
        deadline = time.monotonic() + 10
        while not driver.of_type("stall_start", name="a"):
            assert time.monotonic() < deadline, "a never started its slow processing"
            time.sleep(0.02)

        began = time.monotonic()
        driver.call("start", name="c", group=gid, topic=TOPIC, maxPoll=20000)
        settle(driver, cluster, gid)
        took = time.monotonic() - began
        ended = driver.of_type("stall_end", name="a")
        assert ended, "the new generation started before a's processing ended"
        assert took > 2.5, f"the rebalance completed {took:.1f} s after c joined, while a was still busy"
        assert not events(cluster, "member_removed", gid) and not events(cluster, "member_expired", gid)
        started = events(cluster, "rebalance_started", gid)
        assert started and started[-1]["reason"].endswith(" joined"), started  # c's JoinGroup began it

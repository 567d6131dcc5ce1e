"""``fakebroker.testing.churn`` with Java consumers: a seeded run of every churn block (rolling restart,
stall, coordinator storm, partition growth, broker bounce, network cut) against a group of three
KafkaConsumers (kafka-clients, classic protocol, range assignor) in one JVM, while an idempotent
producer writes; a :class:`~fakebroker.testing.ledger.DeliveryLedger` judges what they processed.

Each consumer commits each record with ``commitSync`` right after processing it; a failed commit
(rebalance in progress, member removed, coordinator gone, woken up by close) abandons the rest of
its batch and rewinds the partitions it still owns to the record whose commit failed. So a record
is processed again only if its own commit failed: every extra processing has a ``commit_failed``
note behind it, which is the bound asserted (and it stays small: one per member per rebalance at
most, not a batch). The JVM reports each processing and each commit as it happens, and the
driver's reader thread records them in the ledger at once, so the ledger ties each duplicate to
the group event behind it.
"""

from __future__ import annotations

import time

import pytest

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster
from fakebroker.testing.churn import BLOCKS

from .java_ledger import LedgerDriver
from .test_churn import TOPIC, Feed, churn_every_block
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]
GROUP = "java-churned"


class JavaMember:
    """A churn member handle over one KafkaConsumer of the JVM: start = subscribe and poll on its
    own thread, committing each record; stop = close (LeaveGroup); stall = no poll for a while
    (its heartbeat thread goes on, as in a real slow handler)."""

    def __init__(self, driver: LedgerDriver, name: str):
        self.driver, self.name, self.client_id = driver, name, f"fakebroker-java-{name}"

    def start(self) -> None:
        self.driver.call(
            "start",
            name=self.name,
            group=GROUP,
            topic=TOPIC,
            commit="record",
            maxPollRecords=20,
            session=6000,
            heartbeat=200,
            maxPoll=8000,  # longer than any stall of the blocks (0.5-3 s)
            metadataMaxAge=500,  # new partitions are seen within a second
        )

    def stop(self) -> None:
        self.driver.call("close", name=self.name, timeout=40)

    def stall(self, seconds: float) -> None:
        self.driver.call("stall", name=self.name, ms=int(seconds * 1000))


@pytest.mark.parametrize("seed", [21, 22])
def test_seeded_churn_with_java_consumers_loses_no_acknowledged_record(seed, java_client_jar):  # noqa: F811
    topics = {TOPIC: {"partitions": 6, "replication_factor": 3}}
    with FakeCluster(brokers=3, topics=topics).run_in_thread() as cluster:
        # No group=: the ledger would check the coordinator's offset_committed events too, against
        # processings that reach it a pipe later than the commit that followed them in the JVM.
        ledger = DeliveryLedger(cluster)
        with LedgerDriver(java_client_jar, cluster, ledger) as driver:
            members = [JavaMember(driver, f"m{i}") for i in range(3)]
            feed = Feed(cluster, ledger)
            try:
                report = churn_every_block(cluster, members, ledger, feed, seed, GROUP)
            finally:
                feed.stop()
            partitions = cluster.topics()[TOPIC]
            ends = {(TOPIC, p): end for p in range(partitions) if (end := cluster.offsets(TOPIC, p)[1])}
            deadline = time.monotonic() + 20
            while (committed := cluster.committed(GROUP)) != ends and time.monotonic() < deadline:
                time.sleep(0.1)
            for m in members:
                m.stop()
            failed_commits = driver.of_type("commit_failed")
            generations = cluster.group(GROUP).generation
            stalls = driver.of_type("stall_end")
            assert not driver.of_type("consumer_failed"), driver.diagnostics()

    assert len(report.actions) == len(BLOCKS) and report.seed == seed
    assert {a.split(":")[0] for a in report.actions} == {b.name for b in BLOCKS}  # each block once
    verdict = report.verdict
    assert verdict.produced > 100, report
    assert verdict.at_least_once, f"acknowledged records never processed\n{report}"
    extra = verdict.processed - verdict.produced
    assert extra == sum(d.times - 1 for d in verdict.duplicates)
    assert extra <= len(failed_commits), f"{extra} repeats, {len(failed_commits)} failed commits\n{report}"
    assert not verdict.committed_beyond_processed, report  # each commit names the record just processed
    # the blocks did happen to this group: a stall sat out, partitions added, many generations
    assert len(stalls) == 1 and partitions > 6 and generations >= 8, (stalls, partitions, generations)
    assert committed == ends, f"the group's commits {committed} short of the log ends {ends}\n{report}"
    print(report, f"\n{len(failed_commits)} failed commits, {generations} generations")

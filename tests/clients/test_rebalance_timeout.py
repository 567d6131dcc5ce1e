"""A member that does not rejoin a rebalance in time is removed by the coordinator when the
group's rebalance timeout runs out (GROUP-COORDINATOR.md §3.3: join completion drops every
dynamic member not awaiting join), and the others go on without it.

- kafkajs has no heartbeat thread: a member stuck in ``eachMessage`` sends nothing at all, so
  when a newcomer starts a rebalance it cannot rejoin. Its session timeout (20 s) is longer
  than its rebalance timeout (3 s): the coordinator removes it at the rebalance timeout, with
  the reason in the event, and it rejoins when its processing ends.
- The Java consumer's heartbeat thread leaves the group by itself when processing outlasts
  ``max.poll.interval.ms`` (tests/clients/test_java_groups.py shows that). What the coordinator
  must do itself is shown with a JVM that is frozen whole (SIGSTOP, as a long GC pause or a
  stopped container): nothing leaves, the rebalance timeout (Java's ``max.poll.interval.ms``)
  removes it, and after SIGCONT it learns it was removed and rejoins.
- The livelock: a Java member whose processing of each poll takes just longer than
  ``max.poll.interval.ms`` leaves at that timeout every cycle, rejoins, and is handed the same
  uncommitted records again, never committing; just under it, the member stays and commits.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import time

import pytest

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster
from fakebroker.testing.ledger import RecordId

from .group_state import events, group_off_first_broker, live_group
from .java_ledger import FeedsLedger, LedgerDriver, produced
from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_kafkajs_groups import Driver as NodeGroupsDriver
from .test_kafkajs_groups import node  # noqa: F401 (fixture)

pytestmark = pytest.mark.clients
TOPIC, PARTITIONS = "orders", 6


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}).run_in_thread() as c:
        yield c


def wait_for(what: str, check, timeout: float = 20, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(step)
    return found


class NodeLedgerDriver(FeedsLedger, NodeGroupsDriver):
    """groups.js feeding a ledger: consumers started with ``report=True`` print each record
    processed and each offset kafkajs committed."""


def removed_in_time(cluster: FakeCluster, gid: str, member_id: str, since: float, within: tuple[float, float]) -> None:
    """``member_id`` is removed for not rejoining, ``within`` (low, high) seconds after ``since``."""
    removed = wait_for(
        f"removal of {member_id}",
        lambda: [e for e in events(cluster, "member_removed", gid) if e["member"] == member_id],
    )
    waited = time.monotonic() - since
    assert removed[0]["reason"] == "did not rejoin in time"
    assert within[0] < waited < within[1], f"removed {waited:.1f} s after the rebalance began"


def stable_members(cluster: FakeCluster, gid: str) -> set[str] | None:
    g = live_group(cluster, gid)
    return set(g["members"]) if g and g["state"] == "Stable" else None


@pytest.mark.node
def test_kafkajs_member_stuck_in_each_message_is_removed_at_the_rebalance_timeout(cluster, node):  # noqa: F811
    """Delivery: kafkajs commits what a member resolved after each batch, and before it rejoins
    when a heartbeat (one after every record) tells it of a rebalance, so a member that takes part
    in the rebalance loses nothing and repeats nothing. The stuck member cannot: it is removed
    holding a fetched batch of each partition it owns, the stalled record's in ``eachMessage``.
    Their new owners read them from the start (nothing was committed). When the stall ends, a
    finishes the stalled record and then processes the first record of each of its other
    batches, a heartbeat refusing it after each (seen in every run), before it rejoins; no
    commit of its lands. So exactly one duplicate per partition a owned (3): each partition's
    first record, read by its new owner and then by a. The ledger names no cause: the removal
    came before the new owner's read, and nothing happens in the group between the two
    processings (a learns of its removal after them)."""
    gid = group_off_first_broker(cluster, "kafkajs-stuck")
    timeouts = {"sessionTimeout": 20000, "rebalanceTimeout": 3000, "heartbeatInterval": 300, "report": True}
    ledger = DeliveryLedger(cluster)  # no group=: node's lines reach it a pipe after the commits
    with NodeLedgerDriver(node, cluster, ledger) as driver:
        for name in ("a", "b"):
            driver.call("start", name=name, groupId=gid, topic=TOPIC, **timeouts)
        got = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS)
        stuck_id, first_share = got["memberIds"]["a"], got["assignments"]["a"]
        # settleMs: a's processed lines reach the ledger (a pipe and a reader thread away) before its
        # heartbeat and rejoin after each reach the broker; without it, a loaded machine stamped a
        # line after the rejoin and the ledger named that join as the duplicate's cause
        driver.call("stall", name="a", ms=9000, settleMs=300)
        driver.call("produce", topic=TOPIC, n=60, partitions=PARTITIONS)
        produced(ledger, TOPIC, 0, 60, PARTITIONS)
        stall = wait_for("stall_start", lambda: driver.of_type("stall_start", name="a"))[0]

        joined_at = time.monotonic()
        driver.call("start", name="c", groupId=gid, topic=TOPIC, **timeouts)  # a rebalance a cannot join
        removed_in_time(cluster, gid, stuck_id, joined_at, (2.5, 8))  # the rebalance timeout is 3 s
        # b and c share the partitions while a is still stuck
        members = wait_for("b and c alone", lambda: (m := stable_members(cluster, gid)) and len(m) == 2 and m)
        assert stuck_id not in members
        assert not driver.of_type("stall_end", name="a")

        # a's processing ends: it finds itself removed and joins again; all three share the topic
        got = driver.call("waitAssigned", names=["a", "b", "c"], topic=TOPIC, partitions=PARTITIONS, timeoutMs=30000)
        assert got["memberIds"]["a"] != stuck_id
        driver.call("waitConsumed", total=60)
        driver.call("waitCommitted", groupId=gid, topic=TOPIC)
        records = driver.call("consumed")["records"]
        assert {r[3] for r in records} == {f"key-{i}" for i in range(60)}  # nothing lost

    verdict = ledger.verdict()
    assert (verdict.produced, verdict.lost, verdict.committed_beyond_processed) == (60, [], []), verdict.summary()
    # a repeats the first record of each batch it held when it was removed (one per partition it
    # owned, each read meanwhile by the partition's new owner), the stalled record among them
    dups = verdict.duplicates
    assert (TOPIC, stall["partition"], stall["offset"]) in {(d.topic, d.partition, d.offset) for d in dups}, dups
    assert [(d.partition, d.offset) for d in dups] == [(p, 0) for p in sorted(first_share)], verdict.summary()
    assert all(d.times == 2 and d.members[0] in ("b", "c") and d.members[1] == "a" for d in dups), verdict.summary()
    assert {d.cause for d in dups} == {None}, verdict.summary()
    assert verdict.processed == 60 + len(dups) and not verdict.out_of_order, verdict.summary()


@pytest.mark.java
def test_frozen_java_member_is_removed_at_the_rebalance_timeout_and_rejoins(cluster, java_client_jar):  # noqa: F811
    """Delivery: each member commits (commitSync) after each poll of at most 50 records. a has
    read and committed everything produced before it is frozen; b reads what is produced while
    a is frozen; after the thaw a and b split what comes next. A record is read twice only if its
    poll's commit fails before its partition moves (a commit_failed line each), as it would if a,
    thawed, polled records of partitions it no longer owns before learning it was removed. So at
    least once, at most 50 repeats per failed commit; no commit has failed in any run so far."""
    gid = group_off_first_broker(cluster, "java-frozen")
    ledger = DeliveryLedger(cluster)  # no group=: the JVMs' lines reach it a pipe after the commits
    ends = {}

    def all_read_and_committed(n: int) -> bool:
        ends.update({(TOPIC, p): n // PARTITIONS for p in range(PARTITIONS)})
        return not ledger.verdict().lost and cluster.committed(gid) == ends

    with (
        LedgerDriver(java_client_jar, cluster, ledger) as frozen,
        LedgerDriver(java_client_jar, cluster, ledger) as others,
    ):
        # session 30 s, max.poll.interval (the rebalance timeout) 4 s: only the rebalance timeout can remove it
        timeouts = {"session": 30000, "heartbeat": 1000, "maxPoll": 4000}
        frozen.call("start", name="a", group=gid, topic=TOPIC, report="true", **timeouts)
        frozen.call("waitAssigned", names=["a"], topic=TOPIC, partitions=PARTITIONS)
        first = wait_for("a alone", lambda: stable_members(cluster, gid))
        (frozen_id,) = first
        frozen.call("produce", topic=TOPIC, n=60, partitions=PARTITIONS)
        produced(ledger, TOPIC, 0, 60, PARTITIONS)
        wait_for("a reading and committing 60 records", lambda: all_read_and_committed(60))

        os.kill(frozen.proc.pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            others.call("start", name="b", group=gid, topic=TOPIC, session=30000, maxPoll=4000, report="true")
            removed_in_time(cluster, gid, frozen_id, began, (3.5, 10))  # the rebalance timeout is 4 s
            others.call("waitAssigned", names=["b"], topic=TOPIC, partitions=PARTITIONS)
            assert wait_for("b alone", lambda: (m := stable_members(cluster, gid)) and frozen_id not in m and m)
            others.call("produce", topic=TOPIC, first=60, n=60, partitions=PARTITIONS)
            produced(ledger, TOPIC, 60, 60, PARTITIONS)
            wait_for("b reading and committing 60 more", lambda: all_read_and_committed(120))
        finally:
            os.kill(frozen.proc.pid, signal.SIGCONT)

        # thawed: its next heartbeat is refused, it rejoins with a new member id, and a and b split the topic
        def split() -> bool:
            g = live_group(cluster, gid)
            owned = g and [sorted(p for ps in m["assignment"].values() for p in ps) for m in g["members"].values()]
            return bool(
                g and g["state"] == "Stable" and frozen_id not in g["members"] and sorted(map(len, owned)) == [3, 3]
            )

        wait_for("a and b splitting the topic", split, timeout=30)
        wait_for(
            "a's new share", lambda: len((frozen.of_type("assigned", name="a") or [{}])[-1].get("partitions", [])) == 3
        )
        others.call("produce", topic=TOPIC, first=120, n=60, partitions=PARTITIONS)
        produced(ledger, TOPIC, 120, 60, PARTITIONS)
        wait_for("a and b reading and committing the last 60", lambda: all_read_and_committed(180))
        failed = frozen.of_type("commit_failed") + others.of_type("commit_failed")
        assert not frozen.of_type("consumer_failed") and not others.of_type("consumer_failed")

    verdict = ledger.verdict()
    assert (verdict.produced, verdict.lost, verdict.committed_beyond_processed) == (180, [], []), verdict.summary()
    extra = verdict.processed - verdict.produced  # 0 with no failed commit in every run so far
    assert extra <= 50 * len(failed), f"{extra} repeats with {len(failed)} failed commits\n{verdict.summary()}"
    assert not verdict.out_of_order, verdict.summary()


def member_rebalance_timeouts(cluster: FakeCluster, gid: str) -> list[int]:
    return cluster.call(
        lambda: [m.rebalance_timeout_ms for m in cluster.state.groups.classic.groups[gid].members.values()]
    )


@pytest.mark.java
def test_processing_just_past_max_poll_interval_livelocks_and_just_under_progresses(cluster, java_client_jar):  # noqa: F811
    """Two groups read the same 20 records (one partition) with one Java member each, 5 records a
    poll and ``max.poll.interval.ms`` (the rebalance timeout the member sends) 1.5 s.

    - ``slow`` takes 2.8 s per poll (and 0.5 s more before its commit): 1.5 s after the poll
      its heartbeat thread sees the poll interval run out and leaves the group (the Java
      consumer enforces the rebalance timeout itself; the coordinator's own removal at the
      rebalance timeout is only needed for a frozen JVM, above). Its commit then fails, its
      next poll rejoins as a new member, the group starts from the committed offset (none: the
      earliest) and it gets the same 5 records again: every cycle removed at the rebalance
      timeout, nothing ever committed.
    - ``steady`` takes 1.1 s per poll: it stays the one member of one generation and its commits
      advance 5, 10, 15, 20.
    """
    cluster.create_topic("work", 1)
    # A ledger per group. slow's with group=: its causes come from its own group's events, and it
    # never commits, so no commit of the coordinator's can run ahead of its lines. steady's
    # without: the JVM's lines reach it a pipe after the commits.
    ledgers = {"slow": DeliveryLedger(cluster, group="slow"), "steady": DeliveryLedger(cluster)}
    with LedgerDriver(java_client_jar, cluster, ledgers) as driver:
        driver.call("produce", topic="work", n=20, partitions=1)
        for ledger in ledgers.values():
            produced(ledger, "work", 0, 20, 1)
        common = {"topic": "work", "session": 6000, "heartbeat": 300, "maxPoll": 1500, "maxPollRecords": 5}
        common["report"] = "true"
        # The re-read causes (below) rely on two orders, each with a margin for a loaded machine:
        # - its leave (1.5 s after the poll, plus up to a heartbeat's 0.3 s) comes before its
        #   processing's lines at 2.8 s (2.3 s left only 0.2-0.5 s);
        # - the ledger stamps those lines before its commit fails and it rejoins: settleMs holds
        #   the commit 0.5 s. Without it the rejoin came first in a CI run: the JVM waits for
        #   nothing there, while the lines cross a pipe and wait for a Python thread.
        driver.call("start", name="slow", group="slow", processMs=2800, settleMs=500, **common)
        driver.call("start", name="steady", group="steady", processMs=1100, **common)

        seen: list[dict] = []  # each distinct commit state of steady, in order
        removals: list[dict] = []

        def three_cycles_done() -> bool:
            if not seen or cluster.committed("steady") != seen[-1]:
                seen.append(cluster.committed("steady"))
            removals[:] = events(cluster, "member_removed", "slow")
            failed = driver.of_type("commit_failed", name="slow")
            return len(failed) >= 3 and seen[-1] == {("work", 0): 20}

        wait_for("three failed cycles of slow and all of steady committed", three_cycles_done, timeout=40, step=0.02)
        assert member_rebalance_timeouts(cluster, "steady") == [1500]
        records = driver.call("consumed")["records"]
        # before the JVM's exit closes it (a LeaveGroup, then an empty generation)
        steady_removed = events(cluster, "member_removed", "steady")
        steady_generations = [e["generation"] for e in events(cluster, "generation_started", "steady")]
        failed = {name: driver.of_type("commit_failed", name=name) for name in ("slow", "steady")}

    # slow: removed at the rebalance timeout after each poll, as a new member every time
    assert [r["reason"] for r in removals] == ["left the group"] * len(removals)
    assert len({r["member"] for r in removals}) == len(removals)
    started = [
        e for e in cluster.events if e.kind == "generation_started" and e.group == "slow" and e.details["members"]
    ]
    gone = [e for e in cluster.events if e.kind == "member_removed" and e.group == "slow"]
    for removed in gone[:3]:
        joined = [e for e in started if e.seq < removed.seq][-1].time_ms  # the generation it was removed from
        assert 1500 <= removed.time_ms - joined < 2000, (removed.time_ms - joined, removed.describe())
    assert cluster.committed("slow") == {}  # never committed: the livelock
    assert len(failed["slow"]) >= 3 and {f["error"] for f in failed["slow"]} == {"CommitFailedException"}
    slow = collections.Counter(off for name, _, off, _ in records if name == "slow")
    assert set(slow) == {0, 1, 2, 3, 4} and len(set(slow.values())) == 1  # the same 5 records each cycle
    assert slow[0] >= 3

    # steady: one generation, commits advancing a poll at a time, each record once
    assert not steady_removed and not failed["steady"]
    assert steady_generations == [1]
    assert seen == [{}, *({("work", 0): n} for n in (5, 10, 15, 20))]
    assert sorted(off for name, _, off, _ in records if name == "steady") == list(range(20))

    # the ledgers: steady exactly once (commitSync after each poll, never a rebalance), nothing
    # committed beyond what it processed; slow never gets past its first poll's 5 records and
    # re-reads them every cycle. A processing is stamped when its line comes, after the 2.8 s, so
    # slow's leaving (at 1.5 s) comes before its first processing: what the ledger finds between
    # that and each re-read is slow rejoining as a new member and the generation that hands it
    # the same records
    verdict = ledgers["steady"].assert_exactly_once()
    assert (verdict.processed, verdict.committed_beyond_processed) == (20, []), verdict.summary()
    verdict = ledgers["slow"].verdict()
    assert verdict.lost == [RecordId("work", 0, o) for o in range(5, 20)], verdict.summary()  # the livelock
    cycles = verdict.duplicates[0].times
    assert cycles >= 3 and [(d.offset, d.times) for d in verdict.duplicates] == [(o, cycles) for o in range(5)]
    assert all(set(d.members) == {"slow"} for d in verdict.duplicates), verdict.summary()
    rejoined = started[1].details["generation"]  # slow's second generation with a member
    cause = re.compile(rf"generation {rejoined} \(rebalance: member fakebroker-java-slow-[0-9a-f]{{8}} joined\)")
    assert all(cause.fullmatch(d.cause or "") for d in verdict.duplicates), verdict.summary()
    # each later re-read is explained by its own cycle's generation (rereads() looks between a
    # record's previous processing and this one): five re-reads per cycle, generations rising
    rereads = ledgers["slow"].rereads()
    assert len(rereads) == 5 * (cycles - 1)
    gens = [int(re.match(r"generation (\d+) ", r.cause or "")[1]) for r in rereads]
    as_first = [re.sub(r"^generation \d+", f"generation {rejoined}", r.cause or "") for r in rereads]
    odd = [r for r, said in zip(rereads, as_first, strict=True) if not cause.fullmatch(said)]
    assert not odd, (odd, [r.cause for r in rereads])  # the re-reads another cause explains, in full
    per_cycle = [gens[i : i + 5] for i in range(0, len(gens), 5)]
    assert all(len(set(c)) == 1 for c in per_cycle) and per_cycle[0][0] == rejoined
    assert [c[0] for c in per_cycle] == sorted({c[0] for c in per_cycle})  # a new generation each cycle

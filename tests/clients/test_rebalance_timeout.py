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
import signal
import time

import pytest

from fakebroker.cluster import FakeCluster

from .group_state import events, group_off_first_broker, live_group
from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_groups import Driver as JavaDriver
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
    gid = group_off_first_broker(cluster, "kafkajs-stuck")
    timeouts = {"sessionTimeout": 20000, "rebalanceTimeout": 3000, "heartbeatInterval": 300}
    with NodeGroupsDriver(node, cluster) as driver:
        for name in ("a", "b"):
            driver.call("start", name=name, groupId=gid, topic=TOPIC, **timeouts)
        got = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS)
        stuck_id = got["memberIds"]["a"]
        driver.call("stall", name="a", ms=9000)
        driver.call("produce", topic=TOPIC, n=60, partitions=PARTITIONS)
        wait_for("stall_start", lambda: driver.of_type("stall_start", name="a"))

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
        records = driver.call("consumed")["records"]
        assert {r[3] for r in records} == {f"key-{i}" for i in range(60)}  # nothing lost


@pytest.mark.java
def test_frozen_java_member_is_removed_at_the_rebalance_timeout_and_rejoins(cluster, java_client_jar):  # noqa: F811
    gid = group_off_first_broker(cluster, "java-frozen")
    with JavaDriver(java_client_jar, cluster) as frozen, JavaDriver(java_client_jar, cluster) as others:
        # session 30 s, max.poll.interval (the rebalance timeout) 4 s: only the rebalance timeout can remove it
        frozen.call("start", name="a", group=gid, topic=TOPIC, session=30000, heartbeat=1000, maxPoll=4000)
        frozen.call("waitAssigned", names=["a"], topic=TOPIC, partitions=PARTITIONS)
        first = wait_for("a alone", lambda: stable_members(cluster, gid))
        (frozen_id,) = first

        os.kill(frozen.proc.pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            others.call("start", name="b", group=gid, topic=TOPIC, session=30000, maxPoll=4000)
            removed_in_time(cluster, gid, frozen_id, began, (3.5, 10))  # the rebalance timeout is 4 s
            others.call("waitAssigned", names=["b"], topic=TOPIC, partitions=PARTITIONS)
            assert wait_for("b alone", lambda: (m := stable_members(cluster, gid)) and frozen_id not in m and m)
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


def member_rebalance_timeouts(cluster: FakeCluster, gid: str) -> list[int]:
    return cluster.call(lambda: [m.rebalance_timeout_ms for m in cluster.state.groups.groups[gid].members.values()])


@pytest.mark.java
def test_processing_just_past_max_poll_interval_livelocks_and_just_under_progresses(cluster, java_client_jar):  # noqa: F811
    """Two groups read the same 20 records (one partition) with one Java member each, 5 records a
    poll and ``max.poll.interval.ms`` (the rebalance timeout the member sends) 1.5 s.

    - ``slow`` takes 1.9 s per poll: 1.5 s after the poll its heartbeat thread sees the poll
      interval run out and leaves the group (the Java consumer enforces the rebalance timeout
      itself; the coordinator's own removal at the rebalance timeout is only needed for a frozen
      JVM, above). Its commit then fails, its next poll rejoins as a new member, the group starts
      from the committed offset (none: the earliest) and it gets the same 5 records again: every
      cycle removed at the rebalance timeout, nothing ever committed.
    - ``steady`` takes 1.1 s per poll: it stays the one member of one generation and its commits
      advance 5, 10, 15, 20.
    """
    cluster.create_topic("work", 1)
    with JavaDriver(java_client_jar, cluster) as driver:
        driver.call("produce", topic="work", n=20, partitions=1)
        common = {"topic": "work", "session": 6000, "heartbeat": 300, "maxPoll": 1500, "maxPollRecords": 5}
        driver.call("start", name="slow", group="slow", processMs=1900, **common)
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

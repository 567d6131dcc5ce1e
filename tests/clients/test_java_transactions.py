"""Exactly-once consume-transform-produce with the Java client (kafka-clients) against fakebroker's
transaction coordinator.

One JVM per driver runs ``fakebroker.TxnScenarios`` (tests/clients/java): workers of one group,
each a read_committed KafkaConsumer plus a transactional KafkaProducer, copying "in" to "out"
(value "value-I" becomes "done-I", same partition) in transactions that also commit the consumed
offsets (sendOffsetsToTransaction), and bare transactional producers driven step by step. Every
test ends with the exactly-once check: what a read_committed reader sees of "out" is every input
record exactly once, in input order per partition, and the group's committed offsets are the
ends of "in".

Kafka 4.x clients use transaction version 2 (KIP-890) unless the cluster finalizes
``transaction.version`` 1. The jar is built by ``test_java_client.java_client_jar`` (Maven,
rebuilt when any file under tests/clients/java/src is newer than the jar). Set
``FAKEBROKER_JAVA_LOG=debug`` for the client's DEBUG log in a failing test's message.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster

from .jvm_driver import JvmDriver
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]

IN, OUT, PARTITIONS = "in", "out", 6
DONE_TIMEOUT = 45  # seconds for the app to work through its input


class Driver(JvmDriver):
    """A running TxnScenarios JVM; notes (assigned, holding, aborted, fatal, closed, ...) are kept."""

    main_class = "fakebroker.TxnScenarios"
    exit_timeout = 60

    def wait_note(self, kind: str, timeout: float = 20, **match: Any) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            found = self.of_type(kind, **match)
            if found:
                return found[0]
            if time.monotonic() > deadline:
                pytest.fail(f"no {kind} note {match} within {timeout} s{self.diagnostics()}")
            time.sleep(0.05)


@pytest.fixture
def cluster(request):
    """3 brokers, "in" and "out" with 6 partitions; indirect params are extra FakeCluster arguments."""
    extra = getattr(request, "param", {})
    with FakeCluster(brokers=3, topics={IN: PARTITIONS, OUT: PARTITIONS}, **extra).run_in_thread() as c:
        yield c


@pytest.fixture
def driver(java_client_jar, cluster):  # noqa: F811
    with Driver(java_client_jar, cluster) as d:
        yield d


# -- helpers --------------------------------------------------------------------------------------
def start_workers(driver: Driver, gid: str, names: str, **props: Any) -> None:
    """Start one worker per letter of ``names``, transactional id ``eos-<name>``."""
    for name in names:
        driver.call("start", name=name, group=gid, tid=f"eos-{name}", **props)


def wait_group(cluster: FakeCluster, gid: str, members: int, timeout: float = 30) -> None:
    """Until the group is Stable with ``members`` members, each owning a share of "in"."""
    deadline = time.monotonic() + timeout
    while True:
        g = cluster.group(gid)
        if g and g.state == "Stable" and len(g.members) == members and all(m.assignment for m in g.members):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"group {gid} never Stable with {members} members: {g}")
        time.sleep(0.05)


def wait_event(cluster: FakeCluster, kind: str, timeout: float = 20, **match: Any):
    deadline = time.monotonic() + timeout
    while True:
        found = [e for e in cluster.events if e.kind == kind and all(getattr(e, k) == v for k, v in match.items())]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no {kind} event {match} within {timeout} s: {txn_events(cluster)[-30:]}")
        time.sleep(0.05)


def txn_events(cluster: FakeCluster, tid: str | None = None) -> list[str]:
    return [
        e.describe() for e in cluster.events if e.kind.startswith("txn_") and (tid is None or e.transactional_id == tid)
    ]


def input_ends(cluster: FakeCluster) -> dict[tuple[str, int], int]:
    return {(IN, p): cluster.offsets(IN, p)[1] for p in range(PARTITIONS)}


def wait_processed(cluster: FakeCluster, driver: Driver, gid: str, n: int, timeout: float = DONE_TIMEOUT) -> None:
    """Until the group's committed offsets are the ends of "in" (holding ``n`` records) and
    nothing of "out" is left in an open transaction."""
    deadline = time.monotonic() + timeout
    while True:
        ends = input_ends(cluster)
        if (
            sum(ends.values()) == n
            and cluster.committed(gid) == ends
            and len(cluster.records(OUT, committed=True)) >= n
        ):
            return
        if time.monotonic() > deadline:
            pytest.fail(
                f"not processed within {timeout} s: committed {cluster.committed(gid)}, ends {ends}, "
                f"out {len(cluster.records(OUT, committed=True))}{driver.diagnostics()}"
            )
        time.sleep(0.1)


def assert_exactly_once(cluster: FakeCluster, gid: str, n: int) -> list[tuple]:
    """Every input record in "out" exactly once, transformed, on its partition, in input order;
    the group's offsets at the ends of "in". Returns what "out" holds, aborted records included."""
    visible = cluster.records(OUT, committed=True)
    keys = collections.Counter(k.decode() for _, _, k, _ in visible)
    dupes = {k: c for k, c in keys.items() if c > 1}
    assert not dupes, f"duplicates in out: {sorted(dupes)[:20]}"
    assert set(keys) == {f"key-{i}" for i in range(n)}, f"lost: {sorted({f'key-{i}' for i in range(n)} - set(keys))}"
    by_partition: dict[int, list[int]] = collections.defaultdict(list)
    for p, _, k, v in visible:
        i = int(k.decode().split("-")[1])
        assert (p, v) == (i % PARTITIONS, f"done-{i}".encode()), (p, k, v)
        by_partition[p].append(i)
    assert all(ids == sorted(ids) for ids in by_partition.values()), "out is in input order per partition"
    assert cluster.committed(gid) == input_ends(cluster)
    assert sum(input_ends(cluster).values()) == n
    return cluster.records(OUT)


def aborted_keys(cluster: FakeCluster) -> collections.Counter:
    """Keys of "out" records that a read_committed reader does not see (aborted transactions)."""
    every = collections.Counter(k.decode() for _, _, k, _ in cluster.records(OUT))
    visible = collections.Counter(k.decode() for _, _, k, _ in cluster.records(OUT, committed=True))
    return every - visible


def assert_healthy(cluster: FakeCluster) -> None:
    bad = [e.describe() for e in cluster.events if e.kind == "handler_error"]
    assert not bad, "\n".join(bad)


# -- tests --------------------------------------------------------------------------------------
def test_three_workers_through_a_join_and_a_leave_process_each_record_exactly_once(cluster, driver):
    gid = "eos-rebalance"
    start_workers(driver, gid, "abc")
    wait_group(cluster, gid, 3)
    first_generation = cluster.group(gid).generation
    driver.call("produceStream", topic=IN, n=900, chunk=6, intervalMs=15)
    driver.call("waitProduced", count=300, timeout=40)
    start_workers(driver, gid, "d")  # a 4th joins mid-stream
    driver.call("waitProduced", count=600, timeout=40)
    stopped = driver.call("stop", name="b", timeout=40)  # one leaves mid-stream, its last transaction committed
    driver.call("waitStream", timeout=70, timeoutMs=60000)
    wait_processed(cluster, driver, gid, 900)

    assert_exactly_once(cluster, gid, 900)
    stats = driver.call("stats")["workers"]
    assert stats["d"]["records"] > 0, "the joiner took over partitions and processed some"
    assert stopped["records"] > 0
    assert sum(w["records"] for w in stats.values()) == 900, stats
    assert cluster.group(gid).generation >= first_generation + 2, "a rebalance for the join, one for the leave"
    assert driver.of_type("assigned", name="d")
    assert not driver.of_type("fatal") and not driver.of_type("worker_failed"), driver.diagnostics()
    for name in "abcd":
        assert [e for e in cluster.events if e.kind == "txn_committed" and e.transactional_id == f"eos-{name}"]
        began = [e for e in cluster.events if e.kind == "txn_began" and e.transactional_id == f"eos-{name}"]
        assert began and {e.version for e in began} == {2}, "TV2: the partitions are added by Produce v12"
        epochs = [e.epoch for e in cluster.events if e.kind == "txn_committed" and e.transactional_id == f"eos-{name}"]
        assert epochs == sorted(set(epochs)), "TV2: every EndTxn bumps the epoch"
    assert not [e for e in cluster.events if e.kind in ("txn_fenced", "txn_timed_out")]
    assert_healthy(cluster)


def test_a_worker_killed_mid_transaction_is_fenced_by_its_replacement(cluster, driver, java_client_jar):  # noqa: F811
    gid = "eos-kill"
    doomed = Driver(java_client_jar, cluster)  # worker c lives in its own JVM, to be killed
    try:
        start_workers(driver, gid, "ab")
        start_workers(doomed, gid, "c")
        wait_group(cluster, gid, 3)
        doomed.call("hold", name="c")
        driver.call("produce", topic=IN, n=300)
        holding = doomed.wait_note("holding", name="c")
        open_txn = cluster.transaction("eos-c")
        assert open_txn.state == "Ongoing"
        assert {f"{OUT}-{p}" for p in holding["partitions"]} <= {f"{t}-{p}" for t, p in open_txn.partitions}
        assert any(t == "__consumer_offsets" for t, _ in open_txn.partitions), "TxnOffsetCommit v5 added it"
        doomed.cancel_killer()
        doomed.kill()  # SIGKILL: the transaction stays open, the member in the group until its session ends
    finally:
        doomed.close()

    # the replacement, with the dead worker's transactional id, fences it at initTransactions
    driver.call("start", name="c2", group=gid, tid="eos-c")
    fenced = wait_event(cluster, "txn_fenced", transactional_id="eos-c")
    assert (fenced.producer_id, fenced.epoch) == (open_txn.producer_id, open_txn.producer_epoch)
    assert fenced.reason == "fenced by a new instance"
    aborted = wait_event(cluster, "txn_aborted", transactional_id="eos-c")
    assert {f"{OUT}-{p}" for p in holding["partitions"]} <= set(aborted.partitions)
    driver.wait_note("initialized", name="c2")
    wait_group(cluster, gid, 3, timeout=30)  # after c's session (6 s) ends
    driver.call("produce", topic=IN, first=300, n=60)
    wait_processed(cluster, driver, gid, 360)

    assert_exactly_once(cluster, gid, 360)
    lost_work = aborted_keys(cluster)
    assert set(holding["keys"]) <= set(lost_work), "the killed transaction's records are in the log, aborted"
    assert not driver.of_type("fatal"), driver.diagnostics()
    assert_healthy(cluster)


def test_a_transaction_survives_its_coordinator_moving_before_the_commit(cluster, driver):
    gid = "eos-move"
    start_workers(driver, gid, "abc")
    wait_group(cluster, gid, 3)
    driver.call("hold", name="a")
    driver.call("produce", topic=IN, n=300)
    holding = driver.wait_note("holding", name="a")
    before = cluster.transaction("eos-a")
    assert before.state == "Ongoing"
    moved_to = cluster.move_transaction_coordinator("eos-a", load_time_ms=300)
    assert moved_to != before.coordinator
    after = cluster.transaction("eos-a")
    assert (after.state, after.partitions, after.coordinator) == ("Ongoing", before.partitions, moved_to)
    driver.call("release", name="a", action="commit")
    committed = wait_event(cluster, "txn_committed", transactional_id="eos-a", epoch=before.producer_epoch + 1)
    assert committed.broker == moved_to, "the new coordinator completed it"
    assert set(committed.partitions) == {f"{t}-{p}" for t, p in before.partitions}
    wait_processed(cluster, driver, gid, 300)

    # the commit went to the old coordinator, then (timing allowing) waited out the new one's loading
    end_txn_errors = {
        (e.broker, e.error)
        for e in cluster.events
        if e.kind == "request_error" and e.api == "EndTxn" and e.client_id == "txn-java-a-producer"
    }
    assert (before.coordinator, "NOT_COORDINATOR") in end_txn_errors
    assert end_txn_errors <= {(before.coordinator, "NOT_COORDINATOR"), (moved_to, "COORDINATOR_LOAD_IN_PROGRESS")}
    assert_exactly_once(cluster, gid, 300)
    assert not aborted_keys(cluster), "nothing aborted"
    assert set(holding["keys"]) <= {k.decode() for _, _, k, _ in cluster.records(OUT, committed=True)}
    assert not driver.of_type("aborted") and not driver.of_type("fatal"), driver.diagnostics()
    assert_healthy(cluster)


@pytest.mark.parametrize(
    "cluster", [{"config": {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}}], indirect=True
)
def test_a_stalled_transaction_times_out_and_is_aborted(cluster, driver):
    # three producers stall past their 2 s transaction timeout, then commit, abort or send more
    names = ("committer", "aborter", "sender")
    views = {}
    for k, name in enumerate(names):
        assert driver.call("pinit", name=name, tid=f"slow-{name}", timeoutMs=2000)["ok"]
        assert driver.call("pbegin", name=name)["ok"]
        assert driver.call("psend", name=name, topic=OUT, first=6 * k, n=6)["ok"]
        views[name] = cluster.transaction(f"slow-{name}")
        assert views[name].state == "Ongoing"
    assert len(cluster.records(OUT)) == 18 and not cluster.records(OUT, committed=True), "open: not visible"

    for name in names:
        view = views[name]
        timed_out = wait_event(cluster, "txn_timed_out", timeout=10, transactional_id=f"slow-{name}")
        assert (timed_out.producer_id, timed_out.timeout_ms) == (view.producer_id, 2000)
        fenced = wait_event(cluster, "txn_fenced", transactional_id=f"slow-{name}")
        assert (fenced.epoch, fenced.new_epoch, fenced.reason) == (
            view.producer_epoch,
            view.producer_epoch + 1,
            "transaction timed out",
        )
        wait_event(cluster, "txn_aborted", transactional_id=f"slow-{name}")
        assert cluster.transaction(f"slow-{name}").state == "CompleteAbort"
    assert len(cluster.records(OUT)) == 18 and not cluster.records(OUT, committed=True), "aborted, not visible"

    # TV2 (KIP-890): the timeout's abort bumped the epoch by one, so the producer's EndTxn at the
    # old epoch reads as a retry: an abort succeeds, a commit gets INVALID_TXN_STATE (fatal for
    # the Java producer; Kafka since KAFKA-20785 answers PRODUCER_FENCED instead)
    commit = driver.call("pcommit", name="committer")
    assert (commit["ok"], commit["exception"]) == (False, "InvalidTxnStateException"), commit
    assert driver.call("pabort", name="aborter")["ok"]
    # a Produce at the old epoch: INVALID_PRODUCER_EPOCH, abortable (as Kafka since KAFKA-19690)
    send = driver.call("psend", name="sender", topic=OUT, first=50, n=6)
    assert (send["ok"], send["exception"]) == (False, "InvalidProducerEpochException"), send
    commit = driver.call("pcommit", name="sender")
    assert (commit["ok"], commit["exception"]) == (False, "InvalidProducerEpochException"), commit
    assert driver.call("pabort", name="sender")["ok"]

    # the aborter and the sender go on at the bumped epoch
    for name, first in (("aborter", 100), ("sender", 200)):
        assert driver.call("pbegin", name=name)["ok"]
        assert driver.call("psend", name=name, topic=OUT, first=first, n=6)["ok"]
        assert driver.call("pcommit", name=name)["ok"]
        assert cluster.transaction(f"slow-{name}").state == "CompleteCommit"
    visible = sorted(k.decode() for _, _, k, _ in cluster.records(OUT, committed=True))
    assert visible == sorted(f"key-{i}" for first in (100, 200) for i in range(first, first + 6))
    assert {f"key-{i}" for i in range(18)} <= set(aborted_keys(cluster))
    assert_healthy(cluster)


@pytest.mark.parametrize(
    "cluster",
    [{"features": {"transaction.version": 1}}, {"kafka_version": "3.9"}],
    indirect=True,
    ids=["tv1", "kafka-3.9"],
)
def test_transaction_version_1_processes_each_record_exactly_once(cluster, driver):
    """With transaction.version 1 finalized, or on a Kafka 3.9 broker (no such feature at all)."""
    gid = "eos-tv1"
    start_workers(driver, gid, "abc")
    wait_group(cluster, gid, 3)
    driver.call("produceStream", topic=IN, n=600, chunk=6, intervalMs=15)
    driver.call("waitProduced", count=300, timeout=40)
    driver.call("stop", name="c", timeout=40)  # a rebalance mid-stream
    driver.call("waitStream", timeout=70, timeoutMs=60000)
    wait_processed(cluster, driver, gid, 600)

    assert_exactly_once(cluster, gid, 600)
    began = [e for e in cluster.events if e.kind == "txn_began"]
    assert began and {e.version for e in began} == {1}, "TV1: AddPartitionsToTxn v3, not Produce v12"
    added = [p for e in cluster.events if e.kind == "txn_partitions_added" for p in e.partitions]
    assert any(p.startswith("__consumer_offsets-") for p in added), "AddOffsetsToTxn"
    assert any(p.startswith(f"{OUT}-") for p in added)
    assert [e for e in cluster.events if e.kind == "txn_offsets_added" and e.group == gid]
    # TV1 keeps the epoch across transactions (no bump per EndTxn)
    epochs = {(e.transactional_id, e.epoch) for e in cluster.events if e.kind == "txn_committed"}
    assert len(epochs) == len({tid for tid, _ in epochs}), epochs
    assert not driver.of_type("fatal") and not driver.of_type("aborted"), driver.diagnostics()
    assert_healthy(cluster)


@pytest.mark.parametrize("next_step", ["commit", "send"])
def test_a_zombie_producer_is_fenced_by_a_new_instance_of_its_transactional_id(cluster, driver, next_step):
    assert driver.call("pinit", name="zombie", tid="shared")["ok"]
    assert driver.call("pbegin", name="zombie")["ok"]
    assert driver.call("psend", name="zombie", topic=OUT, first=0, n=6)["ok"]
    zombie = cluster.transaction("shared")

    # the new instance's initTransactions fences the zombie's epoch and aborts its open transaction
    assert driver.call("pinit", name="fresh", tid="shared")["ok"]
    fenced = wait_event(cluster, "txn_fenced", transactional_id="shared")
    assert (fenced.producer_id, fenced.epoch, fenced.reason) == (
        zombie.producer_id,
        zombie.producer_epoch,
        "fenced by a new instance",
    )
    assert cluster.transaction("shared").producer_epoch > zombie.producer_epoch
    assert driver.call("pbegin", name="fresh")["ok"]
    assert driver.call("psend", name="fresh", topic=OUT, first=100, n=6)["ok"]
    assert driver.call("pcommit", name="fresh")["ok"]

    if next_step == "send":
        # A Produce at the old epoch fails verification; Kafka's partition leader turns the
        # coordinator's PRODUCER_FENCED into INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager),
        # an abortable error for the client; the abort then learns it is fenced.
        send = driver.call("psend", name="zombie", topic=OUT, first=6, n=6)
        assert (send["ok"], send["exception"]) == (False, "InvalidProducerEpochException"), send
        commit = driver.call("pcommit", name="zombie")
        assert (commit["ok"], commit["exception"]) == (False, "InvalidProducerEpochException"), commit
        abort = driver.call("pabort", name="zombie")
        assert (abort["ok"], abort["exception"]) == (False, "ProducerFencedException"), abort
    else:
        commit = driver.call("pcommit", name="zombie")  # EndTxn at the old epoch: PRODUCER_FENCED
        assert (commit["ok"], commit["exception"]) == (False, "ProducerFencedException"), commit

    visible = sorted(k.decode() for _, _, k, _ in cluster.records(OUT, committed=True))
    assert visible == sorted(f"key-{i}" for i in range(100, 106)), "only the new instance's records"
    assert {f"key-{i}" for i in range(6)} <= set(aborted_keys(cluster)), "the zombie's records, aborted"
    assert len([e for e in cluster.events if e.kind == "txn_committed"]) == 1, txn_events(cluster)
    assert_healthy(cluster)


def test_a_zombie_worker_is_fenced_at_commit_and_closes(cluster, driver):
    gid = "eos-zombie"
    start_workers(driver, gid, "abc")
    wait_group(cluster, gid, 3)
    driver.call("hold", name="a")
    driver.call("produce", topic=IN, n=300)
    holding = driver.wait_note("holding", name="a")
    # a second instance of a (same transactional id, another member of the group) starts
    driver.call("start", name="a2", group=gid, tid="eos-a")
    wait_event(cluster, "txn_fenced", transactional_id="eos-a", reason="fenced by a new instance")
    driver.wait_note("initialized", name="a2")
    driver.call("release", name="a", action="commit")
    fatal = driver.wait_note("fatal", name="a")
    assert fatal["error"] == "ProducerFencedException", fatal
    assert driver.wait_note("closed", name="a")["fatal"] == "ProducerFencedException"
    wait_group(cluster, gid, 3)  # b, c and a2 once the zombie has left
    driver.call("produce", topic=IN, first=300, n=60)
    wait_processed(cluster, driver, gid, 360)

    assert_exactly_once(cluster, gid, 360)
    assert set(holding["keys"]) <= set(aborted_keys(cluster)), "the zombie's transaction, aborted"
    assert driver.call("stats")["workers"]["a2"]["records"] > 0
    assert_healthy(cluster)


# -- KIP-848: the workers' consumers with group.protocol=consumer -----------------------------------
KIP848 = {"config": {"group.consumer.heartbeat.interval.ms": 300}}


def member_epochs(cluster: FakeCluster, gid: str) -> dict[str, set[int]]:
    """Member id -> every member epoch the coordinator gave it (MemberReconciled)."""
    out: dict[str, set[int]] = collections.defaultdict(set)
    for e in cluster.events:
        if e.kind == "member_reconciled" and e.group == gid:
            out[e.member].add(e.epoch)
    return out


@pytest.mark.parametrize("cluster", [KIP848], indirect=True)
def test_consumer_protocol_workers_through_a_join_and_a_leave_process_each_record_exactly_once(cluster, driver):
    gid = "eos-kip848"
    start_workers(driver, gid, "abc", protocol="consumer")
    wait_group(cluster, gid, 3)
    assert cluster.group(gid).group_type == "consumer"
    first_epoch = cluster.group(gid).generation
    driver.call("produceStream", topic=IN, n=900, chunk=6, intervalMs=15)
    driver.call("waitProduced", count=300, timeout=40)
    start_workers(driver, gid, "d", protocol="consumer")  # a 4th joins mid-stream
    driver.call("waitProduced", count=600, timeout=40)
    stopped = driver.call("stop", name="b", timeout=40)  # one leaves mid-stream
    driver.call("waitStream", timeout=70, timeoutMs=60000)
    wait_processed(cluster, driver, gid, 900)

    assert_exactly_once(cluster, gid, 900)
    stats = driver.call("stats")["workers"]
    assert stats["d"]["records"] > 0 and stopped["records"] > 0
    assert sum(w["records"] for w in stats.values()) == 900, stats
    assert cluster.group(gid).generation >= first_epoch + 2, "a group epoch for the join, one for the leave"
    # every transaction's TxnOffsetCommit carried the worker's member id and a member epoch the
    # coordinator had given that member (the commit is refused otherwise)
    epochs = member_epochs(cluster, gid)
    for name in "abcd":
        used = stats[name]["committedWith"]
        assert used, name
        member_ids = {member for member, _ in used}
        assert len(member_ids) == 1, f"{name} kept one member id: {used}"
        [member] = member_ids
        assert member in epochs, (name, member, sorted(epochs))
        assert {epoch for _, epoch in used} <= epochs[member], (name, used, epochs[member])
    assert len({m for w in stats.values() for m, _ in w["committedWith"]}) == 4
    assert len({e for w in "acd" for _, e in stats[w]["committedWith"]}) > 1, "epochs moved on through the rebalances"
    # an abort (if any) is the KIP-447 check refusing a commit whose epoch the consumer had not yet caught up on
    assert {n["error"] for n in driver.of_type("aborted")} <= {"CommitFailedException"}, driver.of_type("aborted")
    assert not driver.of_type("fatal") and not driver.of_type("worker_failed"), driver.diagnostics()
    assert not [e for e in cluster.events if e.kind in ("txn_fenced", "txn_timed_out")]
    assert_healthy(cluster)


@pytest.mark.parametrize("cluster", [KIP848], indirect=True)
def test_consumer_protocol_worker_with_an_older_member_epoch_commits_the_partitions_it_still_holds(cluster, driver):
    """Kafka 4.3+ judges a transactional commit with an older member epoch per partition: the
    partitions the member has held since that epoch commit (it raced a reconciliation), one it
    lost would fail the request with STALE_MEMBER_EPOCH (TxnOffsetCommit v6; unit-tested)."""
    gid = "eos-kip848-stale"
    start_workers(driver, gid, "a", protocol="consumer")
    wait_group(cluster, gid, 1)
    pinned = driver.call("pin", name="a")  # a's group metadata as it is now
    [member] = cluster.group(gid).members
    assert (pinned["memberId"], pinned["generation"]) == (member.member_id, member.member_epoch)
    start_workers(driver, gid, "b", protocol="consumer")  # a rebalance: a's epoch moves on

    def moved_on(c: FakeCluster) -> bool:
        g = c.group(gid)
        return (
            g is not None
            and len(g.members) == 2
            and all(m.assignment and m.member_epoch == g.generation for m in g.members)
            and next(m for m in g.members if m.member_id == pinned["memberId"]).member_epoch > pinned["generation"]
        )

    cluster.wait_for_sync(moved_on, timeout=30)
    current = next(m for m in cluster.group(gid).members if m.member_id == pinned["memberId"]).member_epoch

    # a zombie's view of the group: a's next transaction sends its offsets with the old epoch
    driver.call("usePinned", name="a")
    driver.call("produce", topic=IN, n=120)
    used = driver.wait_note("pinned_used", name="a")
    assert (used["memberId"], used["generation"]) == (pinned["memberId"], pinned["generation"])
    assert used["current"] == current, "the consumer itself was at the new epoch"
    wait_processed(cluster, driver, gid, 120)

    assert_exactly_once(cluster, gid, 120)
    assert not driver.of_type("fatal") and not driver.of_type("aborted"), driver.diagnostics()
    refused = [e for e in cluster.events if e.kind == "request_error" and e.api == "TxnOffsetCommit"]
    assert refused == [], refused
    committed = [e for e in cluster.events if e.kind == "txn_offsets_added" and e.group == gid]
    assert committed, "the zombie's older epoch committed the partitions it still held"
    assert_healthy(cluster)

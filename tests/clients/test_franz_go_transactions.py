"""franz-go (kgo) transactions against fakebroker's transaction coordinator.

``tests/clients/go/txn`` is a second program of the ``tests/clients/go`` module, ``fbtxn``: a
line driver (one JSON command per stdin line, one reply per command, see its main.go) running
``kgo.GroupTransactSession`` members (``FetchIsolationLevel(kgo.ReadCommitted())``,
``RequireStableFetchOffsets()``) and plain transactional clients. The session fixture builds it
with ``go build`` into a temporary directory (the Go build cache makes a rebuild about a second).

fakebroker finalizes ``transaction.version`` 2, so franz-go 1.22 runs KIP-890 part 2: no
AddPartitionsToTxn or AddOffsetsToTxn (Produce v12+ and TxnOffsetCommit v5 add implicitly), and
EndTxn v5, whose answer bumps the producer epoch after every transaction. The tests observe the
versions with a fault rule that only watches (action "delay", 0 s).

Set ``FAKEBROKER_GO_LOG=debug`` (or info) for kgo's log (stderr, shown in a failing test's message).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster

from .driver import LineDriver
from .group_state import group_off_first_broker
from .txn_support import TXN_APIS, assert_exactly_once, input_end, txn_events, versions_used, wait_until

pytestmark = [pytest.mark.clients, pytest.mark.go]

GO_DIR = Path(__file__).parent / "go"
BUILD_TIMEOUT = 300
LIFETIME = 120  # the driver process is killed after this long whatever happens
FRANZ_GO_VERSION = "v1.22.2"  # as in go.mod
IN, OUT, PARTITIONS = "in", "out", 6
BROKER_CONFIG = {
    "group.min.session.timeout.ms": 1000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}


def go_build(tmp_path_factory: pytest.TempPathFactory, package: str, name: str) -> Path:
    """``go build`` of one program of tests/clients/go (``./txn``, ``./tokens``) into a session folder."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not installed: the franz-go tests need the Go toolchain (scripts/setup.sh installs it)")
    binary = tmp_path_factory.mktemp(name) / name
    env = {**os.environ, "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -mod=mod -buildvcs=false".strip()}
    try:
        out = subprocess.run(
            [go, "build", "-o", str(binary), package],
            cwd=GO_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"go build {package} took over {BUILD_TIMEOUT} s")
    assert out.returncode == 0 and binary.exists(), f"go build failed:\n{out.stdout[-6000:]}\n{out.stderr[-6000:]}"
    return binary


@pytest.fixture(scope="session")
def fbtxn(tmp_path_factory) -> Path:
    return go_build(tmp_path_factory, "./txn", "fbtxn")


class Driver(LineDriver):
    """A running fbtxn: ``call(cmd, **args)`` sends one command and returns its reply."""

    name = "fbtxn"
    log_name = "fbtxn"

    def __init__(self, binary: Path, cluster: FakeCluster):
        env = {**os.environ, "FAKEBROKER_GO_LOG": os.environ.get("FAKEBROKER_GO_LOG", "warn")}
        super().__init__([str(binary), cluster.bootstrap_servers], cluster, lifetime=LIFETIME, env=env)
        first = self.first_line(timeout=20)
        if first is None or first.get("type") != "version":
            self.kill()
            pytest.fail(f"fbtxn did not start: {first}{self.diagnostics()}")
        assert first["franz_go"] == FRANZ_GO_VERSION, first

    def call(self, cmd: str, timeout: float = 30, **args: Any) -> dict:
        args.setdefault("timeout_ms", int((timeout - 5) * 1000))
        return super().call(cmd, timeout, **args)

    def ok(self, cmd: str, timeout: float = 30, **args: Any) -> dict:
        reply = self.call(cmd, timeout, **args)
        assert reply["ok"], f"{cmd} {args} failed: {reply['failure']}{self.diagnostics()}"
        return reply

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.call("exit", timeout=45)
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.kill()
        finally:
            self.cancel_killer()


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={IN: PARTITIONS, OUT: PARTITIONS}, config=BROKER_CONFIG).run_in_thread() as c:
        c.faults.add(api=TXN_APIS, action="delay", delay=0)  # watches every transactional request's version
        yield c
        assert not [e.describe() for e in c.events if e.kind in ("handler_error", "connection_closed")]


@pytest.fixture
def driver(fbtxn, cluster):
    d = Driver(fbtxn, cluster)
    try:
        yield d
    finally:
        d.close()


def refused(cluster: FakeCluster, since: int = 0, client_id: str | None = None) -> list[tuple[str, str]]:
    return [
        (e.details["api"], e.details["error"])
        for e in cluster.events[since:]
        if e.kind == "request_error" and (client_id is None or e.client_id == client_id)
    ]


# -- 1. GroupTransactSession: exactly once while members join and leave ------------------------------
def test_group_transact_session_is_exactly_once_through_a_join_and_a_leave(cluster, driver):
    gid = group_off_first_broker(cluster, "go-eos")
    member = {"group": gid, "input": IN, "output": OUT, "max_records": 20, "pace_ms": 50}
    driver.call("produce", topic=IN, n=300, partitions=PARTITIONS)
    driver.call("startMember", name="a", transactional_id="go-eos-a", **member)
    driver.call("startMember", name="b", transactional_id="go-eos-b", **member)
    wait_until(lambda: len(cluster.records(OUT, committed=True)) >= 60, 20, "the first committed output")

    # c joins while a and b are mid-stream (cooperative-sticky: a and b give up only what moves to c)
    generation = cluster.group(gid).generation
    driver.call("startMember", name="c", transactional_id="go-eos-c", **member)
    driver.call("produce", topic=IN, first=300, n=300, partitions=PARTITIONS)
    wait_until(lambda: driver.call("stats")["members"]["c"]["commits"] >= 1, 20, "c to commit a transaction")
    wait_until(lambda: cluster.group(gid).generation > generation, 20, "the rebalance to complete")

    # a leaves (LeaveGroup) mid-stream: b and c take its partitions from its committed offsets
    generation = cluster.group(gid).generation
    driver.call("produce", topic=IN, first=600, n=300, partitions=PARTITIONS)
    assert cluster.committed(gid) != input_end(cluster), "the input was not all processed yet"
    left = driver.call("stopMember", name="a")
    wait_until(lambda: cluster.committed(gid) == input_end(cluster), 40, "the group to commit the input's end")
    wait_until(lambda: cluster.group(gid).generation > generation, 20, "the rebalance to complete")
    stats = {"a": left, **driver.call("stats")["members"]}
    assert sorted(p for name in "bc" for p in stats[name]["owned"]) == list(range(PARTITIONS))
    for name in "bc":
        stats[name] = driver.call("stopMember", name=name)

    assert_exactly_once(cluster, gid, 900)
    assert all(s["failures"] == [] for s in stats.values()), stats
    assert sum(s["records"] for s in stats.values()) == 900, "each input record went through one committed transaction"
    committed = [e for e in cluster.events if e.kind == "txn_committed"]
    assert {e.details["transactional_id"] for e in committed} == {"go-eos-a", "go-eos-b", "go-eos-c"}
    assert len(committed) == sum(s["commits"] for s in stats.values())
    # GroupTransactSession aborts a transaction a revocation overlapped; each abort was re-read and
    # committed later (checked above). Nothing was fenced or timed out.
    aborted = [e for e in cluster.events if e.kind == "txn_aborted"]
    assert len(aborted) == sum(s["aborts"] for s in stats.values())
    assert not [e for e in cluster.events if e.kind in ("txn_fenced", "txn_timed_out")]
    # what the brokers refused: rebalancing, and TxnOffsetCommit from a generation that had moved on
    # (KIP-447), which the session answers by aborting
    assert set(refused(cluster)) <= {
        ("JoinGroup", "MEMBER_ID_REQUIRED"),
        ("SyncGroup", "REBALANCE_IN_PROGRESS"),
        ("Heartbeat", "REBALANCE_IN_PROGRESS"),
        ("TxnOffsetCommit", "ILLEGAL_GENERATION"),
        ("TxnOffsetCommit", "REBALANCE_IN_PROGRESS"),
        ("OffsetFetch", "UNSTABLE_OFFSET_COMMIT"),
    }, refused(cluster)

    # KIP-890 part 2 on the wire: EndTxn v5, TxnOffsetCommit v6, Produce v13; no AddPartitionsToTxn
    # or AddOffsetsToTxn at all
    used = versions_used(cluster, "fakebroker-franz-go-txn")
    assert {api: used.get(api) for api in TXN_APIS} == {
        "InitProducerId": {5},
        "AddPartitionsToTxn": None,
        "AddOffsetsToTxn": None,
        "TxnOffsetCommit": {6},  # Kafka 4.4's (KIP-1319: topic ids), which franz-go speaks
        "EndTxn": {5},
        "Produce": {13},
    }
    assert {e.details["version"] for e in cluster.events if e.kind == "txn_began"} == {2}
    # EndTxn v5 bumps the epoch at every end: each id's epoch counts its transactions
    for name in "abc":
        view = cluster.transaction(f"go-eos-{name}")
        assert view.producer_epoch == stats[name]["commits"] + stats[name]["aborts"], (name, view, stats[name])


# -- 2. the coordinator aborts a transaction that outlives its timeout -------------------------------
def test_a_transaction_outliving_its_timeout_is_aborted_and_the_commit_is_refused(cluster, driver):
    tid = "go-slow"
    driver.call("open", name="slow", transactional_id=tid, txn_timeout_ms=1000)
    driver.ok("begin", name="slow")
    assert driver.ok("produceTxn", name="slow", topic=OUT, partition=0, keys=["s0", "s1"])["offsets"] == [0, 1]
    assert driver.ok("produceTxn", name="slow", topic=OUT, partition=1, keys=["s2"])["offsets"] == [0]
    view = cluster.transaction(tid)
    assert (view.state, view.timeout_ms, view.partitions) == ("Ongoing", 1000, [(OUT, 0), (OUT, 1)])
    mark = len(cluster.events)

    [timed_out] = wait_until(lambda: txn_events(cluster, "txn_timed_out", tid), 10, "the transaction to time out")
    assert timed_out.details["timeout_ms"] == 1000
    wait_until(lambda: txn_events(cluster, "txn_aborted", tid), 10, "the timed-out transaction's abort")
    after = cluster.transaction(tid)
    assert (after.state, after.producer_epoch) == ("CompleteAbort", view.producer_epoch + 1)
    assert cluster.records(OUT, committed=True) == []

    # franz-go commits at the old epoch: EndTxn v5 (commit) finds the transaction aborted.
    # Kafka 4.1 answers INVALID_TXN_STATE (a "retry" at the epoch before the bump, the wrong
    # outcome; Kafka with KAFKA-20785 answers PRODUCER_FENCED); franz-go returns it and keeps its
    # producer id failed with it.
    commit = driver.call("end", name="slow", commit=True)
    assert commit["ok"] is False
    assert commit["failure"]["kafka"] == "INVALID_TXN_STATE" and commit["failure"]["retriable"] is False
    assert refused(cluster, mark, "fakebroker-franz-go-txn-slow") == [("EndTxn", "INVALID_TXN_STATE")]
    # The abort franz-go documents as the retry after a failed commit returns without a request, and
    # under KIP-890 part 2 the producer id stays failed (franz-go recovers only UNKNOWN_PRODUCER_ID and
    # TRANSACTION_ABORTABLE there): the next Begin reports the error as fatal.
    assert driver.call("end", name="slow", commit=False)["ok"] is True
    begin = driver.call("begin", name="slow")
    assert begin["ok"] is False and begin["failure"]["kafka"] == "INVALID_TXN_STATE"
    assert begin["failure"]["text"].startswith("producer ID has a fatal, unrecoverable error"), begin
    assert [e.details["api"] for e in cluster.events[mark:] if e.kind == "fault_fired"] == ["EndTxn"]
    assert cluster.records(OUT, committed=True) == []
    assert [k for _, _, k, _ in cluster.records(OUT)] == [b"s0", b"s1", b"s2"]
    assert cluster.transaction(tid).state == "CompleteAbort"

    # a new client for the id starts over (InitProducerId bumps the epoch again)
    driver.call("close", name="slow")
    driver.call("open", name="again", transactional_id=tid, txn_timeout_ms=10000)
    driver.ok("begin", name="again")
    driver.ok("produceTxn", name="again", topic=OUT, partition=0, keys=["r0"])
    driver.ok("end", name="again", commit=True)
    assert [(p, k) for p, _, k, _ in cluster.records(OUT, committed=True)] == [(0, b"r0")]


# -- 3. the transaction coordinator moves mid-transaction ---------------------------------------------
def test_commits_after_the_transaction_coordinator_moves_succeed(cluster, driver):
    tid, client = "go-move", "fakebroker-franz-go-txn-mover"
    driver.call("open", name="mover", transactional_id=tid)

    # 1. the move between two produces: the new partition's Produce v13 adds it implicitly, which
    # the partition's leader asks of the new coordinator while it loads (Kafka turns the loading
    # coordinator into NOT_ENOUGH_REPLICAS for the producer, which retries after a metadata refresh:
    # fbtxn sets MetadataMinAge 250 ms, kgo's default 5 s would make it wait that long); then EndTxn
    # goes to the old coordinator first (NOT_COORDINATOR), then to the new one
    driver.ok("begin", name="mover")
    driver.ok("produceTxn", name="mover", topic=OUT, partition=0, keys=["m0", "m1"])
    view = cluster.transaction(tid)
    assert (view.state, view.partitions) == ("Ongoing", [(OUT, 0)])
    mark = len(cluster.events)
    first = cluster.move_transaction_coordinator(tid, load_time_ms=300)
    assert first != view.coordinator
    moved = cluster.transaction(tid)
    assert (moved.state, moved.coordinator, moved.partitions) == ("Ongoing", first, [(OUT, 0)])
    driver.ok("produceTxn", name="mover", topic=OUT, partition=4, keys=["m2"])
    driver.ok("end", name="mover", commit=True)
    done = cluster.transaction(tid)
    assert (done.state, done.coordinator, done.producer_epoch) == ("CompleteCommit", first, view.producer_epoch + 1)
    [committed] = txn_events(cluster, "txn_committed", tid, mark)
    assert committed.broker == first and committed.details["partitions"] == [f"{OUT}-0", f"{OUT}-4"]
    errors = refused(cluster, mark, client)
    assert [e for e in errors if e[0] == "EndTxn"] == [("EndTxn", "NOT_COORDINATOR")], errors
    assert set(errors) <= {("EndTxn", "NOT_COORDINATOR"), ("Produce", "NOT_ENOUGH_REPLICAS")}, errors

    # 2. the move right before the commit: EndTxn meets NOT_COORDINATOR, then the new coordinator
    # loading (COORDINATOR_LOAD_IN_PROGRESS), and franz-go retries until it commits. (The load is
    # 1 s here: franz-go's first retry after NOT_COORDINATOR comes 250 ms or more later, so with
    # 300 ms it sometimes finds the coordinator loaded already.)
    driver.ok("begin", name="mover")
    driver.ok("produceTxn", name="mover", topic=OUT, partition=1, keys=["m3"])
    mark = len(cluster.events)
    second = cluster.move_transaction_coordinator(tid, load_time_ms=1000)
    assert second != first
    started = time.monotonic()
    driver.ok("end", name="mover", commit=True)
    took = time.monotonic() - started
    done = cluster.transaction(tid)
    assert (done.state, done.coordinator, done.producer_epoch) == ("CompleteCommit", second, view.producer_epoch + 2)
    [committed] = txn_events(cluster, "txn_committed", tid, mark)
    assert committed.broker == second and committed.details["partitions"] == [f"{OUT}-1"]
    errors = refused(cluster, mark, client)
    assert errors[0] == ("EndTxn", "NOT_COORDINATOR"), errors
    assert set(errors[1:]) == {("EndTxn", "COORDINATOR_LOAD_IN_PROGRESS")}, errors
    assert 0.8 < took < 10, took

    assert [(p, k) for p, _, k, _ in cluster.records(OUT, committed=True)] == [
        (0, b"m0"),
        (0, b"m1"),
        (1, b"m3"),
        (4, b"m2"),
    ]
    assert not txn_events(cluster, "txn_aborted", tid)
    assert versions_used(cluster, "fakebroker-franz-go-txn") == {"InitProducerId": {5}, "Produce": {13}, "EndTxn": {5}}

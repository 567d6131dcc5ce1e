"""The Java Admin client's transaction APIs (kafka-clients 4.4.0) against fakebroker:
listTransactions (with its state, producer id and duration filters), describeTransactions,
describeProducers, abortTransaction (WriteTxnMarkers to the partition leader, the tool for
hanging transactions) and fenceProducers (InitProducerId for each transactional id).

The same TxnScenarios JVM as tests/clients/test_java_transactions.py drives bare transactional
producers step by step (pinit/pbegin/psend/pcommit) and answers the admin commands; psend sends
key-I/value-I to partition I % 6. The expected answers are Kafka's (TransactionCoordinator,
TransactionStateManager.listTransactionStates, ProducerStateManager; /tmp/txn_research.md §1, §11).
"""

from __future__ import annotations

import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.cluster.transactions import TransactionView

from . import test_java_transactions as txn
from .test_java_client import java_client_jar  # noqa: F401 (fixture)
from .test_java_transactions import OUT, Driver, aborted_keys, assert_healthy

cluster, driver = txn.cluster, txn.driver  # the fixtures: 3 brokers, "in" and "out" with 6 partitions; a JVM

pytestmark = [pytest.mark.clients, pytest.mark.java]

ADMIN_REQUEST_TIMEOUT_MS = 10000  # TxnScenarios' admin request.timeout.ms: fenceProducers' transaction timeout


def now_ms() -> int:
    return int(time.time() * 1000)


def visible_keys(cluster: FakeCluster, partition: int | None = None) -> list[str]:
    return sorted(k.decode() for p, _, k, _ in cluster.records(OUT, committed=True) if partition in (None, p))


def description(
    view: TransactionView, *, state: str = "Ongoing", timeout_ms: int, partitions=(), epoch: int | None = None
) -> dict:
    """What describeTransactions should say (less the start time) of a transaction the cluster shows as ``view``."""
    return {
        "state": state,
        "coordinator": view.coordinator,
        "producerId": view.producer_id,
        "producerEpoch": view.producer_epoch if epoch is None else epoch,
        "timeoutMs": timeout_ms,
        "partitions": [f"{OUT}-{p}" for p in partitions],
    }


def producer_state(driver: Driver, producer_id: int, partition: int) -> dict:
    """What describeProducers says of one producer on one partition of out."""
    states = driver.call("describeProducers", topic=OUT, partitions=str(partition))["partitions"][str(partition)]
    [state] = [s for s in states if s["producerId"] == producer_id]
    return state


def test_list_and_describe_transactions_in_each_state(cluster, driver):
    before = now_ms()
    # adm-open: an open transaction on out-0 and out-1; adm-done: committed; adm-idle: initialized only
    assert driver.call("pinit", name="open", tid="adm-open", timeoutMs=45000)["ok"]
    assert driver.call("pbegin", name="open")["ok"]
    assert driver.call("psend", name="open", topic=OUT, first=0, n=2)["ok"]
    assert driver.call("pinit", name="done", tid="adm-done")["ok"]
    assert driver.call("pbegin", name="done")["ok"]
    assert driver.call("psend", name="done", topic=OUT, first=10, n=1)["ok"]
    assert driver.call("pcommit", name="done")["ok"]
    assert driver.call("pinit", name="idle", tid="adm-idle", timeoutMs=30000)["ok"]
    after = now_ms()
    views = {tid: cluster.transaction(tid) for tid in ("adm-open", "adm-done", "adm-idle")}
    pids = {tid: v.producer_id for tid, v in views.items()}
    assert len(set(pids.values())) == 3

    listed = driver.call("listTxns")["transactions"]
    assert listed == {
        "adm-done": {"producerId": pids["adm-done"], "state": "CompleteCommit"},
        "adm-idle": {"producerId": pids["adm-idle"], "state": "Empty"},
        "adm-open": {"producerId": pids["adm-open"], "state": "Ongoing"},
    }
    assert set(driver.call("listTxns", states="Ongoing")["transactions"]) == {"adm-open"}
    assert set(driver.call("listTxns", states="Ongoing,Empty")["transactions"]) == {"adm-open", "adm-idle"}
    assert set(driver.call("listTxns", states="PrepareCommit")["transactions"]) == set()
    assert set(driver.call("listTxns", pids=pids["adm-done"])["transactions"]) == {"adm-done"}
    both = f"{pids['adm-done']},{pids['adm-open']}"
    assert set(driver.call("listTxns", pids=both, states="Ongoing")["transactions"]) == {"adm-open"}
    assert set(driver.call("listTxns", pattern="adm-(open|idle)")["transactions"]) == {"adm-open", "adm-idle"}
    # the duration filter keeps ids whose now - txnStartTimestamp is over it, whatever the state: the
    # committed one keeps its start time (TransactionMetadata.prepareComplete), so a minute excludes
    # it and the open one; the Empty id has no start time (-1), so now - (-1) passes any filter
    time.sleep(0.05)
    assert set(driver.call("listTxns", durationMs=0)["transactions"]) == {"adm-open", "adm-done", "adm-idle"}
    assert set(driver.call("listTxns", durationMs=60000)["transactions"]) == {"adm-idle"}
    assert set(driver.call("listTxns", durationMs=60000, states="Ongoing")["transactions"]) == set()

    described = driver.call("describeTxns", ids="adm-open,adm-done,adm-idle,adm-unknown")["transactions"]
    for tid in ("adm-open", "adm-done"):  # a completed transaction keeps its start time
        assert before <= described[tid].pop("startMs") <= after, tid
    assert described["adm-open"] == description(views["adm-open"], timeout_ms=45000, partitions=[0, 1])
    assert described["adm-done"] == description(views["adm-done"], state="CompleteCommit", timeout_ms=60000)
    assert described["adm-idle"] == {**description(views["adm-idle"], state="Empty", timeout_ms=30000), "startMs": None}
    assert described["adm-unknown"] == {"exception": "TransactionalIdNotFoundException"}
    assert views["adm-done"].producer_epoch == 1, "TV2: the commit bumped the epoch 0 -> 1"
    assert_healthy(cluster)


def test_describe_producers_shows_the_open_transaction_and_the_idempotent_producers(cluster, driver):
    assert driver.call("produce", topic="in", n=12)["produced"] == 12  # the plain idempotent input producer
    before = now_ms()
    assert driver.call("pinit", name="open", tid="adm-open")["ok"]
    assert driver.call("pbegin", name="open")["ok"]
    assert driver.call("psend", name="open", topic=OUT, first=0, n=18)["ok"]  # 3 records on each partition
    after = now_ms()
    open_txn = cluster.transaction("adm-open")
    producers = driver.call("describeProducers", topic=OUT, partitions="0,1,2")["partitions"]
    for p in "012":
        assert len(producers[p]) == 1, producers
        state = producers[p][0]
        assert before <= state.pop("lastTimestamp") <= after
        assert state == {
            "producerId": open_txn.producer_id,
            "producerEpoch": open_txn.producer_epoch,
            "lastSequence": 2,
            "coordinatorEpoch": None,  # no marker yet (-1)
            "txnStartOffset": 0,
        }
    inputs = driver.call("describeProducers", topic="in", partitions="0,5")["partitions"]
    for p in "05":
        [state] = inputs[p]
        assert (state["lastSequence"], state["txnStartOffset"], state["producerEpoch"]) == (1, None, 0), state
        assert state["producerId"] != open_txn.producer_id

    # once committed (TV2: markers at epoch + 1), no transaction is open and the epoch is the marker's
    assert driver.call("pcommit", name="open")["ok"]
    after_commit = driver.call("describeProducers", topic=OUT, partitions="0")["partitions"]["0"]
    assert len(after_commit) == 1
    assert (after_commit[0]["producerEpoch"], after_commit[0]["txnStartOffset"], after_commit[0]["lastSequence"]) == (
        open_txn.producer_epoch + 1,
        None,
        -1,
    )
    assert after_commit[0]["coordinatorEpoch"] == 0, "the marker's: the transaction log partition's leader epoch"
    assert_healthy(cluster)


def test_abort_transaction_aborts_a_hanging_partition_behind_the_coordinators_back(cluster, driver):
    # the "hanging" transaction: open on every partition of out, its producer silent (after a
    # first transaction, committed, so that its epoch is 1)
    assert driver.call("pinit", name="hung", tid="adm-hung")["ok"]
    assert driver.call("pbegin", name="hung")["ok"]
    assert driver.call("psend", name="hung", topic=OUT, first=100, n=1)["ok"]  # out-4
    assert driver.call("pcommit", name="hung")["ok"]
    assert driver.call("pbegin", name="hung")["ok"]
    assert driver.call("psend", name="hung", topic=OUT, first=0, n=12)["ok"]  # 2 records on each of out-0..5
    assert driver.call("pinit", name="other", tid="adm-other")["ok"]  # a committed record after it on out-0
    assert driver.call("pbegin", name="other")["ok"]
    assert driver.call("psend", name="other", topic=OUT, first=60, n=1)["ok"]
    assert driver.call("pcommit", name="other")["ok"]
    hung = cluster.transaction("adm-hung")
    assert (hung.state, len(hung.partitions), hung.producer_epoch) == ("Ongoing", 6, 1)
    ends = driver.call("endOffsets", topic=OUT, partitions="0,1")
    assert ends["read_uncommitted"]["0"] == 4, "2 records, 1 committed record, its commit marker"
    assert ends["read_committed"] == {"0": 0, "1": 0}, "the open transaction holds the LSO at its first offset"
    assert visible_keys(cluster) == ["key-100"]

    state = producer_state(driver, hung.producer_id, 0)
    assert (state["producerEpoch"], state["txnStartOffset"]) == (hung.producer_epoch, 0)

    # an older epoch than the partition's producer state: INVALID_PRODUCER_EPOCH
    stale = driver.call("abortTxn", topic=OUT, partition=0, pid=hung.producer_id, epoch=hung.producer_epoch - 1)
    assert (stale["ok"], stale["exception"]) == (False, "InvalidProducerEpochException"), stale
    # kafka-transactions.sh abort: the epoch and coordinator epoch DescribeProducers gave (-1 -> 0)
    aborted = driver.call(
        "abortTxn",
        topic=OUT,
        partition=0,
        pid=hung.producer_id,
        epoch=state["producerEpoch"],
        coordinatorEpoch=state["coordinatorEpoch"] or 0,
    )
    assert aborted["ok"], aborted
    ends = driver.call("endOffsets", topic=OUT, partitions="0,1")
    assert ends["read_uncommitted"]["0"] == 5, "the ABORT marker"
    assert ends["read_committed"] == {"0": 5, "1": 0}, "out-0's LSO moved to its end; out-1 still held"
    assert visible_keys(cluster) == ["key-100", "key-60"], "the committed record behind the hanging one is readable"
    assert {"key-0", "key-6"} <= set(aborted_keys(cluster))
    state = producer_state(driver, hung.producer_id, 0)
    assert (state["producerEpoch"], state["txnStartOffset"], state["coordinatorEpoch"]) == (1, None, 0)

    # the coordinator was not told (as in Kafka: the admin writes the marker at the partition leader only)
    view = cluster.transaction("adm-hung")
    assert (view.state, view.partitions, view.producer_epoch) == ("Ongoing", hung.partitions, hung.producer_epoch)
    described = driver.call("describeTxns", ids="adm-hung")["transactions"]["adm-hung"]
    assert (described["state"], len(described["partitions"])) == ("Ongoing", 6)
    assert set(driver.call("listTxns", states="Ongoing")["transactions"]) == {"adm-hung"}

    # so its producer can still commit: the other partitions' records become visible, out-0's stay
    # aborted (a COMMIT marker with nothing open on out-0) - why the tool is for hanging transactions only
    assert driver.call("pcommit", name="hung")["ok"]
    assert cluster.transaction("adm-hung").state == "CompleteCommit"
    expected = {f"key-{i}" for i in range(12) if i % 6 != 0} | {"key-60", "key-100"}
    assert set(visible_keys(cluster)) == expected
    assert visible_keys(cluster, 0) == ["key-60"]
    ends = driver.call("endOffsets", topic=OUT, partitions="0,1")
    assert ends["read_committed"] == ends["read_uncommitted"] == {"0": 6, "1": 3}
    assert_healthy(cluster)


def test_fence_producers_fences_an_active_producer_and_aborts_its_transaction(cluster, driver):
    assert driver.call("pinit", name="victim", tid="adm-victim", timeoutMs=45000)["ok"]
    assert driver.call("pbegin", name="victim")["ok"]
    assert driver.call("psend", name="victim", topic=OUT, first=0, n=6)["ok"]
    victim = cluster.transaction("adm-victim")
    assert (victim.state, victim.producer_epoch) == ("Ongoing", 0)

    fenced = driver.call("fenceProducers", ids="adm-victim,adm-new")["fenced"]
    # InitProducerId on an open transaction: fence (epoch + 1) and abort, CONCURRENT_TRANSACTIONS; the
    # admin retries once it is CompleteAbort and that bumps again. An unknown id is simply created.
    assert fenced["adm-victim"] == {"producerId": victim.producer_id, "epoch": victim.producer_epoch + 2}
    new = cluster.transaction("adm-new")
    assert fenced["adm-new"] == {"producerId": new.producer_id, "epoch": 0}
    assert new.producer_id != victim.producer_id

    event = next(e for e in cluster.events if e.kind == "txn_fenced" and e.transactional_id == "adm-victim")
    assert (event.producer_id, event.epoch, event.new_epoch) == (victim.producer_id, 0, 1)
    aborted = next(e for e in cluster.events if e.kind == "txn_aborted" and e.transactional_id == "adm-victim")
    assert sorted(aborted.partitions) == [f"{OUT}-{p}" for p in range(6)]
    described = driver.call("describeTxns", ids="adm-victim,adm-new")["transactions"]
    # Empty at epoch + 2, with the fencing InitProducerId's transaction timeout
    fenced = description(victim, state="Empty", timeout_ms=ADMIN_REQUEST_TIMEOUT_MS, epoch=victim.producer_epoch + 2)
    assert described["adm-victim"] == {**fenced, "startMs": None}
    assert (described["adm-new"]["state"], described["adm-new"]["timeoutMs"]) == ("Empty", ADMIN_REQUEST_TIMEOUT_MS)
    ends = driver.call("endOffsets", topic=OUT, partitions="0,1,2,3,4,5")
    assert ends["read_committed"] == ends["read_uncommitted"], "the abort released every LSO"

    # the fenced producer learns it at its commit
    commit = driver.call("pcommit", name="victim")
    assert (commit["ok"], commit["exception"]) == (False, "ProducerFencedException"), commit
    assert visible_keys(cluster) == []
    assert {f"key-{i}" for i in range(6)} <= set(aborted_keys(cluster))
    # a new instance goes on from the fenced epoch
    assert driver.call("pinit", name="next", tid="adm-victim")["ok"]
    assert cluster.transaction("adm-victim").producer_epoch == victim.producer_epoch + 3
    assert driver.call("pbegin", name="next")["ok"]
    assert driver.call("psend", name="next", topic=OUT, first=100, n=6)["ok"]
    assert driver.call("pcommit", name="next")["ok"]
    assert visible_keys(cluster) == sorted(f"key-{i}" for i in range(100, 106))
    assert_healthy(cluster)

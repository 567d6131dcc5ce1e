"""kafkajs transactions against fakebroker's transaction coordinator.

One ``node tests/clients/js/transactions.js`` process per test (see that script) runs kafkajs
transactional producers (``producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })``
and its ``transaction()``), read_committed consumers (``readUncommitted: false``) and exactly-once
members; the test drives it one JSON command per line and checks the cluster between steps.

kafkajs 2.2.4 speaks the pre-KIP-447, pre-KIP-890 protocol: InitProducerId v1,
AddPartitionsToTxn v1, AddOffsetsToTxn v1, TxnOffsetCommit v1 (no generation or member id) and
EndTxn v1, Produce v7. So a fenced producer hears INVALID_PRODUCER_EPOCH (what Kafka answers
below the versions that know PRODUCER_FENCED), which kafkajs raises as a non-retriable
``KafkaJSProtocolError``.

"Exactly once" is checked on what a read_committed reader sees (``cluster.records(committed=True)``):
every input key once, in input order per partition, and the group's committed offsets at the
input's end offsets.
"""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster

from . import test_kafkajs
from .group_state import group_off_first_broker
from .node_driver import NodeDriver
from .txn_support import TXN_APIS, assert_exactly_once, input_end, txn_events, versions_used, wait_until

pytestmark = [pytest.mark.clients, pytest.mark.node]

IN, OUT, PARTITIONS = "in", "out", 6
OLD_EPOCH = (
    "Producer attempted an operation with an old epoch. Either there is a newer producer with the same "
    "transactionalId, or the producer's transaction has been expired by the broker"
)


node = test_kafkajs.node  # the session fixture: the node binary, with js/node_modules installed


class Driver(NodeDriver):
    """A running transactions.js: ``call(cmd, **args)`` sends one command and returns its reply."""

    script = "transactions.js"
    name = "transactions.js"
    process_timeout = 100

    def ok(self, cmd: str, timeout: float = 30, **args) -> dict:
        """A transactional call that must succeed."""
        reply = self.call(cmd, timeout, **args)
        assert reply["ok"], f"{cmd} {args} failed: {reply['failure']}{self.diagnostics()}"
        return reply


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={IN: PARTITIONS, OUT: PARTITIONS}).run_in_thread() as c:
        # observe (without changing anything) every transactional request, for its version
        c.faults.add(api=TXN_APIS, action="delay", delay=0)
        yield c
        assert not [e.describe() for e in c.events if e.kind in ("handler_error", "connection_closed")]


@pytest.fixture
def driver(node, cluster):
    with Driver(node, cluster) as d:
        yield d


def messages(keys: list[str], partition: int) -> list[dict]:
    return [{"key": k, "value": f"val-{k}", "partition": partition} for k in keys]


# -- 1. commit and abort, read back by a read_committed kafkajs consumer -----------------------------
def test_committed_transactions_are_read_back_and_an_aborted_one_is_invisible(cluster, driver):
    driver.call("open", name="p", transactionalId="js-txn")
    batches = {
        "c1": (["c1-0", "c1-1", "c1-2"], "commit"),
        "a": (["a-0", "a-1", "a-2", "a-3"], "abort"),
        "c2": (["c2-0", "c2-1"], "commit"),
    }
    for keys, end in batches.values():
        driver.ok("begin", name="p")
        sent = driver.ok("send", name="p", topic=OUT, messages=messages(keys, 0) + messages(keys, 3))["sent"]
        assert sorted((s["partition"], s["errorCode"]) for s in sent) == [(0, 0), (3, 0)]
        view = cluster.transaction("js-txn")
        assert (view.state, view.partitions) == ("Ongoing", [(OUT, 0), (OUT, 3)])
        assert driver.ok(end, name="p")["active"] is False
        assert cluster.transaction("js-txn").state == ("CompleteCommit" if end == "commit" else "CompleteAbort")

    # the log: 3 records + marker, 4 aborted + marker, 2 records + marker on each partition
    for p in (0, 3):
        assert cluster.offsets(OUT, p) == (0, 12)
        assert [k.decode() for q, _, k, _ in cluster.records(OUT) if q == p] == [
            *batches["c1"][0],
            *batches["a"][0],
            *batches["c2"][0],
        ]
    committed = cluster.records(OUT, committed=True)
    want = [(p, o, k) for p in (0, 3) for o, k in [(0, "c1-0"), (1, "c1-1"), (2, "c1-2"), (9, "c2-0"), (10, "c2-1")]]
    assert [(p, o, k.decode()) for p, o, k, _ in committed] == want

    read = driver.call("read", topic=OUT, groupId="js-reader", expect=len(want))["records"]
    assert sorted((p, o, k) for p, o, k, _ in read) == want, "kafkajs read exactly the committed records"
    assert all(v == f"val-{k}" for _, _, k, v in read)

    tid_events = [e.kind for e in cluster.events if e.details.get("transactional_id") == "js-txn"]
    assert [k for k in tid_events if k in ("txn_began", "txn_committed", "txn_aborted")] == [
        "txn_began",
        "txn_committed",
        "txn_began",
        "txn_aborted",
        "txn_began",
        "txn_committed",
    ]
    assert {e.details["version"] for e in txn_events(cluster, "txn_began", "js-txn")} == {1}
    view = cluster.transaction("js-txn")
    assert view.producer_epoch == 0, "one InitProducerId, no epoch bump under the pre-KIP-890 protocol"
    used = versions_used(cluster)
    assert {api: used.get(api) for api in ("InitProducerId", "AddPartitionsToTxn", "EndTxn")} == {
        "InitProducerId": {1},
        "AddPartitionsToTxn": {1},
        "EndTxn": {1},
    }
    assert used["Produce"] == {7}
    refused = [e.describe() for e in cluster.events if e.kind == "request_error" and e.details["api"] in TXN_APIS]
    assert not refused


# -- 2. consume-transform-produce with sendOffsets over a changing group -----------------------------


def test_consume_transform_produce_with_send_offsets_is_exactly_once_through_rebalances(cluster, driver):
    gid = group_off_first_broker(cluster, "js-eos")
    member = {"groupId": gid, "input": IN, "output": OUT}
    driver.call("produce", topic=IN, n=300, partitions=PARTITIONS)
    driver.call("startMember", name="a", transactionalId="js-eos-a", **member)
    driver.call("startMember", name="b", transactionalId="js-eos-b", **member)
    driver.call("waitJoined", names=["a", "b"], partitions=PARTITIONS)
    wait_until(lambda: len(cluster.records(OUT, committed=True)) >= 60, 20, "the first committed output")

    # c joins: a rebalance while a and b are processing
    generation = cluster.group(gid).generation
    driver.call("startMember", name="c", transactionalId="js-eos-c", **member)
    driver.call("produce", topic=IN, first=300, n=300, partitions=PARTITIONS)
    driver.call("waitJoined", names=["a", "b", "c"], partitions=PARTITIONS)
    wait_until(lambda: driver.call("stats")["members"]["c"]["commits"] >= 1, 20, "c to commit a transaction")
    wait_until(lambda: cluster.group(gid).generation > generation, 20, "the rebalance to complete")

    # a leaves (LeaveGroup) mid-stream: b and c take its partitions over from its committed offsets
    generation = cluster.group(gid).generation
    driver.call("produce", topic=IN, first=600, n=300, partitions=PARTITIONS)
    assert cluster.committed(gid) != input_end(cluster), "the input was not all processed yet"
    stopped = driver.call("stopMember", name="a")
    assert stopped["failures"] == [] and stopped["commits"] >= 1
    wait_until(lambda: cluster.committed(gid) == input_end(cluster), 40, "the group to commit the input's end")
    wait_until(lambda: cluster.group(gid).generation > generation, 20, "the rebalance to complete")
    stats = driver.call("stats")["members"]
    for name in "bc":
        driver.call("stopMember", name=name)

    assert_exactly_once(cluster, gid, 900)
    assert all(s["failures"] == [] for s in stats.values()), stats
    assert sum(s["records"] for s in stats.values()) == 900, "each input record went through one commit"
    committed = [e for e in cluster.events if e.kind == "txn_committed"]
    assert {e.details["transactional_id"] for e in committed} == {"js-eos-a", "js-eos-b", "js-eos-c"}
    assert len(committed) == sum(s["commits"] for s in stats.values())
    assert not [e for e in cluster.events if e.kind in ("txn_aborted", "txn_fenced", "txn_timed_out")]
    # every transaction carried its offsets: AddOffsetsToTxn then TxnOffsetCommit (v1, KIP-447's
    # generation and member id are v3+) for the group
    added = [e for e in cluster.events if e.kind == "txn_offsets_added"]
    assert len(added) == len(committed) and {e.details["group"] for e in added} == {gid}
    used = versions_used(cluster)
    assert (used["AddOffsetsToTxn"], used["TxnOffsetCommit"]) == ({1}, {1})


# -- 3. a zombie fenced by a new instance of its transactional id ------------------------------------
def test_a_zombie_is_fenced_by_a_new_instance_and_its_data_stays_invisible(cluster, driver):
    tid = "js-zombie"
    driver.call("open", name="zombie", transactionalId=tid)
    driver.ok("begin", name="zombie")
    driver.ok("send", name="zombie", topic=OUT, messages=messages(["z0", "z1"], 0) + messages(["z2"], 1))
    open_txn = cluster.transaction(tid)
    assert (open_txn.state, open_txn.partitions) == ("Ongoing", [(OUT, 0), (OUT, 1)])
    mark = len(cluster.events)

    # the new instance: its first transaction() sends InitProducerId, which fences the zombie and
    # aborts its transaction (kafkajs retries the CONCURRENT_TRANSACTIONS met while the abort completes)
    driver.call("open", name="new", transactionalId=tid)
    driver.ok("begin", name="new")
    [fenced] = txn_events(cluster, "txn_fenced", tid, mark)
    assert fenced.details["reason"] == "fenced by a new instance"
    assert (fenced.details["epoch"], fenced.details["new_epoch"]) == (
        open_txn.producer_epoch,
        open_txn.producer_epoch + 1,
    )
    [aborted] = txn_events(cluster, "txn_aborted", tid, mark)
    assert aborted.details["partitions"] == [f"{OUT}-0", f"{OUT}-1"]
    view = cluster.transaction(tid)
    assert (view.producer_id, view.producer_epoch) == (open_txn.producer_id, open_txn.producer_epoch + 2)

    # the zombie wakes up: a send to a partition already in its transaction (Produce v7), one to a
    # new partition (AddPartitionsToTxn v1) and its commit (EndTxn v1) all hear INVALID_PRODUCER_EPOCH
    sends = [
        driver.call("send", name="zombie", topic=OUT, messages=messages(["z3"], 0)),
        driver.call("send", name="zombie", topic=OUT, messages=messages(["z4"], 2)),
    ]
    commit = driver.call("commit", name="zombie")
    for reply in [*sends, commit]:
        assert reply["ok"] is False
        assert reply["failure"] == {
            "name": "KafkaJSProtocolError",
            "type": "INVALID_PRODUCER_EPOCH",
            "code": 47,
            "retriable": False,
            "message": OLD_EPOCH,
            "cause": None,
        }
    refused = [(e.details["api"], e.details["error"]) for e in cluster.events[mark:] if e.kind == "request_error"]
    assert ("Produce", "INVALID_PRODUCER_EPOCH") in refused and ("EndTxn", "INVALID_PRODUCER_EPOCH") in refused
    assert cluster.transaction(tid).state == "Empty", "the new instance has not sent anything yet"

    # the new instance commits its own records; nothing of the zombie's is visible
    driver.ok("send", name="new", topic=OUT, messages=messages(["n0"], 0) + messages(["n1"], 1))
    driver.ok("commit", name="new")
    assert cluster.transaction(tid).state == "CompleteCommit"
    committed = [(p, k.decode()) for p, _, k, _ in cluster.records(OUT, committed=True)]
    assert committed == [(0, "n0"), (1, "n1")]
    assert {k.decode() for _, _, k, _ in cluster.records(OUT)} == {"z0", "z1", "z2", "n0", "n1"}
    read = driver.call("read", topic=OUT, groupId="js-zombie-reader", expect=2)["records"]
    assert sorted((p, k) for p, _, k, _ in read) == [(0, "n0"), (1, "n1")]
    [done] = txn_events(cluster, "txn_committed", tid, mark)
    assert done.details["epoch"] == open_txn.producer_epoch + 2

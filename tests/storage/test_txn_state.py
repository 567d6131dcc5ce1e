"""The transaction coordinator's state is durable per answer, as Kafka keeps it in
``__transaction_state``: a copy of the data directory taken right after a real client's answer
(what ``kill -9`` leaves) starts a cluster where a commit answered in PrepareCommit is completed
(its markers written, its offsets the group's), an Ongoing transaction stays open until its
timeout aborts it, and a transactional id used again gets the next epoch of the same producer id."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from fakebroker.cluster import FakeCluster
from fakebroker.storage.journal import JournalError, header, replay
from fakebroker.storage.metadata import JOURNAL_FILE, META_FILE
from fakebroker.storage.snapshot import problem

from .test_journal import crashed_copy

pytestmark = pytest.mark.clients
QUIET = {"log_level": 0}
LATER = 600_000  # markers left pending for the whole test
FAST_TIMEOUTS = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}


def producer(c: FakeCluster, tid: str, **config) -> Producer:
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "transactional.id": tid, **QUIET, **config})
    p.init_transactions(10)
    return p


def transaction(c: FakeCluster, p: Producer, values: list[bytes], offset: int) -> None:
    group = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "txg", **QUIET})
    p.begin_transaction()
    for v in values:
        p.produce("out", value=v, partition=0)
    p.send_offsets_to_transaction([TopicPartition("in", 0, offset)], group.consumer_group_metadata(), 10)
    assert p.flush(10) == 0
    group.close()


@pytest.mark.parametrize("commit", [True, False])
def test_an_answered_end_whose_markers_were_pending_is_completed_after_a_crash(tmp_path, commit):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1, "out": 1}, transaction_marker_delay_ms=LATER).run_in_thread() as c:
        p = producer(c, "tx")
        transaction(c, p, [b"a", b"b", b"c"], 7)
        (p.commit_transaction if commit else p.abort_transaction)(10)
        copy = crashed_copy(data, tmp_path / "copy")
        before = c.transaction("tx")
        assert before.state == ("PrepareCommit" if commit else "PrepareAbort")
        assert c.records("out", committed=True) == [] and c.committed("txg") == {}
        del p
    with FakeCluster(data_dir=copy, transaction_marker_delay_ms=LATER).run_in_thread() as c:
        after = c.transaction("tx")
        assert after.state == ("CompleteCommit" if commit else "CompleteAbort")
        assert (after.producer_id, after.producer_epoch) == (before.producer_id, before.producer_epoch)
        got = [v for *_, v in c.records("out", committed=True)]
        assert got == ([b"a", b"b", b"c"] if commit else [])
        assert c.committed("txg") == ({("in", 0): 7} if commit else {})
        assert c.state.groups.offsets.pending == {}
        again = producer(c, "tx")  # the same id bumps the epoch: no fresh producer id
        view = c.transaction("tx")
        assert (view.producer_id, view.producer_epoch) == (before.producer_id, before.producer_epoch + 1)
        del again


def test_an_ongoing_transaction_stays_open_with_its_offsets_until_its_timeout(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1, "out": 1}, config=FAST_TIMEOUTS).run_in_thread() as c:
        p = producer(c, "slow", **{"transaction.timeout.ms": 3000})
        transaction(c, p, [b"x"], 5)
        copy = crashed_copy(data, tmp_path / "copy")
        before = c.transaction("slow")
        assert before.state == "Ongoing"
        del p
    with FakeCluster(data_dir=copy, config=FAST_TIMEOUTS).run_in_thread() as c:
        assert c.transaction("slow").state in ("Ongoing", "CompleteAbort")  # the timeout runs on from its start
        c.wait_for_sync(lambda cl: any(e.kind == "txn_timed_out" for e in cl.events), timeout=10)
        c.wait_for_sync(lambda cl: cl.transaction("slow").state == "CompleteAbort", timeout=10)
        assert c.records("out", committed=True) == [] and len(c.records("out")) == 1  # aborted
        assert c.call(lambda: c.state.partition("out", 0).log.open_txns) == {}  # the abort marker is written
        assert c.committed("txg") == {} and c.state.groups.offsets.pending == {}


def test_an_ongoing_transaction_goes_on_when_its_producer_does(tmp_path):
    """The producer outlives the broker's restart (the same port): its transaction, restored
    Ongoing, commits; the records written before and after the restart are committed together."""
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1, "out": 1}).run_in_thread() as c:
        port = int(c.bootstrap_servers.rsplit(":", 1)[1])
        p = producer(c, "on", **{"reconnect.backoff.max.ms": 200})
        transaction(c, p, [b"before"], 3)
    with FakeCluster(data_dir=data, port=port).run_in_thread() as c:
        assert c.transaction("on").state == "Ongoing"
        assert c.state.groups.offsets.pending  # the offsets of the open transaction
        p.produce("out", value=b"after", partition=0)
        p.commit_transaction(20)
        assert [v for *_, v in c.records("out", committed=True)] == [b"before", b"after"]
        assert c.committed("txg") == {("in", 0): 3}


def test_a_zombie_with_the_epoch_before_the_restart_is_fenced(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1, "out": 1}).run_in_thread() as c:
        port = int(c.bootstrap_servers.rsplit(":", 1)[1])
        zombie = producer(c, "z", **{"reconnect.backoff.max.ms": 200})
        transaction(c, zombie, [b"1"], 1)
        zombie.commit_transaction(10)
        old = c.transaction("z")
        copy = crashed_copy(data, tmp_path / "copy")
    with FakeCluster(data_dir=copy, port=port).run_in_thread() as c:
        fresh = producer(c, "z")
        view = c.transaction("z")
        assert (view.producer_id, view.producer_epoch) == (old.producer_id, old.producer_epoch + 1)
        zombie.begin_transaction()
        zombie.produce("out", value=b"zombie", partition=0)
        with pytest.raises(KafkaException) as raised:
            zombie.commit_transaction(10)
        assert raised.value.args[0].fatal(), raised.value.args[0]
        assert "fenced" in raised.value.args[0].str().lower(), raised.value.args[0]
        transaction(c, fresh, [b"2"], 2)
        fresh.commit_transaction(10)
        assert [v for *_, v in c.records("out", committed=True)] == [b"1", b"2"]


def test_the_snapshot_and_the_journal_hold_the_transactions(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1, "out": 1}, transaction_marker_delay_ms=LATER).run_in_thread() as c:
        p = producer(c, "tx")
        transaction(c, p, [b"a"], 4)
        journal = [json.loads(line) for line in (data / JOURNAL_FILE).read_text().splitlines()]
        [*_, last] = [line for line in journal if line[0] == "txn"]
        assert (
            last[1] == "tx"
            and last[2]["state"] == "Ongoing"
            and last[2]["offsets"] == {"txg": [["in", 0, 4, -1, "", last[2]["offsets"]["txg"][0][5], -1]]}
        )
        p.commit_transaction(10)
        del p
    meta = json.loads((data / META_FILE).read_text())  # a clean stop folds the journal in
    assert meta["transactions"]["tx"]["state"] == "PrepareCommit"
    assert problem(meta) is None
    for broken, word in [({"x": {}}, "missing"), ({"x": {**meta["transactions"]["tx"], "state": "Done"}}, "state")]:
        assert word in problem({**meta, "transactions": broken})


def test_a_forgotten_transactional_id_stays_forgotten(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1, "out": 1}).run_in_thread() as c:
        p = producer(c, "gone")
        producer(c, "kept")
        c.forget_transactions(["gone"])
        copy = crashed_copy(data, tmp_path / "copy")
        del p
    with FakeCluster(data_dir=copy).run_in_thread() as c:
        assert c.transactions() == ["kept"]


def test_a_journal_line_of_the_wrong_shape_refuses_the_directory():
    meta = {"version": 1, "cluster_id": "c", "topics": {}, "journal": 0}
    good = {
        "producer_id": 1000,
        "epoch": 0,
        "previous_id": -1,
        "next_id": -1,
        "last_epoch": -1,
        "timeout_ms": 60000,
        "state": "Ongoing",
        "partitions": [["out", 0]],
        "markers_pending": [],
        "start_ms": 5,
        "update_ms": 5,
        "version": 1,
        "offsets": {},
    }
    lines = [json.dumps(x).encode() for x in (header(0), ["txn", "a", good], ["txn", "b", good], ["txn", "b", None])]
    assert replay(meta, lines) == 3 and meta["transactions"] == {"a": good} and problem(meta) is None
    with pytest.raises(JournalError, match="line 2"):
        replay(dict(meta), [lines[0], json.dumps(["txn", "a", {**good, "epoch": "x"}]).encode()])
    with pytest.raises(JournalError, match="line 2"):
        replay(dict(meta), [lines[0], json.dumps(["cgroup", "g", {"generation": 1}]).encode()])


def test_an_expired_transactional_id_stays_gone(tmp_path):
    """Kafka writes a tombstone when transactional.id.expiration.ms drops an idle id: after a
    crash the id is not back (a producer using it again gets a new producer id)."""
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1, "out": 1}).run_in_thread() as c:
        p = producer(c, "idle")
        transaction(c, p, [b"x"], 1)
        p.commit_transaction(10)
        del p
        assert c.call(lambda: c.state.expire_txn_ids(c.state.transactions.txns["idle"].last_update_ms + 10**12)) == 1
        c.call(c.runtime.settle)  # as the server does after its timers
        copy = crashed_copy(data, tmp_path / "copy")
    with FakeCluster(data_dir=copy).run_in_thread() as c:
        assert c.transaction("idle") is None

"""Every answered change is on disk before its answer: a copy of the data directory taken right
after a real client's answer (what ``kill -9`` would leave: nothing is fsynced, nothing waits
for a timer) starts a cluster holding the change. The journal is compacted into the snapshot
when it grows, and a cluster without a data directory journals nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic

from fakebroker.cluster import FakeCluster
from fakebroker.storage import metadata
from fakebroker.storage.metadata import JOURNAL_FILE, META_FILE

pytestmark = pytest.mark.clients
QUIET = {"log_level": 0}


def journal_lines(data: Path, kind: str, key: str) -> list[list]:
    """The journal's lines of one kind about one key (a group, a transactional id), in order."""
    lines = [json.loads(line) for line in (data / JOURNAL_FILE).read_text().splitlines()]
    return [line for line in lines if line[0] == kind and line[1] == key]


def port_of(cluster: FakeCluster) -> int:
    return int(cluster.bootstrap_servers.rsplit(":", 1)[1])


def crashed_copy(data: Path, into: Path) -> Path:
    """The directory as a crash at this moment would leave it (the lock file left behind)."""
    shutil.copytree(data, into, ignore=shutil.ignore_patterns(".lock"))
    return into


def test_transactional_offsets_broker_settings_partitions_and_producer_ids_are_durable_per_answer(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1, "out": 1}).run_in_thread() as c:
        boot = c.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": boot, **QUIET})
        group = Consumer({"bootstrap.servers": boot, "group.id": "txg", **QUIET})
        producer = Producer({"bootstrap.servers": boot, "transactional.id": "tx-1", **QUIET})
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce("out", value=b"v")
        producer.send_offsets_to_transaction([TopicPartition("in", 0, 7)], group.consumer_group_metadata(), 10)
        producer.commit_transaction(10)
        after_txn = crashed_copy(data, tmp_path / "after-txn")
        [future] = admin.create_partitions([NewPartitions("in", 3)]).values()
        future.result(10)
        after_partitions = crashed_copy(data, tmp_path / "after-partitions")
        broker = ConfigResource(
            ConfigResource.Type.BROKER,
            "0",
            incremental_configs=[ConfigEntry("log.cleaner.threads", "2", incremental_operation=AlterConfigOpType.SET)],
        )
        [future] = admin.incremental_alter_configs([broker]).values()
        future.result(10)
        after_broker = crashed_copy(data, tmp_path / "after-broker")
        next_id = c.state.producer_ids.next_id
        group.close()
        del producer
    with FakeCluster(data_dir=after_txn).run_in_thread() as c:
        assert c.committed("txg") == {("in", 0): 7}  # committed with the transaction
        assert c.state.producer_ids.next_id == next_id  # ids are never handed out twice
    with FakeCluster(data_dir=after_partitions).run_in_thread() as c:
        assert c.topics()["in"] == 3
    with FakeCluster(data_dir=after_broker).run_in_thread() as c:
        assert c.state.config.per_broker[0]["log.cleaner.threads"] == "2"


def test_deleted_offsets_and_groups_stay_deleted(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 2}).run_in_thread() as c:
        boot = c.bootstrap_servers
        for g in ("a", "b"):
            consumer = Consumer({"bootstrap.servers": boot, "group.id": g, **QUIET})
            consumer.commit(offsets=[TopicPartition("in", 0, 3), TopicPartition("in", 1, 4)], asynchronous=False)
            consumer.close()
        admin = AdminClient({"bootstrap.servers": boot, **QUIET})
        [future] = admin.delete_consumer_groups(["a"]).values()
        future.result(10)
        # OffsetDelete is not in confluent-kafka's admin API: the core's call its handler makes,
        # then the settle the server does after every handler
        c.call(lambda: c.state.groups.delete_offsets(c.coordinator("b"), "b", [("in", 1)]))
        c.call(c.runtime.settle)
        copy = crashed_copy(data, tmp_path / "copy")
    with FakeCluster(data_dir=copy).run_in_thread() as c:
        assert c.committed("a") == {} and c.committed("b") == {("in", 0): 3}


def test_the_journal_is_folded_into_the_snapshot_when_it_grows(tmp_path, monkeypatch):
    monkeypatch.setattr(metadata, "COMPACT_MIN_BYTES", 2000)
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 1}).run_in_thread() as c:
        consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "g", **QUIET})
        generations = set()
        for offset in range(1, 200):
            consumer.commit(offsets=[TopicPartition("in", 0, offset)], asynchronous=False)
            generations.add((data / JOURNAL_FILE).read_text().partition("\n")[0])
            assert (data / JOURNAL_FILE).stat().st_size <= 2000 + 200
        consumer.close()
        assert len(generations) > 3  # compacted several times
        copy = crashed_copy(data, tmp_path / "copy")
    assert (copy / META_FILE).exists()
    with FakeCluster(data_dir=copy).run_in_thread() as c:
        assert c.committed("g") == {("in", 0): 199}


def test_a_cluster_without_a_data_dir_attaches_no_journal():
    with FakeCluster(topics={"in": 1}).run_in_thread() as c:
        assert c._journal is None and c.runtime.listeners == []


def test_changes_whose_events_the_event_log_dropped_before_telling_are_kept_all_the_same(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, event_log_size=2).run_in_thread() as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, **QUIET})
        names = [f"t{i}" for i in range(6)]
        for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():  # one request
            future.result(10)
        copy = crashed_copy(data, tmp_path / "copy")
    with FakeCluster(data_dir=copy).run_in_thread() as c:
        assert sorted(c.topics()) == names


def test_group_configs_are_durable_per_answer(tmp_path):
    data = tmp_path / "data"
    group = ConfigResource.Type.GROUP

    def alter(admin: AdminClient, name: str, *ops: tuple[str, AlterConfigOpType, str]) -> None:
        entries = [ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops]
        [future] = admin.incremental_alter_configs([ConfigResource(group, name, incremental_configs=entries)]).values()
        future.result(10)

    kept = {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "3"}
    with FakeCluster(data_dir=data).run_in_thread() as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, **QUIET})
        alter(admin, "shares", *[(k, AlterConfigOpType.SET, v) for k, v in kept.items()])
        alter(admin, "gone", ("share.isolation.level", AlterConfigOpType.SET, "read_committed"))
        alter(admin, "gone", ("share.isolation.level", AlterConfigOpType.DELETE, ""))
        copy = crashed_copy(data, tmp_path / "copy")
    assert journal_lines(copy, "gconf", "shares") == [["gconf", "shares", kept]]
    assert journal_lines(copy, "gconf", "gone")[-1] == ["gconf", "gone", None]
    for _ in range(2):  # from the journal, then again from the snapshot the first start wrote
        with FakeCluster(data_dir=copy).run_in_thread() as c:
            assert c.state.group_configs.overrides == {"shares": kept}
            admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, **QUIET})
            resource = ConfigResource(group, "shares")
            configs = admin.describe_configs([resource])[resource].result(10)
            assert (configs["share.auto.offset.reset"].value, configs["share.auto.offset.reset"].source) == (
                "earliest",
                8,  # GROUP_CONFIG
            )
    assert json.loads((copy / META_FILE).read_text())["group_configs"] == {"shares": kept}  # written at stop

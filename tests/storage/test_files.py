"""The file-backed storage: segment files written, reopened and read back byte for byte, the
in-memory index kept small, the metadata file, and a data directory that cannot be used."""

from __future__ import annotations

import os
import re
import uuid

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.core.log import PartitionLog
from fakebroker.core.log.segments import KEEP_FROM, MAX_INDEX_ENTRIES
from fakebroker.protocol import records as R
from fakebroker.storage import DataDir, DataDirError, FileSegmentStore

from ..core.test_log import BIG, Config, append, decoded, make_batch


def test_segments_are_files_named_by_base_offset_and_read_back_byte_for_byte(tmp_path):
    store = FileSegmentStore(tmp_path / "t-0")
    log = PartitionLog(store, Config(segment_bytes=3 * len(make_batch(2))))
    for i in range(7):
        append(log, make_batch(2, tag=f"b{i}-", compression=i % 2))
    written = log.read(0, BIG)
    names = sorted(p.name for p in (tmp_path / "t-0").iterdir())
    assert len(names) >= 3 and names == [f"{s.base_offset:020d}.log" for s in log.segments]
    assert names[0] == "00000000000000000000.log"
    assert sum(p.stat().st_size for p in (tmp_path / "t-0").iterdir()) == len(written) == log.size_bytes
    store.close()

    reopened = PartitionLog(FileSegmentStore(tmp_path / "t-0"), Config())
    reopened.recover(now_ms=0)
    assert reopened.read(0, BIG) == written
    assert (reopened.log_start_offset, reopened.log_end_offset) == (0, 14)
    assert [(s.base_offset, s.batches, s.size) for s in reopened.segments] == [
        (s.base_offset, s.batches, s.size) for s in log.segments
    ]
    assert decoded(reopened.read(9, 1))[0][0] == 8  # the batch holding offset 9 starts at 8
    assert append(reopened, make_batch(1)) == (14, -1)  # appends continue in the last segment


def test_a_large_batch_is_written_whole_and_read_back_from_the_file(tmp_path):
    # a batch past KEEP_FROM reaches the store as two pieces: its rewritten head and the rest
    store = FileSegmentStore(tmp_path / "t-0")
    log = PartitionLog(store, Config())
    append(log, make_batch(1, tag="small"))
    large = R.build_batch([(None, b"x" * 1000, [], 1000 + i) for i in range(80)])
    assert len(large) >= KEEP_FROM
    assert append(log, large, epoch=4) == (1, -1)
    written = log.read(0, BIG)
    store.close()
    reopened = PartitionLog(FileSegmentStore(tmp_path / "t-0"), Config())
    reopened.recover(now_ms=0)
    assert reopened.read(0, BIG) == written and reopened.log_end_offset == 81
    assert [offset for offset, _ in decoded(written)] == list(range(81))
    assert [b.partition_leader_epoch for b in R.read_batches(written)] == [0, 4]


def test_retention_deletes_the_segment_files(tmp_path):
    store = FileSegmentStore(tmp_path / "t-0")
    log = PartitionLog(store, Config(segment_bytes=1))
    for _ in range(5):
        append(log, make_batch(1), now=0)
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=2 * log.segments[0].size) == 3
    assert store.bases() == [3, 4] and len(list((tmp_path / "t-0").iterdir())) == 2


def test_a_partial_batch_at_the_end_of_a_file_is_cut_on_reopen(tmp_path):
    store = FileSegmentStore(tmp_path / "p")
    log = PartitionLog(store)
    append(log, make_batch(2))
    good = log.size_bytes
    with open(tmp_path / "p" / "00000000000000000000.log", "ab") as f:
        f.write(make_batch(3)[:30])
    reopened = PartitionLog(FileSegmentStore(tmp_path / "p"))
    reopened.recover(now_ms=0)
    assert reopened.log_end_offset == 2 and os.path.getsize(tmp_path / "p" / "00000000000000000000.log") == good


def test_the_index_in_memory_stays_small_however_much_is_written(tmp_path):
    log = PartitionLog(FileSegmentStore(tmp_path / "big"), Config(index_interval_bytes=64))
    payload = make_batch(20)  # ~300 bytes a batch
    for _ in range(20_000):
        append(log, payload)
    [segment] = log.segments
    assert segment.size == 20_000 * len(payload)
    assert len(segment.index_offsets) <= MAX_INDEX_ENTRIES  # 16 bytes an entry: <= 64 KiB
    reopened = PartitionLog(FileSegmentStore(tmp_path / "big"), Config(index_interval_bytes=64))
    reopened.recover(now_ms=0)
    assert len(reopened.segments[0].index_offsets) <= MAX_INDEX_ENTRIES
    for offset in (0, 20 * 7_777 + 3, 20 * 20_000 - 1):
        first = decoded(reopened.read(offset, 1))[0][0]
        assert first == offset - offset % 20


def test_a_data_dir_that_is_a_file_or_unwritable_or_in_use_is_refused(tmp_path):
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(DataDirError, match="is a file, not a directory"):
        DataDir(file)
    with pytest.raises(DataDirError, match="cannot be used"):
        DataDir(file / "below")
    used = DataDir(tmp_path / "used")
    try:
        with pytest.raises(DataDirError, match="in use by another fakebroker"):
            DataDir(tmp_path / "used")
    finally:
        used.close()
    DataDir(tmp_path / "used").close()  # free again once closed
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "ro"
        locked.mkdir(mode=0o500)
        with pytest.raises(DataDirError, match="ro"):
            DataDir(locked)


def test_deleting_a_topic_deletes_its_directory(tmp_path):
    data = DataDir(tmp_path)
    store = data.open("t", uuid.uuid4(), 0)
    store.create(0)
    store.append(0, b"x")
    data.remove("t", uuid.uuid4(), 0)
    assert not (tmp_path / "t-0").exists()
    data.close()


def test_a_cluster_on_a_data_dir_finds_its_topics_records_offsets_and_id_again(tmp_path):
    with FakeCluster(
        data_dir=tmp_path, topics={"orders": {"partitions": 2, "config": {"retention.ms": 86400000}}}
    ).run_in_thread() as c:
        cluster_id = c.cluster_id
        topic_id = c.state.topics["orders"].topic_id
        partition = c.state.partition("orders", 1)
        state = c.state

        def write() -> None:
            for value in (b"a", b"b", b"c"):
                state.append(
                    partition, make_batch(1, tag=value.decode()), produce_version=9, transactional_id=None, now_ms=0
                )
            state.groups.offsets.commit(0, "g", "orders", 1, 2, -1, "meta")

        c.call(write)
        before = c.records("orders")
    with FakeCluster(data_dir=tmp_path, topics={"orders": 5}).run_in_thread() as c:
        assert c.cluster_id == cluster_id
        topic = c.state.topics["orders"]
        assert (topic.topic_id, len(topic.partitions)) == (topic_id, 2)  # as kept, not as asked again
        assert topic.config.overrides == {"retention.ms": "86400000"}
        assert c.records("orders") == before
        assert c.committed("g") == {("orders", 1): 2}
        assert [e.kind for e in c.events if e.kind in ("topic_restored", "topic_created")] == ["topic_restored"]


def test_segment_files_of_a_topic_the_metadata_never_named_are_set_aside_as_kafka_sets_stray_logs(tmp_path):
    with FakeCluster(data_dir=tmp_path).run_in_thread():
        pass  # the metadata exists, naming no topic
    orphan = FileSegmentStore(tmp_path / "lost-0")  # created just before a crash, never named
    orphan.create(100)
    orphan.append(100, make_batch(1))
    orphan.close()
    kept = (tmp_path / "lost-0" / "00000000000000000100.log").read_bytes()
    with FakeCluster(data_dir=tmp_path, topics={"lost": 1}).run_in_thread() as c:
        [stray] = [p for p in tmp_path.iterdir() if p.name.endswith("-stray")]
        assert re.fullmatch(r"lost-0\.[0-9a-f]{32}-stray", stray.name)  # Kafka's topic-partition.uniqueId-stray
        assert (stray / "00000000000000000100.log").read_bytes() == kept  # never deleted
        assert c.offsets("lost", 0) == (0, 0)  # the new topic starts empty
        c.create_topic("other")
    with FakeCluster(data_dir=tmp_path).run_in_thread() as c:  # a stray is never a partition again
        assert sorted(c.topics()) == ["lost", "other"] and c.offsets("lost", 0) == (0, 0)
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith("-stray")] == [stray.name]


def test_flush_messages_and_flush_ms_fsync_the_active_segment(tmp_path, monkeypatch):
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    log = PartitionLog(FileSegmentStore(tmp_path / "t-0"), Config(flush_messages=3))
    for i in range(7):
        append(log, make_batch(1, tag=f"v{i}"), now=i)
    assert len(synced) == 2  # after the 3rd and the 6th record, as UnifiedLog.append flushes
    synced.clear()
    log = PartitionLog(FileSegmentStore(tmp_path / "t-1"), Config(flush_ms=100))
    for now in (0, 50, 99, 100, 150, 250):
        append(log, make_batch(2), now=now)
    assert len(synced) == 2  # at 100 and at 250: 100 ms after the last flush
    synced.clear()
    log = PartitionLog(FileSegmentStore(tmp_path / "t-2"), Config())  # Kafka's defaults: never
    for i in range(20):
        append(log, make_batch(5), now=i * 10**9)
    assert synced == []

"""The metadata of a data directory: a directory with partition logs but no usable metadata is
refused in one line naming the file and the fault, its logs untouched; the journal of changes is
replayed over the snapshot (a torn last line ignored, a bad line elsewhere refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.storage import DataDirError
from fakebroker.storage.metadata import JOURNAL_FILE, META_FILE

from ..core.test_log import make_batch


def fill(data: Path) -> dict[str, bytes]:
    """A data directory with a topic, records and a committed offset; returns its files' bytes."""
    with FakeCluster(data_dir=data, topics={"orders": 2}).run_in_thread() as c:
        state = c.state

        def write() -> None:
            for p in state.topics["orders"].partitions:
                state.append(p, make_batch(3), produce_version=9, transactional_id=None, now_ms=0)
            state.groups.offsets.commit(0, "g", "orders", 1, 2, -1, "")

        c.call(write)
    return files(data)


def files(data: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data)): p.read_bytes() for p in sorted(data.glob("*/*.log"))}


def good_meta(data: Path) -> dict:
    return json.loads((data / META_FILE).read_text())


BAD_METADATA = [
    (None, "is missing, but the directory holds partition logs (orders-0, orders-1)"),
    (b"", "is empty"),
    (b"  \n", "is empty"),
    (b"null", "holds null, not an object"),
    (b"[1, 2]", "holds list, not an object"),
    (b'{"version": 1, "cluster_i', "is not valid JSON"),
    (lambda m: m.pop("topics"), "topics is missing or not an object"),
    (lambda m: m.update(topics=[]), "topics is missing or not an object"),
    (lambda m: m.update(version=7), "version 7 is not 1"),
    (lambda m: m["topics"]["orders"].pop("id"), "topics.orders: id None is not a UUID"),
    (lambda m: m["topics"]["orders"].update(id="not-a-uuid"), "topics.orders: id 'not-a-uuid' is not a UUID"),
    (lambda m: m["topics"]["orders"].update(partitions={}), "topics.orders: partitions is not a non-empty list"),
    (lambda m: m["topics"]["orders"].update(partitions=[]), "topics.orders: partitions is not a non-empty list"),
    (lambda m: m["topics"].update(orders=3), "topics.orders: not an object"),
    (lambda m: m["topics"]["orders"]["partitions"][1].update(replicas=[]), "topics.orders: partition 1: replicas"),
    (lambda m: m["topics"]["orders"]["partitions"][0].update(log_start_offset="7"), "partition 0: log_start_offset"),
    (lambda m: m["topics"]["orders"].update(configs={"retention.ms": 5}), "topics.orders: configs is not"),
    (lambda m: m.update(offsets={"g": [["orders", 1]]}), "offsets.g is not a list of"),
    (lambda m: m.update(next_producer_id=-3), "next_producer_id is not a number"),
    (lambda m: m.update(group_configs={"g": {"share.delivery.count.limit": 3}}), "group_configs is not an object"),
    (lambda m: m.update(group_configs=[]), "group_configs is not an object"),
]


@pytest.mark.parametrize(("bad", "why"), BAD_METADATA)
def test_a_data_dir_with_logs_and_no_usable_metadata_is_refused_and_left_as_it_was(tmp_path, bad, why):
    data = tmp_path / "data"
    before = fill(data)
    meta_path = data / META_FILE
    if bad is None:
        meta_path.unlink()
    elif callable(bad):
        meta = good_meta(data)
        bad(meta)
        meta_path.write_text(json.dumps(meta))
    else:
        meta_path.write_bytes(bad)
    meta_bytes = meta_path.read_bytes() if meta_path.exists() else None
    with pytest.raises(DataDirError) as caught:
        FakeCluster(data_dir=data)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(meta_path)) and why in message, message
    assert files(data) == before  # the logs byte for byte
    assert (meta_path.read_bytes() if meta_path.exists() else None) == meta_bytes
    assert not [p for p in data.iterdir() if p.name.endswith("-stray")]
    with pytest.raises(DataDirError):  # the lock was let go: refused again, for the same reason
        FakeCluster(data_dir=data)


def test_an_empty_new_directory_starts_and_a_used_one_without_topics_starts_again(tmp_path):
    with FakeCluster(data_dir=tmp_path / "new").run_in_thread() as c:
        assert c.topics() == {}
    with FakeCluster(data_dir=tmp_path / "new").run_in_thread() as c:
        assert c.topics() == {}


def journal(data: Path) -> list:
    return [json.loads(line) for line in (data / JOURNAL_FILE).read_text().splitlines()]


def test_each_change_is_a_journal_line_and_a_torn_last_line_is_ignored(tmp_path):
    data = tmp_path / "data"
    fill(data)
    with FakeCluster(data_dir=data).run_in_thread() as c:
        generation = good_meta(data)["journal"]
        c.create_topic("more", 3, config={"retention.ms": "60000"})
        c.delete_topic("orders")
        c.set_quota({"client-id": "x"}, "producer_byte_rate", 10)  # not kept: no line
        lines = journal(data)
        assert lines[0] == ["journal", 1, generation]
        assert [line[:2] for line in lines[1:]] == [["topic", "more"], ["topic", "orders"]]
        assert lines[2] == ["topic", "orders", None]
        # a crash: the journal is what is left (the snapshot is still the one from the start)
        snapshot = (data / META_FILE).read_bytes()
        written = (data / JOURNAL_FILE).read_bytes()
    (data / META_FILE).write_bytes(snapshot)
    (data / JOURNAL_FILE).write_bytes(written + b'["topic","torn",{"id":')
    with FakeCluster(data_dir=data).run_in_thread() as c:
        assert c.topics() == {"more": 3}
        assert c.describe_topic("more").config == {"retention.ms": "60000"}
        assert c.committed("g") == {("orders", 1): 2}  # offsets outlive their topic, as in Kafka


def test_a_bad_journal_line_before_the_last_is_refused(tmp_path):
    data = tmp_path / "data"
    before = fill(data)
    path = data / JOURNAL_FILE
    generation = good_meta(data)["journal"]
    path.write_text(f'["journal",1,{generation}]\n["topic","x",\n["pid",5000]\n')
    with pytest.raises(DataDirError, match=r"fakebroker-meta\.log: line 2 cannot be applied"):
        FakeCluster(data_dir=data)
    path.write_text(f'["journal",1,{generation}]\n["what",1]\n')
    with pytest.raises(DataDirError, match="unknown change 'what'"):
        FakeCluster(data_dir=data)
    path.write_text(f'["journal",1,{generation}]\n["gconf","g",{{"share.delivery.count.limit":3}}]\n["pid",5]\n')
    with pytest.raises(DataDirError, match="line 2 cannot be applied .*configs of group 'g'"):
        FakeCluster(data_dir=data)
    path.write_text(f'["journal",1,{generation}]\n["topic","x",{{"id":"nope","partitions":[]}}]\n')
    with pytest.raises(DataDirError, match=r"replayed over fakebroker-meta\.json: topics\.x: id 'nope'"):
        FakeCluster(data_dir=data)
    assert files(data) == before


def test_a_journal_older_than_the_snapshot_is_already_in_it(tmp_path):
    data = tmp_path / "data"
    fill(data)
    meta = good_meta(data)
    (data / JOURNAL_FILE).write_text(f'["journal",1,{meta["journal"] - 1}]\n["topic","orders",null]\n')
    with FakeCluster(data_dir=data).run_in_thread() as c:  # a crash between snapshot and new journal
        assert c.topics() == {"orders": 2}

"""`fakebroker serve --data-dir` keeps every answered change through `kill -9`: a real client
makes one change, gets its answer, the server is killed with SIGKILL at once, and the next
start finds the change (a topic created and 200 records produced with acks=all, a committed
offset, a deleted topic, a topic config, DeleteRecords' log start offset)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from .test_serve_data_dir import start

QUIET = {"log_level": 0}
RECORDS = 200


@dataclass
class Expected:
    """What every start must find: topics with their records, log start offsets and configs,
    and committed offsets."""

    topics: dict[str, int] = field(default_factory=dict)  # name -> high watermark
    low: dict[str, int] = field(default_factory=dict)  # name -> log start offset
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    committed: dict[str, int] = field(default_factory=dict)  # group -> offset of partition 0 of "base"
    made: int = 0
    last_group: str | None = None


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def create_and_produce(bootstrap: str, want: Expected) -> None:
    name = f"t{want.made}"
    want.made += 1
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2, **QUIET})
    for i in range(RECORDS):
        producer.produce(name, value=f"{name}-{i}".encode(), partition=0)
    assert producer.flush(10) == 0
    want.topics[name] = RECORDS
    want.low[name] = 0


def commit(bootstrap: str, want: Expected) -> None:
    group = f"g{want.made}"
    want.made += 1
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, **QUIET})
    try:
        consumer.commit(offsets=[TopicPartition("base", 0, want.made)], asynchronous=False)
    finally:
        consumer.close()
    want.committed[group] = want.made
    want.last_group = group


def delete_topic(bootstrap: str, want: Expected) -> None:
    name = min(want.topics, key=lambda n: int(n[1:]))
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.delete_topics([name])[name].result(10)
    for seen in (want.topics, want.low, want.configs):
        seen.pop(name, None)


def alter_config(bootstrap: str, want: Expected) -> None:
    name = max(want.topics, key=lambda n: int(n[1:]))
    value = str(3_600_000 + want.made)
    want.made += 1
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        name,
        incremental_configs=[ConfigEntry("retention.ms", value, incremental_operation=AlterConfigOpType.SET)],
    )
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    [future] = admin.incremental_alter_configs([resource]).values()
    future.result(10)
    want.configs[name] = {"retention.ms": value}


def delete_records(bootstrap: str, want: Expected) -> None:
    name = max(want.topics, key=lambda n: int(n[1:]))
    before = want.low[name] + 50
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    [future] = admin.delete_records([TopicPartition(name, 0, before)]).values()
    future.result(10)
    want.low[name] = before


def check(bootstrap: str, want: Expected, *, every_group: bool) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    found = {n for n in admin.list_topics(timeout=10).topics if not n.startswith("__")}
    assert found == {"base", *want.topics}, "a topic created or deleted before the kill was lost"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "checker", **QUIET})
    try:
        for name, high in want.topics.items():
            marks = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=10)
            assert marks == (want.low[name], high), f"{name}: records or log start offset lost"
    finally:
        consumer.close()
    for name, configs in want.configs.items():
        [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, name)]).values()
        described = future.result(10)
        assert {k: described[k].value for k in configs} == configs, f"{name}: config lost"
    groups = want.committed if every_group else [want.last_group] if want.last_group else []
    for group in groups:
        offset = want.committed[group]
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **QUIET})
        try:
            [tp] = consumer.committed([TopicPartition("base", 0)], timeout=10)
        finally:
            consumer.close()
        assert tp.offset == offset, f"the offset {group} committed was lost"


def run(tmp_path: Path, changes: list[Callable[[str, Expected], None]]) -> Expected:
    """Each change, then SIGKILL at once, then a start that must find it (and all before it)."""
    data = tmp_path / "data"
    want = Expected()
    proc, bootstrap = start(tmp_path, "--data-dir", str(data), "--topic", "base:1")
    try:
        for n, change in enumerate(changes, 1):
            change(bootstrap, want)
            kill(proc)
            proc, bootstrap = start(tmp_path, "--data-dir", str(data), "--topic", "base:1")
            check(bootstrap, want, every_group=n == len(changes))  # each start: the newest commit
    finally:
        kill(proc)
    return want


def test_every_kind_of_answered_change_survives_kill_9(tmp_path):
    kinds = [create_and_produce, commit, create_and_produce, alter_config, delete_records, delete_topic, commit]
    want = run(tmp_path, kinds)
    assert len(want.topics) == 1 and want.committed and want.configs


@pytest.mark.slow
@pytest.mark.timeout(600)  # 100 starts of `serve`: about 90 s alone, more beside other tests
def test_twenty_kills_after_each_kind_of_answered_change_lose_nothing(tmp_path):
    kinds = [create_and_produce, commit, alter_config, delete_records, delete_topic]
    want = run(tmp_path, kinds * 20)  # 100 kills: each kind of change killed right after, 20 times
    assert (len(want.topics), len(want.committed)) == (0, 20)

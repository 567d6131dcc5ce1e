"""Share groups (KIP-932) survive a restart on the same directory as Kafka keeps them: after a
crash (a copy of the directory taken while running), what confluent-kafka's ShareConsumer
acknowledged stays acknowledged, what it rejected stays archived, what it held comes back (as a
first delivery again: Kafka never persists an acquisition), and the group's members and epochs
are there; damaged records refuse the directory with one line."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from fakebroker.cluster import FakeCluster
from fakebroker.storage.metadata import META_FILE
from fakebroker.storage.snapshot import problem

from .test_journal import crashed_copy, journal_lines, port_of

pytestmark = pytest.mark.clients
QUIET = {"log_level": 0}


def produce(c: FakeCluster, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": c.bootstrap_servers, **QUIET})
    for v in values:
        producer.produce("jobs", v, partition=0)
    assert producer.flush(10) == 0


def take(consumer: ShareConsumer, n: int, decide) -> list[tuple[int, bytes, int]]:
    """Poll until ``n`` records came; acknowledge each as ``decide`` says (None: hold it)."""
    got: list[tuple[int, bytes, int]] = []
    deadline = time.monotonic() + 15
    while len(got) < n:
        assert time.monotonic() < deadline, got
        for m in consumer.poll(0.1):
            if m.error():
                continue
            got.append((m.offset(), m.value(), m.delivery_count()))
            ack = decide(m.value())
            if ack is not None:
                consumer.acknowledge(m, ack)
        if got:
            consumer.commit_sync(10)
    return got


def test_acknowledged_progress_and_the_group_survive_a_crash(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"jobs": 1}).run_in_thread() as c:
        port = port_of(c)
        c.set_group_configs("g", share_auto_offset_reset="earliest")
        produce(c, [b"done-1", b"bad", b"done-2", b"held-1", b"held-2"])
        consumer = ShareConsumer(
            {
                "bootstrap.servers": c.bootstrap_servers,
                "group.id": "g",
                "share.acknowledgement.mode": "explicit",
                **QUIET,
            }
        )
        consumer.subscribe(["jobs"])
        rules = {b"bad": AcknowledgeType.REJECT, b"held-1": None, b"held-2": None}
        got = take(consumer, 5, lambda v: rules.get(v, AcknowledgeType.ACCEPT))
        assert [c for *_, c in got] == [1] * 5
        before = c.state.groups.share.groups["g"]
        epoch, members = before.group_epoch, sorted(before.members)
        [*_, last] = journal_lines(data, "sgroup", "g")
        assert last[2]["group_epoch"] == epoch and len(last[2]["members"]) == 1
        states = journal_lines(data, "sstate", "g")
        assert states and states[-1][4]["batches"]  # the acknowledgements were written
        copy = crashed_copy(data, tmp_path / "copy")
        consumer.close()
    with FakeCluster(data_dir=copy, port=port).run_in_thread() as c:
        group = c.state.groups.share.groups["g"]
        assert (group.group_epoch, sorted(group.members)) == (epoch, members)  # the member's session runs again
        produce(c, [b"new"])
        after = ShareConsumer(
            {
                "bootstrap.servers": c.bootstrap_servers,
                "group.id": "g",
                "share.acknowledgement.mode": "explicit",
                **QUIET,
            }
        )
        after.subscribe(["jobs"])
        try:
            again = take(after, 3, lambda v: AcknowledgeType.ACCEPT)
            for _ in range(5):  # nothing else: accepted and rejected records stay done
                assert not [m for m in after.poll(0.1) if not m.error()]
        finally:
            after.close()
        assert sorted((v, count) for _, v, count in again) == [(b"held-1", 1), (b"held-2", 1), (b"new", 1)]
    meta = json.loads((copy / META_FILE).read_text())  # the clean stop's snapshot
    assert problem(meta) is None and "g" in meta["share_groups"] and meta["share_states"]
    damaged = {**meta, "share_states": [["g", "not-a-topic-id", 0, None]]}
    assert problem(damaged) == "share_states share state of 'g': 'not-a-topic-id' is not a topic id"

"""KIP-848 consumer groups are kept as Kafka keeps their records in ``__consumer_offsets``: after
a restart on the same directory, a librdkafka consumer (``group.protocol=consumer``) that outlived
it heartbeats on at its epoch with its partitions, without being fenced or rejoining; a member
that does not come back is fenced after its session timeout; damaged records refuse the
directory with one line."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer

from fakebroker.cluster import FakeCluster
from fakebroker.storage.metadata import META_FILE
from fakebroker.storage.snapshot import problem

from .test_journal import crashed_copy, journal_lines, port_of

pytestmark = pytest.mark.clients
QUIET = {"log_level": 0}
CONFIG = {"group.consumer.session.timeout.ms": 4000, "group.consumer.heartbeat.interval.ms": 300}


def stable_member(c: FakeCluster, group: str, **config) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": c.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "reconnect.backoff.max.ms": 200,
            **QUIET,
            **config,
        }
    )
    consumer.subscribe(["in"])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        consumer.poll(0.2)
        view = c.group(group)
        if view is not None and view.state == "Stable" and view.assignment == {"rdkafka": {"in": [0, 1]}}:
            return consumer
    raise AssertionError(f"the group did not become stable: {c.group(group)}")


@pytest.mark.parametrize("static", [None, "i-1"])
def test_a_kip848_consumer_that_outlives_the_restart_heartbeats_on_at_its_epoch(tmp_path, static):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 2}, config=CONFIG).run_in_thread() as c:
        port = port_of(c)
        consumer = stable_member(c, "g", **({"group.instance.id": static} if static else {}))
        before = c.group("g")
        [*_, last] = journal_lines(data, "kgroup", "g")
        assert last[2]["group_epoch"] == before.generation and len(last[2]["members"]) == 1
        assert last[2]["members"][0]["instance_id"] == static
        copy = crashed_copy(data, tmp_path / "copy")
    try:
        with FakeCluster(data_dir=copy, port=port, config=CONFIG).run_in_thread() as c:
            view = c.group("g")
            assert (view.state, view.generation, view.protocol_type) == ("Stable", before.generation, "consumer")
            assert [(m.member_id, m.member_epoch) for m in view.members] == [
                (m.member_id, m.member_epoch) for m in before.members
            ]
            assert view.assignment == before.assignment == {"rdkafka": {"in": [0, 1]}}
            end = time.monotonic() + 6  # more than a session: the member's heartbeats keep it
            while time.monotonic() < end:
                consumer.poll(0.2)
            after = c.group("g")
            assert (after.state, after.generation) == ("Stable", before.generation)
            assert [m.member_id for m in after.members] == [m.member_id for m in before.members]
            producer = Producer({"bootstrap.servers": c.bootstrap_servers, **QUIET})
            for partition in (0, 1):
                producer.produce("in", f"after-{partition}".encode(), partition=partition)
            assert producer.flush(10) == 0
            got = set()
            end = time.monotonic() + 10
            while len(got) < 2 and time.monotonic() < end:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    got.add((message.partition(), message.value()))
            assert got == {(0, b"after-0"), (1, b"after-1")}  # it still consumes both partitions
            consumer.close()  # while the broker is there to take its last commit and its leave
            consumer = None
            gone = [e.kind for e in c.events if e.kind in ("member_joined", "member_expired", "member_fenced")]
            assert gone == [], "the member rejoined or was fenced"
    finally:
        if consumer is not None:
            consumer.close()


def test_a_kip848_member_that_does_not_come_back_is_fenced_after_its_session(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 2}, config=CONFIG).run_in_thread() as c:
        consumer = stable_member(c, "g")
        epoch = c.group("g").generation
        copy = crashed_copy(data, tmp_path / "copy")
        consumer.close()
    with FakeCluster(data_dir=copy, config=CONFIG).run_in_thread() as c:
        assert c.group("g").state == "Stable"
        c.wait_for_sync(lambda cl: any(e.kind == "member_expired" for e in cl.events), timeout=10)
        c.wait_for_sync(lambda cl: cl.group("g").state == "Empty", timeout=10)
        assert c.group("g").generation == epoch + 1
    meta = json.loads((copy / META_FILE).read_text())  # the clean stop's snapshot: the group, Empty
    assert meta["consumer_groups"]["g"]["members"] == [] and problem(meta) is None
    damaged = {**meta, "consumer_groups": {"g": {**meta["consumer_groups"]["g"], "members": [{"state": "x"}]}}}
    assert problem(damaged) == "consumer_groups g: a member's ids, client or state is not a string it can be"

"""Classic groups are kept as Kafka keeps their record in ``__consumer_offsets``: after a restart
on the same directory a consumer that outlived it heartbeats on at its generation without
rejoining, and a member that does not come back is expired after its session timeout."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer

from fakebroker.cluster import FakeCluster
from fakebroker.storage.metadata import META_FILE
from fakebroker.storage.snapshot import problem

from .test_journal import crashed_copy, journal_lines, port_of

pytestmark = pytest.mark.clients
QUIET = {"log_level": 0}
CONFIG = {"group.min.session.timeout.ms": 1000}
MEMBER = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 300, "reconnect.backoff.max.ms": 200}


def stable_member(c: FakeCluster, group: str, **config) -> Consumer:
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": group, **MEMBER, **QUIET, **config})
    consumer.subscribe(["in"])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        consumer.poll(0.2)
        view = c.group(group)
        if view is not None and view.state == "Stable" and view.members and view.assignment:
            return consumer
    raise AssertionError(f"the group did not become stable: {c.group(group)}")


@pytest.mark.parametrize("static", [None, "i-1"])
def test_a_consumer_that_outlives_the_restart_heartbeats_on_without_rejoining(tmp_path, static):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 2}, config=CONFIG).run_in_thread() as c:
        port = port_of(c)
        consumer = stable_member(c, "g", **({"group.instance.id": static} if static else {}))
        before = c.group("g")
        [*_, last] = journal_lines(data, "cgroup", "g")
        assert last[2]["generation"] == before.generation and len(last[2]["members"]) == 1
        assert last[2]["members"][0]["group_instance_id"] == static
        copy = crashed_copy(data, tmp_path / "copy")
    try:
        with FakeCluster(data_dir=copy, port=port, config=CONFIG).run_in_thread() as c:
            view = c.group("g")
            assert (view.state, view.generation, view.leader) == ("Stable", before.generation, before.leader)
            assert [m.member_id for m in view.members] == [m.member_id for m in before.members]
            assert c.call(lambda: list(c.state.groups.classic.groups["g"].static_members)) == (
                [static] if static else []
            )
            assert view.assignment == before.assignment
            end = time.monotonic() + 5  # more than a session: the member's heartbeats keep it
            while time.monotonic() < end:
                consumer.poll(0.2)
            after = c.group("g")
            assert (after.state, after.generation) == ("Stable", before.generation)
            assert not [e for e in c.events if e.kind in ("member_joined", "member_expired")], "no rejoin"
    finally:
        consumer.close()


def test_a_member_that_does_not_come_back_is_expired_after_its_session(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 2}, config=CONFIG).run_in_thread() as c:
        consumer = stable_member(c, "g")
        generation = c.group("g").generation
        copy = crashed_copy(data, tmp_path / "copy")
        consumer.close()
    with FakeCluster(data_dir=copy, config=CONFIG).run_in_thread() as c:
        assert c.group("g").state == "Stable"
        c.wait_for_sync(lambda cl: any(e.kind == "member_expired" for e in cl.events), timeout=10)
        c.wait_for_sync(lambda cl: cl.group("g").state == "Empty", timeout=10)
        assert c.group("g").generation == generation + 1
    meta = json.loads((copy / META_FILE).read_text())  # the clean stop's snapshot: the group, Empty
    assert meta["groups"]["g"]["members"] == [] and problem(meta) is None
    assert "groups g" in problem({**meta, "groups": {"g": {**meta["groups"]["g"], "members": [{}]}}})


def test_a_deleted_group_stays_deleted(tmp_path):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"in": 2}, config=CONFIG).run_in_thread() as c:
        consumer = stable_member(c, "g")
        consumer.close()
        c.wait_for_sync(lambda cl: cl.group("g").state == "Empty", timeout=10)
        c.forget_groups(["g"])
        copy = crashed_copy(data, tmp_path / "copy")
    with FakeCluster(data_dir=copy, config=CONFIG).run_in_thread() as c:
        assert c.group("g") is None

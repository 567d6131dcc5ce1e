"""Issue 36: a cluster used before its start or after its stop raises ClusterNotRunning (a
ClusterUsageError) saying which and how to run it, from every member that reaches the running
cluster; what it was given or has recorded stays readable. Every public member of the facade
is classified here, so a new one cannot slip past unclassified."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from fakebroker.cluster import ClusterNotRunning, ClusterUsageError, FakeCluster

from ..ports import a_taken_port

# What a cluster was given or has recorded: works before the start and after the stop.
READABLE_ANY_TIME = {
    "cluster_id",
    "coordinator_load_time_ms",
    "tls_ca_file",
    "listener_names",
    "client_certificate",
    "events",
    "events_since",
    "event_count",
    "events_dropped",
    "renew_events",
    "on_event",
    "state",  # the core itself, for assertions
    "run_in_thread",  # how it starts
    "stop_idle_loops",  # of the process, not of a cluster
}

# Every other public member, with a call of it as a test would make it.
SYNC_CALLS: dict[str, Callable[[FakeCluster], Any]] = {
    "bootstrap_servers": lambda c: c.bootstrap_servers,
    "bootstrap_for": lambda c: c.bootstrap_for("PLAINTEXT"),
    "create_topic": lambda c: c.create_topic("new", 2),
    "delete_topic": lambda c: c.delete_topic("orders"),
    "add_partitions": lambda c: c.add_partitions("orders", 4),
    "topics": lambda c: c.topics(),
    "describe_topic": lambda c: c.describe_topic("orders"),
    "describe_topics": lambda c: c.describe_topics(),
    "offsets": lambda c: c.offsets("orders", 0),
    "records": lambda c: c.records("orders"),
    "apply_retention": lambda c: c.apply_retention(),
    "set_group_configs": lambda c: c.set_group_configs("g", share_auto_offset_reset="earliest"),
    "leader": lambda c: c.leader("orders", 0),
    "move_leader": lambda c: c.move_leader("orders", 0, 1),
    "stop_broker": lambda c: c.stop_broker(0),
    "start_broker": lambda c: c.start_broker(0),
    "restart_broker": lambda c: c.restart_broker(0),
    "brokers": lambda c: c.brokers(),
    "elect_preferred_leaders": lambda c: c.elect_preferred_leaders(),
    "coordinator": lambda c: c.coordinator("g"),
    "move_coordinator": lambda c: c.move_coordinator("g", 1),
    "group": lambda c: c.group("g"),
    "groups": lambda c: c.groups(),
    "share_group": lambda c: c.share_group("g"),
    "streams_group": lambda c: c.streams_group("g"),
    "committed": lambda c: c.committed("g"),
    "forget_groups": lambda c: c.forget_groups(["g"]),
    "transaction": lambda c: c.transaction("tx"),
    "transactions": lambda c: c.transactions(),
    "move_transaction_coordinator": lambda c: c.move_transaction_coordinator("tx", 1),
    "forget_transactions": lambda c: c.forget_transactions(["tx"]),
    "set_feature": lambda c: c.set_feature("transaction.version", 1),
    "features": lambda c: c.features(),
    "set_quota": lambda c: c.set_quota({"client-id": "svc"}, "producer_byte_rate", 1024),
    "quotas": lambda c: c.quotas(),
    "cut": lambda c: c.cut("svc", 1),
    "heal": lambda c: c.heal("svc", 1),
    "cuts": lambda c: c.cuts(),
    "expire_sessions": lambda c: c.expire_sessions(),
    "wait_for_sync": lambda c: c.wait_for_sync(lambda cluster: True, timeout=0.1),
    "start_task": lambda c: c.start_task(_task),
    "call": lambda c: c.call(lambda: 1),
    "faults.add": lambda c: c.faults.add(api="Fetch", error="NOT_LEADER_OR_FOLLOWER"),
    "faults.remove": lambda c: c.faults.remove(1),
    "faults.clear": lambda c: c.faults.clear(),
    "clock.advance": lambda c: c.clock.advance(1),
}
ASYNC_CALLS: dict[str, Callable[[FakeCluster], Any]] = {
    "stop_broker_async": lambda c: c.stop_broker_async(0),
    "start_broker_async": lambda c: c.start_broker_async(0),
    "wait_for": lambda c: c.wait_for(lambda cluster: True, timeout=0.1),
    "start_task_async": lambda c: c.start_task_async(_task),
    "clock.advance_async": lambda c: c.clock.advance_async(1),
}


async def _task(task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    task_status.started()


def _new() -> FakeCluster:
    return FakeCluster(brokers=2, topics={"orders": 2}, virtual_time=True)


def test_every_public_member_is_classified():
    public = {n for n in dir(FakeCluster) if not n.startswith("_")} | {"faults", "clock", "acls"}
    classified = READABLE_ANY_TIME | set(SYNC_CALLS) | set(ASYNC_CALLS)
    classified |= {"threads_may_call", "faults", "clock", "acls"}
    assert public - {n.split(".")[0] for n in classified} == set(), "classify the new member in this test"


@pytest.mark.parametrize("name", sorted(SYNC_CALLS))
def test_before_the_start_each_call_says_to_start_it(name):
    cluster = _new()
    with pytest.raises(ClusterNotRunning, match=r"has not started: use it inside `with FakeCluster\(\.\.\.\)"):
        SYNC_CALLS[name](cluster)


@pytest.fixture(scope="module")
def stopped() -> FakeCluster:
    cluster = _new()
    with cluster.run_in_thread() as running:
        running.faults.add(api="Fetch", error="NOT_LEADER_OR_FOLLOWER", times=1)
    return cluster


@pytest.mark.parametrize("name", sorted(SYNC_CALLS))
def test_after_the_stop_each_call_says_it_stopped(stopped, name):
    with pytest.raises(ClusterNotRunning, match=r"has stopped \(its `with` block has ended\)"):
        SYNC_CALLS[name](stopped)


def test_what_was_given_or_recorded_stays_readable(stopped):
    kinds = [e.kind for e in stopped.events]
    assert kinds[:2] == ["broker_started", "broker_started"] and "fault_added" in kinds
    assert stopped.events_since(stopped.event_count - 1) == stopped.events[-1:]
    assert stopped.events_dropped == 0 and stopped.renew_events() == len(kinds)
    assert len(stopped.cluster_id) == 22 and stopped.coordinator_load_time_ms == 0
    assert stopped.clock.virtual and stopped.clock.now_ms() >= 0
    assert [r.error for r in stopped.faults.list()] and len(stopped.faults) == 1
    assert set(stopped.state.topics) >= {"orders"}


def test_the_error_is_a_usage_error_and_a_runtime_error():
    """``except ValueError`` (ClusterUsageError) and the ``RuntimeError`` some calls raised before."""
    cluster = _new()
    with pytest.raises(ClusterUsageError):
        cluster.bootstrap_servers  # noqa: B018 - the property is the call
    with pytest.raises(RuntimeError):
        cluster.start_broker(0)
    assert issubclass(ClusterNotRunning, ValueError)


def test_a_listener_added_before_the_start_hears_the_start():
    cluster = _new()
    heard: list[str] = []
    cluster.on_event(lambda e: heard.append(e.kind))
    with cluster.run_in_thread() as running:
        assert running.bootstrap_servers.count("127.0.0.1:") == 2
    assert heard[:2] == ["broker_started", "broker_started"] and heard.count("topic_created") == 1


def test_a_failed_start_leaves_it_not_running():
    with a_taken_port() as port:
        cluster = FakeCluster(port=port)
        with pytest.raises(OSError), cluster.run_in_thread():
            pass
    with pytest.raises(ClusterNotRunning, match="has stopped"):
        cluster.topics()


def test_a_running_cluster_cannot_be_started_again():
    with _new().run_in_thread() as cluster:
        with pytest.raises(ClusterUsageError, match="running already"), cluster.run_in_thread():
            pass
        assert cluster.topics() == {"orders": 2}  # still serving


@pytest.mark.trio
async def test_async_members_refuse_before_the_start_and_after_the_stop():
    cluster = _new()
    for name, call in ASYNC_CALLS.items():
        with pytest.raises(ClusterNotRunning, match="has not started"):
            await call(cluster)
    with pytest.raises(ClusterNotRunning, match="has not started"):
        async with cluster.threads_may_call():
            pass
    async with cluster:
        assert cluster.topics() == {"orders": 2}
        await cluster.stop_broker_async(1)
    for name, call in ASYNC_CALLS.items():
        with pytest.raises(ClusterNotRunning, match="has stopped"):
            await call(cluster)
    for name, sync_call in SYNC_CALLS.items():
        with pytest.raises(ClusterNotRunning, match="has stopped"):
            sync_call(cluster)
    assert "broker_stopped" in [e.kind for e in cluster.events]


def test_the_error_survives_pickling():  # as pytest-xdist and multiprocessing carry it
    again = pickle.loads(pickle.dumps(ClusterNotRunning(False)))
    assert again.started is False and str(again) == str(ClusterNotRunning(False))

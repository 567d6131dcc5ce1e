"""Share groups (KIP-932) on the control endpoint: ``/groups`` and ``/groups/{id}`` give a share
group with its share partitions and records in flight, and ``/wait`` takes the share
conditions. The group is driven through the core on the cluster's loop (no client needed)."""

from __future__ import annotations

import threading

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.core.groups.share.coordinator import ShareHeartbeatRequest
from fakebroker.core.groups.share.records import AckBatch, AckType
from fakebroker.http import ControlEndpoint

from ..apis.support import produce_records
from .test_control_http import Endpoint

G, T, MEMBER = "workers", "jobs", "member-one-0000000000"


@pytest.fixture
def cluster():
    with FakeCluster(topics={T: 1}).run_in_thread() as c:
        c.state.group_configs.overrides[G] = {"share.auto.offset.reset": "earliest"}
        yield c


@pytest.fixture
def api(cluster):
    with ControlEndpoint(cluster) as control:
        yield Endpoint(control)


def act(cluster: FakeCluster, fn, *args) -> None:
    """``fn(*args)`` on the cluster's loop, then the events it recorded wake the waits (as a
    request's would)."""

    def run() -> None:
        fn(*args)
        cluster.runtime.settle(data_changed=True)

    cluster.call(run)


def start(cluster: FakeCluster) -> None:
    """A member joins and acquires the 4 records produced; it accepts 0-1."""
    state, now = cluster.state, cluster.clock.now_ms()
    produce_records(state, T, 0, b"a", b"b", b"c", b"d")
    request = ShareHeartbeatRequest(G, MEMBER, 0, subscribed_names=[T], client_id="w1")
    assert state.groups.share_heartbeat(now, 0, request).error == 0
    shares = state.groups.shares
    sp = shares.load(G, T, 0, now)
    assert sp is not None
    shares.acquire(G, MEMBER, "w1", sp, 500, 500, now)
    answer(cluster, 0, 1, AckType.ACCEPT)


def answer(cluster: FakeCluster, first: int, last: int, kind: AckType) -> None:
    batches = [AckBatch(first, last, (int(kind),))]
    now = cluster.clock.now_ms()
    assert cluster.state.groups.shares.acknowledge(G, MEMBER, "w1", T, 0, batches, now) == (0, None)


def test_a_share_group_shows_its_records_in_flight(cluster, api):
    act(cluster, start, cluster)
    [listed] = api.ok("GET", "/groups")["groups"]
    view = api.ok("GET", f"/groups/{G}")
    assert listed == view
    assert (view["group_type"], view["state"], view["group_epoch"], view["delivery_count_limit"]) == (
        "share",
        "Stable",
        2,
        5,
    )
    assert [(m["client_id"], m["assignment"], m["acquired"]) for m in view["members"]] == [("w1", {T: [0]}, 2)]
    [sp] = view["partitions"]
    assert (sp["topic"], sp["start_offset"], sp["end_offset"], sp["loaded"]) == (T, 2, 4, True)
    assert sp["in_flight"] == [
        {"first": 2, "last": 3, "state": "acquired", "delivery_count": 1, "member": MEMBER, "client_id": "w1"}
    ]


def test_wait_takes_the_share_conditions(cluster, api):
    act(cluster, start, cluster)
    stable = api.ok("POST", "/wait", {"condition": "share_group_stable", "group": G, "members": 1, "timeout": 5})
    assert stable["result"]["group_type"] == "share"
    delivered = api.ok(
        "POST", "/wait", {"condition": "record_delivered", "group": G, "topic": T, "partition": 0, "offset": 3}
    )
    assert delivered["result"]["details"]["delivery_count"] == 1
    status, payload = api.call(
        "POST", "/wait", {"condition": "share_start_offset", "group": G, "topic": T, "partition": 0, "timeout": 0.2}
    )
    assert status == 408 and "last seen: start offset 2 (target 4), 2 acquired in flight" in payload["error"]
    later = threading.Timer(0.2, lambda: act(cluster, answer, cluster, 2, 3, AckType.REJECT))
    later.start()
    try:
        body = {"condition": "record_archived", "group": G, "topic": T, "partition": 0, "offset": 3, "timeout": 5}
        archived = api.ok("POST", "/wait", {**body, "reason": "rejected"})
    finally:
        later.join()
    assert archived["result"]["details"] == {
        "group": G,
        "topic": T,
        "partition": 0,
        "first": 2,
        "last": 3,
        "reason": "rejected",
    }
    done = api.ok("POST", "/wait", {"condition": "share_start_offset", "group": G, "topic": T, "partition": 0})
    assert done["result"]["start_offset"] == 4
    assert api.call("POST", "/wait", {"condition": "record_archived", "group": G, "topic": T})[0] == 400

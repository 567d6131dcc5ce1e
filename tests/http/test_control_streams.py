"""Streams groups (KIP-1071) on the control endpoint: ``/groups`` and ``/groups/{id}`` give a
streams group with its topology and each member's tasks, and ``/wait`` takes
``streams_group_stable``. The group is driven through the core on the cluster's loop."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint

from ..apis.test_streams_group_apis import G, join
from ..cluster.test_streams_views import settle
from .test_control_http import Endpoint
from .test_control_share import act


@pytest.fixture
def cluster():
    with FakeCluster(topics={"wc-input": 2}, config={"group.streams.assignment.interval.ms": 0}).run_in_thread() as c:
        yield c


@pytest.fixture
def api(cluster):
    with ControlEndpoint(cluster) as control:
        yield Endpoint(control)


def start(cluster: FakeCluster) -> None:
    """One member joins (internal topics made), then owns its four tasks."""
    state = cluster.state
    joined = join("m-a", state=state, now=cluster.clock.now_ms())
    assert joined.error_code == 0, joined
    settle(state, {"m-a": joined.member_epoch}, now=cluster.clock.now_ms())


def test_a_streams_group_shows_its_topology_and_tasks(cluster, api):
    act(cluster, start, cluster)
    stable = api.ok("POST", "/wait", {"condition": "streams_group_stable", "group": G, "members": 1, "timeout": 5})
    assert stable["result"]["group_type"] == "streams"
    [listed] = api.ok("GET", "/groups")["groups"]
    view = api.ok("GET", f"/groups/{G}")
    assert listed == view
    assert (view["group_type"], view["state"], view["status"]) == ("streams", "Stable", None)
    assert [(s["subtopology_id"], s["tasks"]) for s in view["subtopologies"]] == [("0", 2), ("1", 2)]
    [member] = view["members"]
    assert (member["member_id"], member["process_id"], member["state"]) == ("m-a", "process-m-a", "STABLE")
    assert member["tasks"] == {"active": ["0_0", "0_1", "1_0", "1_1"], "standby": [], "warmup": []}
    status, payload = api.call("POST", "/wait", {"condition": "streams_group_stable", "group": "nope", "timeout": 0.2})
    assert status == 408 and "streams group 'nope' is Stable" in payload["error"]

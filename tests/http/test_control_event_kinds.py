"""Issue 36 over the control endpoint: ``POST /wait`` and ``GET /events?kind=`` refuse a kind,
field or group state no event can have with a 400 naming the closest valid ones, at once,
instead of waiting out the timeout or answering an empty list."""

from __future__ import annotations

import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint

from .test_control_http import Endpoint


@pytest.fixture(scope="module")
def api():
    with FakeCluster(brokers=2, topics={"t": 2}).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        yield Endpoint(control)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"condition": "event", "kind": "broker_stoped"},
            "unknown event kind 'broker_stoped': did you mean 'broker_stopped' or 'broker_started'?",
        ),
        (
            {"condition": "event", "kind": "member_joined", "details": {"grup": "g"}},
            "an event of kind 'member_joined' has no field 'grup' (did you mean 'group'?)",
        ),
        (
            {"condition": "group_state", "group": "g", "state": "stable"},
            "unknown group state 'stable': did you mean 'Stable'?",
        ),
        (
            {"condition": "record_archived", "group": "g", "topic": "t", "partition": 0, "reason": "gap"},
            "unknown archive reason 'gap'; archive reasons: delivery limit, rejected",
        ),
    ],
)
def test_a_wait_for_what_cannot_happen_is_a_400_at_once(api, body, message):
    start = time.monotonic()
    status, payload = api.call("POST", "/wait", {**body, "timeout": 30})
    assert status == 400, payload
    assert message in payload["error"]
    assert time.monotonic() - start < 5  # not the 30 s timeout


def test_a_misspelt_kind_filter_is_a_400_not_an_empty_list(api):
    status, payload = api.call("GET", "/events?kind=broker_started,topic_creatd")
    assert status == 400, payload
    assert "unknown event kind 'topic_creatd': did you mean 'topic_created'" in payload["error"]
    status, payload = api.call("GET", "/events?kind=BrokerStarted")
    assert status == 400 and "did you mean 'broker_started'?" in payload["error"]


def test_valid_kinds_and_broker_fields_still_answer(api):
    kinds = {e["kind"] for e in api.ok("GET", "/events?kind=broker_started&kind=topic_created")["events"]}
    assert kinds == {"broker_started", "topic_created"}
    found = api.ok("POST", "/wait", {"condition": "event", "kind": "broker_started", "details": {"broker": 1}})
    assert found["result"]["broker"] == 1 and found["result"]["kind"] == "broker_started"
    documented = api.ok("GET", "/openapi.json")["paths"]["/events"]["get"]["parameters"]
    assert "unknown one is a 400" in next(p for p in documented if p["name"] == "kind")["description"]

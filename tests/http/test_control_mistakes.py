"""Issue 17: ``POST /faults`` refuses what ``cluster.faults.add`` refuses, with 400 and the same
message (a missing action, a misspelt field with the nearest valid one, an argument the action
ignores, a misspelt error name with only the near names)."""

from __future__ import annotations

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
        ({"api": "Fetch"}, "a fault rule needs an action: give error=NAME (answer with that error), delay=SECONDS"),
        (
            {"apis": "Fetch", "error": "NOT_COORDINATOR"},
            "unknown field(s) 'apis' (did you mean 'api'?); valid fields: api, version, broker",
        ),
        (
            {"api": "Fetch", "action": "drop", "error": "NOT_COORDINATOR"},
            "error= is not used by the action 'drop', which takes no arguments of its own",
        ),
        (
            {"api": "Fetch", "error": "NOT_COORDINATOR", "throttle_ms": 5},
            "throttle_ms= is not used by the action 'error', which takes error=, delay=",
        ),
        (
            {"api": "FindCoordinator", "error": "NOT_COORDINATR"},
            "unknown Kafka error name 'NOT_COORDINATR'. Did you mean NOT_COORDINATOR, NOT_CONTROLLER? "
            "(`fakebroker errors` lists all 138 names)",
        ),
        ({"api": "Fetch", "action": "dorp"}, "unknown action 'dorp' (did you mean 'drop'?); valid actions:"),
        (
            {"api": "Fetch", "broker": 7, "error": "NOT_COORDINATOR"},
            "broker= names no broker of this cluster: [7]; its brokers are [0, 1]",
        ),
    ],
)
def test_a_bad_fault_body_is_a_400_with_the_message(api, body, message):
    status, payload = api.call("POST", "/faults", body)
    assert status == 400, payload
    assert message in payload["error"]
    assert api.ok("GET", "/faults") == {"faults": []}


def test_a_misspelt_error_name_lists_only_the_near_ones(api):
    status, payload = api.call("POST", "/faults", {"api": "Fetch", "error": "NOT_COORDINATR"})
    assert status == 400 and "UNKNOWN_SERVER_ERROR" not in payload["error"]

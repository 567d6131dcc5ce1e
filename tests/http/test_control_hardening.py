"""The control endpoint refuses requests named for another host (DNS rebinding), and
concurrent starts and stops of a broker answer 200 or 409, never 500."""

from __future__ import annotations

import threading

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint
from fakebroker.http.server import host_allowed

from .test_control_http import Endpoint


@pytest.fixture
def api():
    with FakeCluster(brokers=2).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        yield Endpoint(control)


def test_host_headers_other_than_loopback_names_are_refused(api):
    port = api.url.rsplit(":", 1)[1].split("/")[0]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        assert api.call("GET", "/brokers", headers={"Host": host})[0] == 200, host
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{int(port) + 1}", "127.0.0.1", f"10.0.0.1:{port}"):
        status, payload = api.call("GET", "/brokers", headers={"Host": host})
        assert status == 403 and "refused" in payload["error"], host
    assert api.call("GET", "/brokers", token=None, headers={"Host": "evil.example"})[0] == 403  # before the token


def test_host_allowed():
    assert host_allowed("[::1]:8080", 8080) and host_allowed("localhost", 80)
    assert not host_allowed("[::1]:8081", 8080) and not host_allowed("[::2]:8080", 8080)
    assert not host_allowed("localhost.evil:8080", 8080) and not host_allowed("[::1]x", 8080)


def test_start_of_a_running_and_stop_of_a_stopped_broker_answer_409(api):
    status, payload = api.call("POST", "/brokers/1/start")
    assert status == 409 and "already running" in payload["error"]
    assert api.ok("POST", "/brokers/1/stop")["alive"] is False
    status, payload = api.call("POST", "/brokers/1/stop")
    assert status == 409 and "already stopped" in payload["error"]
    assert api.ok("POST", "/brokers/1/restart")["alive"] is True  # restart works from either state
    assert api.ok("POST", "/brokers/1/stop")["alive"] is False
    assert api.ok("POST", "/brokers/1/restart")["alive"] is True


def test_concurrent_starts_over_http_never_answer_500(api):
    for _ in range(3):
        api.ok("POST", "/brokers/1/stop")
        statuses: list[int] = []

        def start() -> None:
            statuses.append(api.call("POST", "/brokers/1/start")[0])

        threads = [threading.Thread(target=start) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert len(statuses) == 4 and set(statuses) <= {200, 409} and 200 in statuses, statuses
        assert api.ok("GET", "/brokers")["brokers"][1]["alive"] is True
        api.ok("POST", "/brokers/1/stop")  # sticks
        assert api.ok("GET", "/brokers")["brokers"][1]["alive"] is False
        api.ok("POST", "/brokers/1/start")

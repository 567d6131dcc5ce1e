"""The console's plumbing over plain HTTP: the token exchanged for a cookie, the page and its
assets guarded, Origin checks, the live stream, the vocabulary, lag and the timeline data.
The page itself is driven in a real browser in test_console_browser.py."""

from __future__ import annotations

import hashlib
import http.client
import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint
from fakebroker.http.console import asset_names

VENDOR = Path(__file__).resolve().parents[2] / "fakebroker" / "http" / "static" / "vendor"


@pytest.fixture
def control():
    with FakeCluster(brokers=2, topics={"t": 2}).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        yield control


def get(control: ControlEndpoint, method: str, path: str, headers: dict[str, str] | None = None, body: Any = None):
    conn = http.client.HTTPConnection("127.0.0.1", control.port, timeout=10)
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, body=data, headers={"Host": f"127.0.0.1:{control.port}", **(headers or {})})
    resp = conn.getresponse()
    out = resp.status, dict(resp.getheaders()), resp.read()
    conn.close()
    return out


def login(control: ControlEndpoint) -> str:
    """The cookie header the console's login sets."""
    status, headers, _ = get(control, "GET", f"/?token={control.token}")
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    return cookie.split(";")[0]


def test_the_token_in_the_url_becomes_a_cookie_and_the_page_loads_with_it(control):
    assert control.console_url == f"{control.url}/?token={control.token}"
    cookie = login(control)
    assert cookie == f"fakebroker-console-{control.port}={control.token}"  # named for the port
    status, headers, body = get(control, "GET", "/", {"Cookie": cookie})
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'<script type="module" src="/console/app.js">' in body
    policy = headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self' 'sha256-" in policy
    status, headers, body = get(control, "GET", "/console/app.js", {"Cookie": cookie})
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    status, _, body = get(control, "GET", "/brokers", {"Cookie": cookie})  # the API on the cookie
    assert status == 200 and len(json.loads(body)["brokers"]) == 2


def test_without_the_token_the_page_assets_and_api_are_refused(control):
    status, _, body = get(control, "GET", "/")
    assert status == 401 and b"needs the endpoint's token" in body and b"console:" in body
    status, _, body = get(control, "GET", "/?token=wrong")
    assert status == 401 and b"not this endpoint's" in body
    assert get(control, "GET", "/console/app.js")[0] == 401
    assert get(control, "GET", "/brokers", {"Cookie": f"fakebroker-console-{control.port}=wrong"})[0] == 401
    # another port's cookie is another endpoint's
    assert get(control, "GET", "/brokers", {"Cookie": f"fakebroker-console-1={control.token}"})[0] == 401
    cookie = login(control)
    assert get(control, "GET", "/console/../server.py", {"Cookie": cookie})[0] == 404
    assert get(control, "GET", "/console/nothing.js", {"Cookie": cookie})[0] == 404
    assert get(control, "POST", "/", {"Cookie": cookie})[0] == 405


def test_other_origins_are_refused_and_a_cookie_post_needs_its_origin(control):
    cookie = login(control)
    own = f"http://127.0.0.1:{control.port}"
    for origin in ("http://evil.example", f"http://127.0.0.1:{control.port + 1}", f"https://127.0.0.1:{control.port}"):
        status, _, body = get(control, "GET", "/brokers", {"Cookie": cookie, "Origin": origin})
        assert status == 403 and b"refused" in body, origin
    status, _, _ = get(control, "GET", "/brokers", {"Cookie": cookie, "Sec-Fetch-Site": "cross-site"})
    assert status == 403
    body = {"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS"}
    status, _, answer = get(control, "POST", "/faults", {"Cookie": cookie}, body)
    assert status == 403 and b"needs an Origin" in answer
    status, _, answer = get(control, "POST", "/faults", {"Cookie": cookie, "Origin": own}, body)
    assert status == 201 and json.loads(answer)["api"] == ["Heartbeat"]
    # a bearer token is not a browser's: no Origin needed
    status, _, _ = get(control, "DELETE", "/faults", {"Authorization": f"Bearer {control.token}"})
    assert status == 200


def test_every_asset_is_served_with_its_type_and_the_vendored_libraries_match_their_manifest(control):
    cookie = login(control)
    names = asset_names()
    assert {"index.html", "app.js", "style.css", "vendor/preact.mjs", "vendor/hooks.mjs", "vendor/htm.mjs"} <= names
    for name in names:
        status, headers, _ = get(control, "GET", f"/console/{name}", {"Cookie": cookie})
        assert status == 200 and headers["x-content-type-options"] == "nosniff", name
    manifest = json.loads((VENDOR / "vendor.json").read_text())
    for package in manifest["packages"]:
        for name, (_, digest) in package["files"].items():
            assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name


def produce(cluster: FakeCluster, partition: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(count):
        producer.produce("t", str(i).encode(), partition=partition)
    assert producer.flush(10) == 0


def read_stream(control: ControlEndpoint, messages: int, path: str = "/stream") -> list[tuple[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", control.port, timeout=10)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{control.port}", "Authorization": f"Bearer {control.token}"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type").startswith("text/event-stream")
    out: list[tuple[str, Any]] = []
    kind = None
    while len(out) < messages:
        line = resp.fp.readline().decode().rstrip("\n")
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            out.append((kind, json.loads(line[len("data: ") :])))
    conn.close()
    return out


def test_the_stream_sends_state_and_new_events(control):
    cluster = control.cluster
    produce(cluster, 0, 3)
    first = read_stream(control, 3)
    assert [k for k, _ in first] == ["hello", "state", "events"]
    state = first[1][1]
    assert {b["id"] for b in state["brokers"]} == {0, 1}
    assert sum(b["leads"] for b in state["brokers"]) == 2
    (topic,) = state["topics"]
    assert topic["name"] == "t" and topic["partitions"][0]["high_watermark"] == 3
    assert [e["kind"] for e in first[2][1]["events"]][:2] == ["broker_started", "broker_started"]
    seq = first[0][1]["seq"]
    cluster.faults.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS")
    later = read_stream(control, 6, f"/stream?since={seq}")
    kinds = [e["kind"] for k, d in later if k == "events" for e in d["events"]]
    assert kinds == ["fault_added"]
    assert any(k == "state" and d["faults"] and d["faults"][0]["api"] == ["Heartbeat"] for k, d in later)


def test_offsets_carry_end_and_lag_and_the_vocabulary_names_what_forms_offer(control):
    cluster = control.cluster
    produce(cluster, 1, 10)
    committer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"})
    committer.commit(offsets=[TopicPartition("t", 1, 4)], asynchronous=False)
    committer.close()
    status, _, body = get(control, "GET", "/groups/g/offsets", {"Authorization": f"Bearer {control.token}"})
    assert status == 200
    assert json.loads(body)["offsets"] == [{"topic": "t", "partition": 1, "offset": 4, "end_offset": 10, "lag": 6}]
    status, _, body = get(control, "GET", "/vocabulary", {"Authorization": f"Bearer {control.token}"})
    words = json.loads(body)
    assert "Heartbeat" in words["apis"] and "REBALANCE_IN_PROGRESS" in words["errors"] and "NONE" not in words["errors"]
    assert "blackhole" in words["actions"] and "fault_fired" in words["event_kinds"]
    assert "coordinator_failover_storm" in words["churn_blocks"]

"""The HTTP control endpoint (fakebroker/http/), called with stdlib urllib against a
cluster run in a thread, and checked against what clients on the Kafka port see."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

import anyio
import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.http import ROUTES, ControlEndpoint, loopback_host, start
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E

from ..raw_client import RawClient

PRODUCE, METADATA, HEARTBEAT, JOIN, SYNC = 0, 3, 12, 11, 14


class Endpoint:
    def __init__(self, control: ControlEndpoint):
        self.url, self.token = control.url, control.token

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = "default",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        if token is not None:
            req.add_header("Authorization", f"Bearer {self.token if token == 'default' else token}")
        try:
            with urllib.request.urlopen(req, timeout=20) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, payload = self.call(method, path, body)
        assert 200 <= status < 300, (method, path, status, payload)
        return payload


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={"t": 3}).run_in_thread() as c:
        yield c


@pytest.fixture
def api(cluster):
    with ControlEndpoint(cluster) as control:
        yield Endpoint(control)


def produce_body(topic="t", partition=0, value=b"v"):
    return {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": rec.build_batch([(None, value)])}]}
        ],
    }


# -- token and OpenAPI ------------------------------------------------------------------------------
def test_every_call_needs_the_token(api):
    for token, headers in (
        (None, {}),
        ("wrong", {}),
        (None, {"Authorization": f"Basic {api.token}"}),
        (api.token + "x", {}),
    ):
        status, payload = api.call("GET", "/faults", token=token, headers=headers)
        assert status == 401 and "token" in payload["error"]
    assert api.call("POST", "/brokers/0/stop", token=None)[0] == 401
    assert api.call("GET", "/no/such/thing", token=None)[0] == 401  # no probing of paths without it
    assert api.call("GET", "/no/such/thing")[0] == 404
    assert api.call("PUT", "/faults")[0] == 405
    assert api.ok("GET", "/faults") == {"faults": []}


def test_openapi_is_open_and_describes_every_route(api):
    status, doc = api.call("GET", "/openapi.json", token=None)
    assert status == 200 and doc["openapi"].startswith("3.")
    listed = {(method.upper(), path) for path, ops in doc["paths"].items() for method in ops}
    table = {(r.method, r.path.replace(":int", "")) for r in ROUTES}
    assert listed == table
    for needed in (
        "POST /faults",
        "GET /faults",
        "DELETE /faults/{id}",
        "POST /brokers/{id}/stop",
        "POST /brokers/{id}/start",
        "POST /clock/advance",
        "GET /events",
        "GET /groups",
        "GET /groups/{id}",
        "POST /groups/{id}/coordinator",
        "POST /topics",
        "POST /topics/{name}/partitions/{p}/leader",
    ):
        assert tuple(needed.split(" ")) in listed
    assert doc["paths"]["/openapi.json"]["get"]["security"] == []
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert (
        "error" in doc["paths"]["/faults"]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]
    )


# -- faults ------------------------------------------------------------------------------------------
def test_fault_crud_and_a_rule_that_fires_on_the_wire(cluster, api):
    status, rule = api.call(
        "POST",
        "/faults",
        {"api": "Produce", "topic": "t", "error": "CORRUPT_MESSAGE", "times": 1, "client_id": "raw-*"},
    )
    assert status == 201 and rule["error"] == "CORRUPT_MESSAGE" and rule["fired"] == 0 and rule["active"]
    other = api.ok("POST", "/faults", {"api": "Fetch", "broker": 2, "delay": 0.5})
    assert [r["id"] for r in api.ok("GET", "/faults")["faults"]] == [rule["id"], other["id"]]

    leader = cluster.leader("t", 0)
    with RawClient(cluster.servers[leader].port, client_id="raw-1") as client:
        first = client.request(PRODUCE, 9, produce_body())
        second = client.request(PRODUCE, 9, produce_body())
    assert first.responses[0].partition_responses[0].error_code == E.CORRUPT_MESSAGE
    assert second.responses[0].partition_responses[0].error_code == 0
    assert cluster.offsets("t", 0)[1] == 1  # the failed produce was not appended
    seen = api.ok("GET", f"/faults/{rule['id']}")
    assert (seen["fired"], seen["matched"], seen["active"]) == (1, 1, False)  # a spent rule stops matching

    removed = api.ok("DELETE", f"/faults/{rule['id']}")
    assert removed["fired"] == 1
    assert api.call("GET", f"/faults/{rule['id']}")[0] == 404
    assert api.call("DELETE", f"/faults/{rule['id']}")[0] == 404
    assert api.ok("DELETE", "/faults") == {"removed": 1}
    assert api.ok("GET", "/faults") == {"faults": []}


def test_confluent_producer_retries_through_errors_set_over_http(cluster, api):
    from confluent_kafka import Producer

    rule = api.ok("POST", "/faults", {"api": "Produce", "error": "NOT_ENOUGH_REPLICAS", "times": 2})
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "enable.idempotence": True,
            "retry.backoff.ms": 50,
            "log_level": 3,
        }
    )
    delivered = []
    producer.produce("t", b"only-once", partition=1, on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(15) == 0
    assert delivered == [None]
    assert [v for _, _, _, v in cluster.records("t", 1)] == [b"only-once"]
    seen = api.ok("GET", f"/faults/{rule['id']}")
    assert seen["fired"] == 2 and not seen["active"]
    fired = api.ok("GET", "/events?kind=fault_fired")["events"]
    assert len(fired) == 2 and all(e["details"]["error"] == "NOT_ENOUGH_REPLICAS" for e in fired)


def test_bad_fault_input_is_a_400_with_the_valid_names(api):
    status, payload = api.call("POST", "/faults", {"api": "Hartbeat", "error": "REBALANCE_IN_PROGRESS"})
    assert status == 400 and "Did you mean Heartbeat" in payload["error"] and "fakebroker apis" in payload["error"]
    status, payload = api.call("POST", "/faults", {"api": "Heartbeat", "error": "REBALANCE_IN_PROGRES"})
    assert status == 400 and "REBALANCE_IN_PROGRESS" in payload["error"]
    status, payload = api.call("POST", "/faults", {"api": "Heartbeat", "action": "explode"})
    assert status == 400 and "valid actions" in payload["error"]
    status, payload = api.call("POST", "/faults", {"api": "Heartbeat", "eror": 27})
    assert status == 400 and "'eror'" in payload["error"] and "error" in payload["error"]
    status, payload = api.call("POST", "/faults", {"api": "Heartbeat", "error": 27, "times": "three"})
    assert status == 400 and "times" in payload["error"]
    status, payload = api.call("POST", "/faults", ["not", "an", "object"])
    assert status == 400
    req = urllib.request.Request(
        api.url + "/faults", data=b"{nope", method="POST", headers={"Authorization": f"Bearer {api.token}"}
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(req, timeout=10)
    assert caught.value.code == 400 and "not JSON" in json.loads(caught.value.read())["error"]
    assert api.ok("GET", "/faults") == {"faults": []}


def test_fault_numbers_out_of_their_domain_are_a_400_naming_what_is_valid(cluster, api):
    # issue 16: these were accepted, then killed the process or closed connections
    for body, message in [
        ({"api": "Produce", "delay": -1}, "delay must be a number of seconds in 0..86400"),
        ({"api": "Produce", "delay": float("nan")}, "delay must be"),  # json.dumps writes NaN
        ({"api": "Produce", "delay": float("inf")}, "delay must be"),
        ({"api": "Produce", "throttle_ms": 2**31}, "throttle_ms must be 0..2147483647"),
        ({"api": "Produce", "action": "blackhole", "duration": -1}, "duration must be"),
        ({"api": "Produce", "error": 6, "probability": 2}, "probability must be"),
        ({"api": "Produce", "error": 6, "times": -1}, "times must be"),
        ({"api": "Produce", "error": 6, "nth": 0}, "nth must be"),
        ({"api": "Produce", "error": 6, "after": -3}, "after must be"),
        ({"api": "Produce", "action": "drop", "error": 6}, "error= is not used by the action"),
    ]:
        status, payload = api.call("POST", "/faults", body)
        assert (status, message in payload["error"]) == (400, True), (body, payload)
    assert api.ok("GET", "/faults") == {"faults": []}
    # the largest throttle Kafka's int32 can carry is answered, and the connection carries on
    api.ok("POST", "/faults", {"api": "Produce", "throttle_ms": 2**31 - 1, "times": 1})
    with RawClient(cluster.servers[cluster.leader("t", 0)].port) as client:
        first = client.request(PRODUCE, 9, produce_body())
        second = client.request(PRODUCE, 9, produce_body())
    assert first.throttle_time_ms == 2**31 - 1 and first.responses[0].partition_responses[0].error_code == 0
    assert second.throttle_time_ms == 0 and second.responses[0].partition_responses[0].error_code == 0


# -- brokers, topics, leaders --------------------------------------------------------------------------
def test_broker_stop_and_start_change_brokers_and_leaders(cluster, api):
    api.ok("POST", "/topics", {"name": "r3", "partitions": 3, "replication_factor": 3})
    led = [p["partition"] for p in api.ok("GET", "/topics/r3")["partitions"] if p["leader"] == 1]
    assert led
    port = cluster.servers[1].port
    assert api.ok("POST", "/brokers/1/stop") == {
        "id": 1,
        "host": "127.0.0.1",
        "port": port,
        "alive": False,
        "rack": None,
    }
    assert {b["id"]: b["alive"] for b in api.ok("GET", "/brokers")["brokers"]} == {0: True, 1: False, 2: True}
    with pytest.raises(ConnectionRefusedError):
        RawClient(port)
    parts = api.ok("GET", "/topics/r3")["partitions"]
    assert all(p["leader"] in (0, 2) for p in parts)
    assert [p["leader"] for p in api.ok("GET", "/topics")["topics"][api_index(api, "t")]["partitions"]].count(-1) == 1

    assert api.ok("POST", "/brokers/1/start")["alive"] is True
    with RawClient(port) as client:  # listening again on the same port as soon as the call returned
        assert len(client.request(METADATA, 12, {"topics": None}).brokers) == 3
    assert api.ok("POST", "/leaders/preferred")["moved"] >= len(led)
    assert [p["partition"] for p in api.ok("GET", "/topics/r3")["partitions"] if p["leader"] == 1] == led
    assert api.call("POST", "/brokers/7/stop")[0] == 404
    kinds = [e["kind"] for e in api.ok("GET", "/events?kind=broker_stopped,broker_started")["events"]]
    assert kinds[-2:] == ["broker_stopped", "broker_started"]


def api_index(api, name):
    return [t["name"] for t in api.ok("GET", "/topics")["topics"]].index(name)


def test_topics_create_grow_move_leader_delete(cluster, api):
    status, topic = api.call("POST", "/topics", {"name": "orders", "partitions": 2, "config": {"retention.ms": 1000}})
    assert status == 201 and len(topic["partitions"]) == 2 and topic["config"] == {"retention.ms": "1000"}
    assert cluster.topics()["orders"] == 2
    assert api.call("POST", "/topics", {"name": "orders", "partitions": 2})[0] == 409
    status, payload = api.call("POST", "/topics", {"name": "bad name!"})
    assert status == 400 and "illegal" in payload["error"]
    assert api.call("POST", "/topics", {"partitions": 2})[0] == 400

    grown = api.ok("POST", "/topics/orders/partitions", {"count": 5})
    assert len(grown["partitions"]) == 5 and cluster.topics()["orders"] == 5
    assert api.call("POST", "/topics/orders/partitions", {"count": 3})[0] == 400
    assert api.call("POST", "/topics/nope/partitions", {"count": 3})[0] == 404

    target = (cluster.leader("orders", 0) + 1) % 3
    moved = api.ok("POST", "/topics/orders/partitions/0/leader", {"broker": target})
    assert moved["leader"] == target and moved["leader_epoch"] == 1 and cluster.leader("orders", 0) == target
    with RawClient(cluster.servers[target].port) as client:
        meta = client.request(METADATA, 12, {"topics": [{"name": "orders"}]})
        assert {p.partition_index: p.leader_id for p in meta.topics[0].partitions}[0] == target
        assert client.request(PRODUCE, 9, produce_body("orders", 0)).responses[0].partition_responses[0].error_code == 0
    assert api.call("POST", "/topics/orders/partitions/9/leader", {"broker": 0})[0] == 404
    assert api.call("POST", "/topics/orders/partitions/0/leader", {"broker": 9})[0] == 404
    assert api.call("POST", "/topics/orders/partitions/0/leader", {})[0] == 400

    assert "orders" in [t["name"] for t in api.ok("GET", "/topics")["topics"]]
    assert api.ok("DELETE", "/topics/orders") == {"deleted": "orders"}
    assert "orders" not in cluster.topics()
    assert api.call("DELETE", "/topics/orders")[0] == 404
    assert api.call("GET", "/topics/orders")[0] == 404


# -- clock and events ---------------------------------------------------------------------------------
def join(client, group, session_ms=45000):
    body = {
        "group_id": group,
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": 60000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    first = client.request(JOIN, 5, body)
    return client.request(JOIN, 5, {**body, "member_id": first.member_id})


def test_clock_advance_expires_a_session_on_a_virtual_cluster():
    with (
        FakeCluster(virtual_time=True).run_in_thread() as cluster,
        ControlEndpoint(cluster, token="secret-token") as control,
    ):
        api = Endpoint(control)
        assert api.token == "secret-token"
        before = api.ok("GET", "/clock")
        assert before["virtual"] is True
        with RawClient(cluster.servers[0].port, client_id="lonely") as client:
            joined = join(client, "g")
            client.request(
                SYNC,
                3,
                {
                    "group_id": "g",
                    "generation_id": joined.generation_id,
                    "member_id": joined.member_id,
                    "assignments": [{"member_id": joined.member_id, "assignment": b""}],
                },
            )
            assert api.ok("GET", "/groups/g")["state"] == "Stable"
            began = time.monotonic()
            after = api.ok("POST", "/clock/advance", {"seconds": 46})
            assert after["now_ms"] == before["now_ms"] + 46000
            view = api.ok("POST", "/wait", {"condition": "group_state", "group": "g", "state": "Empty", "timeout": 2})
            assert time.monotonic() - began < 1.5
            assert view["result"]["members"] == [] and view["result"]["generation"] == 2
            expired = api.ok("GET", "/events?kind=member_expired&group=g")["events"]
            assert [e["client_id"] for e in expired] == ["lonely"]
            assert expired[0]["time_ms"] == before["now_ms"] + 45000
            beat = client.request(HEARTBEAT, 3, {"group_id": "g", "generation_id": 1, "member_id": joined.member_id})
            assert beat.error_code == E.UNKNOWN_MEMBER_ID
        stepped = api.ok("POST", "/clock/advance", {"seconds": 3, "step": 1, "settle": 0.05})
        assert stepped["now_ms"] == after["now_ms"] + 3000
        assert len(api.ok("GET", "/events?kind=clock_advanced")["events"]) == 4
        assert api.call("POST", "/clock/advance", {"seconds": -1})[0] == 400
        assert api.call("POST", "/clock/advance", {})[0] == 400


def test_clock_advance_on_a_real_clock_is_a_conflict(api):
    status, payload = api.call("POST", "/clock/advance", {"seconds": 1})
    assert status == 409 and "real clock" in payload["error"]
    assert api.ok("GET", "/clock")["virtual"] is False


def test_events_filtering_and_polling(cluster, api):
    everything = api.ok("GET", "/events")
    assert [e["seq"] for e in everything["events"]] == list(range(1, len(everything["events"]) + 1))
    mark = everything["next_since"]
    cluster.cut("svc-a", broker=2)
    cluster.heal()
    cluster.move_leader("t", 0, (cluster.leader("t", 0) + 1) % 3)
    fresh = api.ok("GET", f"/events?since={mark}")
    assert [e["kind"] for e in fresh["events"]] == ["network_cut", "network_healed", "leader_moved"]
    assert fresh["next_since"] == mark + 3
    assert api.ok("GET", f"/events?since={fresh['next_since']}") == {"events": [], "next_since": mark + 3, "dropped": 0}
    cuts = api.ok("GET", f"/events?since={mark}&kind=network_cut&kind=network_healed")["events"]
    assert [(e["kind"], e["client_id"], e["broker"]) for e in cuts] == [
        ("network_cut", "svc-a", 2),
        ("network_healed", "svc-a", 2),
    ]
    assert [e["kind"] for e in api.ok("GET", f"/events?since={mark}&client_id=svc-a&broker=2")["events"]] == [
        "network_cut",
        "network_healed",
    ]
    page = api.ok("GET", f"/events?since={mark}&limit=1")
    assert [e["kind"] for e in page["events"]] == ["network_cut"] and page["next_since"] == mark + 1
    assert api.ok("GET", "/events?kind=topic_created")["events"][0]["details"]["topic"] == "t"
    assert api.call("GET", "/events?since=abc")[0] == 400


def test_network_cut_and_heal(cluster, api):
    port = cluster.servers[1].port
    assert api.ok("POST", "/network/cut", {"client_id": "svc-*", "broker": 1}) == {
        "cuts": [{"client_id": "svc-*", "broker": 1}]
    }
    with RawClient(port, client_id="svc-1") as victim, pytest.raises((ConnectionError, OSError)):
        victim.request(METADATA, 12, {"topics": None})
    with RawClient(port, client_id="other") as bystander:
        assert bystander.request(METADATA, 12, {"topics": None}).brokers
    assert api.ok("GET", "/network")["cuts"] == [{"client_id": "svc-*", "broker": 1}]
    assert api.ok("POST", "/network/heal", {"client_id": "svc-*"}) == {"cuts": []}
    with RawClient(port, client_id="svc-1") as healed:
        assert healed.request(METADATA, 12, {"topics": None}).brokers
    assert api.call("POST", "/network/cut", {"broker": 1})[0] == 400


# -- groups -------------------------------------------------------------------------------------------
def test_group_view_coordinator_move_and_offsets(cluster, api):
    from confluent_kafka import Consumer, Producer

    gid = next(f"ctl-{i}" for i in range(100) if cluster.coordinator(f"ctl-{i}") != 0)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
    for i in range(30):
        producer.produce("t", f"v{i}".encode(), partition=i % 3)
    assert producer.flush(10) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": gid,
            "client.id": "ctl-consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "log_level": 3,
        }
    )
    got: list[bytes] = []
    try:
        consumer.subscribe(["t"])
        deadline = time.monotonic() + 15
        while len(got) < 30 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert sorted(got) == sorted(f"v{i}".encode() for i in range(30))
        consumer.commit(asynchronous=False)

        assert api.ok("GET", "/groups")["groups"][0]["group_id"] == gid
        view = api.ok("GET", f"/groups/{gid}")
        assert view["state"] == "Stable" and view["protocol_type"] == "consumer"
        assert [m["client_id"] for m in view["members"]] == ["ctl-consumer"]
        assert sorted(view["members"][0]["assignment"]["t"]) == [0, 1, 2]
        offsets = api.ok("GET", f"/groups/{gid}/offsets")["offsets"]
        assert offsets == [{"topic": "t", "partition": p, "offset": 10, "end_offset": 10, "lag": 0} for p in range(3)]

        old = view["coordinator"]
        target = next(b for b in (0, 1, 2) if b != old)
        assert api.ok("POST", f"/groups/{gid}/coordinator", {"broker": target}) == {"coordinator": target}
        assert cluster.coordinator(gid) == target
        for i in range(30, 45):
            producer.produce("t", f"v{i}".encode(), partition=i % 3)
        assert producer.flush(10) == 0
        deadline = time.monotonic() + 15
        while len(got) < 45 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert sorted(set(got)) == sorted(f"v{i}".encode() for i in range(45))
        consumer.commit(asynchronous=False)  # lands on the new coordinator
        assert api.ok("GET", f"/groups/{gid}/offsets")["offsets"] == [
            {"topic": "t", "partition": p, "offset": 15, "end_offset": 15, "lag": 0} for p in range(3)
        ]
        assert api.ok("GET", f"/groups/{gid}")["coordinator"] == target
        waited = api.ok(
            "POST",
            "/wait",
            {"condition": "committed_offset", "group": gid, "topic": "t", "partition": 0, "at_least": 15, "timeout": 5},
        )
        assert waited["ok"] is True
    finally:
        consumer.close()
    assert api.call("GET", "/groups/nope")[0] == 404
    assert api.call("GET", "/groups/nope/offsets")[0] == 404
    assert api.call("POST", f"/groups/{gid}/coordinator", {"broker": 5})[0] == 404


def test_wait_conditions_and_timeouts(cluster, api):
    mark = api.ok("GET", "/events")["next_since"]
    cluster.cut("late", broker=0)
    found = api.ok(
        "POST",
        "/wait",
        {"condition": "event", "kind": "network_cut", "since": mark, "details": {"client_id": "late"}, "timeout": 2},
    )
    assert found["result"]["client_id"] == "late" and found["result"]["broker"] == 0
    status, payload = api.call(
        "POST", "/wait", {"condition": "group_state", "group": "nope", "members": 2, "timeout": 0.2}
    )
    assert status == 408 and "group 'nope'" in payload["error"]
    status, payload = api.call("POST", "/wait", {"condition": "sunrise"})
    assert status == 400 and "group_state" in payload["error"]
    assert api.call("POST", "/wait", {"condition": "group_state", "grup": "x"})[0] == 400
    assert api.call("POST", "/wait", {"condition": "group_state", "group": "x", "timeout": 10_000})[0] == 400


# -- loopback only ------------------------------------------------------------------------------------
def non_loopback_addresses() -> list[str]:
    """This machine's own IPv4 addresses other than loopback (connecting to one stays on the machine)."""
    found: set[str] = set()
    try:
        found.update(info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET))
    except OSError:
        pass
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
        found.update(a for a in out.split() if ":" not in a)
    except (OSError, subprocess.SubprocessError):
        pass
    usable = []
    for addr in sorted(found):
        if addr.startswith("127."):
            continue
        with socket.socket() as probe:
            try:
                probe.bind((addr, 0))  # only addresses of this machine bind
            except OSError:
                continue
        usable.append(addr)
    return usable


def test_endpoint_is_not_reachable_off_loopback(cluster, api):
    addresses = non_loopback_addresses()
    if not addresses:
        pytest.skip("this machine has no non-loopback address")
    port = int(api.url.rsplit(":", 1)[1])
    for addr in addresses:
        with socket.socket() as control:  # something on that address does answer, so a refusal means something
            control.bind((addr, 0))
            control.listen(1)
            socket.create_connection(control.getsockname(), timeout=5).close()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((addr, port), timeout=5)
    assert api.ok("GET", "/clock")  # still there on loopback


def test_only_loopback_hosts_are_accepted():
    assert loopback_host("localhost") == "127.0.0.1" and loopback_host("::1") == "::1"
    for host in ("0.0.0.0", "192.0.2.2", "::", "example.com"):
        with pytest.raises(ValueError, match="loopback"):
            loopback_host(host)

    async def main():
        async with FakeCluster() as cluster:
            with pytest.raises(ValueError, match="loopback"):
                await start(cluster, host="0.0.0.0")
            port, token = await start(cluster, host="127.0.0.1", token="t0k")
            assert port > 0 and token == "t0k"

    anyio.run(main, backend="trio")


# -- both event loops -----------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_serves_under_trio_and_asyncio(backend):
    with FakeCluster(brokers=2).run_in_thread(backend) as cluster, ControlEndpoint(cluster) as control:
        api = Endpoint(control)
        assert len(api.token) >= 32
        api.ok("POST", "/topics", {"name": "x", "partitions": 2})
        assert api.ok("POST", "/brokers/1/stop")["alive"] is False
        assert api.ok("POST", "/brokers/1/start")["alive"] is True
        assert cluster.topics() == {"x": 2}
        url = control.url
    port = int(url.rsplit(":", 1)[1])
    with pytest.raises(ConnectionRefusedError):  # gone with the cluster
        socket.create_connection(("127.0.0.1", port), timeout=5)


def test_a_consumer_protocol_group_is_shown_with_its_epochs_and_targets(cluster, api):
    gid = "kip848-http"
    with RawClient(cluster.servers[cluster.coordinator(gid)].port, client_id="modern") as client:
        answer = client.request(
            68,
            1,
            {
                "group_id": gid,
                "member_id": "m-1",
                "member_epoch": 0,
                "rebalance_timeout_ms": 30000,
                "subscribed_topic_names": ["t"],
                "topic_partitions": [],
            },
        )
    assert answer.error_code == E.NONE and answer.member_epoch == 2  # a new group starts at 1 (Kafka 4.3+)
    group = api.ok("GET", f"/groups/{gid}")
    assert (group["group_type"], group["state"], group["generation"], group["assignment_epoch"]) == (
        "consumer",
        "Stable",
        2,
        2,
    )
    [member] = group["members"]
    assert (member["member_id"], member["client_id"], member["member_epoch"]) == ("m-1", "modern", 2)
    assert member["assignment"] == member["target"] == {"t": [0, 1, 2]} and member["revoking"] == {}
    assert [g["group_id"] for g in api.ok("GET", "/groups")["groups"]] == [gid]
    events = api.ok("GET", f"/events?group={gid}&kind=group_epoch_bumped")["events"]
    assert [e["details"]["epoch"] for e in events] == [2]


def test_transactions_are_listed_and_their_coordinator_moves_mid_transaction(cluster, api):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "ctl-tx", "log_level": 3})
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(6):
        producer.produce("t", f"v{i}".encode(), partition=i % 3)
    assert producer.flush(10) == 0
    [listed] = api.ok("GET", "/transactions")["transactions"]
    assert {k: listed[k] for k in ("transactional_id", "state", "producer_epoch", "partitions")} == {
        "transactional_id": "ctl-tx",
        "state": "Ongoing",
        "producer_epoch": 0,
        "partitions": ["t-0", "t-1", "t-2"],
    }
    old = listed["coordinator"]
    target = next(b for b in (0, 1, 2) if b != old)
    assert api.ok("POST", "/transactions/ctl-tx/coordinator", {"broker": target}) == {"coordinator": target}
    producer.commit_transaction(10)  # finds the new coordinator and completes there
    view = api.ok("GET", "/transactions/ctl-tx")
    assert (view["state"], view["coordinator"], view["partitions"]) == ("CompleteCommit", target, [])
    assert sorted(v for *_, v in cluster.records("t", committed=True)) == sorted(f"v{i}".encode() for i in range(6))
    assert api.call("GET", "/transactions/nope")[0] == 404
    assert api.call("POST", "/transactions/ctl-tx/coordinator", {"broker": 9})[0] == 404

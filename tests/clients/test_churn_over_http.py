"""``POST /groups/{id}/churn`` on ``fakebroker serve`` (the cluster on the server's own loop: the
blocks run in a worker thread the cluster lends a portal to), with confluent-kafka consumers
reading meanwhile; and the endpoint's answers to requests it cannot run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint

from .confluent_faults_support import close_abandoned

pytestmark = pytest.mark.clients
CONTROL_LINE = re.compile(r"^control: (http://127\.0\.0\.1:\d+) token=(\S+)$")


def call(url: str, token: str, method: str, path: str, body: Any = None, timeout: float = 90) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class Reader:
    """A confluent-kafka consumer on a thread, noting every value it reads."""

    def __init__(self, bootstrap: str, name: str, seen: set[bytes]):
        self.name, self.seen, self.stopping = name, seen, threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "http-churned",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "heartbeat.interval.ms": 200,
                "topic.metadata.refresh.interval.ms": 500,
                "log_level": 0,
            }
        )
        self.consumer.subscribe(["orders"])
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stopping.is_set():
            msg = self.consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                self.seen.add(msg.value())
        self.consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(30)


def test_seeded_churn_over_http_on_fakebroker_serve_while_consumers_read():
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--brokers", "3", "--port", "0", "--control-port", "0"]
        + ["--topic", "orders:4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    readers: list[Reader] = []
    try:
        bootstrap = proc.stdout.readline().strip().removeprefix("bootstrap: ")
        url, token = CONTROL_LINE.match(proc.stdout.readline().strip()).groups()
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # the event lines, unread
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0})

        def produce(values: range) -> None:
            for i in values:
                producer.produce("orders", key=b"k%d" % i, value=b"v%d" % i)
            assert producer.flush(15) == 0

        seen: set[bytes] = set()
        readers = [Reader(bootstrap, name, seen) for name in ("r1", "r2")]
        status, _ = call(
            url,
            token,
            "POST",
            "/wait",
            {"condition": "group_state", "group": "http-churned", "state": "Stable", "members": 2},
        )
        assert status == 200
        produce(range(100))
        status, report = call(
            url, token, "POST", "/groups/http-churned/churn", {"topic": "orders", "seed": 5, "steps": 4}
        )
        assert status == 200, report
        assert report["seed"] == 5 and len(report["actions"]) == 4
        assert sorted(a.split(":")[0] for a in report["actions"]) == [
            "broker_bounce",
            "coordinator_failover_storm",
            "network_cut",
            "partition_growth",
        ]
        produce(range(100, 200))
        deadline = time.monotonic() + 30
        while len(seen) < 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen == {b"v%d" % i for i in range(200)}
        status, group = call(url, token, "GET", "/groups/http-churned")
        assert group["state"] == "Stable" and len(group["members"]) == 2
        # the same seed plans the same blocks again
        status, again = call(
            url, token, "POST", "/groups/http-churned/churn", {"topic": "orders", "seed": 5, "steps": 4}
        )
        assert status == 200 and [a.split(":")[0] for a in again["actions"]] == [
            a.split(":")[0] for a in report["actions"]
        ]
    finally:
        for reader in readers:
            reader.stop()
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


@pytest.fixture
def endpoint():
    with FakeCluster(brokers=1, topics={"orders": 2}).run_in_thread() as cluster:
        with ControlEndpoint(cluster) as control:
            yield cluster, control.url, control.token


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/groups/nobody/churn", {"topic": "orders"}, 404, "no group 'nobody'"),
        ("/groups/g/churn", {"topic": "nope"}, 404, "no topic 'nope'"),
        ("/groups/g/churn", {"topic": "orders", "steps": 0}, 400, "steps must be 1 to 20"),
        ("/groups/g/churn", {"topic": "orders", "settle_timeout": 500}, 400, "settle_timeout must be in (0, 120]"),
        (
            "/groups/g/churn",
            {"topic": "orders", "blocks": ["rolling_restart"]},
            400,
            "over HTTP the blocks are: coordinator_failover_storm, partition_growth, broker_bounce, network_cut",
        ),
        ("/groups/g/churn", {}, 400, "topic"),
    ],
)
def test_churn_requests_it_cannot_run_get_a_message_naming_what_is_valid(endpoint, path, body, status, message):
    cluster, url, token = endpoint
    got, payload = call(url, token, "POST", path, body)
    assert got == status and message in payload["error"], payload


def test_churn_of_a_group_without_members_is_refused(endpoint):
    cluster, url, token = endpoint
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g", "log_level": 0})
    consumer.subscribe(["orders"])
    deadline = time.monotonic() + 15
    while (cluster.group("g") is None or cluster.group("g").state != "Stable") and time.monotonic() < deadline:
        consumer.poll(0.05)
    consumer.close()  # the group stays, Empty
    got, payload = call(url, token, "POST", "/groups/g/churn", {"topic": "orders"})
    assert (got, payload["error"]) == (409, "group 'g' has no members to churn")


def test_serve_stops_at_once_while_a_churn_waits_for_its_group():
    """A churn against a topic the group does not read never settles (up to its 100 s); SIGTERM
    stops serve at once all the same: the blocks' thread is abandoned and its next call fails."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--control-port", "0"]
        + ["--topic", "read:2", "--topic", "unread:1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    consumer = None
    try:
        bootstrap = proc.stdout.readline().strip().removeprefix("bootstrap: ")
        url, token = CONTROL_LINE.match(proc.stdout.readline().strip()).groups()
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "client.id": "c", "log_level": 0})
        consumer.subscribe(["read"])
        deadline = time.monotonic() + 15
        while call(url, token, "GET", "/groups/g")[1].get("state") != "Stable":
            assert time.monotonic() < deadline
            consumer.poll(0.05)
        answers: list[Any] = []
        body = {"topic": "unread", "blocks": ["partition_growth"], "settle_timeout": 100}

        def churn() -> None:
            try:
                answers.append(call(url, token, "POST", "/groups/g/churn", body, timeout=120))
            except OSError as exc:  # the server went away mid-request
                answers.append(exc)

        waiter = threading.Thread(target=churn, daemon=True)
        waiter.start()
        time.sleep(1.5)
        assert answers == []  # still waiting for a settle that cannot come
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert time.monotonic() - stopped_at < 5
        waiter.join(10)
        assert answers and not isinstance(answers[0], tuple), answers  # no answer: the server stopped
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        if consumer is not None:  # unpolled since the churn began, its broker gone
            close_abandoned(consumer)

"""Issue 39: a Kafka Streams 4.4 app, shipped as a jar and run as whole processes, under
fakebroker's seeded churn (``fakebroker.testing.churn``) through
:class:`~fakebroker.testing.ProcessMember` handles: instances restarted one by one, one frozen
(SIGSTOP) past its session timeout while another restarts, the coordinator moved several times,
a broker bounced — and the word counts read back with read_committed stay exact (exactly-once
v2, on a streams group).

``fakebroker.WordCountApp`` (tests/clients/java, in the test jar built once per run) is a plain
``main``: input lines -> words -> ``groupBy`` (a repartition topic) -> ``count`` -> output; its
shutdown hook closes it, leaving the group. The group's session timeout is 6 s and its
heartbeat interval 500 ms, so a frozen instance is removed within seconds and its tasks move.
The same app is then churned over the control endpoint (``POST /groups/{id}/churn``), as a
Java team's JUnit test would, with the streams group's JSON and ``streams_group_stable`` read
over HTTP.
"""

from __future__ import annotations

import collections
import json
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from fakebroker.cluster import FakeCluster  # noqa: E402
from fakebroker.http import ControlEndpoint  # noqa: E402
from fakebroker.testing import ProcessMember  # noqa: E402
from fakebroker.testing.churn import Block, churn, member_stall  # noqa: E402

from .test_java_client import java_client_jar, java_command  # noqa: E402,F401 (fixture)
from .test_streams_groups_java import PARTITIONS, produce, read_counts  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.java]

CONFIG = {
    "group.streams.min.session.timeout.ms": 1000,
    "group.streams.session.timeout.ms": 6000,
    "group.streams.min.heartbeat.interval.ms": 100,
    "group.streams.heartbeat.interval.ms": 500,
}
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def lines(round_: int, n: int) -> list[str]:
    return [" ".join(WORDS[(i * k + round_) % len(WORDS)] for k in range(1 + i % 3)) for i in range(n)]


class Feed:
    """Each call produces the next 40 lines to ``topic`` and adds their words to ``expected``."""

    def __init__(self, cluster: FakeCluster, topic: str):
        self.cluster, self.topic = cluster, topic
        self.expected: collections.Counter[str] = collections.Counter()
        self.rounds = 0

    def __call__(self) -> None:
        self.rounds += 1
        batch = lines(self.rounds, 40)
        self.expected.update(w for line in batch for w in line.split())
        produce(self.cluster, self.topic, batch)


def instances(
    jar: Path, cluster: FakeCluster, app: str, tmp_path: Path, protocol: str = "streams"
) -> list[ProcessMember]:
    def command(name: str) -> list[str]:
        topics = [f"{app}-lines", f"{app}-out"]
        args = [cluster.bootstrap_servers, app, *topics, f"{app}-{name}", str(tmp_path / name), protocol]
        return java_command("-cp", str(jar), "fakebroker.WordCountApp", *args)

    return [
        ProcessMember(name, command(name), client_id=f"{app}-{name}", log=tmp_path / f"{name}.log")
        for name in ("a", "b")
    ]


def http(control: ControlEndpoint, method: str, path: str, body: Any = None, timeout: float = 120) -> Any:
    request = urllib.request.Request(
        control.url + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {control.token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        pytest.fail(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')}")


def frozen_past_the_session(target, rng) -> str:  # a member_stall long enough to be removed
    return member_stall(target, rng, seconds=8.0)


def test_a_streams_app_keeps_exact_counts_through_seeded_churn_of_its_processes(java_client_jar, tmp_path: Path):  # noqa: F811
    app = f"wc-churn-{uuid.uuid4().hex[:6]}"
    source, sink = f"{app}-lines", f"{app}-out"
    with FakeCluster(brokers=3, config=CONFIG).run_in_thread() as cluster:
        cluster.create_topic(source, PARTITIONS)
        cluster.create_topic(sink, PARTITIONS)
        # --8<-- [start:churn]
        members = instances(java_client_jar, cluster, app, tmp_path)  # ProcessMember "a" and "b"
        more = Feed(cluster, source)  # after each block: 40 more lines in, what their words add up to
        try:
            more()
            report = churn(
                cluster,
                members,
                group=app,
                topic=source,
                seed=39,
                steps=4,
                blocks=[
                    "rolling_restart",
                    Block("frozen_past_the_session", frozen_past_the_session),
                    "coordinator_failover_storm",
                    "broker_bounce",
                ],
                between=more,
                settle_timeout=60,
            )
            read_counts(cluster, sink, dict(more.expected), timeout=60)  # read_committed: exact, never past
            assert sorted(a.split(":")[0] for a in report.actions) == [
                "broker_bounce",
                "coordinator_failover_storm",
                "frozen_past_the_session",
                "rolling_restart",
            ], report.actions
            # the frozen instance was removed by its session timeout, and came back
            assert [e for e in cluster.events if e.kind == "member_expired" and e.group == app]
            view = cluster.streams_group(app)
            assert view is not None and view.state == "Stable", view
            assert {m.client_id.split("-StreamThread-")[0] for m in view.members} == {m.client_id for m in members}
        finally:
            for m in members:
                m.stop()
        # --8<-- [end:churn]
        for m in members:
            assert "state RUNNING" in m.output(), m.output()[-3000:]


def test_a_streams_app_churned_over_the_control_endpoint(java_client_jar, tmp_path: Path):  # noqa: F811
    """What a JUnit test does over HTTP: wait for the group, read it, churn it (the cluster-side
    blocks: the coordinator moved, a broker bounced), then count."""
    app = f"wc-http-{uuid.uuid4().hex[:6]}"
    source, sink = f"{app}-lines", f"{app}-out"
    with FakeCluster(brokers=3, config=CONFIG).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        cluster.create_topic(source, PARTITIONS)
        cluster.create_topic(sink, PARTITIONS)
        members = instances(java_client_jar, cluster, app, tmp_path)
        try:
            for m in members:
                m.start()
            first = lines(1, 40)
            produce(cluster, source, first)
            wait = {"condition": "streams_group_stable", "group": app, "members": 2, "timeout": 60}
            assert http(control, "POST", "/wait", wait)["result"]["group_type"] == "streams"
            group = http(control, "GET", f"/groups/{app}")
            assert [(s["subtopology_id"], s["tasks"]) for s in group["subtopologies"]] == [("0", 4), ("1", 4)]
            held = sorted(t for m in group["members"] for t in m["tasks"]["active"])
            assert held == sorted(f"{s}_{p}" for s in "01" for p in range(PARTITIONS)), group
            body = {"topic": source, "seed": 5, "steps": 2, "blocks": ["coordinator_failover_storm", "broker_bounce"]}
            churned = http(control, "POST", f"/groups/{app}/churn", {**body, "settle_timeout": 60})
            assert churned["seed"] == 5 and len(churned["actions"]) == 2, churned
            second = lines(2, 40)
            produce(cluster, source, second)
            counts = collections.Counter(w for line in first + second for w in line.split())
            read_counts(cluster, sink, dict(counts), timeout=60)
            assert http(control, "POST", "/wait", wait)["result"]["state"] == "Stable"
        finally:
            for m in members:
                m.stop()


def test_the_same_app_on_the_classic_protocol_keeps_exact_counts_through_churn(java_client_jar, tmp_path: Path):  # noqa: F811
    """The regression guard of the classic protocol (Kafka Streams' own assignor in the client,
    a classic group on the broker), exactly-once v2: restarts, a short stall, a broker bounce."""
    app = f"wc-classic-{uuid.uuid4().hex[:6]}"
    source, sink = f"{app}-lines", f"{app}-out"
    with FakeCluster(brokers=3).run_in_thread() as cluster:
        cluster.create_topic(source, PARTITIONS)
        cluster.create_topic(sink, PARTITIONS)
        members = instances(java_client_jar, cluster, app, tmp_path, protocol="classic")
        more = Feed(cluster, source)
        try:
            more()
            report = churn(
                cluster,
                members,
                group=app,
                topic=source,
                seed=7,
                steps=3,
                blocks=["rolling_restart", "member_stall", "broker_bounce"],
                between=more,
                settle_timeout=60,
            )
            read_counts(cluster, sink, dict(more.expected), timeout=60)
            assert len(report.actions) == 3, report.actions
            group = cluster.group(app)
            assert group is not None and (group.group_type, group.state) == ("classic", "Stable"), group
        finally:
            for m in members:
                m.stop()

"""Issue 39: a real Kafka Streams 4.4.0 application on a streams group (KIP-1071,
``group.protocol=streams``).

``fakebroker.StreamsGroupScenarios`` (``tests/clients/java``, in the test jar built once per run
by ``java_client_jar``) runs a stateful word count — input -> words -> ``groupBy`` (a repartition
topic) -> ``count`` (the ``counts`` store and its changelog) -> output — as two ``KafkaStreams``
instances in one JVM (their own state dirs and ``application.server`` endpoints, one stream
thread each), started, inspected (``metadataForLocalThreads``) and closed one command at a time.
Records go in and the counts come out through confluent-kafka. The cluster has three brokers and
streams groups enabled, with one standby replica (``group.streams.num.standby.replicas=1``: under
the streams protocol the standby count is the group's, not the client's).

The word count has two subtopologies, so its 4-partition input makes 8 active tasks (0_0..0_3
stateless, 1_0..1_3 stateful) and 4 standby tasks (1_0..1_3, only stateful tasks have standbys).
``FAKEBROKER_JAVA_LOG=debug`` puts the Streams client's log in a failure's message.
"""

from __future__ import annotations

import collections
import struct
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from fakebroker.cluster import FakeCluster  # noqa: E402
from fakebroker.core.groups.streams.model import GroupState  # noqa: E402

from .jvm_driver import JvmDriver  # noqa: E402
from .test_java_client import java_client_jar  # noqa: E402,F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]

CONFIG = {
    "group.coordinator.rebalance.protocols": "classic,consumer,streams",
    "group.streams.num.standby.replicas": "1",
}
PARTITIONS = 4
ACTIVE = {f"{sub}_{p}" for sub in (0, 1) for p in range(PARTITIONS)}
STANDBY = {f"1_{p}" for p in range(PARTITIONS)}  # the stateful subtopology's tasks
PORTS = {"a": 7101, "b": 7102}
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]


class StreamsApp(JvmDriver):
    name = "the Kafka Streams JVM"
    main_class = "fakebroker.StreamsGroupScenarios"
    lifetime = 240
    exit_timeout = 60


def sentences(round_: int, n: int) -> list[str]:
    """``n`` lines of words, different in each round."""
    return [
        " ".join(WORDS[(i * k + round_ * 3 + k) % len(WORDS)] for k in range(1 + (i + round_) % 4)) for i in range(n)
    ]


def produce(cluster: FakeCluster, topic: str, lines: list[str]) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i, line in enumerate(lines):
        producer.produce(topic, key=f"line-{i}".encode(), value=line.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def read_counts(
    cluster: FakeCluster, topic: str, expected: dict[str, int], app: StreamsApp | None = None, timeout: float = 60
) -> dict[str, int]:
    """The output topic read from the start (``read_committed``: records of aborted or open
    transactions are never seen) until each word's latest count is ``expected`` (or ``timeout``);
    the latest counts. Fails if a count ever goes past the expected one."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
        }
    )
    start = confluent_kafka.OFFSET_BEGINNING
    consumer.assign([confluent_kafka.TopicPartition(topic, p, start) for p in range(PARTITIONS)])
    latest: dict[str, int] = {}
    highest: dict[str, int] = collections.defaultdict(int)
    deadline = time.monotonic() + timeout
    try:
        while latest != expected and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                assert msg.error() is None, msg.error()
                word, (count,) = msg.key().decode(), struct.unpack(">q", msg.value())
                latest[word] = count
                highest[word] = max(highest[word], count)
    finally:
        consumer.close()
    if latest != expected:
        diagnostics = app.diagnostics() if app is not None else ""
        pytest.fail(f"counts {sorted(latest.items())} != {sorted(expected.items())}{diagnostics}")
    assert highest == expected  # no count ever went past the true one (nothing processed twice)
    return latest


def wait_tasks(app: StreamsApp, done: Callable[[dict[str, Any]], bool], what: str, timeout: float = 60) -> dict:
    """``tasks`` asked every 250 ms until ``done`` holds of its instances."""
    deadline = time.monotonic() + timeout
    while True:
        instances = app.call("tasks")["instances"]
        if done(instances):
            return instances
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not reached in {timeout} s: {instances}{app.diagnostics()}")
        time.sleep(0.25)


def group_snapshot(cluster: FakeCluster, app: str) -> dict[str, Any]:
    """The streams group as the coordinator holds it: state, epochs, and per member (by its
    ``application.server`` port) its member id, client id, process and assigned tasks as
    ``"<sub>_<partition>"``."""

    def read() -> dict[str, Any]:
        group = cluster.state.groups.streams.groups[app]
        members = {}
        for m in group.members.values():
            assert m.user_endpoint is not None
            members[m.user_endpoint[1]] = {
                "id": m.member_id,
                "client": m.client_id,
                "process": m.process_id,
                "epoch": m.member_epoch,
                "active": {f"{s}_{p}" for s, p in m.assigned.active},
                "standby": {f"{s}_{p}" for s, p in m.assigned.standby},
                "warmup": {f"{s}_{p}" for s, p in m.assigned.warmup},
            }
        return {
            "state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "members": members,
        }

    return cluster.call(read)


def served(instance: dict[str, Any], source: str, repartition: str) -> dict[str, list[str]]:
    """The partitions an instance's tasks serve: its 0_p tasks read ``source``-p, its 1_p tasks
    ``repartition``-p (as ``TopicPartition.toString`` spells them)."""

    def partitions(tasks: list[str]) -> list[str]:
        topics = {"0": source, "1": repartition}
        return sorted(f"{topics[t.split('_')[0]]}-{t.split('_')[1]}" for t in tasks)

    return {"active": partitions(instance["active"]), "standby": partitions(instance["standby"])}


def split_between(instances: dict[str, Any], names: list[str]) -> bool:
    """Every one of ``names`` RUNNING, the active tasks split among them with none twice and none
    missing, each holding some; the standbys all placed, never beside their active."""
    if set(instances) != set(names) or any(instances[n]["state"] != "RUNNING" for n in names):
        return False
    actives = [set(instances[n]["active"]) for n in names]
    standbys = [set(instances[n]["standby"]) for n in names]
    if sum(map(len, actives)) != len(ACTIVE) or set().union(*actives) != ACTIVE or not all(actives):
        return False
    if len(names) == 1:
        return not standbys[0]  # no other process to hold a standby
    return sum(map(len, standbys)) == len(STANDBY) and set().union(*standbys) == STANDBY


def test_a_kafka_streams_word_count_on_a_streams_group_splits_fails_over_and_counts_exactly(
    java_client_jar,  # noqa: F811
    tmp_path: Path,
):
    app_id = f"wordcount-{uuid.uuid4().hex[:6]}"
    source, sink = f"{app_id}-lines", f"{app_id}-counts-out"
    repartition, changelog = f"{app_id}-words-repartition", f"{app_id}-counts-changelog"
    with FakeCluster(brokers=3, config=CONFIG).run_in_thread() as cluster:
        cluster.create_topic(source, PARTITIONS)
        cluster.create_topic(sink, PARTITIONS)
        with StreamsApp(java_client_jar, cluster) as app:
            for name, port in PORTS.items():
                app.call("start", name=name, app=app_id, input=source, output=sink, dir=tmp_path / name, port=port)
            instances = wait_tasks(app, lambda i: split_between(i, ["a", "b"]), "two RUNNING instances sharing tasks")
            for name in ("a", "b"):  # balanced: 4 active each, 2 standbys each, never beside the active
                assert len(instances[name]["active"]) == 4 and len(instances[name]["standby"]) == 2, instances
                assert not set(instances[name]["standby"]) & set(instances[name]["active"]), instances

            # The coordinator's view is the clients' view.
            group = group_snapshot(cluster, app_id)
            assert group["state"] == GroupState.STABLE, group
            assert group["group_epoch"] == group["assignment_epoch"], group
            assert set(group["members"]) == set(PORTS.values())
            for name, port in PORTS.items():
                member = group["members"][port]
                assert member["epoch"] == group["assignment_epoch"]
                assert (member["active"], member["standby"], member["warmup"]) == (
                    set(instances[name]["active"]),
                    set(instances[name]["standby"]),
                    set(),
                ), (name, group, instances)
            assert group["members"][PORTS["a"]]["process"] != group["members"][PORTS["b"]]["process"]

            # ... and what StreamsGroupDescribe answers the Java Admin (describeStreamsGroups).
            described = app.call("describe", app=app_id)
            assert (described["state"], described["group_epoch"], described["topology_epoch"]) == (
                "Stable",
                group["group_epoch"],
                0,
            ), described
            assert described["assignment_epoch"] == group["assignment_epoch"]
            assert described["subtopologies"] == {
                "0": {"sources": [source], "sinks": [repartition], "changelogs": {}, "repartition_sources": {}},
                "1": {
                    "sources": [],
                    "sinks": [],
                    "changelogs": {changelog: PARTITIONS},
                    "repartition_sources": {repartition: PARTITIONS},
                },
            }, described["subtopologies"]
            for name, port in PORTS.items():
                member = described["members"][f"localhost:{port}"]
                assert member["epoch"] == group["assignment_epoch"]
                assert member["active"] == member["target_active"] == instances[name]["active"], described
                assert member["standby"] == member["target_standby"] == instances[name]["standby"], described
                assert member["warmup"] == []

            # Interactive queries: each instance knows which partitions every endpoint serves
            # (the heartbeat's PartitionsByUserEndpoint: source and repartition-source topics).
            def endpoints_are(i: dict[str, Any], names: list[str]) -> bool:
                want = {f"localhost:{PORTS[n]}": served(i[n], source, repartition) for n in names}
                return all(
                    {ep: {"active": v["active"], "standby": v["standby"]} for ep, v in i[n]["endpoints"].items()}
                    == want
                    for n in names
                )

            wait_tasks(app, lambda i: endpoints_are(i, ["a", "b"]), "both endpoints known to both instances", 30)

            # The internal topics: created by the coordinator, with the counts Kafka decides
            # (both follow the 4-partition input) and the configs the client asked for.
            topics = cluster.topics()
            assert (topics[repartition], topics[changelog]) == (PARTITIONS, PARTITIONS), topics
            repartition_view = cluster.describe_topic(repartition)
            changelog_view = cluster.describe_topic(changelog)
            assert repartition_view is not None and changelog_view is not None
            assert repartition_view.config.get("cleanup.policy") == "delete", repartition_view.config
            assert repartition_view.config.get("retention.ms") == "-1", repartition_view.config
            assert changelog_view.config.get("cleanup.policy") == "compact", changelog_view.config
            assert {t for t in topics if t.startswith(app_id)} == {source, sink, repartition, changelog}

            # Round 1, counted by both instances.
            first = sentences(1, 60)
            expected = collections.Counter(w for line in first for w in line.split())
            produce(cluster, source, first)
            read_counts(cluster, sink, dict(expected), app)

            # b leaves: a takes all its tasks, the stateful ones from the standbys it held (with
            # three instances, test_streams_groups_faults_java.py follows each to its standby).
            from_standbys = set(instances["b"]["active"]) & STANDBY
            assert set(instances["a"]["standby"]) == from_standbys, instances
            closed = app.call("close", name="b", timeout=60)
            assert closed["closed"] is True, closed
            instances = wait_tasks(app, lambda i: split_between(i, ["a"]), "a holding every task")
            assert from_standbys <= set(instances["a"]["active"]), instances
            wait_tasks(app, lambda i: endpoints_are(i, ["a"]), "a alone at its endpoint", 30)
            group = group_snapshot(cluster, app_id)
            assert group["state"] == GroupState.STABLE, group
            assert set(group["members"]) == {PORTS["a"]}, group
            assert group["members"][PORTS["a"]]["active"] == ACTIVE, group
            assert group["members"][PORTS["a"]]["standby"] == set(), group

            # Round 2, counted by a alone, on from round 1's counts.
            second = sentences(2, 60)
            expected.update(w for line in second for w in line.split())
            produce(cluster, source, second)
            read_counts(cluster, sink, dict(expected), app)

            assert not app.of_type("uncaught"), app.of_type("uncaught")
            states = [(n["instance"], n["to"]) for n in app.of_type("state")]
            assert ("a", "RUNNING") in states and ("b", "RUNNING") in states and ("b", "NOT_RUNNING") in states

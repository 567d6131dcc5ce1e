"""The Java Admin client's partition admin calls (kafka-clients 4.4.0) against a 3-broker
fakebroker: describeTopics (DescribeTopicPartitions, paged by partitionSizeLimitPerResponse),
electLeaders (a leader moved away by the cluster comes back), describeLogDirs (sizes after
producing), alterPartitionReassignments and listPartitionReassignments.

One JVM per test runs ``fakebroker.AdminScenarios`` (tests/clients/java), driven line by line.
"""

from __future__ import annotations

import base64
import uuid

import pytest

from fakebroker.apis.describe_log_dirs import TOTAL_BYTES, log_dir
from fakebroker.cluster import FakeCluster

from .jvm_driver import JvmDriver
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]

WIDE, WIDE_PARTITIONS = "wide", 30  # replication factor 3
NARROW = "narrow"  # 3 partitions, replication factor 1
ALL_TOPIC_OPERATIONS = "[ALTER, ALTER_CONFIGS, CREATE, DELETE, DESCRIBE, DESCRIBE_CONFIGS, READ, WRITE]"


class Driver(JvmDriver):
    main_class = "fakebroker.AdminScenarios"


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3).run_in_thread() as c:
        c.create_topic(WIDE, partitions=WIDE_PARTITIONS, replication_factor=3)
        c.create_topic(NARROW, partitions=3)
        yield c


@pytest.fixture
def driver(java_client_jar, cluster):  # noqa: F811
    with Driver(java_client_jar, cluster) as d:
        yield d


def expected_partitions(cluster: FakeCluster, topic: str) -> list[dict]:
    view = cluster.describe_topic(topic)
    alive = {b.node_id for b in cluster.brokers() if b.alive}
    return [
        {
            "partition": p.partition,
            "leader": p.leader,
            "replicas": list(p.replicas),
            "isr": [r for r in p.replicas if r in alive],
        }
        for p in view.partitions
    ]


def test_describe_topics_pages_through_the_partitions(cluster, driver):
    rule = cluster.faults.add(api="DescribeTopicPartitions", action="delay", delay=0)
    answer = driver.call("describeTopics", topics=[WIDE, NARROW, "missing"], limit=7)["topics"]
    assert answer["missing"] == {"exception": "UnknownTopicOrPartitionException"}
    for topic in (WIDE, NARROW):
        assert answer[topic]["topicId"] == _java_uuid(cluster.describe_topic(topic).topic_id)
        assert answer[topic]["internal"] is False
        assert answer[topic]["partitions"] == expected_partitions(cluster, topic)
    # 33 partitions, 7 per answer: 5 requests, each resuming at the cursor of the one before
    assert rule.matched == 5, rule.matched
    unpaged = driver.call("describeTopics", topics=[WIDE])["topics"]
    assert unpaged[WIDE]["partitions"] == expected_partitions(cluster, WIDE)
    assert rule.matched == 6


def test_elect_leaders_brings_a_moved_leader_back(cluster, driver):
    preferred = {p.partition: p.replicas[0] for p in cluster.describe_topic(WIDE).partitions}
    for partition in (0, 1):
        away = next(b for b in range(3) if b != preferred[partition])
        cluster.move_leader(WIDE, partition, away)
        assert cluster.leader(WIDE, partition) == away
    before = driver.call("describeTopics", topics=[WIDE])["topics"][WIDE]["partitions"]
    assert [before[p]["leader"] for p in (0, 1)] != [preferred[0], preferred[1]]
    mark = len(cluster.events)
    answer = driver.call("electLeaders", type="PREFERRED", topic=WIDE, partitions=[0, 1, 2])["results"]
    assert answer == {"0": None, "1": None, "2": "ElectionNotNeededException"}
    after = driver.call("describeTopics", topics=[WIDE])["topics"][WIDE]["partitions"]
    assert [after[p]["leader"] for p in (0, 1, 2)] == [preferred[0], preferred[1], preferred[2]]
    moved = [e for e in cluster.events_since(mark) if e.kind == "leader_moved"]
    assert [(e.partition, e.leader, e.reason) for e in moved] == [
        (0, preferred[0], "preferred election"),
        (1, preferred[1], "preferred election"),
    ]
    unclean = driver.call("electLeaders", type="UNCLEAN", topic=WIDE, partitions=[3])["results"]
    assert unclean == {"3": "ElectionNotNeededException"}
    missing = driver.call("electLeaders", topic="missing", partitions=[0])["results"]
    assert missing == {"0": "UnknownTopicOrPartitionException"}


def test_describe_log_dirs_shows_the_sizes_after_producing(cluster, driver):
    assert driver.call("produce", topic=NARROW, n=30, partitions=3)["produced"] == 30
    answer = driver.call("describeLogDirs", brokers=[0, 1, 2])["brokers"]
    state = cluster.state
    for broker in range(3):
        [(path, info)] = answer[str(broker)].items()
        assert path == log_dir(broker)
        assert info["error"] is None
        held = {f"{p.topic}-{p.index}": p.log.size_bytes for p in state.all_partitions() if broker in p.replicas}
        assert {tp: r["size"] for tp, r in info["replicas"].items()} == held
        assert all(r["lag"] == 0 and r["future"] is False for r in info["replicas"].values())
        assert info["total"] == TOTAL_BYTES and info["usable"] == TOTAL_BYTES - sum(held.values())
    narrow = {
        tp: r["size"] for b in answer.values() for d in b.values() for tp, r in d["replicas"].items() if "narrow" in tp
    }
    assert sorted(narrow) == ["narrow-0", "narrow-1", "narrow-2"]
    assert all(size > 0 for size in narrow.values()), narrow


def test_reassignments_move_replicas_and_wait_for_a_stopped_broker(cluster, driver):
    [p0, p1, _] = cluster.describe_topic(NARROW).partitions
    old = p0.replicas[0]
    target = [b for b in range(3) if b != old]
    assert driver.call("reassign", topic=NARROW, partition=0, replicas=target)["exception"] is None
    after = driver.call("describeTopics", topics=[NARROW])["topics"][NARROW]["partitions"][0]
    assert (after["replicas"], after["leader"]) == (target, target[0])
    assert driver.call("listReassignments")["reassignments"] == {}

    errors = {
        "unknown broker": driver.call("reassign", topic=NARROW, partition=1, replicas=[7])["exception"],
        "cancel without one": driver.call("reassign", topic=NARROW, partition=1, replicas="cancel")["exception"],
        "unknown partition": driver.call("reassign", topic=NARROW, partition=9, replicas=[0])["exception"],
    }
    assert errors == {
        "unknown broker": "InvalidReplicaAssignmentException",
        "cancel without one": "NoReassignmentInProgressException",
        "unknown partition": "UnknownTopicOrPartitionException",
    }

    # not broker 0: the Metadata answers name it the controller, where the Admin client sends reassignments
    stopped = next(b for b in (1, 2) if b != p1.replicas[0])
    cluster.stop_broker(stopped)
    assert driver.call("reassign", topic=NARROW, partition=1, replicas=[stopped])["exception"] is None
    listed = driver.call("listReassignments")["reassignments"]
    assert listed == {
        f"{NARROW}-1": {"replicas": [stopped, p1.replicas[0]], "adding": [stopped], "removing": [p1.replicas[0]]}
    }
    cluster.start_broker(stopped)
    cluster.wait_for_sync(lambda c: c.describe_topic(NARROW).partitions[1].replicas == (stopped,))
    assert cluster.leader(NARROW, 1) == stopped
    assert driver.call("listReassignments")["reassignments"] == {}


def _java_uuid(text: str) -> str:
    """A topic id as Java's ``Uuid.toString`` writes it (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(uuid.UUID(text).bytes).decode().rstrip("=")

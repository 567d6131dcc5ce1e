"""The kafkajs admin client's surface against fakebroker: topics (create, list, metadata,
offsets, configs, partitions, record deletion, delete) and groups (list, describe, fetch,
reset and set offsets, delete), each answer checked against what the cluster holds.

One node process runs ``js/admin.js``; ``admin`` calls ``admin[op](...args)``."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.cluster import FakeCluster

from . import test_kafkajs
from .node_driver import NodeDriver

pytestmark = [pytest.mark.clients, pytest.mark.node]

node = test_kafkajs.node  # the session fixture: the node binary, with js/node_modules installed
TOPIC_RESOURCE = 2


class Driver(NodeDriver):
    script = "admin.js"
    name = "admin.js"
    process_timeout = 100

    def admin(self, op: str, *args: Any, timeout: float = 30) -> Any:
        reply = self.call("admin", timeout, op=op, args=list(args))
        assert "failure" not in reply, f"admin.{op} failed: {reply['failure']}{self.diagnostics()}"
        return reply["result"]


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3).run_in_thread() as c:
        yield c
        assert not [e.describe() for e in c.events if e.kind == "handler_error"]


@pytest.fixture
def driver(node, cluster):
    with Driver(node, cluster) as d:
        yield d


def test_topics(cluster, driver):
    created = driver.admin(
        "createTopics",
        {
            "topics": [
                {"topic": "orders", "numPartitions": 3, "replicationFactor": 1},
                {"topic": "audit", "numPartitions": 1, "configEntries": [{"name": "retention.ms", "value": "60000"}]},
            ],
            "waitForLeaders": True,
        },
    )
    assert created is True
    assert driver.admin("createTopics", {"topics": [{"topic": "orders", "numPartitions": 3}]}) is False  # exists
    assert sorted(driver.admin("listTopics")) == ["audit", "orders"]

    metadata = driver.admin("fetchTopicMetadata", {"topics": ["orders"]})["topics"]
    [orders] = metadata
    assert orders["name"] == "orders"
    partitions = sorted(orders["partitions"], key=lambda p: p["partitionId"])
    assert [p["partitionId"] for p in partitions] == [0, 1, 2]
    assert {p["partitionId"]: p["leader"] for p in partitions} == {p: cluster.leader("orders", p) for p in range(3)}
    assert all(p["partitionErrorCode"] == 0 and p["isr"] == [p["leader"]] for p in partitions)

    cluster_info = driver.admin("describeCluster")
    assert sorted(b["nodeId"] for b in cluster_info["brokers"]) == [0, 1, 2]
    assert cluster_info["clusterId"] == cluster.cluster_id
    assert cluster_info["controller"] == cluster.state.controller_id

    driver.call(
        "produce", topic="orders", messages=[{"key": f"k{i}", "value": f"v{i}", "partition": 0} for i in range(5)]
    )
    driver.call("produce", topic="orders", messages=[{"key": "x", "value": "y", "partition": 2}])
    offsets = sorted(driver.admin("fetchTopicOffsets", "orders"), key=lambda o: o["partition"])
    assert [(o["partition"], o["low"], o["high"], o["offset"]) for o in offsets] == [
        (0, "0", "5", "5"),
        (1, "0", "0", "0"),
        (2, "0", "1", "1"),
    ]

    configs = driver.admin(
        "describeConfigs",
        {"resources": [{"type": TOPIC_RESOURCE, "name": "audit", "configNames": ["retention.ms", "cleanup.policy"]}]},
    )["resources"]
    entries = {e["configName"]: e["configValue"] for e in configs[0]["configEntries"]}
    assert entries == {"retention.ms": "60000", "cleanup.policy": "delete"}
    altered = driver.admin(
        "alterConfigs",
        {
            "resources": [
                {
                    "type": TOPIC_RESOURCE,
                    "name": "audit",
                    "configEntries": [{"name": "retention.ms", "value": "120000"}],
                }
            ]
        },
    )
    assert altered["resources"][0]["errorCode"] == 0
    configs = driver.admin(
        "describeConfigs", {"resources": [{"type": TOPIC_RESOURCE, "name": "audit", "configNames": ["retention.ms"]}]}
    )["resources"]
    assert configs[0]["configEntries"][0]["configValue"] == "120000"

    assert driver.admin("createPartitions", {"topicPartitions": [{"topic": "orders", "count": 5}]}) is None
    assert cluster.topics()["orders"] == 5
    assert len(driver.admin("fetchTopicOffsets", "orders")) == 5

    driver.admin("deleteTopicRecords", {"topic": "orders", "partitions": [{"partition": 0, "offset": 3}]})
    low = {o["partition"]: o["low"] for o in driver.admin("fetchTopicOffsets", "orders")}
    assert low[0] == "3"
    assert [k for _, _, k, _ in cluster.records("orders") if k and k.startswith(b"k")] == [b"k3", b"k4"]

    driver.admin("deleteTopics", {"topics": ["audit"]})
    assert sorted(driver.admin("listTopics")) == ["orders"]
    assert "audit" not in cluster.topics()


def test_groups(cluster, driver):
    driver.admin("createTopics", {"topics": [{"topic": "events", "numPartitions": 2}], "waitForLeaders": True})
    messages = [{"key": f"k{i}", "value": f"v{i}", "partition": i % 2} for i in range(6)]
    driver.call("produce", topic="events", messages=messages)
    assert driver.call("consume", groupId="readers", topic="events", n=6, timeout=60)["seen"] == 6

    groups = driver.admin("listGroups")["groups"]
    assert {"groupId": "readers", "protocolType": "consumer"} in groups
    [described] = driver.admin("describeGroups", ["readers"])["groups"]
    assert (described["groupId"], described["state"], described["protocolType"]) == ("readers", "Empty", "consumer")
    assert described["members"] == [] and described["errorCode"] == 0

    def fetched(**options: Any) -> dict[int, str]:
        [topic] = driver.admin("fetchOffsets", {"groupId": "readers", "topics": ["events"], **options})
        assert topic["topic"] == "events"
        return {p["partition"]: p["offset"] for p in topic["partitions"]}

    assert fetched() == {0: "3", 1: "3"}
    assert cluster.committed("readers") == {("events", 0): 3, ("events", 1): 3}

    driver.admin(
        "setOffsets", {"groupId": "readers", "topic": "events", "partitions": [{"partition": 1, "offset": "1"}]}
    )
    assert fetched() == {0: "3", 1: "1"}
    # kafkajs commits the sentinels -2 (earliest) and -1 (latest), which Kafka keeps as they are;
    # fetchOffsets' resolveOffsets turns them into offsets (and commits those)
    driver.admin("resetOffsets", {"groupId": "readers", "topic": "events", "earliest": True})
    assert fetched() == {0: "-2", 1: "-2"}
    assert fetched(resolveOffsets=True) == {0: "0", 1: "0"}
    assert cluster.committed("readers") == {("events", 0): 0, ("events", 1): 0}
    driver.admin("resetOffsets", {"groupId": "readers", "topic": "events"})  # latest
    assert fetched() == {0: "-1", 1: "-1"}
    assert fetched(resolveOffsets=True) == {0: "3", 1: "3"}

    deleted = driver.admin("deleteGroups", ["readers"])
    assert [(d["groupId"], d["errorCode"]) for d in deleted] == [("readers", 0)]
    assert "readers" not in [g["groupId"] for g in driver.admin("listGroups")["groups"]]
    missing = driver.call("admin", op="deleteGroups", args=[["nobody"]])
    assert "failure" in missing  # kafkajs throws for GROUP_ID_NOT_FOUND

"""The Java Admin client's config APIs (kafka-clients 4.4.0) against fakebroker: describeConfigs of
a topic and of a broker (values, sources, synonyms, types, documentation), incrementalAlterConfigs
(SET, DELETE, APPEND, SUBTRACT, validateOnly, refusals) and createTopics' configs. The answers
expected are Kafka 4.4's (tests/conformance/probes_configs.py compares the raw ones with Kafka)."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster

from .jvm_driver import JvmDriver
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]


class Driver(JvmDriver):
    main_class = "fakebroker.ConfigScenarios"


@pytest.fixture
def cluster():
    with FakeCluster(brokers=1, topics={"t": 1}, config={"log.retention.bytes": 1_000_000}).run_in_thread() as c:
        yield c


@pytest.fixture
def driver(java_client_jar, cluster):  # noqa: F811
    with Driver(java_client_jar, cluster) as d:
        yield d


def configs(driver: Driver, kind: str, name: str, keys: str = "") -> dict:
    reply = driver.call("describe", type=kind, name=name, keys=keys)
    assert "exception" not in reply, reply
    return reply["configs"]


def alter(driver: Driver, kind: str, name: str, op: str, key: str, value: str = "", **kw) -> dict:
    """``{"ok": True}`` or ``{"exception": ..., "message": ...}``."""
    reply = driver.call("alter", type=kind, name=name, op=op, key=key, value=value, **kw)
    return {k: v for k, v in reply.items() if k not in ("t", "id", "type", "message")}


def test_describe_and_incrementally_alter_a_topic(driver, cluster):
    reply = driver.call("describe", type="TOPIC", name="t")
    assert reply["count"] == 37
    c = reply["configs"]
    assert c["cleanup.policy"] == {
        "value": "delete",
        "source": "DEFAULT_CONFIG",
        "readOnly": False,
        "sensitive": False,
        "type": "LIST",
        "synonyms": [["log.cleanup.policy", "delete", "DEFAULT_CONFIG"]],
        "documented": True,
    }
    assert (c["retention.bytes"]["value"], c["retention.bytes"]["source"]) == ("1000000", "STATIC_BROKER_CONFIG")
    assert c["retention.bytes"]["synonyms"] == [
        ["log.retention.bytes", "1000000", "STATIC_BROKER_CONFIG"],
        ["log.retention.bytes", "-1", "DEFAULT_CONFIG"],
    ]
    assert (c["min.insync.replicas"]["value"], c["min.insync.replicas"]["source"]) == (
        "1",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    )
    assert (c["compression.zstd.level"]["value"], c["compression.zstd.level"]["type"]) == ("3", "INT")
    assert "message.downconversion.enable" not in c

    assert alter(driver, "TOPIC", "t", "SET", "retention.ms", "3600000") == {"ok": True}
    assert alter(driver, "TOPIC", "t", "APPEND", "cleanup.policy", "compact") == {"ok": True}
    assert alter(driver, "TOPIC", "t", "SET", "segment.ms", "1000", validateOnly="true") == {"ok": True}
    c = configs(driver, "TOPIC", "t", "retention.ms,cleanup.policy,segment.ms")
    assert (c["retention.ms"]["value"], c["retention.ms"]["source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert (c["cleanup.policy"]["value"], c["cleanup.policy"]["source"]) == ("delete,compact", "DYNAMIC_TOPIC_CONFIG")
    assert (c["segment.ms"]["value"], c["segment.ms"]["source"]) == ("604800000", "DEFAULT_CONFIG")
    assert cluster.state.topics["t"].config.get_int("retention.ms") == 3600000

    assert alter(driver, "TOPIC", "t", "SUBTRACT", "cleanup.policy", "delete") == {"ok": True}
    assert alter(driver, "TOPIC", "t", "DELETE", "retention.ms") == {"ok": True}
    c = configs(driver, "TOPIC", "t", "retention.ms,cleanup.policy")
    assert (c["retention.ms"]["value"], c["retention.ms"]["source"]) == ("604800000", "DEFAULT_CONFIG")
    assert (c["cleanup.policy"]["value"], c["cleanup.policy"]["source"]) == ("compact", "DYNAMIC_TOPIC_CONFIG")

    for key, value in (
        ("retention.ms", "soon"),
        ("no.such.config", "1"),
        ("message.downconversion.enable", "true"),
        ("compression.type", "brotli"),
        ("segment.bytes", "10"),
    ):
        assert alter(driver, "TOPIC", "t", "SET", key, value)["exception"] == "InvalidConfigurationException", key
    assert alter(driver, "TOPIC", "t", "APPEND", "retention.ms", "1")["exception"] == "InvalidConfigurationException"
    assert alter(driver, "TOPIC", "nope", "SET", "retention.ms", "1")["exception"] == "UnknownTopicOrPartitionException"
    assert cluster.state.topics["t"].config.overrides == {"cleanup.policy": "compact"}


def test_describe_and_alter_broker_settings(driver, cluster):
    reply = driver.call("describe", type="BROKER", name="0")
    assert reply["count"] == 350
    c = reply["configs"]
    assert (c["log.retention.bytes"]["value"], c["log.retention.bytes"]["source"]) == (
        "1000000",
        "STATIC_BROKER_CONFIG",
    )
    assert (c["message.max.bytes"]["value"], c["message.max.bytes"]["source"]) == ("1048588", "DEFAULT_CONFIG")
    assert (c["node.id"]["value"], c["node.id"]["source"], c["node.id"]["readOnly"]) == (
        "0",
        "STATIC_BROKER_CONFIG",
        True,
    )
    assert (c["ssl.key.password"]["value"], c["ssl.key.password"]["sensitive"]) == (None, True)
    assert c["group.initial.rebalance.delay.ms"]["synonyms"] == [
        ["group.initial.rebalance.delay.ms", "0", "STATIC_BROKER_CONFIG"],
        ["group.initial.rebalance.delay.ms", "3000", "DEFAULT_CONFIG"],
    ]

    assert alter(driver, "BROKER", "", "SET", "message.max.bytes", "2000000") == {"ok": True}
    assert alter(driver, "BROKER", "0", "SET", "log.retention.bytes", "5000") == {"ok": True}
    c = configs(driver, "BROKER", "0", "message.max.bytes,log.retention.bytes")
    assert (c["message.max.bytes"]["value"], c["message.max.bytes"]["source"]) == (
        "2000000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    )
    assert c["log.retention.bytes"]["synonyms"] == [
        ["log.retention.bytes", "5000", "DYNAMIC_BROKER_CONFIG"],
        ["log.retention.bytes", "1000000", "STATIC_BROKER_CONFIG"],
        ["log.retention.bytes", "-1", "DEFAULT_CONFIG"],
    ]
    cluster_default = configs(driver, "BROKER", "")
    assert {k: (v["value"], v["source"]) for k, v in cluster_default.items()} == {
        "message.max.bytes": ("2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        "min.insync.replicas": ("1", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
    }
    t = configs(driver, "TOPIC", "t", "max.message.bytes,retention.bytes")
    assert (t["max.message.bytes"]["value"], t["max.message.bytes"]["source"]) == (
        "2000000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    )
    assert (t["retention.bytes"]["value"], t["retention.bytes"]["source"]) == ("5000", "DYNAMIC_BROKER_CONFIG")
    assert cluster.state.topics["t"].config.get_int("max.message.bytes") == 2000000

    assert alter(driver, "BROKER", "", "SET", "message.max.bytes", "big")["exception"] == "InvalidRequestException"
    assert alter(driver, "BROKER", "", "DELETE", "message.max.bytes") == {"ok": True}
    c = configs(driver, "BROKER", "0", "message.max.bytes")
    assert (c["message.max.bytes"]["value"], c["message.max.bytes"]["source"]) == ("1048588", "DEFAULT_CONFIG")


def test_create_topics_answers_the_configs(driver, cluster):
    reply = driver.call("create", topic="made", configs="retention.ms:1000;compression.type:zstd")
    assert reply["count"] == 37
    c = reply["configs"]
    assert c["retention.ms"] == {"value": "1000", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert c["compression.type"] == {"value": "zstd", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert c["retention.bytes"] == {"value": "1000000", "source": "STATIC_BROKER_CONFIG"}
    assert c["segment.bytes"] == {"value": "1073741824", "source": "DEFAULT_CONFIG"}
    assert cluster.state.topics["made"].config.overrides == {"retention.ms": "1000", "compression.type": "zstd"}
    bad = driver.call("create", topic="bad", configs="cleanup.policy:shred")
    assert bad["exception"] == "InvalidConfigurationException"
    assert "bad" not in cluster.state.topics

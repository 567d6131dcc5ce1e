"""The Java Admin client's config APIs on groups (kafka-clients 4.4.0, ConfigResource.Type.GROUP):
describeConfigs (values, sources, synonyms, types, documentation) and incrementalAlterConfigs
(SET, DELETE, validateOnly, Kafka's refusals with their texts). The driver is
``fakebroker.ConfigScenarios``, the one tests/clients/test_java_configs.py uses for topics."""

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
    with FakeCluster(brokers=1, config={"group.consumer.session.timeout.ms": 50_000}).run_in_thread() as c:
        yield c


@pytest.fixture
def driver(java_client_jar, cluster):  # noqa: F811
    with Driver(java_client_jar, cluster) as d:
        yield d


def alter(driver: Driver, name: str, op: str, key: str, value: str = "", **kw) -> dict:
    """``{"ok": True}`` or ``{"exception": ..., "message": ...}``."""
    reply = driver.call("alter", type="GROUP", name=name, op=op, key=key, value=value, **kw)
    return {k: v for k, v in reply.items() if k not in ("t", "id", "type")}


def test_describe_and_incrementally_alter_a_group(driver, cluster):
    reply = driver.call("describe", type="GROUP", name="no-such-group")
    assert reply["count"] == 21
    c = reply["configs"]
    assert c["share.auto.offset.reset"] == {
        "value": "latest",
        "source": "DEFAULT_CONFIG",
        "readOnly": False,
        "sensitive": False,
        "type": "STRING",
        "synonyms": [["share.auto.offset.reset", "latest", "DEFAULT_CONFIG"]],
        "documented": True,
    }
    assert c["consumer.session.timeout.ms"]["value"] == "50000"
    assert c["consumer.session.timeout.ms"]["source"] == "STATIC_BROKER_CONFIG"
    assert c["consumer.session.timeout.ms"]["synonyms"] == [
        ["group.consumer.session.timeout.ms", "50000", "STATIC_BROKER_CONFIG"],
        ["group.consumer.session.timeout.ms", "45000", "DEFAULT_CONFIG"],
    ]
    assert (c["streams.rack.aware.assignment.tags"]["type"], c["share.delivery.count.limit"]["type"]) == ("LIST", "INT")

    assert alter(driver, "app", "SET", "consumer.session.timeout.ms", "55000") == {"ok": True}
    assert alter(driver, "app", "SET", "share.delivery.count.limit", "3") == {"ok": True}
    assert alter(driver, "app", "SET", "share.isolation.level", "read_committed", validateOnly="true") == {"ok": True}
    c = driver.call("describe", type="GROUP", name="app")["configs"]
    assert (c["consumer.session.timeout.ms"]["value"], c["consumer.session.timeout.ms"]["source"]) == (
        "55000",
        "DYNAMIC_GROUP_CONFIG",
    )
    assert c["consumer.session.timeout.ms"]["synonyms"][0] == [
        "consumer.session.timeout.ms",
        "55000",
        "DYNAMIC_GROUP_CONFIG",
    ]
    assert (c["share.isolation.level"]["value"], c["share.isolation.level"]["source"]) == (
        "read_uncommitted",
        "DEFAULT_CONFIG",
    )
    assert cluster.state.groups.consumer.session_timeout_ms("app") == 55_000

    refused = {
        ("share.record.lock.duration.ms", "10000"): "share.record.lock.duration.ms must be in the range 15000 to "
        "60000 inclusive.",
        ("share.delivery.count.limit", "1"): "Invalid value 1 for configuration share.delivery.count.limit: Value "
        "must be at least 2",
        ("share.partition.max.record.locks", "5000"): "share.partition.max.record.locks must be in the range 100 to "
        "4000 inclusive.",
        ("share.session.timeout.ms", "44000"): "share.session.timeout.ms must be in the range 45000 to 60000 "
        "inclusive.",
        ("share.auto.offset.reset", "none"): "Invalid value none for configuration share.auto.offset.reset: Invalid "
        "value `none` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of "
        "the format 'by_duration:<PnDTnHnMn.nS>'.",
        ("foo", "1"): "Unknown group config name: foo",
    }
    for (key, value), message in refused.items():
        assert alter(driver, "app", "SET", key, value) == {
            "exception": "InvalidConfigurationException",
            "message": message,
        }, key
    assert alter(driver, "app", "APPEND", "share.delivery.count.limit", "4") == {
        "exception": "InvalidConfigurationException",
        "message": "Can't APPEND to key share.delivery.count.limit because its type is not LIST.",
    }
    assert alter(driver, "app", "SET", "share.auto.offset.reset", "by_duration:PT1H") == {"ok": True}
    assert cluster.state.group_configs.stored("app") == {
        "consumer.session.timeout.ms": "55000",
        "share.delivery.count.limit": "3",
        "share.auto.offset.reset": "by_duration:PT1H",
    }
    assert alter(driver, "app", "DELETE", "consumer.session.timeout.ms") == {"ok": True}
    c = driver.call("describe", type="GROUP", name="app", keys="consumer.session.timeout.ms")["configs"]
    assert (c["consumer.session.timeout.ms"]["value"], c["consumer.session.timeout.ms"]["source"]) == (
        "50000",
        "STATIC_BROKER_CONFIG",
    )

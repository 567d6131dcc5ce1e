"""confluent-kafka (librdkafka 2.16)'s config admin calls on groups (ConfigResource of ResourceType
GROUP, sent as resource type 32): describe_configs of a group id that names no group, and
incremental_alter_configs with SET, DELETE, validate_only and Kafka's refusals. The answers
expected are Kafka 4.4's (tests/apis/test_group_config_apis.py; tests/conformance compares the raw
ones with a real Kafka)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients
QUIET = {"log_level": 3}
GROUP = ConfigResource.Type.GROUP
SET, DELETE, APPEND = AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND


@pytest.fixture
def cluster():
    with FakeCluster(brokers=1, config={"group.share.delivery.count.limit": 4}).run_in_thread() as c:
        yield c


@pytest.fixture
def admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **QUIET})


def describe(admin: AdminClient, name: str) -> dict:
    resource = ConfigResource(GROUP, name)
    return admin.describe_configs([resource], request_timeout=10)[resource].result(10)


def alter(admin: AdminClient, name: str, *ops: tuple, validate_only: bool = False):
    entries = [ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops]
    resource = ConfigResource(GROUP, name, incremental_configs=entries)
    return admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(10)


def refusal(admin: AdminClient, name: str, *ops: tuple) -> tuple[str, str]:
    with pytest.raises(KafkaException) as caught:
        alter(admin, name, *ops)
    error = caught.value.args[0]
    return error.name(), error.str()


def seen(entry) -> tuple:
    return entry.value, ConfigSource(entry.source).name


def test_describe_a_group_id_that_names_no_group(admin):
    configs = describe(admin, "no-such-group")
    assert len(configs) == 21
    assert seen(configs["share.auto.offset.reset"]) == ("latest", "DEFAULT_CONFIG")
    assert seen(configs["streams.assignor.name"]) == ("sticky", "DEFAULT_CONFIG")
    assert seen(configs["share.delivery.count.limit"]) == ("4", "STATIC_BROKER_CONFIG")
    assert seen(configs["share.record.lock.duration.ms"]) == ("30000", "DEFAULT_CONFIG")
    assert not any(e.is_read_only or e.is_sensitive for e in configs.values())
    synonyms = configs["share.record.lock.duration.ms"].synonyms
    assert [(s.name, s.value, ConfigSource(s.source).name) for s in synonyms.values()] == [
        ("group.share.record.lock.duration.ms", "30000", "DEFAULT_CONFIG")
    ]


def test_incrementally_alter_a_groups_configs(admin, cluster):
    alter(
        admin, "shares", ("share.auto.offset.reset", SET, "earliest"), ("share.record.lock.duration.ms", SET, "15000")
    )
    alter(admin, "shares", ("share.delivery.count.limit", SET, "2"), validate_only=True)
    configs = describe(admin, "shares")
    assert seen(configs["share.auto.offset.reset"]) == ("earliest", "GROUP_CONFIG")
    assert seen(configs["share.record.lock.duration.ms"]) == ("15000", "GROUP_CONFIG")
    assert seen(configs["share.delivery.count.limit"]) == ("4", "STATIC_BROKER_CONFIG")
    assert cluster.state.group_configs.get("shares", "share.auto.offset.reset") == "earliest"
    assert cluster.state.group_configs.get_int("shares", "share.record.lock.duration.ms") == 15_000

    # SHARE-GROUPS.md §8 vector 9
    refused = {
        ("share.record.lock.duration.ms", "10000"): "share.record.lock.duration.ms must be in the range 15000 to "
        "60000 inclusive.",
        ("share.record.lock.duration.ms", "500"): "Invalid value 500 for configuration share.record.lock.duration.ms: "
        "Value must be at least 1000",
        ("share.delivery.count.limit", "11"): "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
        ("share.heartbeat.interval.ms", "4000"): "share.heartbeat.interval.ms must be in the range 5000 to 15000 "
        "inclusive.",
        ("share.isolation.level", "x"): "Invalid value x for configuration share.isolation.level: String must be "
        "one of: read_committed, read_uncommitted",
        ("foo", "1"): "Unknown group config name: foo",
    }
    for (key, value), message in refused.items():
        assert refusal(admin, "shares", (key, SET, value)) == ("INVALID_CONFIG", message), key
    assert refusal(admin, "shares", ("share.auto.offset.reset", SET, "EARLIEST"))[0] == "INVALID_CONFIG"
    assert refusal(admin, "shares", ("share.delivery.count.limit", APPEND, "3")) == (
        "INVALID_CONFIG",
        "Can't APPEND to key share.delivery.count.limit because its type is not LIST.",
    )
    assert cluster.state.group_configs.stored("shares") == {
        "share.auto.offset.reset": "earliest",
        "share.record.lock.duration.ms": "15000",
    }
    alter(admin, "shares", ("share.auto.offset.reset", DELETE, ""), ("share.record.lock.duration.ms", DELETE, ""))
    assert seen(describe(admin, "shares")["share.auto.offset.reset"]) == ("latest", "DEFAULT_CONFIG")
    assert cluster.state.group_configs.overrides == {}

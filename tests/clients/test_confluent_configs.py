"""confluent-kafka (librdkafka)'s config admin calls against fakebroker: describe_configs of a topic
and of a broker (values, sources, synonyms, flags), incremental_alter_configs with each operation
and its refusals, and create_topics with configs. The answers expected are Kafka 4.4's
(tests/conformance/probes_configs.py compares the raw ones with a real Kafka)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients
QUIET = {"log_level": 3}


@pytest.fixture
def cluster():
    with FakeCluster(brokers=1, topics={"t": 1}, config={"log.retention.bytes": 1_000_000}).run_in_thread() as c:
        yield c


@pytest.fixture
def admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **QUIET})


def describe(admin: AdminClient, kind, name: str) -> dict:
    resource = ConfigResource(kind, name)
    return admin.describe_configs([resource], request_timeout=10)[resource].result(10)


def alter(admin: AdminClient, kind, name: str, *ops: tuple, validate_only: bool = False):
    entries = [ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops]
    resource = ConfigResource(kind, name, incremental_configs=entries)
    return admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(10)


def error_name(exc: KafkaException) -> str:
    return exc.args[0].name()


def seen(entry) -> tuple:
    return entry.value, ConfigSource(entry.source).name


TOPIC, BROKER = ConfigResource.Type.TOPIC, ConfigResource.Type.BROKER
SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET,
    AlterConfigOpType.DELETE,
    AlterConfigOpType.APPEND,
    AlterConfigOpType.SUBTRACT,
)


def test_describe_and_incrementally_alter_a_topic(admin, cluster):
    c = describe(admin, TOPIC, "t")
    assert len(c) == 37 and "message.downconversion.enable" not in c
    assert seen(c["cleanup.policy"]) == ("delete", "DEFAULT_CONFIG")
    assert [(s.name, s.value, ConfigSource(s.source).name) for s in c["cleanup.policy"].synonyms.values()] == [
        ("log.cleanup.policy", "delete", "DEFAULT_CONFIG")
    ]
    assert seen(c["retention.bytes"]) == ("1000000", "STATIC_BROKER_CONFIG")
    assert seen(c["min.insync.replicas"]) == ("1", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert seen(c["max.decompressed.message.bytes"]) == ("2147483639", "DEFAULT_CONFIG")
    assert not c["retention.ms"].is_read_only and not c["retention.ms"].is_sensitive

    alter(admin, TOPIC, "t", ("retention.ms", SET, "3600000"), ("cleanup.policy", APPEND, "compact"))
    alter(admin, TOPIC, "t", ("segment.ms", SET, "1000"), validate_only=True)
    c = describe(admin, TOPIC, "t")
    assert seen(c["retention.ms"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert seen(c["cleanup.policy"]) == ("delete,compact", "DYNAMIC_TOPIC_CONFIG")
    assert seen(c["segment.ms"]) == ("604800000", "DEFAULT_CONFIG")

    alter(admin, TOPIC, "t", ("retention.ms", DELETE, None), ("cleanup.policy", SUBTRACT, "delete"))
    c = describe(admin, TOPIC, "t")
    assert seen(c["retention.ms"]) == ("604800000", "DEFAULT_CONFIG")
    assert seen(c["cleanup.policy"]) == ("compact", "DYNAMIC_TOPIC_CONFIG")

    for key, op, value in (
        ("retention.ms", SET, "soon"),
        ("no.such.config", SET, "1"),
        ("message.downconversion.enable", SET, "true"),
        ("message.timestamp.type", SET, "WallClock"),
        ("retention.ms", APPEND, "1"),
    ):
        with pytest.raises(KafkaException) as refused:
            alter(admin, TOPIC, "t", (key, op, value))
        assert error_name(refused.value) == "INVALID_CONFIG", key
    assert cluster.state.topics["t"].config.overrides == {"cleanup.policy": "compact"}


def test_describe_and_alter_broker_settings(admin, cluster):
    c = describe(admin, BROKER, "0")
    assert len(c) == 350
    assert seen(c["log.retention.bytes"]) == ("1000000", "STATIC_BROKER_CONFIG")
    assert seen(c["auto.create.topics.enable"]) == ("true", "DEFAULT_CONFIG")
    assert c["ssl.keystore.password"].is_sensitive and c["ssl.keystore.password"].value is None

    # librdkafka names a broker resource by its id (the cluster default "" is refused locally)
    alter(admin, BROKER, "0", ("log.retention.bytes", SET, "777"))
    c = describe(admin, BROKER, "0")
    assert seen(c["log.retention.bytes"]) == ("777", "DYNAMIC_BROKER_CONFIG")
    assert [(s.value, ConfigSource(s.source).name) for s in c["log.retention.bytes"].synonyms.values()] == [
        ("-1", "DEFAULT_CONFIG")
    ]  # confluent-kafka keeps one synonym per name (a dict): the last of dynamic, static, default
    assert seen(describe(admin, TOPIC, "t")["retention.bytes"]) == ("777", "DYNAMIC_BROKER_CONFIG")
    assert cluster.state.topics["t"].config.get_int("retention.bytes") == 777
    with pytest.raises(KafkaException) as refused:
        alter(admin, BROKER, "0", ("message.max.bytes", SET, "big"))
    assert error_name(refused.value) == "INVALID_REQUEST"
    alter(admin, BROKER, "0", ("log.retention.bytes", DELETE, None))
    assert seen(describe(admin, BROKER, "0")["log.retention.bytes"]) == ("1000000", "STATIC_BROKER_CONFIG")


def test_create_topics_with_configs(admin, cluster):
    topic = NewTopic("made", 1, 1, config={"retention.ms": "1000", "compression.type": "zstd"})
    admin.create_topics([topic])["made"].result(10)
    assert cluster.state.topics["made"].config.overrides == {"retention.ms": "1000", "compression.type": "zstd"}
    c = describe(admin, TOPIC, "made")
    assert seen(c["compression.type"]) == ("zstd", "DYNAMIC_TOPIC_CONFIG")
    bad = NewTopic("bad", 1, 1, config={"compression.zstd.level": "99"})
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([bad])["bad"].result(10)
    assert error_name(refused.value) == "INVALID_CONFIG"
    assert "bad" not in cluster.state.topics

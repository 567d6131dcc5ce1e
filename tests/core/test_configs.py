"""Topic configs and broker settings in the core: Kafka 4.4's keys and defaults, the sources and
synonyms DescribeConfigs shows, the fall-backs a topic config takes and Kafka's validators."""

from __future__ import annotations

import pytest

from fakebroker.core.configs import (
    BROKER_KEYS,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    SOURCE_TOPIC,
    TOPIC_KEYS,
    TOPIC_SYNONYMS,
    BrokerConfig,
    TopicConfig,
    validate,
)


def entries(config, *args) -> dict:
    return {e.name: e for e in config.describe(*args)}


def test_the_topic_keys_are_kafka_44s():
    assert len(TOPIC_KEYS) == 37
    assert "message.downconversion.enable" not in TOPIC_KEYS
    for key in ("compression.gzip.level", "max.decompressed.message.bytes", "remote.storage.enable"):
        assert key in TOPIC_KEYS
    assert set(TOPIC_SYNONYMS) <= set(TOPIC_KEYS)
    assert all(b in BROKER_KEYS for b in TOPIC_SYNONYMS.values())
    described = TopicConfig(BrokerConfig()).describe()
    assert [e.name for e in described] == sorted(TOPIC_KEYS)
    assert {e.name: e.value for e in described} == {k: v for k, (v, _) in TOPIC_KEYS.items()}


def test_a_fresh_topic_shows_kafkas_sources_and_synonyms():
    e = entries(TopicConfig(BrokerConfig()))
    assert (e["cleanup.policy"].source, e["cleanup.policy"].synonyms) == (
        SOURCE_DEFAULT,
        [("log.cleanup.policy", "delete", SOURCE_DEFAULT)],
    )
    # log.retention.ms is null by default: no synonym listed, the topic default applies
    assert (e["retention.ms"].value, e["retention.ms"].source, e["retention.ms"].synonyms) == (
        "604800000",
        SOURCE_DEFAULT,
        [],
    )
    # a new KRaft cluster has min.insync.replicas=1 as a dynamic cluster default
    assert (e["min.insync.replicas"].source, e["min.insync.replicas"].synonyms) == (
        SOURCE_DYNAMIC_DEFAULT_BROKER,
        [("min.insync.replicas", "1", SOURCE_DYNAMIC_DEFAULT_BROKER), ("min.insync.replicas", "1", SOURCE_DEFAULT)],
    )
    assert e["remote.storage.enable"].synonyms == []


def test_sources_by_priority_override_per_broker_cluster_default_static_default():
    broker = BrokerConfig({"log.retention.bytes": 100})
    topic = TopicConfig(broker)
    assert (topic.get_int("retention.bytes"), entries(topic)["retention.bytes"].source) == (100, SOURCE_STATIC_BROKER)
    broker.dynamic["log.retention.bytes"] = "200"
    assert (topic.get_int("retention.bytes"), entries(topic)["retention.bytes"].source) == (
        200,
        SOURCE_DYNAMIC_DEFAULT_BROKER,
    )
    broker.broker_store(0)["log.retention.bytes"] = "300"
    e = entries(topic, 0)["retention.bytes"]
    assert (topic.get_int("retention.bytes"), e.value, e.source) == (300, "300", SOURCE_DYNAMIC_BROKER)
    assert e.synonyms == [
        ("log.retention.bytes", "300", SOURCE_DYNAMIC_BROKER),
        ("log.retention.bytes", "200", SOURCE_DYNAMIC_DEFAULT_BROKER),
        ("log.retention.bytes", "100", SOURCE_STATIC_BROKER),
        ("log.retention.bytes", "-1", SOURCE_DEFAULT),
    ]
    topic.overrides["retention.bytes"] = "400"
    e = entries(topic, 0)["retention.bytes"]
    assert (topic.get_int("retention.bytes"), e.source, e.synonyms[0]) == (
        400,
        SOURCE_TOPIC,
        ("retention.bytes", "400", SOURCE_TOPIC),
    )
    assert len(e.synonyms) == 5


def test_retention_falls_back_to_minutes_and_hours_as_kafka_converts_them():
    assert TopicConfig(BrokerConfig({"log.retention.hours": 2})).get_int("retention.ms") == 7_200_000
    assert TopicConfig(BrokerConfig({"log.retention.minutes": 3})).get_int("retention.ms") == 180_000
    both = BrokerConfig({"log.retention.ms": 5, "log.retention.hours": 2})
    assert TopicConfig(both).get_int("retention.ms") == 5
    assert TopicConfig(BrokerConfig({"log.roll.hours": 1})).get_int("segment.ms") == 3_600_000


def test_the_accessors_the_broker_reads_stay():
    broker = BrokerConfig({"auto.create.topics.enable": False, "num.partitions": 3})
    assert broker.get_bool("auto.create.topics.enable") is False
    assert broker.get_int("num.partitions") == 3
    assert broker.get_int("group.initial.rebalance.delay.ms") == 0  # test-friendly
    assert broker.get("log.retention.ms") == ""  # Kafka's default is null
    topic = TopicConfig(broker, {"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime"})
    assert topic.get("cleanup.policy") == "compact" and topic.get("message.timestamp.type") == "LogAppendTime"
    assert topic.get_int("max.message.bytes") == 1048588
    assert topic.get_int("message.timestamp.after.max.ms") == 3_600_000


def test_broker_description_shows_every_key_with_flags():
    broker = BrokerConfig({"num.partitions": 4})
    e = entries(broker, 0, {"node.id": "0"})
    assert len(e) == len(BROKER_KEYS) == 350
    assert (e["num.partitions"].value, e["num.partitions"].source) == ("4", SOURCE_STATIC_BROKER)
    assert (e["node.id"].value, e["node.id"].source, e["node.id"].read_only) == ("0", SOURCE_STATIC_BROKER, True)
    assert (e["ssl.key.password"].value, e["ssl.key.password"].is_sensitive, e["ssl.key.password"].synonyms) == (
        None,
        True,
        [],
    )
    assert e["group.initial.rebalance.delay.ms"].synonyms == [
        ("group.initial.rebalance.delay.ms", "0", SOURCE_STATIC_BROKER),
        ("group.initial.rebalance.delay.ms", "3000", SOURCE_DEFAULT),
    ]
    assert e["log.retention.ms"].value is None and e["log.retention.ms"].synonyms == []


def test_the_cluster_default_lists_only_dynamic_defaults_an_unknown_one_as_sensitive():
    broker = BrokerConfig()
    broker.dynamic["no.such.setting"] = "x"
    broker.dynamic["message.max.bytes"] = "5"
    e = entries(broker, None)
    assert sorted(e) == ["message.max.bytes", "min.insync.replicas", "no.such.setting"]
    assert (e["message.max.bytes"].value, e["message.max.bytes"].source) == ("5", SOURCE_DYNAMIC_DEFAULT_BROKER)
    unknown = e["no.such.setting"]
    assert (unknown.value, unknown.is_sensitive, unknown.read_only, unknown.type) == (None, True, True, 0)


@pytest.mark.parametrize(
    "name, value",
    [
        ("no.such.config", "1"),
        ("message.downconversion.enable", "true"),
        ("retention.ms", "soon"),
        ("retention.ms", "-2"),
        ("segment.bytes", "1000"),
        ("segment.bytes", "99999999999"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("cleanup.policy", "shred"),
        ("cleanup.policy", "delete,shred"),
        ("compression.type", "LZ4"),
        ("compression.zstd.level", "23"),
        ("compression.gzip.level", "10"),
        ("message.timestamp.type", "createtime"),
        ("preallocate", "yes"),
        ("min.insync.replicas", "0"),
        ("leader.replication.throttled.replicas", "0-1"),
    ],
)
def test_kafkas_validators_refuse(name, value):
    assert validate(name, value, topic=True)


@pytest.mark.parametrize(
    "name, value",
    [
        ("retention.ms", "-1"),
        ("retention.ms", " 1000 "),
        ("retention.bytes", "-5"),
        ("cleanup.policy", "compact,delete"),
        ("cleanup.policy", ""),
        ("compression.type", "zstd"),
        ("compression.gzip.level", "-1"),
        ("preallocate", "TRUE"),
        ("min.cleanable.dirty.ratio", "0.1"),
        ("leader.replication.throttled.replicas", "*"),
        ("follower.replication.throttled.replicas", "0:1,1:2"),
        ("remote.storage.enable", "false"),
    ],
)
def test_kafkas_validators_accept(name, value):
    assert validate(name, value, topic=True) is None


def test_broker_settings_are_validated_by_their_type_and_the_topic_synonyms_range():
    assert validate("message.max.bytes", "big", topic=False)
    assert validate("log.cleanup.policy", "shred", topic=False)
    assert validate("log.segment.bytes", "10", topic=False)
    assert validate("num.partitions", "0", topic=False)
    assert validate("log.cleaner.threads", "2", topic=False) is None
    assert validate("retention.ms", "1", topic=False)  # a topic key, not a broker setting


def test_internal_topics_get_kafkas_overrides():
    from fakebroker.core.configs import offsets_topic_configs, transaction_topic_configs

    broker = BrokerConfig({"transaction.state.log.min.isr": 1})
    assert offsets_topic_configs(broker) == {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": "104857600",
    }
    assert transaction_topic_configs(broker) == {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "min.insync.replicas": "1",
        "segment.bytes": "104857600",
        "unclean.leader.election.enable": "false",
    }


def test_topic_configs_checked_together_as_kafka_does():
    from fakebroker.core.configs import validate_topic

    broker = BrokerConfig()
    assert "Tiered Storage" in validate_topic({"remote.storage.enable": "true"}, broker)
    assert validate_topic({"remote.storage.enable": "false"}, broker) is None
    assert "conflict" in validate_topic({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, broker)
    assert validate_topic({"min.compaction.lag.ms": "10"}, broker) is None
    assert validate("compression.gzip.level", "0", topic=True)
    assert validate("max.decompressed.message.bytes", "-1", topic=True)
    assert validate("max.decompressed.message.bytes", "10", topic=True) is None
    assert validate("remote.copy.lag.ms", "-5", topic=True)

"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44) and CreateTopics' configs
through the handlers, with the answers Kafka 4.4 gives (tests/conformance/probes_configs.py)."""

from __future__ import annotations

import pytest

from fakebroker.core.configs import (
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    SOURCE_TOPIC,
)
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import FIRST_PORT, HOST, call, cluster

DESCRIBE, ALTER, INCREMENTAL, CREATE_TOPICS = 32, 33, 44, 19
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def describe(state, *resources, version=4, synonyms=True, docs=False, broker=0):
    response, _ = call(
        state,
        DESCRIBE,
        version,
        broker=broker,
        resources=[{"resource_type": t, "resource_name": n, "configuration_keys": keys} for t, n, keys in resources],
        include_synonyms=synonyms,
        include_documentation=docs,
    )
    return response.results


def configs(result) -> dict:
    return {c.name: c for c in result.configs}


def incremental(state, kind, name, *ops, validate_only=False, broker=0):
    response, _ = call(
        state,
        INCREMENTAL,
        1,
        broker=broker,
        validate_only=validate_only,
        resources=[
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
            }
        ],
    )
    [answer] = response.responses
    return answer


def alter(state, kind, name, configs, validate_only=False):
    response, _ = call(
        state,
        ALTER,
        2,
        validate_only=validate_only,
        resources=[
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ],
    )
    [answer] = response.responses
    return answer


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_a_topic_every_key_with_synonyms_and_documentation(version):
    state = cluster(1, {"log.retention.bytes": 10})
    state.create_topic("t", 1, configs={"retention.ms": "1000"})
    [result] = describe(state, (TOPIC, "t", None), version=version, docs=True)
    assert (result.error_code, result.error_message) == (E.NONE, "")
    c = configs(result)
    assert len(c) == 37
    assert (c["retention.ms"].value, c["retention.ms"].config_source) == ("1000", SOURCE_TOPIC)
    assert [(s.name, s.value, s.source) for s in c["retention.bytes"].synonyms] == [
        ("log.retention.bytes", "10", SOURCE_STATIC_BROKER),
        ("log.retention.bytes", "-1", SOURCE_DEFAULT),
    ]
    if version >= 3:
        assert c["retention.ms"].config_type == 5  # LONG
        assert "retention.ms" in c["retention.ms"].documentation
    [plain] = describe(state, (TOPIC, "t", ["retention.ms"]), version=version, synonyms=False)
    assert [(c.name, c.synonyms) for c in plain.configs] == [("retention.ms", [])]


def test_describe_errors_as_kafka():
    state = cluster(2)
    unknown, empty, other, bad_type = describe(
        state, (TOPIC, "nope", None), (TOPIC, "", None), (BROKER, "1", None), (99, "x", None)
    )
    assert (unknown.error_code, unknown.error_message) == (E.UNKNOWN_TOPIC_OR_PARTITION, "")
    assert empty.error_code == E.INVALID_TOPIC_EXCEPTION
    assert other.error_code == E.INVALID_REQUEST  # broker 1's settings are asked of broker 1
    assert bad_type.error_code == E.INVALID_REQUEST
    [own] = describe(state, (BROKER, "1", None), broker=1)
    assert configs(own)["listeners"].value == f"PLAINTEXT://{HOST}:{FIRST_PORT + 1}"


def test_broker_settings_per_broker_and_cluster_default():
    state = cluster(1)
    assert incremental(state, BROKER, "", ("message.max.bytes", SET, "2000")).error_code == E.NONE
    assert incremental(state, BROKER, "0", ("message.max.bytes", SET, "3000")).error_code == E.NONE
    own, default = describe(state, (BROKER, "0", ["message.max.bytes"]), (BROKER, "", None))
    entry = configs(own)["message.max.bytes"]
    assert (entry.value, entry.config_source) == ("3000", SOURCE_DYNAMIC_BROKER)
    assert [(s.value, s.source) for s in entry.synonyms] == [
        ("3000", SOURCE_DYNAMIC_BROKER),
        ("2000", SOURCE_DYNAMIC_DEFAULT_BROKER),
        ("1048588", SOURCE_DEFAULT),
    ]
    assert sorted(configs(default)) == ["message.max.bytes", "min.insync.replicas"]
    state.create_topic("t", 1)
    assert state.topics["t"].config.get_int("max.message.bytes") == 3000
    # a bad value of a broker setting is INVALID_REQUEST; an unknown one is kept
    assert incremental(state, BROKER, "", ("message.max.bytes", SET, "big")).error_code == E.INVALID_REQUEST
    assert incremental(state, BROKER, "", ("no.such.setting", SET, "1")).error_code == E.NONE
    assert incremental(state, BROKER, "7", ("message.max.bytes", SET, "1")).error_code == E.INVALID_REQUEST
    # AlterConfigs replaces the whole cluster default
    assert alter(state, BROKER, "", {"log.retention.bytes": "5"}).error_code == E.NONE
    assert state.config.dynamic == {"log.retention.bytes": "5"}


def test_incremental_operations_and_refusals():
    state = cluster(1)
    topic = state.create_topic("t", 1)
    assert incremental(state, TOPIC, "t", ("cleanup.policy", APPEND, "compact")).error_code == E.NONE
    assert incremental(state, TOPIC, "t", ("cleanup.policy", APPEND, "compact")).error_code == E.NONE
    assert topic.config.overrides == {"cleanup.policy": "delete,compact"}
    assert incremental(state, TOPIC, "t", ("cleanup.policy", SUBTRACT, "delete")).error_code == E.NONE
    assert topic.config.overrides == {"cleanup.policy": "compact"}
    assert incremental(state, TOPIC, "t", ("no.such.config", DELETE, None)).error_code == E.NONE
    refused = {
        "null SET": ([("retention.ms", SET, None)], E.INVALID_REQUEST),
        "same key twice": ([("retention.ms", SET, "1"), ("retention.ms", SET, "2")], E.INVALID_REQUEST),
        "APPEND non-list": ([("retention.ms", APPEND, "1")], E.INVALID_CONFIG),
        "removed key": ([("message.downconversion.enable", SET, "true")], E.INVALID_CONFIG),
        "unknown op": ([("retention.ms", 9, "1")], E.UNKNOWN_SERVER_ERROR),
    }
    for what, (ops, code) in refused.items():
        assert incremental(state, TOPIC, "t", *ops).error_code == code, what
    assert topic.config.overrides == {"cleanup.policy": "compact"}
    assert incremental(state, TOPIC, "t", ("cleanup.policy", DELETE, "")).error_code == E.NONE
    [result] = describe(state, (TOPIC, "t", ["cleanup.policy"]))
    assert (result.configs[0].value, result.configs[0].config_source) == ("delete", SOURCE_DEFAULT)


def test_alter_configs_null_value_and_logger():
    state = cluster(1)
    state.create_topic("t", 1, configs={"retention.ms": "5"})
    assert alter(state, TOPIC, "t", {"retention.ms": None}).error_code == E.INVALID_REQUEST
    assert alter(state, TOPIC, "t", {"segment.ms": "10"}, validate_only=True).error_code == E.NONE
    assert state.topics["t"].config.overrides == {"retention.ms": "5"}
    assert alter(state, BROKER_LOGGER, "0", {"root": "INFO"}).error_code == E.INVALID_REQUEST


def test_broker_loggers():
    state = cluster(1)
    assert incremental(state, BROKER_LOGGER, "0", ("root", SET, "DEBUG")).error_code == E.NONE
    assert incremental(state, BROKER_LOGGER, "0", ("root", SET, "LOUD")).error_code == E.INVALID_CONFIG
    assert incremental(state, BROKER_LOGGER, "0", ("root", SET, "info")).error_code == E.INVALID_CONFIG
    assert incremental(state, BROKER_LOGGER, "0", ("kafka.server", SET, "INFO")).error_code == E.INVALID_CONFIG
    assert incremental(state, BROKER_LOGGER, "0", ("root", APPEND, "INFO")).error_code == E.INVALID_REQUEST
    assert incremental(state, BROKER_LOGGER, "0", ("root", DELETE, None)).error_code == E.INVALID_REQUEST
    [result] = describe(state, (BROKER_LOGGER, "0", None), docs=False)
    assert [(c.name, c.value, c.config_source, c.documentation) for c in result.configs] == [("root", "DEBUG", 6, "")]


@pytest.mark.parametrize("version", [5, 6, 7])
def test_create_topics_answers_every_config_with_its_source(version):
    state = cluster(1, {"log.retention.bytes": 10})
    topic = {
        "name": "t",
        "num_partitions": 1,
        "replication_factor": 1,
        "assignments": [],
        "configs": [{"name": "retention.ms", "value": "7"}],
    }
    response, _ = call(state, CREATE_TOPICS, version, topics=[topic], timeout_ms=1000, validate_only=False)
    c = {x.name: (x.value, x.config_source) for x in response.topics[0].configs}
    assert len(c) == 37
    assert c["retention.ms"] == ("7", SOURCE_TOPIC)
    assert c["retention.bytes"] == ("10", SOURCE_STATIC_BROKER)
    assert c["min.insync.replicas"] == ("1", SOURCE_DYNAMIC_DEFAULT_BROKER)
    topic.update(name="u", configs=[{"name": "retention.ms", "value": None}])
    response, _ = call(state, CREATE_TOPICS, version, topics=[topic], timeout_ms=1000, validate_only=False)
    assert (response.topics[0].error_code, response.topics[0].configs) == (E.INVALID_CONFIG, [])

"""Limits a user can run into at start: a topic's partition count above what one CreateTopics may
create (10000), and a broker setting out of the range Kafka's ConfigDef declares for it
(``socket.request.max.bytes`` ``atLeast(1)``, ``group.share.max.size`` ``between(1, 1000)``). Each is
refused before anything starts, with one line naming the valid range: a usage error (exit 2) on the
command line, ClusterUsageError from ``FakeCluster(...)``, never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from fakebroker.cli import main
from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.core.configs import (
    BROKER_KEYS,
    FAKEBROKER_STATIC,
    RANGES,
    TOPIC_KEYS,
    start_setting_error,
    validate,
)
from fakebroker.core.kafka_config_ranges import BROKER_RANGES, TOPIC_RANGES

LIMITS = {"INT": (-(2**31), 2**31 - 1), "SHORT": (-(2**15), 2**15 - 1), "LONG": (-(2**63), 2**63 - 1)}


def serve(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["serve", "--port", "0", *args])
    assert "Traceback" not in result.output, result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, " ".join(result.output.split())


def test_a_topic_above_the_partition_limit_is_a_usage_error():
    code, output = serve("--topic", "t:10001")
    assert code == 2
    assert "Invalid value for '--topic': 't:10001': the partition count must be a whole number in 1..10000" in output


def test_the_partition_limit_in_the_config_file_is_a_usage_error(tmp_path):
    path = tmp_path / "serve.toml"
    path.write_text("[topics.t]\npartitions = 10001\n")
    code, output = serve("--config", str(path))
    assert code == 2
    assert "topic 't': partitions must be a whole number in 1..10000, not 10001" in output
    path.write_text('[settings]\n"num.partitions" = 10001\n[topics.t]\nreplication_factor = 1\n')
    code, output = serve("--config", str(path))
    assert code == 2
    assert "its partition count would be num.partitions, 10001" in output


def test_fake_cluster_refuses_a_topic_above_the_partition_limit_at_construction():
    refused = r"topic 't': partitions must be a whole number in 1\.\.10000, not 10001"
    with pytest.raises(ClusterUsageError, match=refused):
        FakeCluster(topics={"t": 10001})
    with pytest.raises(ClusterUsageError, match=r"partitions in 1\.\.10000 or a smaller num\.partitions"):
        FakeCluster(topics={"t": {"replication_factor": 1}}, config={"num.partitions": 10001})
    FakeCluster(topics={"t": 10000})  # the limit itself is fine (nothing starts here)


def test_a_broker_setting_below_kafkas_range_is_a_usage_error():
    code, output = serve("--set", "socket.request.max.bytes=-5")
    assert code == 2
    assert (
        "Invalid value for '--set': Invalid value -5 for configuration socket.request.max.bytes: "
        "Value must be at least 1" in output
    )


def test_a_broker_setting_above_kafkas_range_names_both_ends():
    code, output = serve("--set", "group.share.max.size=5000")
    assert code == 2
    assert "Value must be no more than 1000 (valid: 1..1000)" in output


def test_the_config_file_checks_the_range_too(tmp_path):
    path = tmp_path / "serve.toml"
    path.write_text('[settings]\n"transaction.max.timeout.ms" = 0\n')
    code, output = serve("--config", str(path))
    assert code == 2
    assert "settings: Invalid value 0 for configuration transaction.max.timeout.ms: Value must be at least 1" in output


def test_fake_cluster_config_goes_through_the_same_range_check():
    with pytest.raises(ClusterUsageError, match="socket.request.max.bytes: Value must be at least 1"):
        FakeCluster(config={"socket.request.max.bytes": -5})
    with pytest.raises(ClusterUsageError, match="group.max.size: Value must be at least 1"):
        FakeCluster(config={"group.max.size": "0"})
    FakeCluster(config={"socket.request.max.bytes": 1, "group.max.size": 1})


# the numeric broker settings fakebroker reads, each with the validator Kafka 4.4 declares for it
USED = {
    "socket.request.max.bytes": (1, None),
    "connections.max.idle.ms": None,  # Kafka declares no range
    "default.replication.factor": None,
    "num.partitions": (1, None),
    "group.min.session.timeout.ms": None,
    "group.max.session.timeout.ms": None,
    "group.initial.rebalance.delay.ms": None,
    "group.max.size": (1, None),
    "group.consumer.session.timeout.ms": (1, None),
    "group.consumer.heartbeat.interval.ms": (1, None),
    "group.consumer.max.size": (1, None),
    "offset.metadata.max.bytes": None,
    "offsets.retention.minutes": (1, None),
    "offsets.retention.check.interval.ms": (1, None),
    "offsets.topic.num.partitions": (1, None),
    "offsets.topic.replication.factor": (1, None),
    "offsets.topic.segment.bytes": (1, None),
    "producer.id.expiration.ms": (1, None),
    "transaction.max.timeout.ms": (1, None),
    "transactional.id.expiration.ms": (1, None),
    "transaction.state.log.num.partitions": (1, None),
    "transaction.state.log.replication.factor": (1, None),
    "transaction.state.log.min.isr": (1, None),
    "transaction.state.log.segment.bytes": (1, None),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (1, None),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (1, None),
    "log.retention.check.interval.ms": (1, None),
    "message.max.bytes": (0, None),
    "max.decompressed.message.bytes": (1, 2147483639),
    "log.segment.bytes": (1048576, None),
    "log.roll.hours": (1, None),
    "log.roll.jitter.hours": (0, None),
}


@pytest.mark.parametrize("name", sorted(USED))
def test_the_settings_the_broker_reads_have_kafkas_ranges(name):
    assert BROKER_RANGES.get(name) == USED[name]
    if USED[name] is None:
        return
    low, high = USED[name]
    kind_low, kind_high = LIMITS[BROKER_KEYS[name][1]]
    if low > kind_low:
        reason = start_setting_error(name, str(low - 1))
        assert reason == f"Invalid value {low - 1} for configuration {name}: Value must be at least {low}" + (
            f" (valid: {low}..{high})" if high is not None else ""
        )
        assert validate(name, str(low - 1), topic=False)  # AlterConfigs refuses it as Kafka does
    assert start_setting_error(name, str(low)) is None
    if high is not None and high < kind_high:
        assert "Value must be no more than" in start_setting_error(name, str(high + 1))
        assert start_setting_error(name, str(high)) is None


def test_every_default_and_test_friendly_value_is_in_range():
    for name, (default, *_) in BROKER_KEYS.items():
        assert default is None or validate(name, default, topic=False) is None, name
    for name, (default, _) in TOPIC_KEYS.items():
        assert default is None or validate(name, default, topic=True) is None, name
    for name, value in FAKEBROKER_STATIC.items():
        assert validate(name, value, topic=False) is None, name


def test_a_name_both_kinds_have_has_one_range():
    for name in set(BROKER_RANGES) & set(TOPIC_RANGES):
        assert BROKER_RANGES[name] == TOPIC_RANGES[name] == RANGES[name], name
    assert set(BROKER_RANGES) <= set(BROKER_KEYS) and set(TOPIC_RANGES) <= set(TOPIC_KEYS)


def test_the_group_protocol_settings_take_kafkas_choices():
    assert start_setting_error("group.consumer.migration.policy", "Upgrade") is None
    assert start_setting_error("group.consumer.migration.policy", "sideways") == (
        "Invalid value sideways for configuration group.consumer.migration.policy: "
        "String must be one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL"
    )
    assert start_setting_error("group.coordinator.rebalance.protocols", "classic,consumer") is None
    assert start_setting_error("group.coordinator.rebalance.protocols", "classic,foo") == (
        "Invalid value foo for configuration group.coordinator.rebalance.protocols: "
        "String must be one of: consumer, classic, share, streams"
    )

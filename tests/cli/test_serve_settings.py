"""Broker settings and topic configs given at start are checked: a bad value of a setting Kafka
knows stops ``serve`` with its reason (Kafka does not start either), and an unknown setting is
refused with the nearest known names (Kafka would start and only log it; here a misspelling must
not pass silently); a topic config is checked as CreateTopics checks it, in the TOML file and in
``FakeCluster.create_topic``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fakebroker.cli.config import ConfigError, load, setting_error
from fakebroker.cluster import FakeCluster
from fakebroker.core.cluster_state import TopicError
from fakebroker.protocol.error_codes import ErrorCode


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", *args], capture_output=True, text=True, timeout=30
    )


def test_a_bad_set_value_stops_serve_with_kafkas_reason():
    result = serve("--set", "num.partitions=zero")
    assert result.returncode == 2
    assert "broker setting num.partitions must be of type INT (a whole number" in result.stderr
    result = serve("--set", "num.partitions=0")
    assert result.returncode == 2
    assert "Invalid value 0 for configuration num.partitions: Value must be at least 1" in result.stderr


def test_setting_error_knows_kafkas_settings_only():
    assert setting_error("log.cleanup.policy", "shred")
    assert setting_error("message.max.bytes", "1e6")
    assert setting_error("log.retention.ms", "60000") is None
    assert "unknown broker setting 'some.plugin.setting'" in setting_error("some.plugin.setting", "anything")


def test_toml_settings_and_topic_configs_are_checked(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[settings]\n"log.retention.ms" = 60000\n[topics.orders]\npartitions = 2\n')
    assert load(path).settings == {"log.retention.ms": "60000"}
    path.write_text('[settings]\n"auto.create.topics.enable" = "maybe"\n')
    with pytest.raises(ConfigError, match="auto.create.topics.enable"):
        load(path)
    path.write_text('[topics.orders]\nconfig = { "cleanup.policy" = "shred" }\n')
    with pytest.raises(ConfigError, match=r"topics\.orders: .*cleanup\.policy"):
        load(path)
    path.write_text('[topics.orders]\nconfig = { "message.downconversion.enable" = true }\n')
    with pytest.raises(ConfigError, match="unknown topic config 'message.downconversion.enable'"):
        load(path)


def test_create_topic_checks_configs_as_create_topics_does():
    with FakeCluster(brokers=1).run_in_thread() as cluster:
        with pytest.raises(TopicError) as refused:
            cluster.create_topic("t", 1, config={"retention.ms": "soon"})
        assert refused.value.code == ErrorCode.INVALID_CONFIG
        assert "t" not in cluster.topics()
        cluster.create_topic("t", 1, config={"retention.ms": 1000, "preallocate": True})
        assert cluster.describe_topic("t").config == {"retention.ms": "1000", "preallocate": "true"}


def test_the_toml_file_bounds_the_event_log(tmp_path):
    config = tmp_path / "serve.toml"
    config.write_text("event_log_size = 50\n")
    assert load(config).event_log_size == 50
    config.write_text("event_log_size = 0\n")
    with pytest.raises(ConfigError, match="event_log_size"):
        load(config)

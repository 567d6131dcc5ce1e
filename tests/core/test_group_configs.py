"""Group configs in the pure core: what a coordinator reads (the group's value, else the broker's,
else the default; clamped into the broker's bounds), Java's ways of reading values, and KIP-848
consumer groups honouring consumer.session.timeout.ms and consumer.heartbeat.interval.ms."""

from __future__ import annotations

import pytest

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.group_config_checks import KEYS, duration_ns, java_hash_order, java_trim, valid_reset
from fakebroker.core.group_configs import GROUP_CONFIGS, GroupConfigs
from fakebroker.protocol.error_codes import ErrorCode as E

from .test_consumer_groups import G, beat


def test_a_value_comes_from_the_group_then_the_broker_then_the_default():
    configs = GroupConfigs(BrokerConfig({"group.share.record.lock.duration.ms": 20_000}))
    assert configs.get_int("g", "share.record.lock.duration.ms") == 20_000  # the broker's
    assert configs.get("g", "share.auto.offset.reset") == "latest"  # no broker synonym: the default
    assert configs.get("g", "streams.assignor.name") == "sticky"  # the broker's first assignor
    assert configs.get_bool("g", "share.renew.acknowledge.enable") is True
    configs.replace("g", {"share.record.lock.duration.ms": " 45000 ", "share.renew.acknowledge.enable": "FALSE"})
    assert configs.get_int("g", "share.record.lock.duration.ms") == 45_000
    assert configs.get_bool("g", "share.renew.acknowledge.enable") is False
    assert configs.get_int("other", "share.record.lock.duration.ms") == 20_000
    # a stored value the broker's bounds no longer allow is clamped into them (GroupConfig.evaluate)
    configs.replace("g", {"share.record.lock.duration.ms": "90000", "share.delivery.count.limit": "1"})
    assert configs.get_int("g", "share.record.lock.duration.ms") == 60_000
    assert configs.get_int("g", "share.delivery.count.limit") == 2
    configs.replace("g", {})
    assert "g" not in configs.overrides
    with pytest.raises(KeyError):
        configs.get("g", "no.such.config")


def test_the_table_is_kafkas():
    assert len(KEYS) == 27 and len(GROUP_CONFIGS) == 27
    public = [k.name for k in KEYS if not k.internal]
    assert len(public) == 21
    assert sum(n.startswith("consumer.") for n in public) == 3
    assert sum(n.startswith("share.") for n in public) == 9
    assert sum(n.startswith("streams.") for n in public) == 7
    assert sum(n.startswith("errors.") for n in public) == 2
    broker = BrokerConfig()
    for key in KEYS:  # every broker synonym of a described config is a broker setting fakebroker has
        if key.synonym and not key.internal:
            assert broker.value(key.synonym) is not None, key.synonym


def test_java_reading():
    assert java_trim("\t x \u00a0") == "x \u00a0"  # String.trim drops only up to U+0020
    assert java_hash_order(["foo", "bar"]) == ["bar", "foo"]
    assert java_hash_order(["a", "b", "c"]) == ["a", "b", "c"]
    assert duration_ns("PT1H") == 3_600_000_000_000
    assert duration_ns("P1DT2H3M4.5S") == ((26 * 60 + 3) * 60 + 4) * 10**9 + 5 * 10**8
    assert duration_ns("pt1.s") == 10**9
    assert duration_ns("PT-0.5S") == -(5 * 10**8)
    for bad in ("PT", "P", "P1DT", "1H", "PT9223372036854775808S", "P1W"):
        assert duration_ns(bad) is None, bad
    assert [valid_reset(v) for v in ("earliest", "latest", "by_duration:P1D", "by_duration:-PT0S")] == [True] * 4
    for bad in ("none", "Latest", "by_duration", "by_duration:", "by_duration:-PT1S", "by_duration:PT-1S"):
        assert not valid_reset(bad), bad


def cluster(**config) -> ClusterState:
    state = ClusterState("c", BrokerConfig(config))
    state.broker_started(0, "127.0.0.1", 9092, 0)
    state.create_topic("orders", 6)
    state.groups.consumer.group_configs = state.group_configs  # as the group service wires it
    return state


def test_a_consumer_group_heartbeats_and_expires_by_its_own_configs():
    state = cluster()
    state.group_configs.replace(G, {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "7000"})
    joined = beat(state, 0, "a", 0)
    assert (joined.error, joined.heartbeat_interval_ms) == (E.NONE, 7000)
    other = beat(state, 0, "b", 0, group="plain")
    assert other.heartbeat_interval_ms == 5000  # the broker's, for a group without configs
    state.tick(49_999)
    assert "a" in state.groups.consumer.groups[G].members
    assert "b" not in state.groups.consumer.groups["plain"].members  # 45 s, the broker's
    state.tick(50_000)
    assert "a" not in state.groups.consumer.groups[G].members
    [expired] = [e for e in state.events if e.kind == "member_expired" and e.group == G]
    assert expired.session_timeout_ms == 50_000


def test_a_changed_group_config_counts_from_the_next_heartbeat():
    state = cluster()
    joined = beat(state, 0, "a", 0)
    assert joined.heartbeat_interval_ms == 5000
    state.group_configs.replace(G, {"consumer.heartbeat.interval.ms": "9000", "consumer.session.timeout.ms": "60000"})
    again = beat(state, 1_000, "a", joined.member_epoch)
    assert again.heartbeat_interval_ms == 9000
    state.tick(46_000)
    assert "a" in state.groups.consumer.groups[G].members  # the session now runs 60 s from t=1 s
    state.tick(61_000)
    assert "a" not in state.groups.consumer.groups[G].members


def test_without_group_configs_the_coordinator_reads_the_broker():
    state = ClusterState("c", BrokerConfig({"group.consumer.heartbeat.interval.ms": 6000}))
    state.broker_started(0, "127.0.0.1", 9092, 0)
    state.create_topic("orders", 6)
    state.groups.consumer.group_configs = None
    state.group_configs.replace(G, {"consumer.heartbeat.interval.ms": "7000"})
    assert beat(state, 0, "a", 0).heartbeat_interval_ms == 6000

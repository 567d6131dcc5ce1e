"""Issue 17: every mistake a newcomer makes with ``FakeCluster`` raises ClusterUsageError (a
ValueError) naming what is valid, at construction where it can, instead of a KeyError, an
IndexError, or silence."""

from __future__ import annotations

import re

import pytest

from fakebroker.apis.find_coordinator import FIRST_FIND_UNAVAILABLE
from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.core.configs import FAKEBROKER_KEYS
from fakebroker.core.topics import TopicError
from fakebroker.faults import FaultRuleError


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"brokers": 0}, "brokers must be a whole number >= 1, not 0"),
        ({"port": 70000}, "port must be a whole number in 0..65535 (0 = free ports), not 70000"),
        ({"brokers": 3, "port": 65534}, "3 brokers from port 65534 would need ports up to 65536"),
        (
            {"config": {"auto.create.topics.enabel": False}},
            "unknown broker setting 'auto.create.topics.enabel': did you mean 'auto.create.topics.enable'?",
        ),
        (
            {"config": {"num.partitions": "abc"}},
            "broker setting num.partitions must be of type INT (a whole number in -2147483648..2147483647), not 'abc'",
        ),
        ({"config": {"num.partitions": True}}, "broker setting num.partitions must be of type INT"),
        (
            {"config": {"auto.create.topics.enable": "maybe"}},
            "broker setting auto.create.topics.enable must be of type BOOLEAN (true or false), not 'maybe'",
        ),
        (
            {"config": {"num.partitions": 0}},
            "Invalid value 0 for configuration num.partitions: Value must be at least 1",
        ),
        (
            {"config": {"frobnicate": 1}},
            "unknown broker setting 'frobnicate': Kafka 4.4 has no such broker setting; the docs list them all",
        ),
        ({"topics": {"orders": 0}}, "topic 'orders': partitions must be a whole number >= 1, not 0"),
        (
            {"topics": {"orders": {"partitions": "6"}}},
            "topic 'orders': partitions must be a whole number >= 1, not '6'",
        ),
        (
            {"topics": {"bad topic!": 1}},
            "bad topic name 'bad topic!': a topic name is 1..249 characters of ASCII letters, digits, '.', '_' and '-'",
        ),
        (
            {"brokers": 2, "topics": {"orders": {"partitions": 6, "replication_factor": 3}}},
            "topic 'orders': replication_factor 3 needs 3 brokers and the cluster has 2; "
            "give a replication_factor in 1..2, or more brokers",
        ),
        (
            {"topics": {"orders": {"partitons": 6}}},
            "topic 'orders': unknown key(s) 'partitons'; valid keys: partitions",
        ),
        (
            {"topics": {"orders": {"config": {"retention.msec": 1}}}},
            "topic 'orders': unknown topic config 'retention.msec': did you mean 'retention.ms'",
        ),
    ],
)
def test_bad_arguments_are_refused_at_construction(kwargs, message):
    with pytest.raises(ClusterUsageError, match=re.escape(message)):
        FakeCluster(**kwargs)


def test_fakebrokers_own_setting_is_known():
    assert FIRST_FIND_UNAVAILABLE in FAKEBROKER_KEYS
    FakeCluster(config={FIRST_FIND_UNAVAILABLE: True})
    with pytest.raises(ClusterUsageError, match="must be of type BOOLEAN"):
        FakeCluster(config={FIRST_FIND_UNAVAILABLE: "sometimes"})


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster(brokers=3, topics={"orders": 6}).run_in_thread() as running:
        yield running


BROKERS = r"the cluster's brokers are \[0, 1, 2\]"
PARTITIONS = r"topic 'orders' has no partition 9; its partitions are 0\.\.5"
TOPICS = r"no topic 'ordres'; topics: 'orders'"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c: c.stop_broker(7), rf"no broker 7; {BROKERS}"),
        (lambda c: c.start_broker(7), rf"no broker 7; {BROKERS}"),
        (lambda c: c.restart_broker(7), rf"no broker 7; {BROKERS}"),
        (lambda c: c.move_leader("orders", 9, 1), PARTITIONS),
        (lambda c: c.move_leader("ordres", 0, 1), TOPICS),
        (lambda c: c.move_leader("orders", 0, 7), rf"no broker 7 to be the leader; {BROKERS}"),
        (lambda c: c.move_coordinator("g", 7), rf"no broker 7 to be the coordinator; {BROKERS}"),
        (lambda c: c.move_transaction_coordinator("t", 7), rf"no broker 7 to be the coordinator; {BROKERS}"),
        (lambda c: c.leader("orders", 9), PARTITIONS),
        (lambda c: c.leader("ordres", 0), TOPICS),
        (lambda c: c.offsets("orders", 9), PARTITIONS),
        (lambda c: c.offsets("ordres", 0), TOPICS),
        (lambda c: c.records("ordres"), TOPICS),
        (lambda c: c.records("orders", 9), PARTITIONS),
        (lambda c: c.records("ordres", committed=True), TOPICS),
        (lambda c: c.records("orders", 9, committed=True), PARTITIONS),
        (lambda c: c.delete_topic("ordres"), TOPICS),
        (lambda c: c.add_partitions("ordres", 8), TOPICS),
        (lambda c: c.cut("svc", 7), rf"no broker 7; {BROKERS}"),
        (lambda c: c.heal("svc", 7), rf"no broker 7; {BROKERS}"),
    ],
)
def test_calls_naming_what_the_cluster_lacks_say_what_it_has(cluster, call, message):
    with pytest.raises(ClusterUsageError, match=message):
        call(cluster)


def test_a_fault_rule_on_a_broker_the_cluster_lacks_is_refused(cluster):
    with pytest.raises(
        FaultRuleError, match=r"broker= names no broker of this cluster: \[7\]; its brokers are \[0, 1, 2\]"
    ):
        cluster.faults.add(api="Fetch", broker=[0, 7], error="NOT_LEADER_OR_FOLLOWER")
    assert cluster.faults.list() == []


def test_the_pytest_marker_surfaces_the_same_error(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fakebroker(config={"auto.create.topics.enabel": False})
        def test_misspelt_setting(fakebroker):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ClusterUsageError: unknown broker setting 'auto.create.topics.enabel': "
            "did you mean 'auto.create.topics.enable'?"
        ]
    )


def test_create_topic_names_the_nearest_config_and_the_type(cluster):
    with pytest.raises(
        TopicError, match=r"INVALID_CONFIG: unknown topic config 'retention\.msec': did you mean 'retention\.ms'"
    ):
        cluster.create_topic("fresh", 1, config={"retention.msec": 1})
    with pytest.raises(
        TopicError, match=r"topic config retention\.ms must be of type LONG \(a whole number\), not 'soon'"
    ):
        cluster.create_topic("fresh", 1, config={"retention.ms": "soon"})
    assert "fresh" not in cluster.topics()


def test_a_misspelt_quota_key_and_a_non_number_advance_are_named():
    with FakeCluster(virtual_time=True).run_in_thread() as cluster:
        with pytest.raises(
            ValueError, match=r"Invalid configuration key producer_byte_rat; did you mean 'producer_byte_rate'"
        ):
            cluster.set_quota({"client-id": "svc"}, "producer_byte_rat", 1024)
        with pytest.raises(ValueError, match=r"seconds must be a number of seconds >= 0, not '5'"):
            cluster.clock.advance("5")

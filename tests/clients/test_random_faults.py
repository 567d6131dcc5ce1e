"""Random fault rules against an idempotent confluent-kafka producer: whatever fails, every
record the client saw acknowledged is in the log exactly once, and the broker never fails
a request of its own accord (no handler errors)."""

from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka import Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakebroker.cluster import FakeCluster

pytestmark = pytest.mark.clients
RECORDS = 120

# Errors Kafka itself answers Produce/Metadata with and clients retry. (NETWORK_EXCEPTION is
# a client-side code no broker sends; librdkafka fails the batch on it, which hypothesis found.)
RETRIABLE = [
    "NOT_LEADER_OR_FOLLOWER",
    "REQUEST_TIMED_OUT",
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "UNKNOWN_TOPIC_OR_PARTITION",
    "LEADER_NOT_AVAILABLE",
]

rules = st.lists(
    st.fixed_dictionaries(
        {
            "api": st.sampled_from(["Produce", "Metadata", "InitProducerId", "ApiVersions"]),
            "action": st.sampled_from(["error", "replace_error", "drop", "drop_after", "delay", "throttle"]),
            "partition": st.none() | st.integers(0, 2),
            "times": st.integers(1, 3),
            "after": st.integers(0, 3),
        },
        optional={"error": st.sampled_from(RETRIABLE)},
    ),
    max_size=4,
)


def rule_args(raw: dict) -> dict:
    args = {"api": raw["api"], "action": raw["action"], "times": raw["times"], "after": raw["after"]}
    if raw["action"] in ("error", "replace_error"):
        args["error"] = raw.get("error", "REQUEST_TIMED_OUT")
    if raw["action"] == "delay":
        args["delay"] = 0.05
    if raw["action"] == "throttle":
        args["throttle_ms"] = 20
    if raw["partition"] is not None and raw["api"] == "Produce":
        args.update(topic="t", partition=raw["partition"])
    return args


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(raw_rules=rules)
def test_acknowledged_records_survive_any_faults(raw_rules):
    with FakeCluster(brokers=2).run_in_thread() as cluster:
        cluster.create_topic("t", 3, replication_factor=2)
        for raw in raw_rules:
            cluster.faults.add(**rule_args(raw))
        acked: list[bytes] = []

        def delivered(err, msg):
            if err is None:
                acked.append(msg.value())

        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "enable.idempotence": True,
                "linger.ms": 2,
                "retry.backoff.ms": 20,
                "retry.backoff.max.ms": 100,
                "reconnect.backoff.max.ms": 200,
                "message.timeout.ms": 15000,
                "log_level": 0,
            }
        )
        for i in range(RECORDS):
            producer.produce("t", value=b"%d" % i, partition=i % 3, on_delivery=delivered)
        assert producer.flush(30) == 0
        stored = Counter(v for _, _, _, v in cluster.records("t"))
        assert len(acked) == RECORDS  # every error here is retriable and every rule runs out
        assert [v for v in acked if stored[v] != 1] == []  # acknowledged: there, once
        assert [v for v, n in stored.items() if n != 1] == []  # idempotence: no duplicates at all
        assert not [e.describe() for e in cluster.events if e.kind == "handler_error"]

"""``cluster.wait_for_sync(condition, poll=...)``: the one way to wait on the broker while a
real client keeps polling; and ``eventually`` raising programming errors at once."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer
from kafka import KafkaConsumer

from fakebroker import FakeCluster
from fakebroker.cluster import conditions as cond
from fakebroker.cluster.waiting import WaitTimeout
from fakebroker.testing import eventually, partitions_covered_once

from .kafka_python_join import knows_partitions

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster():
    with FakeCluster(topics={"orders": 2}).run_in_thread() as c:
        yield c


def test_a_confluent_consumer_joins_while_the_test_waits(cluster):
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g", "client.id": "c1"})
    consumer.subscribe(["orders"])
    polls = []

    def poll(seconds):
        polls.append(seconds)
        return consumer.poll(seconds)

    view = cluster.wait_for_sync(cond.GroupState("g", "Stable", members=1), timeout=15, poll=poll)
    assert view.assignment == {"c1": {"orders": [0, 1]}}
    assert polls and set(polls) <= {0.05} | {p for p in polls if p < 0.05}  # never longer than one step
    consumer.close()


def test_a_kafka_python_consumer_polls_in_milliseconds(cluster):
    consumer = KafkaConsumer("orders", bootstrap_servers=cluster.bootstrap_servers, group_id="g2", client_id="k1")
    try:
        knows_partitions(consumer, "orders", 2)  # kafka-python 3.0.12: see kafka_python_join.py
        view = cluster.wait_for_sync(
            lambda c: partitions_covered_once(c, "g2", "orders") and c.group("g2"),
            timeout=20,
            poll=lambda s: consumer.poll(timeout_ms=int(s * 1000)),
        )
        assert view.assignment == {"k1": {"orders": [0, 1]}}
    finally:
        consumer.close()


def test_waiting_with_a_poll_function_times_out_naming_the_condition(cluster):
    calls = []
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match=r"waited 0.3 s for group 'nobody' is Stable"):
        cluster.wait_for_sync(cond.GroupState("nobody", "Stable"), timeout=0.3, poll=calls.append)
    assert time.monotonic() - started < 2
    assert calls  # the client was given its turns


def test_a_mistake_in_the_condition_is_raised_not_waited_out(cluster):
    started = time.monotonic()
    with pytest.raises(AttributeError):
        cluster.wait_for_sync(lambda c: c.no_such_method(), timeout=5, poll=lambda s: None)
    assert time.monotonic() - started < 1


def test_eventually_raises_programming_errors_at_once():
    for error in (TypeError("bad call"), NameError("typo"), AttributeError("no such thing")):

        def check(error=error):
            raise error

        started = time.monotonic()
        with pytest.raises(type(error)):
            eventually(check, timeout=5)
        assert time.monotonic() - started < 1


def test_eventually_waits_out_other_errors_and_says_what_it_saw():
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) < 3:
            raise KeyError("not yet")
        return "there"

    assert eventually(flaky, timeout=5, interval=0.01) == "there"
    with pytest.raises(AssertionError, match=r"never did not hold within 0.1 s \(last exception: KeyError"):
        eventually(lambda: {}["x"], timeout=0.1, message="never")


def test_eventually_given_a_cluster_condition_says_which_to_use():
    with pytest.raises(TypeError, match=r"is a cluster condition: use cluster.wait_for_sync"):
        eventually(cond.GroupState("g", "Stable"), timeout=5)
    with pytest.raises(TypeError, match=r"takes a function to call, not 3"):
        eventually(3, timeout=5)

import pytest
from confluent_kafka import Consumer, Producer

from fakebroker.cluster import conditions as cond
from fakebroker.testing import assert_assignment, eventually, lag, values
from fakebroker.timeline import timeline, write_timeline


def test_produce_and_read_back(fakebroker, fakebroker_bootstrap):
    fakebroker.create_topic("greetings", 1)
    producer = Producer({"bootstrap.servers": fakebroker_bootstrap})
    producer.produce("greetings", value=b"hello")
    assert producer.flush(10) == 0
    assert values(fakebroker, "greetings") == [b"hello"]


@pytest.mark.fakebroker(brokers=3, topics={"orders": 4})
def test_a_consumer_rejoins_after_heartbeat_errors(fakebroker, tmp_path):
    consumer = Consumer(
        {
            "bootstrap.servers": fakebroker.bootstrap_servers,
            "group.id": "billing",
            "client.id": "billing-1",
            "heartbeat.interval.ms": 100,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["orders"])
    # wait on the broker's side while the consumer keeps polling (joining, rebalancing)
    before = fakebroker.wait_for_sync(cond.GroupState("billing", "Stable", members=1), poll=consumer.poll)
    # and until librdkafka has applied its assignment (before that it ignores a rebalance signal)
    eventually(lambda: consumer.poll(0.05) is None and len(consumer.assignment()) == 4)

    # a fault: the next heartbeat is answered REBALANCE_IN_PROGRESS, so the consumer rejoins
    fakebroker.faults.add(api="Heartbeat", group="billing", error="REBALANCE_IN_PROGRESS", times=1)
    fakebroker.wait_for_sync(cond.generation_above("billing", before.generation), poll=consumer.poll)
    assert_assignment(fakebroker, "billing", {"billing-1": {"orders": [0, 1, 2, 3]}})
    assert lag(fakebroker, "billing", "orders") == {0: None, 1: None, 2: None, 3: None}  # nothing committed

    # the group's story as text (and as a picture with fakebroker[charts]); a failing test
    # gets both in its report without asking
    assert f"generation={before.generation + 1}" in timeline(fakebroker, "billing")
    write_timeline(fakebroker, tmp_path / "billing.svg", group="billing")
    consumer.close()

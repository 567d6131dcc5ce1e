import pytest
from confluent_kafka import Consumer, Producer

from fakebroker.cluster import conditions as cond
from fakebroker.testing import assert_assignment, eventually, lag, values


def test_produce_and_read_back(fakebroker, fakebroker_bootstrap):
    fakebroker.create_topic("greetings", 1)
    producer = Producer({"bootstrap.servers": fakebroker_bootstrap})
    producer.produce("greetings", value=b"hello")
    assert producer.flush(10) == 0
    assert values(fakebroker, "greetings") == [b"hello"]


@pytest.mark.fakebroker(brokers=3, topics={"orders": 4})
def test_a_consumer_rejoins_after_heartbeat_errors(fakebroker):
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

    def stable():
        consumer.poll(0.05)
        return cond.GroupState("billing", "Stable", members=1)(fakebroker)

    before = eventually(stable, message="billing never became Stable")
    fakebroker.faults.add(api="Heartbeat", group="billing", error="REBALANCE_IN_PROGRESS", times=1)
    eventually(lambda: consumer.poll(0.05) or fakebroker.group("billing").generation > before.generation)
    assert_assignment(fakebroker, "billing", {"billing-1": {"orders": [0, 1, 2, 3]}})
    assert lag(fakebroker, "billing", "orders") == {0: None, 1: None, 2: None, 3: None}  # nothing committed
    consumer.close()

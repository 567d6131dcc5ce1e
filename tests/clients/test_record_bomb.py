"""Issue 33 on the wire: a Produce carrying a compressed batch of a million tiny records of
mixed layouts (within every limit, so accepted, as Kafka accepts it) is checked on a worker
thread. Meanwhile a bystander's Metadata round trips stay under 100 ms and a confluent-kafka
producer's records are acknowledged; before, every connection waited for the whole walk."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fakebroker.cluster import FakeCluster
from fakebroker.protocol.error_codes import ErrorCode as E

from ..apis.record_bombs import record_bomb
from ..raw_client import RawClient

pytestmark = pytest.mark.clients
PRODUCE, METADATA = 0, 3
COUNT = 1_000_000  # ~0.8 MB compressed (under max.message.bytes); about 2 s to check alone


def test_a_record_bomb_is_accepted_and_holds_nobody_up():
    bomb = record_bomb(COUNT)
    with FakeCluster(topics={"bombed": 1, "other": 1}).run_in_thread() as cluster:
        port, bootstrap = cluster.servers[0].port, cluster.bootstrap_servers
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 3})
        producer.produce("other", b"warm-up")
        assert producer.flush(10) == 0
        answers: list = []
        with RawClient(port, client_id="bomber", timeout=60) as bomber, RawClient(port, client_id="bystander") as by:
            by.request(METADATA, 12, {"topics": None})
            body = {
                "acks": -1,
                "timeout_ms": 30_000,
                "topic_data": [{"name": "bombed", "partition_data": [{"index": 0, "records": bomb}]}],
            }
            bombing = threading.Thread(target=lambda: answers.append(bomber.request(PRODUCE, 9, body)))
            bombing.start()
            round_trips, acked = [], []
            deadline = time.monotonic() + 60
            while bombing.is_alive() and time.monotonic() < deadline:
                started = time.monotonic()
                by.request(METADATA, 12, {"topics": None})
                round_trips.append(time.monotonic() - started)
                if len(round_trips) % 10 == 1 and bombing.is_alive():
                    producer.produce("other", b"during", on_delivery=lambda err, msg: acked.append(err))
                    assert producer.flush(5) == 0
                time.sleep(0.01)
            bombing.join(5)
        assert not bombing.is_alive()
        answer = answers[0].responses[0].partition_responses[0]
        assert (answer.error_code, answer.base_offset) == (E.NONE, 0)
        assert len(round_trips) >= 20, round_trips  # the check took long enough to measure beside it
        assert max(round_trips) < 0.1, sorted(round_trips)[-5:]
        assert acked and all(err is None for err in acked)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "log_level": 3})
        try:
            assert consumer.get_watermark_offsets(TopicPartition("bombed", 0), timeout=10) == (0, COUNT)
            assert consumer.get_watermark_offsets(TopicPartition("other", 0), timeout=10) == (0, 1 + len(acked))
        finally:
            consumer.close()


def test_a_cluster_stops_at_once_while_a_record_bomb_is_checked():
    bomb = record_bomb(COUNT)
    cluster = FakeCluster(topics={"bombed": 1})
    with cluster.run_in_thread():
        bomber = RawClient(cluster.servers[0].port, client_id="bomber")
        bomber.send(
            PRODUCE,
            9,
            {
                "acks": -1,
                "timeout_ms": 30_000,
                "topic_data": [{"name": "bombed", "partition_data": [{"index": 0, "records": bomb}]}],
            },
        )
        time.sleep(0.2)  # the check is under way on its worker thread
        started = time.monotonic()
    assert time.monotonic() - started < 0.5
    bomber.close()

"""queued.max.request.bytes: a broker holds at most that many bytes of large requests at once
(Kafka's memory pool); a connection whose frame does not fit is not read until memory is freed,
while small requests go on, and every request is answered in the end."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from confluent_kafka import Producer

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import headers
from fakebroker.protocol import records as rec
from fakebroker.protocol.framing import frame
from fakebroker.server.request_memory import DEFAULT_BOUND, RequestMemory

from ..raw_client import RawClient

PRODUCE, METADATA = 0, 3
BOUND = 1_000_000


@pytest.mark.trio
async def test_reservations_wait_in_turn_and_a_cancelled_one_gives_back():
    memory = RequestMemory(BOUND)
    await memory.reserve(600_000)
    granted = []

    async def ask(size: int) -> None:
        await memory.reserve(size)
        granted.append(size)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, 600_000)
        await anyio.sleep(0.01)
        assert granted == [] and memory.in_use == 600_000
        with anyio.move_on_after(0.01):  # a second waiter gives up
            await memory.reserve(100_000)
        memory.release(600_000)
        await anyio.sleep(0.01)
        assert granted == [600_000] and memory.in_use == 600_000
    memory.release(600_000)
    await memory.reserve(5 * BOUND)  # larger than the bound: let in alone
    assert memory.in_use == 5 * BOUND
    assert RequestMemory(-1).bound == DEFAULT_BOUND


def _produce_frame(correlation_id: int, value_size: int) -> bytes:
    body = {
        "acks": -1,
        "timeout_ms": 10_000,
        "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": rec.build_batch([(None, bytes(value_size))])}]}
        ],
    }
    return frame(headers.encode_request(PRODUCE, 9, correlation_id, body, client_id="big"))


def test_large_requests_past_the_bound_wait_for_memory_and_small_ones_do_not():
    with FakeCluster(topics={"t": 1}, config={"queued.max.request.bytes": BOUND}).run_in_thread() as cluster:
        port = cluster.servers[0].port
        memory = cluster.servers[0].pipeline.request_memory
        first, second = _produce_frame(1, 600_000), _produce_frame(2, 600_000)
        with RawClient(port) as a, RawClient(port) as b, RawClient(port) as small:
            a.sock.sendall(first[:100_000])  # its size is in: 600 KB reserved
            _until(lambda: memory.in_use > 0)
            b.sock.sendall(second[:100_000])  # does not fit beside the first: not read meanwhile
            time.sleep(0.1)
            assert memory.in_use == len(first) - 4
            assert small.request(METADATA, 12, {"topics": None}).topics[0].name == "t"  # small ones go on
            assert cluster.state.topics["t"].partitions[0].log.log_end_offset == 0
            a.sock.sendall(first[100_000:])
            b.sock.sendall(second[100_000:])
            assert a.receive(PRODUCE, 9).responses[0].partition_responses[0].error_code == 0
            assert b.receive(PRODUCE, 9).responses[0].partition_responses[0].error_code == 0
        _until(lambda: memory.in_use == 0)
        assert cluster.state.topics["t"].partitions[0].log.log_end_offset == 2


@pytest.mark.clients
def test_producers_of_large_records_all_get_through_a_small_bound():
    config = {"queued.max.request.bytes": BOUND, "message.max.bytes": 2_000_000}
    with FakeCluster(topics={"t": 1}, config=config).run_in_thread() as cluster:
        reports: list = []

        def produce(n: int) -> None:
            producer = Producer(
                {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0, "message.max.bytes": 1_500_000}
            )
            for i in range(5):
                producer.produce("t", bytes([n]) * 900_000, on_delivery=lambda err, msg: reports.append(err))
            assert producer.flush(30) == 0

        threads = [threading.Thread(target=produce, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(reports) == 15 and all(err is None for err in reports)
        assert cluster.state.topics["t"].partitions[0].log.log_end_offset == 15
        assert cluster.servers[0].pipeline.request_memory.in_use == 0


def _until(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)

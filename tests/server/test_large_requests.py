"""One large valid request (a Produce to thousands of partitions, a Metadata or CreateTopics
creating thousands of topics, a DeleteTopics deleting them) is handled in slices: another
connection's small request is answered meanwhile, before the large one completes."""

from __future__ import annotations

import socket
import struct
import threading
import time

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import records
from fakebroker.protocol.primitives import ZERO_UUID

from ..raw_client import RawClient

PRODUCE, METADATA, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS = 0, 3, 18, 19, 20
PARTITIONS = 10_000  # the most one request may create (Kafka's cap): long enough that the small one lands mid-way


def _race(port: int, big_key: int, big_version: int, big_body: dict, started) -> tuple[list[str], float]:
    """Send the big request, then, once ``started()`` sees its first slice done, a small one on
    another connection; (the order they were answered in, the small one's wait)."""
    with RawClient(port, timeout=120) as big:
        big.send(big_key, big_version, big_body)
        return _race_read(big, port, started)


def _race_read(big: RawClient, port: int, started) -> tuple[list[str], float]:
    """:func:`_race` once the big request is sent on ``big``."""
    order: list[str] = []
    with RawClient(port) as small:

        def finish_big() -> None:
            head = big.sock.recv(4, socket.MSG_WAITALL)  # the answer's first bytes: the broker is done
            order.append("big")
            size = struct.unpack(">i", head)[0]
            while size > 0:
                size -= len(big.sock.recv(min(size, 1 << 20)))

        thread = threading.Thread(target=finish_big)
        thread.start()
        while not started():  # read on the cluster's loop: answered between two slices
            time.sleep(0.001)
        start = time.monotonic()
        small.request(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
        waited = time.monotonic() - start
        order.append("small")
        thread.join()
    return order, waited


def test_a_small_request_is_answered_while_a_large_metadata_creates_topics():
    with FakeCluster().run_in_thread() as cluster:
        body = {
            "topics": [{"name": f"auto-{i}"} for i in range(PARTITIONS)],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False,
        }
        order, waited = _race(cluster.servers[0].port, METADATA, 12, body, lambda: len(cluster.topics()) > 0)
        print(f"small Metadata answered in {waited * 1000:.0f} ms beside a Metadata creating {PARTITIONS} topics")
        assert order == ["small", "big"]
        assert len(cluster.topics()) >= PARTITIONS


def test_a_small_request_is_answered_while_a_large_produce_appends():
    with FakeCluster(topics={"wide": PARTITIONS}).run_in_thread() as cluster:
        batch = records.build_batch([(None, b"v")])
        body = {
            "acks": -1,
            "timeout_ms": 30_000,
            "transactional_id": None,
            "topic_data": [
                {"name": "wide", "partition_data": [{"index": i, "records": batch} for i in range(PARTITIONS)]}
            ],
        }
        order, waited = _race(cluster.servers[0].port, PRODUCE, 9, body, lambda: cluster.offsets("wide", 0)[1] > 0)
        print(f"small Metadata answered in {waited * 1000:.0f} ms beside a Produce to {PARTITIONS} partitions")
        assert order == ["small", "big"]
        assert all(cluster.offsets("wide", i)[1] == 1 for i in (0, PARTITIONS - 1))


def test_a_small_request_is_answered_while_a_large_create_topics_creates():
    with FakeCluster().run_in_thread() as cluster:
        topic = {"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        body = {
            "topics": [{"name": f"made-{i}", **topic} for i in range(PARTITIONS)],
            "timeout_ms": 60_000,
            "validate_only": False,
        }
        order, waited = _race(cluster.servers[0].port, CREATE_TOPICS, 7, body, lambda: len(cluster.topics()) > 0)
        print(f"small Metadata answered in {waited * 1000:.0f} ms beside a CreateTopics of {PARTITIONS} topics")
        assert order == ["small", "big"]
        assert len(cluster.topics()) == PARTITIONS


def test_a_small_request_is_answered_while_a_large_delete_topics_deletes():
    with FakeCluster(topics={f"doomed-{i}": 1 for i in range(PARTITIONS)}).run_in_thread() as cluster:
        names = [{"name": f"doomed-{i}", "topic_id": ZERO_UUID} for i in range(PARTITIONS)]
        body = {"topics": names, "timeout_ms": 60_000}
        order, waited = _race(
            cluster.servers[0].port, DELETE_TOPICS, 6, body, lambda: len(cluster.topics()) < PARTITIONS
        )
        print(f"small Metadata answered in {waited * 1000:.0f} ms beside a DeleteTopics of {PARTITIONS} topics")
        assert order == ["small", "big"]
        assert cluster.topics() == {}


def test_the_error_walk_finds_every_error_code_and_skips_what_holds_none():
    from fakebroker.protocol.messages import response_type
    from fakebroker.server.exchange import _error_fields, error_codes

    created = response_type(CREATE_TOPICS).new(
        topics=[
            {"name": "a", "error_code": 0, "configs": [{"name": "x", "value": "1"}] * 37},
            {"name": "b", "error_code": 37, "error_message": "no"},
        ]
    )
    assert error_codes(created) == {37}
    topic_fields = dict(_error_fields(type(created.topics[0])))
    assert "error_code" in topic_fields and "configs" not in topic_fields  # 37 configs a topic, never walked
    txn = response_type(24).new(
        results_by_topic_v3_and_below=[
            {"name": "t", "results_by_partition": [{"partition_index": 0, "partition_error_code": 48}]}
        ]
    )
    assert error_codes(txn) == {48}  # a prefixed error code, two structs down


def test_a_large_frame_that_does_not_parse_closes_only_its_connection():
    from fakebroker.protocol import headers
    from fakebroker.server.pipeline import OFF_LOOP_BYTES

    with FakeCluster().run_in_thread() as cluster:
        port = cluster.servers[0].port
        head = headers.encode_request(METADATA, 12, 1, {"topics": []}, client_id="big")[:-2]  # cut the body
        payload = head + b"\xff" * OFF_LOOP_BYTES  # garbage for a body, decoded on a worker thread
        with socket.create_connection(("127.0.0.1", port), timeout=10) as bad, RawClient(port) as good:
            bad.sendall(struct.pack(">i", len(payload)) + payload)
            assert bad.recv(1) == b""  # closed, no answer
            assert good.request(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False}).brokers


def test_a_small_request_is_answered_while_a_metadata_of_every_topic_is_built():
    topics = 30_000  # about half a second of work: the small request lands mid-way
    with FakeCluster(topics={f"t-{i}": 1 for i in range(topics)}).run_in_thread() as cluster:

        def big_arrived() -> bool:
            return any(getattr(e, "client_id", None) == "big" for e in cluster.events)

        with RawClient(cluster.servers[0].port, client_id="big", timeout=120) as big:
            big.send(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
            order, waited = _race_read(big, cluster.servers[0].port, big_arrived)
        print(f"small Metadata answered in {waited * 1000:.0f} ms beside a Metadata of {topics} topics")
        assert order == ["small", "big"]

"""Answers to requests a client sent together (librdkafka pipelines Metadata and
FindCoordinator on a new connection) go out together, in order, and never wait for a later
request: one that parks, one that a fault delays, or one that ends the connection."""

from __future__ import annotations

import socket
import struct
import time

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import headers

from .test_broker_behaviour import FETCH, fetch_body

METADATA, FIND_COORDINATOR, API_VERSIONS = 3, 10, 18


def framed(correlation_id: int, api_key: int, version: int, body: dict) -> bytes:
    payload = headers.encode_request(api_key, version, correlation_id, body, client_id="pipelined")
    return struct.pack(">i", len(payload)) + payload


def read_answer(sock: socket.socket, api_key: int, version: int) -> tuple[int, object]:
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    payload = sock.recv(size, socket.MSG_WAITALL)
    header, body = headers.decode_response(api_key, version, payload)
    return header.correlation_id, body


def connect(cluster: FakeCluster) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", cluster.servers[0].port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def test_answers_to_requests_sent_together_arrive_in_order_in_one_write():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster, connect(cluster) as sock:
        sock.sendall(
            framed(1, METADATA, 12, {"topics": [{"name": "t", "topic_id": None}]})
            + framed(2, FIND_COORDINATOR, 2, {"key": "g", "key_type": 0})
            + framed(3, API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        )
        correlation, metadata = read_answer(sock, METADATA, 12)
        assert correlation == 1 and [t.name for t in metadata.topics] == ["t"]
        # the other two came in the same write: already here, whole
        rest = sock.recv(65536, socket.MSG_DONTWAIT)
        second = struct.unpack_from(">i", rest)[0]
        found = headers.decode_response(FIND_COORDINATOR, 2, rest[4 : 4 + second])
        versions = headers.decode_response(API_VERSIONS, 3, rest[8 + second :])
        assert found[0].correlation_id == 2 and found[1].error_code == 0 and found[1].node_id == 0
        assert versions[0].correlation_id == 3 and versions[1].error_code == 0


def test_an_answer_is_not_held_behind_a_request_that_waits():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster, connect(cluster) as sock:
        started = time.monotonic()
        sock.sendall(
            framed(1, METADATA, 12, {"topics": [{"name": "t", "topic_id": None}]})
            + framed(2, FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=3000))  # parks: nothing to read
        )
        assert read_answer(sock, METADATA, 12)[0] == 1
        assert time.monotonic() - started < 1.5  # not after the fetch's 3 s
        correlation, fetched = read_answer(sock, FETCH, 12)
        assert correlation == 2 and fetched.responses[0].partitions[0].records in (None, b"")
        assert time.monotonic() - started >= 2.5


def test_an_answer_is_not_held_behind_a_request_a_fault_delays():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster, connect(cluster) as sock:
        cluster.faults.add(api="FindCoordinator", broker=0, delay=3)
        started = time.monotonic()
        sock.sendall(
            framed(1, METADATA, 12, {"topics": [{"name": "t", "topic_id": None}]})
            + framed(2, FIND_COORDINATOR, 2, {"key": "g", "key_type": 0})
        )
        assert read_answer(sock, METADATA, 12)[0] == 1
        assert time.monotonic() - started < 1.5
        assert read_answer(sock, FIND_COORDINATOR, 2)[0] == 2
        assert time.monotonic() - started >= 2.5


def test_answers_before_a_request_that_ends_the_connection_still_arrive():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster, connect(cluster) as sock:
        unsupported = headers.encode_request(API_VERSIONS, 3, 2, {}, client_id="pipelined")
        unsupported = struct.pack(">hh", 0, 99) + unsupported[4:]  # Produce v99: the connection closes
        sock.sendall(
            framed(1, METADATA, 12, {"topics": [{"name": "t", "topic_id": None}]})
            + struct.pack(">i", len(unsupported))
            + unsupported
        )
        assert read_answer(sock, METADATA, 12)[0] == 1
        assert sock.recv(1) == b""  # then closed, as Kafka closes on an unknown version
        closed = cluster.wait_for_sync(
            lambda c: [e for e in c.events if e.kind == "connection_closed" and "version 99" in e.reason]
        )
        assert closed[0].client_id == "pipelined"  # the first request named the connection

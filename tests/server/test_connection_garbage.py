"""A closed connection is freed when it closes, not at the next full collection (issue 33).

Two reference cycles kept each connection's objects (the connection, its socket, trio task,
scopes: ~27 objects) and each parked request's (the watcher's cancelled read: ~80 more) until
a full collection, which ``fakebroker serve``'s raised thresholds make rare: after a burst of
10,000 connections the process kept ~120 MB. With the collector off, what a burst leaves for it
must be next to nothing.
"""

from __future__ import annotations

import gc
import time

from fakebroker.cluster import FakeCluster

from ..raw_client import RawClient
from .test_broker_behaviour import FETCH, fetch_body

API_VERSIONS = 18
CLIENTS = 20


def wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def burst(port: int) -> None:
    clients = [RawClient(port) for _ in range(CLIENTS)]
    for client in clients:
        client.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        client.request(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=20))  # parked, then answered empty
    for client in clients:
        client.close()


def test_connections_and_their_parked_requests_leave_no_cycles_behind():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster:
        server = cluster.servers[0]
        burst(server.port)  # first uses (codecs, caches) out of the way
        wait_until(lambda: not server.connections)
        gc.collect()
        gc.disable()
        try:
            burst(server.port)
            wait_until(lambda: not server.connections)
            left = gc.collect()
        finally:
            gc.enable()
    assert left < CLIENTS, f"{left} objects in cycles after {CLIENTS} connections (before: ~107 each)"

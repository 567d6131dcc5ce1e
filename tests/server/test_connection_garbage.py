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


def _tasks_and_widest_nursery() -> tuple[int, int]:
    """On the loop: how many trio tasks there are, and the most children any nursery has."""
    import trio

    tasks, widest, todo = 0, 0, [trio.lowlevel.current_root_task()]
    while todo:
        task = todo.pop()
        tasks += 1
        for nursery in task.child_nurseries:
            widest = max(widest, len(nursery.child_tasks))
            todo.extend(nursery.child_tasks)
    return tasks, widest


def test_connections_are_served_a_few_to_a_task_group_that_ends_with_them(monkeypatch):
    """trio keeps a task group's set of tasks, and its cancel scope's set of child scopes, at
    the size they grew to: one task group for every connection kept tables for 10,000 after a
    burst. A group takes ``GROUP_SIZE`` connections and ends once they have closed."""
    from fakebroker.server import broker

    monkeypatch.setattr(broker, "GROUP_SIZE", 4)
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster:
        server = cluster.servers[0]
        with RawClient(server.port) as first:  # a group started, with one connection
            first.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            wait_until(lambda: len(server.connections) == 1)
            before, _ = cluster.call(_tasks_and_widest_nursery)
            clients = [RawClient(server.port) for _ in range(10)]
            for client in clients:
                client.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            wait_until(lambda: len(server.connections) == 11)
            during, widest = cluster.call(_tasks_and_widest_nursery)
            assert during == before + 10 + 2  # the connections' tasks and two more groups' (4 + 4 + 3)
            assert widest < 10  # no task group holds the connections (the broker's: its loops and the groups)
            for client in clients:
                client.close()
            wait_until(lambda: len(server.connections) == 1)
        wait_until(lambda: not server.connections)
        # the two full groups ended with their connections; the third takes the next ones (the
        # first group's accept loop ran in the broker's own task, which stays: one task for one)
        assert cluster.call(_tasks_and_widest_nursery)[0] == before
        with RawClient(server.port) as late:  # still serving
            late.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})

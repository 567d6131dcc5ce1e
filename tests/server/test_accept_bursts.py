"""Connections the kernel has completed are accepted together, not one per scheduler turn.

Each accept through the listener yields to every other task once, so under load a burst of
new connections waited one turn each: 1,000 raw members connecting in 0.1 s were still being
accepted 6 s later while the first ones heartbeated, and every late member restarted the
group's rebalance (generation 42 where 2 is usual, 8.7 s to Stable where 0.5 s is usual).
Here the loop is held while clients connect, so every connection is waiting at its next turn.
"""

from __future__ import annotations

import os
import socket
import struct
import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.server import broker
from fakebroker.server.connection import DirectSocket

from ..raw_client import RawClient

API_VERSIONS = 18
HELLO = {"client_software_name": "t", "client_software_version": "1"}


@pytest.fixture
def taken(monkeypatch) -> list[int]:
    """How many connections each call of ``_take_waiting`` took (calls that took none left out)."""
    counts: list[int] = []
    original = broker.BrokerServer._take_waiting

    def counted(self, raw, most, first_error=False):
        socks = original(self, raw, most, first_error)
        if socks:
            counts.append(len(socks))
        return socks

    monkeypatch.setattr(broker.BrokerServer, "_take_waiting", counted)
    return counts


def gone_before_accepted(port: int) -> None:
    """A client that connects and resets its connection before the broker accepts it."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# Under trio the broker takes connections from the listening socket itself, all that wait at
# once; under asyncio anyio's listener takes the first and this the others.
@pytest.mark.parametrize(("backend", "first"), [("trio", 0), ("asyncio", 1)])
def test_waiting_connections_are_accepted_in_one_turn(backend, first, taken):
    with FakeCluster().run_in_thread(backend) as cluster:
        port = cluster.servers[0].port

        def connect_while_the_loop_is_held() -> list[RawClient]:
            clients = [RawClient(port) for _ in range(8)]
            gone_before_accepted(port)
            return clients + [RawClient(port) for _ in range(6)]

        taken.clear()
        clients = cluster.call(connect_while_the_loop_is_held)
        for client in clients:
            assert client.request(API_VERSIONS, 3, HELLO).error_code == 0
            client.close()
        # one call took every waiting one (and the reset one, when the kernel still handed it
        # over: it is closed, or served until its read fails)
        assert taken[0] in (14 - first, 15 - first)
        with RawClient(port) as late:  # still serving
            assert late.request(API_VERSIONS, 3, HELLO).error_code == 0


@pytest.mark.parametrize(("backend", "batches"), [("trio", [4, 4, 2]), ("asyncio", [3, 3, 1])])
def test_a_burst_still_fills_task_groups_of_group_size(backend, batches, taken, monkeypatch):
    monkeypatch.setattr(broker, "GROUP_SIZE", 4)
    with FakeCluster().run_in_thread(backend) as cluster:
        server = cluster.servers[0]
        taken.clear()
        clients = cluster.call(lambda: [RawClient(server.port) for _ in range(10)])
        for client in clients:
            assert client.request(API_VERSIONS, 3, HELLO).error_code == 0
        # each group's accept task takes at most GROUP_SIZE (under asyncio: one through the
        # listener, then at most 3 more); the third group has room left for later connections
        assert taken[:3] == batches
        assert len(server.connections) == 10
        for client in clients:
            client.close()


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_each_closed_connection_gives_its_socket_back(backend):
    """Under trio a plain TCP connection is served as the socket accepted, without anyio's
    stream; closing it must close that socket and let trio forget it, by either side."""
    with FakeCluster().run_in_thread(backend) as cluster:
        server = cluster.servers[0]
        with RawClient(server.port) as first:
            assert first.request(API_VERSIONS, 3, HELLO).error_code == 0
            (conn,) = server.connections
            assert isinstance(conn.stream, DirectSocket) == (backend == "trio")
        before = open_descriptors()
        for _ in range(100):  # the client leaves
            with RawClient(server.port) as client:
                assert client.request(API_VERSIONS, 3, HELLO).error_code == 0
        clients = [RawClient(server.port) for _ in range(50)]
        for client in clients:
            assert client.request(API_VERSIONS, 3, HELLO).error_code == 0
        cluster.cut("*")  # the broker closes them
        cluster.heal()
        for client in clients:
            client.close()
        deadline = time.monotonic() + 10
        while server.connections or open_descriptors() > before:
            assert time.monotonic() < deadline, (len(server.connections), open_descriptors(), before)
            time.sleep(0.01)
        with RawClient(server.port) as late:  # still serving, on a descriptor used before
            assert late.request(API_VERSIONS, 3, HELLO).error_code == 0

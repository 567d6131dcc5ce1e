"""Connections the kernel has completed are accepted together, not one per scheduler turn.

Each accept through the listener yields to every other task once, so under load a burst of
new connections waited one turn each: 1,000 raw members connecting in 0.1 s were still being
accepted 6 s later while the first ones heartbeated, and every late member restarted the
group's rebalance (generation 42 where 2 is usual, 8.7 s to Stable where 0.5 s is usual).
Here the loop is held while clients connect, so every connection is waiting at its next turn.
"""

from __future__ import annotations

import socket
import struct

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.server import broker

from ..raw_client import RawClient

API_VERSIONS = 18
HELLO = {"client_software_name": "t", "client_software_version": "1"}


@pytest.fixture
def taken(monkeypatch) -> list[int]:
    """How many connections each call of ``_accept_waiting`` took."""
    counts: list[int] = []
    original = broker.BrokerServer._accept_waiting

    async def counted(self, raw, most):
        streams = await original(self, raw, most)
        counts.append(len(streams))
        return streams

    monkeypatch.setattr(broker.BrokerServer, "_accept_waiting", counted)
    return counts


def gone_before_accepted(port: int) -> None:
    """A client that connects and resets its connection before the broker accepts it."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_waiting_connections_are_accepted_in_one_turn(backend, taken):
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
        # the listener's accept took the first; one call took the other 13 (and the reset one,
        # when the kernel still handed it over: it is closed, or served until its read fails)
        assert taken[0] in (13, 14)
        with RawClient(port) as late:  # still serving
            assert late.request(API_VERSIONS, 3, HELLO).error_code == 0


def test_a_burst_still_fills_task_groups_of_group_size(taken, monkeypatch):
    monkeypatch.setattr(broker, "GROUP_SIZE", 4)
    with FakeCluster().run_in_thread() as cluster:
        server = cluster.servers[0]
        taken.clear()
        clients = cluster.call(lambda: [RawClient(server.port) for _ in range(10)])
        for client in clients:
            assert client.request(API_VERSIONS, 3, HELLO).error_code == 0
        # each group's accept task: one through the listener, then at most 3 more; the third
        # group has room left for later connections
        assert taken[:3] == [3, 3, 1]
        assert len(server.connections) == 10
        for client in clients:
            client.close()

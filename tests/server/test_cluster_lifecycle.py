"""FakeCluster under trio, under asyncio, and in a thread; nothing is left behind when it stops."""

from __future__ import annotations

import gc
import socket
import threading

import anyio
import pytest
import trio

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import headers

from .. import ports


async def metadata_over_anyio(port: int) -> list[str]:
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        payload = headers.encode_request(3, 12, 1, {"topics": None})
        await stream.send(len(payload).to_bytes(4, "big") + payload)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:4], "big"):
            buf += await stream.receive()
        _, body = headers.decode_response(3, 12, buf[4:])
        return [t.name for t in body.topics]


@pytest.mark.trio
async def test_async_with_under_trio():
    # pytest-trio runs this test under trio.
    assert trio.lowlevel.current_task() is not None
    async with FakeCluster(brokers=3, topics={"orders": 6}) as cluster:
        ports = [s.port for s in cluster.servers]
        assert cluster.bootstrap_servers == ",".join(f"127.0.0.1:{p}" for p in ports)
        assert await metadata_over_anyio(ports[2]) == ["orders"]
    for port in ports:
        with pytest.raises(OSError):
            await trio.open_tcp_stream("127.0.0.1", port)


def test_async_with_under_asyncio():
    async def main() -> list[str]:
        async with FakeCluster(topics={"a": 1}) as cluster:
            return await metadata_over_anyio(cluster.servers[0].port)

    assert anyio.run(main, backend="asyncio") == ["a"]


def test_run_in_thread_leaves_no_thread_or_socket_behind():
    FakeCluster.stop_idle_loops()
    threads_before = set(threading.enumerate())
    with FakeCluster(brokers=2).run_in_thread() as cluster:
        ports = [s.port for s in cluster.servers]
        held = socket.create_connection(("127.0.0.1", ports[0]))  # a client still connected at stop
        cluster.create_topic("from-test-thread", 3)  # control methods work from this thread
        assert cluster.topics() == {"from-test-thread": 3}
    gc.collect()
    # only the loop kept for the next cluster: a daemon, and stop_idle_loops() ends it
    (kept,) = set(threading.enumerate()) - threads_before
    assert kept.daemon and kept.name == "fakebroker-loop"
    assert FakeCluster.stop_idle_loops() == 1
    assert set(threading.enumerate()) == threads_before
    assert held.recv(1) == b""  # the broker closed it
    held.close()
    for port in ports:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1)


def test_fixed_ports_are_consecutive():
    for base in ports.port_runs(3):
        try:
            with FakeCluster(brokers=3, port=base).run_in_thread() as cluster:
                assert [s.port for s in cluster.servers] == [base, base + 1, base + 2]
            return
        except OSError as error:
            if not ports.taken(error):
                raise


def test_a_coordinator_moves_load_time_is_for_that_move_only():
    with FakeCluster(brokers=3, coordinator_load_time_ms=0).run_in_thread() as cluster:
        cluster.move_transaction_coordinator("tx", load_time_ms=60_000)
        cluster.move_coordinator("g", load_time_ms=60_000)
        state = cluster.state
        assert cluster.coordinator_load_time_ms == 0
        assert cluster.call(
            lambda: state.transactions.placement.partition_of("tx") in state.transactions.placement.loading_until_ms
        )
        assert cluster.call(lambda: state.groups.partition_of("g") in state.groups.placement.loading_until_ms)
        cluster.move_transaction_coordinator("tx")  # the cluster's default again: loaded at once
        cluster.move_coordinator("g")
        assert not cluster.call(
            lambda: state.transactions.placement.partition_of("tx") in state.transactions.placement.loading_until_ms
        )
        assert not cluster.call(lambda: state.groups.partition_of("g") in state.groups.placement.loading_until_ms)


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_a_cluster_listens_on_an_address_or_a_name(host):
    """An IPv4 address gets a socket made by the broker itself; a name or an IPv6 address goes
    through anyio's listener: both accept and answer."""
    if host == "::1" and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    with FakeCluster(host=host, topics={"t": 1}).run_in_thread() as cluster:
        port = cluster.servers[0].port
        assert port > 0
        family = socket.AF_INET6 if host == "::1" else socket.AF_INET
        with socket.socket(family) as sock:
            sock.connect((host if host != "localhost" else "127.0.0.1", port))
        assert cluster.topics() == {"t": 1}
        if host != "::1":  # the helper connects over IPv4
            assert anyio.run(metadata_over_anyio, port) == ["t"]

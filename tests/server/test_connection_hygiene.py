"""No client behaviour may hold the broker's resources: a parked Fetch whose client left
releases its socket at once, idle connections are reaped per ``connections.max.idle.ms``,
and starts and stops of one broker take turns in call order, on every path."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import trio

from fakebroker.cluster import FakeCluster

from ..raw_client import RawClient
from .test_broker_behaviour import FETCH, fetch_body


def wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_parked_fetch_releases_its_connection_when_the_client_leaves():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster:
        server = cluster.servers[0]
        clients = [RawClient(server.port) for _ in range(50)]
        for client in clients:  # a day-long poll of an empty partition
            client.send(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=86_400_000))
        wait_until(lambda: len(server.connections) == 50)
        start = time.monotonic()
        for client in clients:
            client.close()
        wait_until(lambda: not server.connections, timeout=5)
        assert time.monotonic() - start < 5
        with RawClient(server.port) as late:  # still serving
            assert late.request(FETCH, 12, fetch_body("t", 0, 0)).responses[0].partitions[0].error_code == 0


def test_a_client_that_stays_still_gets_its_long_poll_answer():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as client:
            start = time.monotonic()
            client.request(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=300))
            assert 0.25 <= time.monotonic() - start < 3


def test_idle_connections_are_closed_after_connections_max_idle_ms():
    config = {"connections.max.idle.ms": 300}
    with FakeCluster(topics={"t": 1}, config=config).run_in_thread() as cluster:
        server = cluster.servers[0]
        idle = socket.create_connection(("127.0.0.1", server.port))
        busy = RawClient(server.port)
        busy.send(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=1500))  # in flight: not idle
        idle.settimeout(5)
        start = time.monotonic()
        assert idle.recv(1) == b""  # closed by the broker
        assert 0.25 <= time.monotonic() - start < 3
        assert busy.receive(FETCH, 12).responses[0].partitions[0].error_code == 0
        busy.close()
        idle.close()
        reasons = [e.details.get("reason", "") for e in cluster.events if e.kind == "connection_closed"]
        assert any("connections.max.idle.ms" in r for r in reasons)


def test_a_long_poll_that_ends_as_the_reaper_looks_still_gets_its_answer():
    """A request ending is activity, as Kafka counts an answer's write. Here the loop stands
    still past the Fetches' end and a reaper wake (it wakes every idle period while they are
    in flight), so both run in one batch, in either order: each Fetch is still answered, not
    closed as idle since it arrived."""
    with FakeCluster(topics={"t": 1}, config={"connections.max.idle.ms": 100}).run_in_thread() as cluster:
        port = cluster.servers[0].port
        for _ in range(6):  # the batch's order is trio's choice: six tries
            clients = [RawClient(port) for _ in range(5)]
            for client in clients:
                client.send(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=300))
            time.sleep(0.2)
            cluster.call(time.sleep, 0.3)  # blocks the loop itself
            for client in clients:
                assert client.receive(FETCH, 12).responses[0].partitions[0].error_code == 0
                client.close()


def test_connections_max_idle_ms_zero_closes_idle_connections_without_spinning():
    with FakeCluster(topics={"t": 1}, config={"connections.max.idle.ms": 0}).run_in_thread() as cluster:
        idle = socket.create_connection(("127.0.0.1", cluster.servers[0].port))
        idle.settimeout(5)
        assert idle.recv(1) == b""  # closed by the broker at once
        idle.close()
        before = time.process_time()
        time.sleep(1)
        assert time.process_time() - before < 0.5  # the reaper sleeps between looks, it does not spin


def test_concurrent_starts_and_stops_of_one_broker_take_turns():
    with FakeCluster(brokers=2).run_in_thread() as cluster:
        for _ in range(5):
            cluster.stop_broker(1)
            errors: list[BaseException] = []

            def start() -> None:
                try:
                    cluster.start_broker(1)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)

            threads = [threading.Thread(target=start) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
            assert not errors and not any(t.is_alive() for t in threads)
            assert [b.alive for b in cluster.brokers()] == [True, True]
            cluster.stop_broker(1)  # the stop sticks: nothing listens any more
            assert not cluster.brokers()[1].alive
            with socket.socket() as probe:
                assert probe.connect_ex(("127.0.0.1", cluster.servers[1].port)) != 0
            cluster.stop_broker(1)  # a stop of a stopped broker is a no-op
            cluster.start_broker(1)


def _stops_and_starts(cluster, broker: int) -> list[str]:
    """Broker ``broker``'s stops and starts after the cluster's own start."""
    kinds = [e.kind for e in cluster.events if e.kind in ("broker_stopped", "broker_started") and e.broker == broker]
    return kinds[1:]


@pytest.mark.trio
async def test_sync_stop_on_the_loop_comes_after_a_start_under_way():
    # Sync calls on the loop thread: start_broker only schedules the start, so a stop_broker
    # right after it must queue behind it, not find the broker "already stopped" and vanish.
    async with FakeCluster(brokers=2) as cluster:
        cluster.stop_broker(1)  # nothing under way: takes effect at once
        assert not cluster.brokers()[1].alive
        cluster.start_broker(1)
        cluster.stop_broker(1)
        cluster.start_broker(1)
        cluster.stop_broker(1)
        await cluster.wait_for(lambda c: len(_stops_and_starts(c, 1)) == 5, timeout=10)
        await trio.sleep(0.1)  # nothing more is coming
        assert _stops_and_starts(cluster, 1) == ["broker_stopped", *["broker_started", "broker_stopped"] * 2]
        assert [b.alive for b in cluster.brokers()] == [True, False]
        with pytest.raises(OSError):
            await trio.open_tcp_stream("127.0.0.1", cluster.servers[1].port)


@pytest.mark.trio
async def test_a_call_cancelled_before_its_turn_does_not_hold_up_the_next():
    async with FakeCluster(brokers=2) as cluster:
        cluster.stop_broker(1)
        cluster.start_broker(1)  # scheduled: holds the first turn
        with trio.CancelScope() as scope:
            scope.cancel()
            await cluster.start_broker_async(1)  # cancelled while waiting for its turn
        cluster.stop_broker(1)  # queued behind the first start; the cancelled turn is skipped
        want = ["broker_stopped", "broker_started", "broker_stopped"]
        await cluster.wait_for(lambda c: _stops_and_starts(c, 1) == want)
        with trio.fail_after(10):
            await cluster.start_broker_async(1)
        assert [b.alive for b in cluster.brokers()] == [True, True]


@pytest.mark.parametrize("parked", ["fetch", "blackhole"])
def test_a_cluster_stops_at_once_while_requests_are_parked(parked):
    """Stopping cancels a parked request and the task reading its socket meanwhile; neither may
    wait for the other (a hang here once stopped every cluster whose client had a long poll)."""
    context = FakeCluster(topics={"t": 1}).run_in_thread()
    cluster = context.__enter__()
    clients = [RawClient(cluster.servers[0].port) for _ in range(3)]
    try:
        if parked == "blackhole":
            cluster.faults.add(api="Fetch", action="blackhole")
        for client in clients:
            client.send(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=86_400_000))
        wait_until(lambda: len(cluster.servers[0].connections) == 3)
        time.sleep(0.2)  # each request parked, its socket watched
    finally:
        stopped = threading.Event()
        threading.Thread(target=lambda: (context.__exit__(None, None, None), stopped.set()), daemon=True).start()
        assert stopped.wait(10), "the cluster did not stop with requests parked"
        for client in clients:
            client.close()

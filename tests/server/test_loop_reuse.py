"""run_in_thread() clusters take turns on kept event loops: nothing of one cluster reaches the
next, a failure never hands its loop on, and both backends work."""

from __future__ import annotations

import multiprocessing
import socket
import threading

import anyio
import pytest

from fakebroker.cluster import FakeCluster, loops

from .test_cluster_lifecycle import metadata_over_anyio


def _metadata_topics(port: int) -> list[str]:
    return anyio.run(metadata_over_anyio, port)


def _loop_thread(cluster: FakeCluster) -> int:
    return cluster.call(threading.get_ident)


@pytest.fixture(autouse=True)
def no_idle_loops():
    FakeCluster.stop_idle_loops()
    yield
    FakeCluster.stop_idle_loops()


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_the_next_cluster_runs_on_the_loop_the_last_one_left(backend):
    with FakeCluster(topics={"first": 2}).run_in_thread(backend) as first:
        first_thread = _loop_thread(first)
        first_port = first.servers[0].port
        first.create_topic("made-by-test", 1)
    with FakeCluster(topics={"second": 1}).run_in_thread(backend) as second:
        assert _loop_thread(second) == first_thread
        assert second.topics() == {"second": 1}  # nothing of the first cluster
        assert _metadata_topics(second.servers[0].port) == ["second"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", first_port), timeout=1)


def test_two_clusters_at_once_run_on_loops_of_their_own():
    with FakeCluster().run_in_thread() as one, FakeCluster().run_in_thread() as two:
        assert _loop_thread(one) != _loop_thread(two)
    assert FakeCluster.stop_idle_loops() == 2  # both kept, none stopped twice


def test_no_more_than_the_limit_of_loops_waits():
    with FakeCluster().run_in_thread(), FakeCluster().run_in_thread(), FakeCluster().run_in_thread():
        pass
    assert FakeCluster.stop_idle_loops() == loops.IDLE_LOOPS


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_an_exception_in_the_block_goes_on_unchanged_and_the_cluster_stops(backend):
    with pytest.raises(ZeroDivisionError), FakeCluster().run_in_thread(backend) as cluster:
        port = cluster.servers[0].port
        1 / 0  # noqa: B018 - not wrapped in an ExceptionGroup of the cluster's tasks
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    assert FakeCluster.stop_idle_loops() == 1  # the cluster stopped cleanly: its loop was kept


def test_a_cluster_that_cannot_start_raises_and_the_next_one_starts():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(OSError), FakeCluster(port=taken.getsockname()[1]).run_in_thread():
            pass  # pragma: no cover - the start fails
    finally:
        taken.close()
    with FakeCluster(topics={"after": 1}).run_in_thread() as cluster:
        assert cluster.topics() == {"after": 1}


def test_a_cluster_whose_stop_fails_does_not_hand_its_loop_on(monkeypatch):
    async def failing_exit(self, *exc_info):
        await original_exit(self, *exc_info)
        raise RuntimeError("stop failed")

    original_exit = FakeCluster.__aexit__
    monkeypatch.setattr(FakeCluster, "__aexit__", failing_exit)
    with pytest.raises(RuntimeError, match="stop failed"), FakeCluster().run_in_thread():
        pass
    assert FakeCluster.stop_idle_loops() == 0


def _child_runs_a_cluster(answer) -> None:
    with FakeCluster(topics={"child": 1}).run_in_thread() as cluster:
        answer.send((cluster.topics(), _loop_thread(cluster)))


def test_a_forked_child_starts_its_own_loop():
    with FakeCluster().run_in_thread():
        pass  # leaves an idle loop whose thread the child does not have
    ours, theirs = multiprocessing.get_context("fork").Pipe()
    child = multiprocessing.get_context("fork").Process(target=_child_runs_a_cluster, args=(theirs,))
    child.start()
    try:
        assert ours.poll(30)
        topics, _ = ours.recv()
    finally:
        child.join(30)
    assert topics == {"child": 1}
    assert child.exitcode == 0


def test_an_unknown_backend_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match="the backends are 'trio' and 'asyncio'"), FakeCluster().run_in_thread("curio"):
        pass  # pragma: no cover - refused before the start
    assert FakeCluster.stop_idle_loops() == 0


def test_a_loop_that_ends_under_its_cluster_says_so_with_its_cause():
    """Should the loop end while a cluster is still on it (a bug: nothing should end it), the
    cluster's release says that, with the exception that ended it as the cause, rather than
    trio's bare RunFinishedError."""

    class Boom(Exception):
        pass

    loop = loops.LoopThread("trio")

    class Context:
        async def __aenter__(self) -> str:
            return "entered"

        async def __aexit__(self, *exc: object) -> None:
            return None

    async def explode() -> None:
        raise Boom("a task of the loop itself failed")

    with pytest.raises(loops.LoopEnded, match="Boom: a task of the loop itself failed") as ended:
        with loop.hosting(Context()) as value:
            assert value == "entered"
            loop._soon(loop._tasks.start_soon, explode)  # noqa: SLF001 - the failure under test
            loop._thread.join(5)  # noqa: SLF001
    assert isinstance(ended.value.__cause__, BaseException) and not loop.alive

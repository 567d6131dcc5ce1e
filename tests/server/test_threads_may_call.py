"""A cluster running on its own loop (``async with``, as ``fakebroker serve`` runs it): other
threads may call it only while it lends them a portal (``threads_may_call``); otherwise they
are refused instead of racing the loop. Several lenders may overlap."""

from __future__ import annotations

import anyio
import pytest

from fakebroker.cluster import ClusterNotRunning, FakeCluster
from fakebroker.cluster.proxy import NotRunning


@pytest.mark.trio
async def test_a_thread_is_refused_without_a_portal_and_served_with_one():
    async with FakeCluster(topics={"t": 2}) as cluster:
        with pytest.raises(NotRunning, match="threads_may_call"):
            await anyio.to_thread.run_sync(cluster.topics)
        async with cluster.threads_may_call():
            assert await anyio.to_thread.run_sync(cluster.topics) == {"t": 2}
            await anyio.to_thread.run_sync(lambda: cluster.create_topic("u", 3))
        assert cluster.topics() == {"t": 2, "u": 3}  # on the loop itself: always
        with pytest.raises(NotRunning):
            await anyio.to_thread.run_sync(cluster.topics)
    with pytest.raises(ClusterNotRunning, match="has stopped"):  # after the stop: from nowhere
        cluster.topics()


@pytest.mark.trio
async def test_overlapping_lenders_keep_each_other_served():
    async with FakeCluster(topics={"t": 1}) as cluster:
        first_done = anyio.Event()

        async def first() -> None:
            async with cluster.threads_may_call():
                await anyio.to_thread.run_sync(cluster.topics)
            first_done.set()

        async with anyio.create_task_group() as tg:
            async with cluster.threads_may_call():
                tg.start_soon(first)
                await first_done.wait()  # the first lender left while this one is still in
                assert await anyio.to_thread.run_sync(cluster.topics) == {"t": 1}

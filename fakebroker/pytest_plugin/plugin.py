"""Fixtures, the ``fakebroker`` marker, options, and the timeline in failure reports.

- ``fakebroker``: a running cluster per test for synchronous tests (run in a thread); with
  ``--fakebroker-shared`` one cluster per session (per xdist worker) cleaned after each test.
- ``async_fakebroker``: the same inside the test's own loop, for trio (pytest-trio) and
  anyio/asyncio tests.
- ``fakebroker_bootstrap``: the bootstrap address as a plain string.
- ``fakebroker_unique``: ``unique("orders")`` gives a name no other test uses (for shared clusters).
"""

from __future__ import annotations

import itertools
import os
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..cluster import FakeCluster
from ..timeline import draw_timeline, timeline_text
from . import settings

CLUSTERS = pytest.StashKey[list[tuple[FakeCluster, int]]]()  # (cluster, first event seq of this test)
_names = itertools.count(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fakebroker(**options): FakeCluster options for this test's cluster (brokers=3, topics={...}, "
        "virtual_time=True, config={...}, ...)",
    )


def _remember(item: pytest.Item, cluster: FakeCluster, since: int) -> None:
    item.stash.setdefault(CLUSTERS, []).append((cluster, since))


# -- clusters -----------------------------------------------------------------------------
class _Shared:
    """A session cluster, put back in order after every test: topics, groups and
    transactional ids the test made are deleted (open transactions aborted), fault rules and
    network cuts removed, stopped brokers started."""

    def __init__(self, cluster: FakeCluster):
        self.cluster = cluster

    def lease(self) -> tuple[set[str], set[str], set[str]]:
        return set(self.cluster.topics()), set(self.cluster.groups()), set(self.cluster.transactions())

    def restore(self, before: tuple[set[str], set[str], set[str]]) -> None:
        cluster = self.cluster
        cluster.faults.clear()
        cluster.heal()
        for broker in cluster.brokers():
            if not broker.alive:
                cluster.start_broker(broker.node_id)
        new_txns = set(cluster.transactions()) - before[2]
        if new_txns:  # before the topics go, so their abort markers land
            cluster.forget_transactions(new_txns)
        for topic in set(cluster.topics()) - before[0]:
            cluster.delete_topic(topic)
        new_groups = set(cluster.groups()) - before[1]
        if new_groups:  # members, timers, persisted records and offsets
            cluster.forget_groups(new_groups)


@pytest.fixture(scope="session")
def _fakebroker_shared(request: pytest.FixtureRequest) -> Iterator[_Shared | None]:
    if not settings.shared(request.config):
        yield None
        return
    with FakeCluster(**settings.base_options(request.config)).run_in_thread() as cluster:
        yield _Shared(cluster)


@pytest.fixture
def fakebroker(request: pytest.FixtureRequest, _fakebroker_shared: _Shared | None) -> Iterator[FakeCluster]:
    """A running FakeCluster for this test (threaded: call it from synchronous code)."""
    item = request.node
    if _fakebroker_shared is not None and settings.marker_options(item) is None:
        cluster = _fakebroker_shared.cluster
        before = _fakebroker_shared.lease()
        _remember(item, cluster, cluster.event_count)
        try:
            yield cluster
        finally:
            _fakebroker_shared.restore(before)
        return
    with FakeCluster(**settings.options_for(item)).run_in_thread() as cluster:
        _remember(item, cluster, 0)
        yield cluster


@pytest.fixture
async def async_fakebroker(request: pytest.FixtureRequest) -> AsyncIterator[FakeCluster]:
    """A running FakeCluster in the test's own event loop (trio or asyncio)."""
    async with FakeCluster(**settings.options_for(request.node)) as cluster:
        _remember(request.node, cluster, 0)
        yield cluster


@pytest.fixture
def fakebroker_bootstrap(fakebroker: FakeCluster) -> str:
    """``"127.0.0.1:P1,..."`` of this test's cluster."""
    return fakebroker.bootstrap_servers


@pytest.fixture
def fakebroker_unique(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique("orders")`` -> ``"orders-<test>-<n>"``: names no other test (or worker) uses."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[-60:].strip("-")

    def unique(name: str) -> str:
        return f"{name}-{stem}{'-' + worker if worker else ''}-{next(_names)}"[:249]

    return unique


# -- failure reports ------------------------------------------------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for index, (cluster, since) in enumerate(item.stash.get(CLUSTERS, [])):
        events = cluster.events_since(since)
        text = timeline_text(events)
        picture = _write_picture(item, cluster, events, index)
        if picture:
            text += f"\n\ntimeline picture: {picture}"
        report.sections.append((f"fakebroker timeline ({cluster.bootstrap_servers})", text))


def _write_picture(item: pytest.Item, cluster: FakeCluster, events: list, index: int) -> str | None:
    folder = settings.timeline_dir(item.config) or os.path.join(tempfile.gettempdir(), "fakebroker-timelines")
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", item.nodeid)[-120:] + (f"-{index}" if index else "") + ".svg"
    path = Path(folder) / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        draw_timeline(events, path)
    except Exception:  # no matplotlib, or nothing to draw: the text timeline is still there
        return None
    return str(path)

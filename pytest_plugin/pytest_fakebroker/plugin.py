"""Fixtures, the ``fakebroker`` marker, options, and the timeline in failure reports.

- ``fakebroker``: a running cluster per test for synchronous tests (run in a thread); with
  ``--fakebroker-shared`` one cluster per session (per xdist worker) cleaned after each test.
- ``async_fakebroker``: the same inside the test's own loop, for trio (pytest-trio),
  anyio (``@pytest.mark.anyio``) and pytest-asyncio (strict and auto mode) tests.
- ``fakebroker_bootstrap``: the bootstrap address as a plain string.
- ``fakebroker_unique``: ``unique("orders")`` gives a name no other test uses (for shared clusters).

fakebroker itself is imported at the first fixture use (and by a failure's report), never at
plugin load: a pytest run that uses no fixture does not pay for it.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import re
import sys
import types
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from . import settings

if TYPE_CHECKING:
    from fakebroker import FakeCluster

ASYNCIO = pytest.StashKey[bool]()  # pytest-asyncio is active: its tests get async_fakebroker through it
CLUSTERS = pytest.StashKey[list[tuple["FakeCluster", int]]]()  # (cluster, first event seq of this test)
BASETEMP = pytest.StashKey[Path]()  # pytest's basetemp, where failure pictures go by default
FROZEN = pytest.StashKey[bool]()  # the session's objects were frozen (fakebroker_gc_freeze)
_names = itertools.count(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fakebroker(**options): FakeCluster options for this test's cluster (brokers=3, topics={...}, "
        "virtual_time=True, config={...}, ...)",
    )
    if config.pluginmanager.has_plugin("anyio"):
        # Registered after anyio's own plugin, so this fixture is the one its tests get.
        config.pluginmanager.register(_anyio_backends(settings.anyio_backends(config)), "fakebroker-anyio-backends")
    # under any registration name ("asyncio" from its entry point, "pytest_asyncio.plugin" from -p)
    plugins = config.pluginmanager.get_plugins()
    if any(getattr(plugin, "__name__", None) == "pytest_asyncio.plugin" for plugin in plugins):
        config.stash[ASYNCIO] = True
        config.pluginmanager.register(_asyncio_fixtures(), "fakebroker-asyncio-fixtures")


def _anyio_backends(names: list[str]) -> object:
    """anyio >= 4.12 runs every ``@pytest.mark.anyio`` test on each installed backend, and
    installing fakebroker installs trio: without this, an asyncio project's anyio tests would
    all run twice, once on trio. Its default is asyncio only (as before anyio 4.12);
    ``fakebroker_anyio_backends`` in the ini file changes it, a conftest fixture overrides it."""

    @pytest.fixture(scope="module", params=names)
    def anyio_backend(request: pytest.FixtureRequest) -> Any:
        return request.param

    holder = types.ModuleType("pytest_fakebroker.anyio_backends")  # pytest reads fixtures off modules
    holder.anyio_backend = anyio_backend  # type: ignore[attr-defined]
    return holder


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:  # a misspelt marker option fails the run before any test starts
        settings.marker_options(item)


def _remember(item: pytest.Item, cluster: FakeCluster, since: int, basetemp: Path) -> None:
    item.stash.setdefault(CLUSTERS, []).append((cluster, since))
    item.stash[BASETEMP] = basetemp


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


def _freeze_once(config: pytest.Config) -> None:
    """Once per session, when the first cluster runs: move every object that exists (pytest,
    the clients, fakebroker's modules, the session's fixtures) out of the collector's reach.
    Each test's cluster allocates enough to set off full collections, and those walked all of
    it: 41 ms per test against 28 with it frozen (benchmarks/fixture.py). The young
    generations' garbage is collected first; the oldest generation is not walked: a full
    collection here took 18-25 ms of the session's first test and found 0-5 objects. Objects
    made later are collected as usual. ``fakebroker serve`` does the same at start;
    ``fakebroker_gc_freeze = false`` turns it off."""
    if config.stash.get(FROZEN, False) or not settings.gc_freeze(config):
        return
    config.stash[FROZEN] = True
    gc.collect(1)
    gc.freeze()


def _fakecluster(config: pytest.Config) -> type[FakeCluster]:
    """``fakebroker.FakeCluster``, imported by the first fixture that needs it. Before that
    import, what exists (pytest, the clients, the tests) is frozen as :func:`_freeze_once`
    freezes it: the import makes objects enough to set off full collections, and each walked
    everything pytest had made. 13-18 ms of the import's 160-190 (benchmarks/fixture.py's
    first test)."""
    if "fakebroker" not in sys.modules and settings.gc_freeze(config):
        gc.collect(1)
        gc.freeze()
    from fakebroker import FakeCluster

    return FakeCluster


@pytest.fixture(scope="session")
def _fakebroker_shared(request: pytest.FixtureRequest) -> Iterator[_Shared | None]:
    if not settings.shared(request.config):
        yield None
        return
    with _fakecluster(request.config)(**settings.base_options(request.config)).run_in_thread() as cluster:
        _freeze_once(request.config)
        yield _Shared(cluster)


@pytest.fixture
def fakebroker(
    request: pytest.FixtureRequest, _fakebroker_shared: _Shared | None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FakeCluster]:
    """A running FakeCluster for this test (threaded: call it from synchronous code)."""
    item = request.node
    basetemp = tmp_path_factory.getbasetemp()
    if _fakebroker_shared is not None and settings.marker_options(item) is None:
        cluster = _fakebroker_shared.cluster
        before = _fakebroker_shared.lease()
        _remember(item, cluster, cluster.event_count, basetemp)
        try:
            yield cluster
        finally:
            _fakebroker_shared.restore(before)
        return
    with _fakecluster(request.config)(**settings.options_for(item)).run_in_thread() as cluster:
        _freeze_once(request.config)
        _remember(item, cluster, 0, basetemp)
        yield cluster


async def _async_fakebroker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FakeCluster]:
    """A running FakeCluster in the test's own event loop: trio (pytest-trio), anyio
    (``@pytest.mark.anyio``, either backend) or pytest-asyncio (strict or auto mode)."""
    # pytest-trio and anyio's plugin run this generator in the test's loop, setup and teardown in
    # one task; a test pytest-asyncio runs gets its cluster from _asyncio_cluster instead (below)
    async with _fakecluster(request.config)(**settings.options_for(request.node)) as cluster:
        _freeze_once(request.config)
        _remember(request.node, cluster, 0, tmp_path_factory.getbasetemp())
        yield cluster


async_fakebroker = pytest.fixture(name="async_fakebroker")(_async_fakebroker)


# -- pytest-asyncio -------------------------------------------------------------------------
# pytest-asyncio leaves an async fixture declared with a plain @pytest.fixture to other plugins in
# strict mode (nothing runs it: "requested an async fixture ... with no plugin or hook that
# handled it"), and in auto mode runs its setup and its teardown as two tasks: FakeCluster's
# `async with` holds a task group, whose cancel scope must be left by the task that entered it.
# So a test that pytest-asyncio runs gets async_fakebroker from a pytest_asyncio.fixture on the
# test's own loop scope, which keeps the cluster in one task of that loop from start to stop.
LoopScope = Literal["function", "class", "module", "package", "session"]
LOOP_SCOPES: tuple[LoopScope, ...] = ("function", "class", "module", "package", "session")


def _asyncio_fixture_name(loop_scope: str) -> str:
    return f"_fakebroker_asyncio_{loop_scope}_loop"


def _asyncio_fixtures() -> object:
    """One pytest-asyncio fixture per loop scope (function-scoped, on that scope's loop)."""
    import pytest_asyncio

    def cluster_fixture() -> Callable[..., AsyncIterator[FakeCluster]]:
        # a function of its own per scope: pytest_asyncio.fixture marks the function it is given
        async def cluster(
            request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> AsyncIterator[FakeCluster]:
            async with _asyncio_cluster(request, tmp_path_factory) as running:
                yield running

        return cluster

    holder = types.ModuleType("pytest_fakebroker.asyncio_fixtures")  # pytest reads fixtures off modules
    for loop_scope in LOOP_SCOPES:
        name = _asyncio_fixture_name(loop_scope)
        setattr(holder, name, pytest_asyncio.fixture(cluster_fixture(), name=name, loop_scope=loop_scope))
    return holder


@contextlib.asynccontextmanager
async def _asyncio_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FakeCluster]:
    import asyncio

    cluster_class = _fakecluster(request.config)
    ready: asyncio.Future[FakeCluster] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def hold() -> None:
        async with cluster_class(**settings.options_for(request.node)) as cluster:
            ready.set_result(cluster)
            await stop.wait()

    task = asyncio.create_task(hold(), name=f"fakebroker cluster of {request.node.nodeid}")
    try:
        first: set[asyncio.Future[Any]] = {task, ready}
        await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # setup interrupted
        task.cancel()
        raise
    if not ready.done():  # the cluster did not start: its error
        task.result()
        raise RuntimeError("fakebroker: the cluster's task ended before the cluster started")
    cluster = ready.result()
    _freeze_once(request.config)
    _remember(request.node, cluster, 0, tmp_path_factory.getbasetemp())
    try:
        yield cluster
    finally:
        stop.set()
        await task  # the cluster stopped, in the task that started it (its error, if it failed)


def _asyncio_loop_scope(item: pytest.Item) -> str | None:
    """The loop scope pytest-asyncio runs ``item`` on, or None when pytest-asyncio does not run it."""
    if not item.config.stash.get(ASYNCIO, False):
        return None
    import pytest_asyncio

    if not pytest_asyncio.is_async_test(item):
        return None
    marker = item.get_closest_marker("asyncio")
    scope = (marker.kwargs.get("loop_scope") or marker.kwargs.get("scope")) if marker else None
    if scope is None:
        try:
            scope = item.config.getini("asyncio_default_test_loop_scope")
        except ValueError:  # a pytest-asyncio without the option: tests run on the function's loop
            scope = None
    return str(scope or "function")


@pytest.hookimpl(tryfirst=True, wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Any:
    """For a test pytest-asyncio runs, ``async_fakebroker`` is a plain fixture that hands over
    the pytest-asyncio fixture of the test's loop scope. First of the wrappers (tryfirst), so
    anyio's plugin and pytest-asyncio's see a plain function here and leave it alone; swapped
    back at the test's teardown, not before its call, where pytest-asyncio's strict mode warns
    about a plain async fixture it sees on an asyncio test."""
    loop_scope = _asyncio_loop_scope(request.node) if fixturedef.func is _async_fakebroker else None
    if loop_scope is None:
        return (yield)
    item = request.node
    conflict = "@pytest.mark.anyio" if "anyio_backend" in request.fixturenames else None
    if item.get_closest_marker("trio") is not None:
        conflict = "@pytest.mark.trio"

    def handover(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
        if conflict is not None:
            pytest.fail(
                f"{item.nodeid}: pytest-asyncio and {conflict} both claim this test (pytest-asyncio's "
                "auto mode takes every async test), and each would run its part on an event loop of its "
                "own: the test on pytest-asyncio's, its async fixtures on the other's. In a suite that "
                "mixes plugins, set asyncio_mode = strict and mark pytest-asyncio's tests "
                "@pytest.mark.asyncio (or use the other plugin's marker alone).",
                pytrace=False,
            )
        return request.getfixturevalue(_asyncio_fixture_name(loop_scope))

    original = fixturedef.func
    setattr(fixturedef, "func", handover)  # typed Final by pytest; anyio's plugin swaps it too
    item.addfinalizer(lambda: setattr(fixturedef, "func", original))
    return (yield)


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
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    clusters = item.stash.get(CLUSTERS, [])
    if report.when != "call" or not report.failed or not clusters:
        return
    from fakebroker.timeline import timeline_text

    for index, (cluster, since) in enumerate(clusters):
        events = cluster.events_since(since)
        text = timeline_text(events) + "\n\n" + _write_picture(item, events, index)
        report.sections.append((f"fakebroker timeline ({cluster.bootstrap_servers})", text))


def _write_picture(item: pytest.Item, events: list[Any], index: int) -> str:
    """Draws the failure's picture; returns the line that says where it is (or why not)."""
    from fakebroker.timeline import CHARTS_MISSING, draw_timeline

    folder = settings.timeline_dir(item.config) or item.stash[BASETEMP] / "fakebroker-timelines"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", item.nodeid)[-120:] + (f"-{index}" if index else "") + ".svg"
    path = Path(folder) / name
    try:
        draw_timeline(events, path)
    except RuntimeError as exc:
        if str(exc) == CHARTS_MISSING:
            return f"timeline picture: not drawn ({CHARTS_MISSING})"
        return f"timeline picture: not drawn ({exc})"
    except Exception as exc:  # the text timeline above is what matters; say why there is no picture
        return f"timeline picture: not drawn ({type(exc).__name__}: {exc})"
    return f"timeline picture: {path}"

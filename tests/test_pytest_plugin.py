"""The pytest plugin, run the way users run it: inner pytest sessions through ``pytester``."""

from __future__ import annotations

import importlib.util
import os

import matplotlib.figure  # noqa: F401
import pytest

# pytester puts sys.modules back after an inner session run in this process; numpy, imported for
# the first time inside one (a failure's timeline picture), would be dropped, and numpy cannot be
# imported twice in a process ("cannot load module more than once"): import it here, before any.
pytest.importorskip("xdist")


@pytest.fixture(autouse=True)
def _pytest_asyncio_told_its_default(request, monkeypatch):
    """pytest-asyncio (installed for the tests of it below) warns at the start of every inner
    session whose ini does not set its default loop scope, into the outer run's summary."""
    if "pytester" in request.fixturenames and importlib.util.find_spec("pytest_asyncio") is not None:
        request.getfixturevalue("pytester")  # first: it unsets PYTEST_ADDOPTS
        addopts = os.environ.get("PYTEST_ADDOPTS", "") + " -o asyncio_default_fixture_loop_scope=function"
        monkeypatch.setenv("PYTEST_ADDOPTS", addopts.strip())


TOPIC_TEST = """
import socket
import pytest

def test_running(fakebroker, fakebroker_bootstrap, tmp_path):
    assert fakebroker_bootstrap == fakebroker.bootstrap_servers
    host, port = fakebroker_bootstrap.split(",")[0].split(":")
    socket.create_connection((host, int(port)), timeout=2).close()
    open({port_file!r}, "w").write(port)
"""


def test_fixture_runs_a_cluster_per_test_and_stops_it(pytester):
    port_file = pytester.path / "port.txt"
    pytester.makepyfile(TOPIC_TEST.format(port_file=str(port_file)))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    import socket

    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(port_file.read_text())), timeout=1)


def test_marker_takes_every_cluster_setting(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fakebroker(brokers=3, topics={"orders": 6}, virtual_time=True, config={"num.partitions": 4})
        def test_marked(fakebroker):
            assert len(fakebroker.servers) == 3
            assert fakebroker.topics() == {"orders": 6}
            assert fakebroker.clock.virtual
            assert fakebroker.state.config.get_int("num.partitions") == 4

    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_misspelt_marker_option_fails_at_collection(pytester):
    pytester.makepyfile("""
        import pytest

        def test_fine(fakebroker):
            pass

        @pytest.mark.fakebroker(brokres=2)
        def test_misspelt():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*test_misspelt: @pytest.mark.fakebroker got an unknown option 'brokres'; did you mean 'brokers'? *"]
    )


def test_marker_options_are_the_clusters_keyword_arguments():
    import inspect

    from fakebroker import FakeCluster
    from pytest_fakebroker.settings import CLUSTER_PARAMS

    assert CLUSTER_PARAMS == set(inspect.signature(FakeCluster.__init__).parameters) - {"self"}


def test_loading_the_plugin_imports_no_fakebroker_until_a_fixture_is_used(pytester):
    pytester.makeconftest("""
        import sys

        def pytest_collection_finish(session):
            loaded = sorted(m for m in sys.modules if m.split(".")[0] == "fakebroker")
            print("LOADED AT COLLECTION:", loaded)
    """)
    pytester.makepyfile("""
        import sys

        def test_plain():
            assert "fakebroker.cluster" not in sys.modules

        def test_with_fixture(fakebroker_bootstrap):
            assert "fakebroker.cluster" in sys.modules
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["LOADED AT COLLECTION: []"])


def test_ini_and_command_line_options(pytester):
    pytester.makeini("""
        [pytest]
        fakebroker_brokers = 2
        fakebroker_config =
            auto.create.topics.enable=false
            num.partitions=5
    """)
    pytester.makepyfile("""
        def test_options(fakebroker, pytestconfig):
            assert len(fakebroker.servers) == int(pytestconfig.getoption("fakebroker_brokers") or 2)
            assert fakebroker.state.config.get("auto.create.topics.enable") == "false"
            assert fakebroker.state.config.get_int("num.partitions") == 5
            assert fakebroker.clock.virtual == bool(pytestconfig.getoption("fakebroker_virtual_time"))
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.runpytest(
        "-p", "no:cacheprovider", "--fakebroker-brokers", "3", "--fakebroker-virtual-time"
    ).assert_outcomes(passed=1)


def test_async_fixture_under_trio_and_anyio(pytester):
    pytester.makepyfile("""
        import anyio
        import pytest

        @pytest.mark.trio
        @pytest.mark.fakebroker(brokers=2)
        async def test_trio(async_fakebroker):
            stream = await anyio.connect_tcp("127.0.0.1", async_fakebroker.servers[1].port)
            await stream.aclose()
            async_fakebroker.create_topic("t", 3)
            assert async_fakebroker.topics() == {"t": 3}

        @pytest.fixture
        def anyio_backend():
            return "asyncio"

        @pytest.mark.anyio
        async def test_asyncio(async_fakebroker):
            stream = await anyio.connect_tcp("127.0.0.1", async_fakebroker.servers[0].port)
            await stream.aclose()
            await async_fakebroker.wait_for(lambda c: c.topics() == {}, timeout=1)
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


ASYNCIO_TESTS = """
    import asyncio
    import socket

    import pytest
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    PORTS = []


    async def round_trip(cluster, value):
        cluster.create_topic("orders", 2)
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
        await producer.start()
        try:
            sent = await producer.send_and_wait("orders", value, key=b"k", partition=1)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            "orders", bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            record = await asyncio.wait_for(consumer.getone(), 20)
        finally:
            await consumer.stop()
        assert (record.topic, record.partition, record.offset) == ("orders", 1, sent.offset)
        assert (record.key, record.value) == (b"k", value)
        PORTS.append(cluster.servers[0].port)


    {mark}
    async def test_produce_and_consume(async_fakebroker):
        await round_trip(async_fakebroker, b"first")


    {mark}
    async def test_the_next_test_gets_a_new_cluster(async_fakebroker):
        await round_trip(async_fakebroker, b"second")
        assert PORTS[0] != PORTS[1]
        with pytest.raises(OSError):  # the first test's cluster has stopped
            socket.create_connection(("127.0.0.1", PORTS[0]), timeout=2).close()


    def clusters_on_this_loop():
        return sorted(t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("fakebroker cluster"))


    @pytest.mark.asyncio(loop_scope="module")
    @pytest.mark.fakebroker(brokers=2)
    async def test_on_the_modules_loop(async_fakebroker):
        assert len(async_fakebroker.servers) == 2
        await round_trip(async_fakebroker, b"module")
        assert len(clusters_on_this_loop()) == 1


    @pytest.mark.asyncio(loop_scope="module")
    async def test_again_on_the_modules_loop(async_fakebroker, request):
        await round_trip(async_fakebroker, b"module again")
        # the same loop as the test before: its cluster's task is gone, this test's alone runs
        assert clusters_on_this_loop() == [f"fakebroker cluster of {{request.node.nodeid}}"]


    @pytest.fixture
    def anyio_backend():
        return "asyncio"


    @pytest.mark.anyio
    async def test_anyio_after_them(async_fakebroker):
        await round_trip(async_fakebroker, b"anyio")


    @pytest.mark.trio
    async def test_trio_after_them(async_fakebroker):
        import trio

        stream = await trio.open_tcp_stream("127.0.0.1", async_fakebroker.servers[0].port)
        await stream.aclose()
        async_fakebroker.create_topic("t", 3)
        assert async_fakebroker.topics() == {{"t": 3}}
"""
# -p asyncio: loaded even where plugins are not autoloaded; the run fails on any
# PytestDeprecationWarning (strict mode's "async @pytest.fixture" warning), and a hang fails
# its test within a minute instead of waiting out pytest's.
ASYNCIO_ARGS = ("-p", "no:cacheprovider", "-p", "asyncio", "-o", "asyncio_default_fixture_loop_scope=function")
ASYNCIO_ARGS += ("-o", "timeout=60", "-W", "error::pytest.PytestDeprecationWarning", "-p", "no:randomly")


def test_async_fixture_under_pytest_asyncio_strict_mode(pytester):
    # strict mode is how pytest-asyncio shares a suite with anyio and pytest-trio: each test
    # here gets its cluster on its own plugin's loop, the anyio and trio tests after the asyncio ones
    pytester.makepyfile(ASYNCIO_TESTS.format(mark="@pytest.mark.asyncio"))
    result = pytester.runpytest_subprocess(*ASYNCIO_ARGS, "-o", "asyncio_mode=strict", "-v")
    result.assert_outcomes(passed=6)
    result.stdout.re_match_lines([r"(?i)asyncio: mode=(mode\.)?strict"])


def test_async_fixture_under_pytest_asyncio_auto_mode(pytester):
    # auto mode takes every async test, anyio's and trio's too: those fail at once, saying why,
    # instead of running the test and its cluster on two loops (a 40 s hang, then a failure)
    pytester.makepyfile(ASYNCIO_TESTS.format(mark=""))
    result = pytester.runpytest_subprocess(*ASYNCIO_ARGS, "-o", "asyncio_mode=auto", "-v")
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.re_match_lines([r"(?i)asyncio: mode=(mode\.)?auto"])
    result.stdout.fnmatch_lines(
        [
            "*test_anyio_after_them: pytest-asyncio and @pytest.mark.anyio both claim this test*",
            "*test_trio_after_them: pytest-asyncio and @pytest.mark.trio both claim this test*",
        ]
    )


def test_shared_cluster_is_cleaned_between_tests(pytester):
    pytester.makepyfile("""
        BOOTSTRAPS = set()

        def test_one(fakebroker, fakebroker_unique):
            BOOTSTRAPS.add(fakebroker.bootstrap_servers)
            fakebroker.create_topic(fakebroker_unique("orders"), 2)
            fakebroker.create_topic("fixed", 1)
            from confluent_kafka import Producer
            producer = Producer({"bootstrap.servers": fakebroker.bootstrap_servers, "transactional.id": "left-open"})
            producer.init_transactions(10)
            producer.begin_transaction()
            producer.produce("fixed", b"never committed", partition=0)
            assert producer.flush(10) == 0
            assert fakebroker.transaction("left-open").state == "Ongoing"
            fakebroker.faults.add(api="Metadata", delay=1)
            fakebroker.stop_broker(1)
            from confluent_kafka import Consumer, TopicPartition
            consumer = Consumer({"bootstrap.servers": fakebroker.bootstrap_servers, "group.id": "g1"})
            consumer.commit(offsets=[TopicPartition("fixed", 0, 1)], asynchronous=False)
            consumer.close()
            assert fakebroker.committed("g1") == {("fixed", 0): 1}

        def test_two(fakebroker, fakebroker_unique):
            BOOTSTRAPS.add(fakebroker.bootstrap_servers)
            assert len(BOOTSTRAPS) == 1  # the same cluster
            assert fakebroker.topics() == {}  # test_one's topics are gone
            assert len(fakebroker.faults) == 0
            assert all(b.alive for b in fakebroker.state.brokers.values())
            assert fakebroker.groups() == [] and fakebroker.committed("g1") == {}
            assert fakebroker.transactions() == []  # test_one's open transaction was aborted, its id dropped
            fakebroker.create_topic("fixed", 1)
            assert fakebroker_unique("orders") != fakebroker_unique("orders")
    """)
    pytester.runpytest("-p", "no:cacheprovider", "--fakebroker-shared", "--fakebroker-brokers", "2").assert_outcomes(
        passed=2
    )


def test_xdist_workers_get_their_own_clusters(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.parametrize("n", range(6))
        def test_each(fakebroker, n):
            fakebroker.create_topic("same-name", 1)
            assert fakebroker.topics() == {"same-name": 1}
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=6)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--fakebroker-shared")
    result.assert_outcomes(passed=6)


FAILING_TEST = """
    def test_fails(fakebroker):
        fakebroker.create_topic("orders", 3)
        fakebroker.faults.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS")
        assert fakebroker.topics() == {}
"""


def test_failure_report_shows_the_timeline(pytester, tmp_path):
    pytester.makepyfile(FAILING_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fakebroker-timeline-dir={tmp_path}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fakebroker timeline*", "*topic_created*orders*", "*timeline picture: *"])
    pictures = list(tmp_path.glob("*.svg"))
    assert len(pictures) == 1 and pictures[0].stat().st_size > 1000


def test_failure_pictures_go_under_pytests_basetemp(pytester, tmp_path):
    pytester.makepyfile(FAILING_TEST)
    basetemp = tmp_path / "base"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--basetemp={basetemp}")
    result.assert_outcomes(failed=1)
    pictures = list((basetemp / "fakebroker-timelines").glob("*.svg"))
    assert [p.name for p in pictures] == ["test_failure_pictures_go_under_pytests_basetemp.py_test_fails.svg"]
    result.stdout.fnmatch_lines([f"timeline picture: {pictures[0]}"])


def test_without_matplotlib_the_report_says_how_to_get_the_picture(pytester, tmp_path):
    pytester.makeconftest("""
        import sys

        sys.modules["matplotlib"] = None  # as if the charts extra were not installed
    """)
    pytester.makepyfile(FAILING_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--basetemp={tmp_path / 'base'}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*topic_created*orders*",
            "timeline picture: not drawn (drawing a timeline needs matplotlib: pip install 'fakebroker[charts]')",
        ]
    )
    assert not (tmp_path / "base" / "fakebroker-timelines").exists()


ANYIO_TESTS = """
    import sniffio
    import pytest

    @pytest.mark.anyio
    async def test_backend():
        print("BACKEND", sniffio.current_async_library())
"""


def test_anyio_tests_run_on_asyncio_only_unless_asked(pytester):
    pytester.makepyfile(ANYIO_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*BACKEND asyncio*"])
    pytester.makeini("""
        [pytest]
        fakebroker_anyio_backends = asyncio trio
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*BACKEND asyncio*", "*BACKEND trio*"])


def test_a_conftest_anyio_backend_still_wins(pytester):
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def anyio_backend():
            return "trio"
    """)
    pytester.makepyfile(ANYIO_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*BACKEND trio*"])


@pytest.mark.parametrize("freeze", [True, False])
def test_the_first_cluster_freezes_the_sessions_objects_unless_turned_off(pytester, freeze):
    pytester.makeini(f"[pytest]\nfakebroker_gc_freeze = {'true' if freeze else 'false'}\n")
    inner = """
        import gc

        FROZEN = []

        def test_before():
            assert gc.get_freeze_count() == 0

        def test_what_exists_is_frozen_before_fakebroker_is_imported(request):
            import sys
            from pytest_fakebroker.plugin import _fakecluster

            assert "fakebroker" not in sys.modules
            assert _fakecluster(request.config).__name__ == "FakeCluster"
            before = gc.get_freeze_count()
            assert (before > 10_000) if FREEZE else before == 0

        def test_first_cluster(fakebroker):
            FROZEN.append(gc.get_freeze_count())
            assert (FROZEN[0] > 10_000) if FREEZE else FROZEN[0] == 0

        def test_later_clusters_freeze_nothing_more(fakebroker):
            assert gc.get_freeze_count() <= FROZEN[0]  # frozen objects freed leave the count
    """
    pytester.makepyfile(inner.replace("FREEZE", str(freeze)))
    # a process of its own: freezing is process-wide
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=4)

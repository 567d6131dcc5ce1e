"""The garbage-collector thresholds while clusters run (fakebroker/cluster/collector.py): raised
while any cluster with ``tune_gc`` runs, given back at the end of the first collection after
the last one stops, left alone otherwise."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fakebroker import FakeCluster
from fakebroker.cluster import collector
from fakebroker.cluster.collector import RUNNING_THRESHOLDS

from ..ports import a_taken_port

DEFAULTS = (700, 10, 10)


@pytest.fixture(autouse=True)
def python_defaults() -> Iterator[None]:
    # these tests need the process's only clusters: one an earlier test left running (a
    # fixture of a wider scope than its module) holds the thresholds raised throughout
    assert collector._holders == 0, "a cluster of an earlier test of this process still runs"
    collector.restore_now()  # what an earlier test's cluster left raised
    was = gc.get_threshold()
    gc.set_threshold(*DEFAULTS)
    try:
        yield
    finally:
        gc.set_threshold(*was)


def given_back() -> tuple[int, ...]:
    """The thresholds after the next collection (which gives back what a stop left raised)."""
    gc.collect(0)
    return gc.get_threshold()


def test_a_running_cluster_raises_the_thresholds_and_the_next_collection_after_its_stop_gives_them_back():
    with FakeCluster().run_in_thread():
        assert gc.get_threshold() == RUNNING_THRESHOLDS
    # not at once: a collection then would move the stopping cluster's objects to an older
    # generation, to be walked again and again there
    assert gc.get_threshold() == RUNNING_THRESHOLDS
    assert given_back() == DEFAULTS


def test_a_cluster_started_before_that_collection_keeps_them_raised():
    with FakeCluster().run_in_thread():
        pass
    with FakeCluster().run_in_thread():
        assert gc.get_threshold() == RUNNING_THRESHOLDS
        gc.collect(0)
        assert gc.get_threshold() == RUNNING_THRESHOLDS  # it still runs
    assert given_back() == DEFAULTS


def test_they_stay_raised_until_the_last_of_two_clusters_stops():
    first = FakeCluster().run_in_thread()
    first.__enter__()
    try:
        with FakeCluster().run_in_thread():
            assert gc.get_threshold() == RUNNING_THRESHOLDS
        assert given_back() == RUNNING_THRESHOLDS  # the first still runs
    finally:
        first.__exit__(None, None, None)
    assert given_back() == DEFAULTS


def test_higher_thresholds_of_the_process_are_never_lowered():
    gc.set_threshold(50_000, 5, 100)
    with FakeCluster().run_in_thread():
        assert gc.get_threshold() == (50_000, 20, 100)
    assert given_back() == (50_000, 5, 100)


def test_thresholds_changed_while_it_runs_are_the_process_own_and_stay():
    with FakeCluster().run_in_thread():
        gc.set_threshold(1_000, 10, 10)
    assert given_back() == (1_000, 10, 10)


def test_thresholds_changed_after_the_stop_are_the_process_own_and_stay():
    with FakeCluster().run_in_thread():
        pass
    gc.set_threshold(3_000, 10, 10)
    assert given_back() == (3_000, 10, 10)
    with FakeCluster().run_in_thread():
        assert gc.get_threshold() == (20_000, 20, 20)
    assert given_back() == (3_000, 10, 10)


def test_tune_gc_false_and_a_switched_off_collector_are_left_alone():
    with FakeCluster(tune_gc=False).run_in_thread():
        assert gc.get_threshold() == DEFAULTS
    assert given_back() == DEFAULTS
    gc.set_threshold(0)
    with FakeCluster().run_in_thread():
        assert gc.get_threshold()[0] == 0
    assert given_back()[0] == 0


@pytest.mark.trio
async def test_a_cluster_started_with_async_with_does_the_same():
    async with FakeCluster():
        assert gc.get_threshold() == RUNNING_THRESHOLDS
    assert given_back() == DEFAULTS


def test_a_cluster_that_fails_to_start_gives_them_back():
    with a_taken_port() as port:
        cluster = FakeCluster(port=port)
        with pytest.raises(OSError), cluster.run_in_thread():
            pass
    assert given_back() == DEFAULTS

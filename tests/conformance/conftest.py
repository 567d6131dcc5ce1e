"""Fixtures of the conformance suite: fakebroker (always) and a real Kafka broker (the
differential tests only), each started once per test process with the same settings."""

from __future__ import annotations

import os

import pytest

from fakebroker.cluster import FakeCluster

from .kafka_broker import SHARED_SETTINGS, KafkaBroker


@pytest.fixture(scope="session")
def conformance_fakebroker():
    """One fakebroker for every probe of the session (each probe uses names of its own)."""
    with FakeCluster(brokers=1, config=SHARED_SETTINGS).run_in_thread() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_broker(request):
    """One real Kafka broker (KRaft, broker+controller) for every differential probe of the session.

    The differential tests share the ``xdist_group`` "kafka", which ``--dist loadgroup`` (in
    pyproject's addopts) sends to a single worker, so one JVM serves them all. The broker's
    machine-wide lock makes another pytest run that wants one wait until this one stops. Under
    another xdist mode two workers of one run would wait for each other, so they skip instead."""
    # on a worker, xdist sets dist to "no" and keeps whether it was loadgroup in option.loadgroup
    if os.environ.get("PYTEST_XDIST_WORKER") and not getattr(request.config.option, "loadgroup", False):
        pytest.skip("the differential tests need --dist loadgroup under xdist (one worker runs them all)")
    broker = KafkaBroker()
    try:
        broker.start()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield broker
    finally:
        broker.stop()

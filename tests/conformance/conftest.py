"""Fixtures of the conformance suite: fakebroker (always) and a real Kafka broker (the
differential tests only), each started once per test process with the same settings
(fakebroker also with :data:`~.kafka_broker.FAKEBROKER_ONLY_SETTINGS`: Kafka's sequence where
its default deliberately differs)."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster

from .kafka_broker import FAKEBROKER_ONLY_SETTINGS, SHARED_SETTINGS, KafkaBroker


@pytest.fixture(scope="session")
def conformance_fakebroker():
    """One fakebroker for every plain probe of the session (each probe uses names of its own)."""
    with FakeCluster(brokers=1, config={**SHARED_SETTINGS, **FAKEBROKER_ONLY_SETTINGS}).run_in_thread() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def differential_fakebroker():
    """The fakebroker the differential probes compare with Kafka: a cluster of its own, so it
    holds the same topics as the Kafka broker (probes that list every topic see the same set)."""
    with FakeCluster(brokers=1, config={**SHARED_SETTINGS, **FAKEBROKER_ONLY_SETTINGS}).run_in_thread() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_broker(request):
    """One real Kafka broker (KRaft, broker+controller) for every differential probe of the session.

    ``--dist loadfile`` (pyproject's addopts) sends the differential tests, all in one module, to
    a single xdist worker, so one JVM serves them all. The broker's machine-wide lock makes any
    other process that wants one (another run, or a worker under another xdist mode) wait until
    this one stops: slower then, never two JVMs."""
    broker = KafkaBroker()
    try:
        broker.start()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield broker
    finally:
        broker.stop()

"""Fixtures of the conformance suite: fakebroker (always) and a real Kafka broker (the
differential tests only), each started once per test process with the same settings
(fakebroker also with :data:`~.kafka_broker.FAKEBROKER_ONLY_SETTINGS`: Kafka's sequence where
its default deliberately differs).

The secured probes (``@probe(secured=True)``) have a pair of their own, started only when one of
them runs: a fakebroker and a Kafka broker with a SASL_SSL listener, StandardAuthorizer and the
users of :data:`~.kafka_broker.SECURED_USERS` (:data:`~.kafka_broker.SECURED_SETTINGS`)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from fakebroker.cluster import FakeCluster

from .kafka_broker import (
    FAKEBROKER_ONLY_SETTINGS,
    SECURED_SETTINGS,
    SECURED_USERS,
    SHARED_SETTINGS,
    KafkaBroker,
    Secured,
)

SECURED_FAKEBROKER = {"security_protocol": "SASL_SSL", "users": SECURED_USERS}


@pytest.fixture(scope="module")  # stopped with test_conformance.py, its one user
def conformance_fakebroker():
    """One fakebroker for every plain probe of the module (each probe uses names of its own)."""
    with FakeCluster(brokers=1, config={**SHARED_SETTINGS, **FAKEBROKER_ONLY_SETTINGS}).run_in_thread() as cluster:
        yield cluster


@pytest.fixture(scope="module")  # stopped with test_conformance.py, its one user
def differential_fakebroker():
    """The fakebroker the differential probes compare with Kafka: a cluster of its own, so it
    holds the same topics as the Kafka broker (probes that list every topic see the same set)."""
    with FakeCluster(brokers=1, config={**SHARED_SETTINGS, **FAKEBROKER_ONLY_SETTINGS}).run_in_thread() as cluster:
        yield cluster


def secured_fakebroker() -> FakeCluster:
    config = {**SHARED_SETTINGS, **FAKEBROKER_ONLY_SETTINGS, **SECURED_SETTINGS}
    return FakeCluster(brokers=1, config=config, **SECURED_FAKEBROKER)


@pytest.fixture(scope="module")  # stopped with test_conformance.py, its one user
def secured_conformance_fakebroker():
    """The fakebroker of the secured probes' plain mode (SASL_SSL, StandardAuthorizer)."""
    with secured_fakebroker().run_in_thread() as cluster:
        yield cluster


@pytest.fixture(scope="module")  # stopped with test_conformance.py, its one user
def secured_differential_fakebroker():
    """The fakebroker the secured probes compare with the secured Kafka broker."""
    with secured_fakebroker().run_in_thread() as cluster:
        yield cluster


class KafkaBrokers:
    """The real Kafka brokers of one test process, at most one running: asking for the other kind
    (plain or secured) stops the running one first. (The broker's machine-wide lock would keep
    a second broker of this same process waiting for the first forever.) A broker that failed to
    start fails every test that asks for it again at once."""

    def __init__(self) -> None:
        self.running: tuple[str, KafkaBroker] | None = None
        self.failed: dict[str, str] = {}
        self._folder: Path | None = None
        self._secured: Secured | None = None

    @property
    def secured(self) -> Secured:
        """The secured broker's TLS identity and users (its CA's file in a folder of this pool's)."""
        if self._secured is None:
            self._folder = Path(tempfile.mkdtemp(prefix="fakebroker-kafka-tls-"))
            self._secured = Secured.make(self._folder)
        return self._secured

    def get(self, kind: str) -> KafkaBroker:
        if self.running is not None and self.running[0] == kind:
            return self.running[1]
        if kind in self.failed:
            pytest.fail(self.failed[kind], pytrace=False)
        self._stop_running()
        broker = KafkaBroker(secured=self.secured if kind == "secured" else None)
        try:
            broker.start()
        except RuntimeError as exc:
            self.failed[kind] = str(exc)
            pytest.fail(str(exc), pytrace=False)
        print(f"Kafka ({kind}) started in {broker.startup_seconds:.1f} s")
        self.running = (kind, broker)
        return broker

    def _stop_running(self) -> None:
        running, self.running = self.running, None
        if running is not None:
            running[1].stop()

    def stop(self) -> None:
        self._stop_running()
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def kafka_brokers():
    """The pool the Kafka fixtures take their broker from (stopped at the end of the session).

    ``--dist loadfile`` (pyproject's addopts) sends the differential tests, all in one module, to
    a single xdist worker, so one JVM serves them all, the plain probes' first, then the secured
    ones' (test_conformance.py orders them so). The broker's machine-wide lock makes any other
    process that wants one (another run, or a worker under another xdist mode) wait until this
    one stops: slower then, never two JVMs."""
    pool = KafkaBrokers()
    try:
        yield pool
    finally:
        pool.stop()


@pytest.fixture
def kafka_broker(kafka_brokers):
    """The real Kafka broker of the plain probes (KRaft, broker+controller, PLAINTEXT)."""
    return kafka_brokers.get("plain")


@pytest.fixture
def secured_kafka_broker(kafka_brokers):
    """The real Kafka broker of the secured probes (SASL_SSL, StandardAuthorizer)."""
    return kafka_brokers.get("secured")

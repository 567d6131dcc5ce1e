"""``poll_until`` and ``poll_until_async`` without a broker: poll functions stand in for consumers.
What they check of their arguments, when they poll and check, and what a timeout says
(``tests/clients/test_poll_until.py`` has the real clients)."""

from __future__ import annotations

import collections
import sys
import threading
import time
import types

import anyio
import pytest

from fakebroker.cluster import WaitTimeout
from fakebroker.cluster import conditions as cond
from fakebroker.testing import poll_until, poll_until_async


class Ticker:
    """A poll function that counts its calls and the seconds it was given."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> str:
        self.calls.append(seconds)
        return "ignored"  # a function handles its own records


def test_it_polls_until_the_predicate_holds_and_returns_its_value():
    a, b = Ticker(), Ticker()
    assert poll_until([a, b], lambda: len(a.calls) >= 3 and {"calls": len(a.calls)}, interval=0.01) == {"calls": 3}
    assert a.calls == b.calls == [0.01] * 3  # each consumer once a round, with the interval


def test_a_condition_that_holds_already_polls_nothing():
    ticker = Ticker()
    assert poll_until(ticker, lambda: "yes") == "yes"
    assert ticker.calls == []


def test_a_programming_error_in_the_predicate_is_raised_at_once():
    with pytest.raises(AttributeError):
        poll_until(Ticker(), lambda: None.missing, timeout=30)


def test_the_timeout_names_the_predicate_and_the_consumers():
    def ready() -> int:
        return 0

    with pytest.raises(WaitTimeout) as failed:
        poll_until({"worker": Ticker()}, ready, timeout=0.2, interval=0.01)
    assert str(failed.value) == (
        "poll_until waited 0.2 s for ready (last value: 0), polling worker: 0 records (put back for the next poll)"
    )
    assert isinstance(failed.value, AssertionError)


def test_arguments_are_checked_first():
    with pytest.raises(TypeError, match=r"group 'g' is Stable is a cluster condition: give the cluster too"):
        poll_until(Ticker(), cond.GroupState("g"))
    with pytest.raises(TypeError, match=r"cannot tell how to poll 42: it polls confluent-kafka's Consumer"):
        poll_until([Ticker(), 42], lambda: True)
    with pytest.raises(TypeError, match=r"needs a consumer to poll"):
        poll_until([], lambda: True)
    with pytest.raises(TypeError, match=r"waits for a cluster condition or a function of no arguments, not 'x'"):
        poll_until(Ticker(), "x")
    with pytest.raises(TypeError, match=r"timeout=0: give seconds, more than 0"):
        poll_until(Ticker(), lambda: True, timeout=0)
    with pytest.raises(TypeError, match=r"on_record=\[\]: give a function"):
        poll_until(Ticker(), lambda: True, on_record=[])


def test_the_blocking_one_refuses_async_code():
    async def main() -> None:
        with pytest.raises(RuntimeError, match=r"in trio code use `await poll_until_async\(\.\.\.\)`"):
            poll_until(Ticker(), lambda: True)

    anyio.run(main, backend="trio")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_async_twin_awaits_async_polls_and_predicates(backend):
    polls: list[float] = []
    plain = Ticker()

    async def poll(seconds: float) -> None:
        polls.append(seconds)
        await anyio.sleep(0)

    async def enough() -> int | None:
        return len(polls) if len(polls) >= 2 else None

    async def main() -> None:
        assert await poll_until_async([poll, plain], enough, interval=0.01) == 2

        async def never() -> None:
            return None

        with pytest.raises(WaitTimeout, match=r"^poll_until waited 0.1 s for never \(last value: None\), polling "):
            await poll_until_async(poll, never, timeout=0.1)

    anyio.run(main, backend=backend)
    assert len(plain.calls) == 2  # a plain function ran (in a worker thread) each round too


class FakeKafkaPython:
    """Stands in for kafka-python's KafkaConsumer (poll_until tells consumers by their class):
    ``poll(timeout_ms=)`` notes the thread it ran on and when it ran, and returns ``batches``
    once, then nothing after waiting out its timeout."""

    def __init__(self, name: str, batches: dict | None = None) -> None:
        self.name, self.batches = name, batches or {}
        self.threads: set[str] = set()
        self.spans: list[tuple[float, float]] = []

    @property
    def polls(self) -> int:
        return len(self.spans)

    def poll(self, timeout_ms: int) -> dict:
        self.threads.add(threading.current_thread().name)
        began = time.monotonic()
        batches, self.batches = self.batches, {}
        if not batches:
            time.sleep(timeout_ms / 1000)
        self.spans.append((began, time.monotonic()))
        return batches


def overlapping(a: FakeKafkaPython, b: FakeKafkaPython) -> int:
    """How many polls of ``a`` ran while a poll of ``b`` did (polled in turn: none)."""
    return sum(any(s < e2 and s2 < e for s2, e2 in b.spans) for s, e in a.spans)


@pytest.fixture
def kafka_python_kind(monkeypatch):
    """poll_until takes FakeKafkaPython for kafka-python's KafkaConsumer."""
    kafka = types.ModuleType("kafka")
    kafka.KafkaConsumer = FakeKafkaPython  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kafka", kafka)


Record = collections.namedtuple("Record", "offset value")


def test_two_kafka_python_consumers_are_polled_at_once_each_in_a_thread_of_its_own(kafka_python_kind):
    a, b = FakeKafkaPython("a"), FakeKafkaPython("b")
    assert poll_until({"a": a, "b": b}, lambda: a.polls >= 3 and b.polls >= 3, interval=0.01) is True
    assert overlapping(a, b) > 0  # polled in turn, no poll of one overlaps one of the other
    assert a.threads == {"poll_until a"} and b.threads == {"poll_until b"}
    assert not [t for t in threading.enumerate() if t.name.startswith("poll_until")]  # gone when it returns


def test_records_polled_in_those_threads_are_handed_on_the_callers_thread(kafka_python_kind):
    a = FakeKafkaPython("a", batches={("t", 0): [Record(0, "x"), Record(1, "y")]})
    b = FakeKafkaPython("b", batches={("t", 1): [Record(0, "z")]})
    handed, caller = [], threading.current_thread()

    def on_record(who, record):
        handed.append((who, record.value, threading.current_thread() is caller))

    assert poll_until({"a": a, "b": b}, lambda: len(handed) == 3, on_record=on_record, interval=0.01) is True
    assert sorted(handed) == [("a", "x", True), ("a", "y", True), ("b", "z", True)]


def test_an_error_in_one_of_those_polls_is_raised_to_the_caller(kafka_python_kind):
    class Broken(FakeKafkaPython):
        def poll(self, timeout_ms: int) -> dict:
            raise RuntimeError("fatal: broker went away")

    with pytest.raises(RuntimeError, match="fatal: broker went away"):
        poll_until([FakeKafkaPython("a"), Broken("b")], lambda: False, timeout=5, interval=0.01)
    assert not [t for t in threading.enumerate() if t.name.startswith("poll_until")]


def test_one_kafka_python_consumer_is_polled_on_the_callers_thread(kafka_python_kind):
    a = FakeKafkaPython("a")
    assert poll_until(a, lambda: a.polls >= 2, interval=0.01) is True
    assert a.threads == {threading.current_thread().name}


@pytest.mark.anyio
async def test_the_async_twin_polls_kafka_python_consumers_at_once_too(kafka_python_kind):
    a, b = FakeKafkaPython("a"), FakeKafkaPython("b")
    assert await poll_until_async([a, b], lambda: a.polls >= 3 and b.polls >= 3, interval=0.01) is True
    assert overlapping(a, b) > 0
    assert a.threads == {"poll_until consumers[0]"} and b.threads == {"poll_until consumers[1]"}


def test_kafka_python_consumers_are_not_polled_when_the_condition_holds_already(kafka_python_kind):
    a, b = FakeKafkaPython("a"), FakeKafkaPython("b")
    assert poll_until([a, b], lambda: "yes") == "yes"
    assert (a.polls, b.polls) == (0, 0)

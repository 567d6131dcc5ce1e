"""Keep consumers polling while a test waits: :func:`poll_until` (and :func:`poll_until_async`,
its twin for async tests) polls every consumer it is given, round after round, until a cluster
condition (``fakebroker.cluster.conditions``, e.g. ``cond.GroupState("g", members=2)``) or a
function of no arguments returns something truthy, and returns that. A consumer that is not
polled does not join, rebalance or run its callbacks; a hand-written "poll my consumers until X"
loop is what this replaces.

It polls, by their type: confluent-kafka's ``Consumer`` (``poll``) and ``ShareConsumer``,
kafka-python's ``KafkaConsumer`` (``poll(timeout_ms=)``), aiokafka's ``AIOKafkaConsumer``
(``getmany``, in :func:`poll_until_async` only), or a function you give, called with the seconds
it may wait (it handles what it polls itself; what it returns is ignored). Two or more
kafka-python consumers are each polled back to back in a thread of its own while the call lasts
(see ``_Pollers``); what they poll is handed on, and what they raise raised, on the caller's
thread.

The records polled meanwhile are not lost to the caller. With ``on_record``, each is handed to
``on_record(who, record)`` as it comes, ``who`` being the consumer's name when the consumers
were given as a dict of name -> consumer (so ``on_record=ledger.record`` works), else the
consumer itself. Without it, each consumer is put back (``seek``) on every partition to the
first record it polled there, so its next poll returns them again; a partition that moved to
another member meanwhile needs no seek (its new owner starts from the committed offset). A share
consumer cannot be put back: it needs ``on_record``. (librdkafka stores a record's offset when
``poll`` returns it, with ``enable.auto.offset.store``, its default: a ``commit()`` without
arguments before your next poll would commit what was put back.)
"""

from __future__ import annotations

import inspect
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..cluster import FakeCluster

__all__ = ["poll_until", "poll_until_async"]

PROGRAMMING_ERRORS = (TypeError, NameError, AttributeError)
BATCH = 500  # the most records one confluent-kafka consumer returns in one round
KNOWN = (
    "confluent-kafka's Consumer and ShareConsumer, kafka-python's KafkaConsumer, aiokafka's AIOKafkaConsumer "
    "(poll_until_async), or a function called with the seconds it may wait, e.g. lambda s: my_consumer.poll(s)"
)


class _Polled:
    """One consumer and what was polled from it: how to poll it, and where to put it back."""

    def __init__(self, who: Any, label: str, consumer: Any) -> None:
        self.who, self.label, self.consumer = who, label, consumer
        self.kind = _kind_of(consumer)
        self.records = 0
        self.first: dict[Any, int] = {}  # partition (as the client names it) -> first offset polled
        self.last_error: Any = None

    # -- polling -------------------------------------------------------------------------------
    def poll(self, seconds: float) -> list[Any]:
        """One poll (a batch: the records it returned)."""
        c = self.consumer
        if self.kind == "confluent":
            got = []
            msg = c.poll(seconds)
            while msg is not None:
                got.append(msg)
                msg = c.poll(0) if len(got) < BATCH else None
            return self._confluent(got)
        if self.kind == "confluent-share":
            return self._confluent(list(c.poll(seconds)))
        if self.kind == "kafka-python":
            return self._batches(c.poll(timeout_ms=max(1, int(seconds * 1000))))
        c(seconds)  # a function: it handles its records
        return []

    async def apoll(self, seconds: float) -> list[Any]:
        import anyio

        c = self.consumer
        if self.kind == "aiokafka":
            return self._batches(await c.getmany(timeout_ms=max(1, int(seconds * 1000))))
        if self.kind == "function":
            if _is_async(c):
                await c(seconds)
            else:  # it may block: off the loop (which may be the cluster's)
                result = await anyio.to_thread.run_sync(c, seconds)
                if inspect.isawaitable(result):
                    await result
            return []
        # a client that blocks in poll (and in kafka-python, joins in it): in a worker thread
        return await anyio.to_thread.run_sync(self.poll, seconds)

    def _confluent(self, messages: list[Any]) -> list[Any]:
        records = []
        for m in messages:
            error = m.error()
            if error is None:
                records.append(m)
                self._note((m.topic(), m.partition()), m.offset())
            else:
                self.last_error = error
                if error.fatal():
                    from confluent_kafka import KafkaException

                    raise KafkaException(error)
        return records

    def _batches(self, batches: Mapping[Any, list[Any]]) -> list[Any]:
        records = []
        for tp, batch in batches.items():
            if batch:
                records.extend(batch)
                self._note(tp, batch[0].offset)
        return records

    def _note(self, partition: Any, offset: int) -> None:
        self.records += 1
        if offset < self.first.get(partition, offset + 1):
            self.first[partition] = offset

    # -- putting back ----------------------------------------------------------------------------
    def put_back(self) -> None:
        """Seek every partition polled to the first record polled there (one no longer assigned
        is skipped: its next owner starts from the committed offset)."""
        for partition, offset in self.first.items():
            try:
                if self.kind == "confluent":
                    from confluent_kafka import TopicPartition

                    self.consumer.seek(TopicPartition(partition[0], partition[1], offset))
                else:  # kafka-python and aiokafka: the poll's own TopicPartition keys
                    self.consumer.seek(partition, offset)
            except Exception:  # not assigned any more (a rebalance moved it), or the consumer closed
                pass
        self.first.clear()

    def describe(self) -> str:
        error = f", last error {self.last_error}" if self.last_error is not None else ""
        return f"{self.label}: {self.records} record{'' if self.records == 1 else 's'}{error}"


class _Pollers:
    """kafka-python consumers, when there are two or more, each polled back to back in a thread
    of its own for the whole wait. kafka-python 3.0 joins inside ``poll`` and throws away a join
    that completes while no poll of that consumer is waiting, then joins again: polled in turn
    from one thread, each waits out the others' polls, and a group of them can keep
    rebalancing."""

    def __init__(self, wait: _Wait) -> None:
        together = [p for p in wait.polled if p.kind == "kafka-python"]
        self.polled = together if len(together) > 1 else []
        self._interval = wait.interval
        self._results: queue.SimpleQueue[tuple[_Polled, list[Any] | BaseException]] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._poll, args=(p,), name=f"poll_until {p.label}", daemon=True)
            for p in self.polled
        ]

    def start(self) -> None:
        """Starts the threads, at the first round (a condition that holds already polls nothing)."""
        for t in self._threads:
            if t.ident is None:
                t.start()

    def _poll(self, polled: _Polled) -> None:
        while not self._stopping.is_set():
            try:
                got: list[Any] | BaseException = polled.poll(self._interval)
            except Exception as exc:  # handed to the waiting thread, which raises it
                got = exc
            if got:
                self._results.put((polled, got))
            if isinstance(got, BaseException):
                return

    def take(self, wait: float) -> list[tuple[_Polled, list[Any] | BaseException]]:
        """What was polled since the last take, waiting up to ``wait`` seconds for the first."""
        taken = []
        if wait > 0 and self._threads:
            try:
                taken.append(self._results.get(timeout=wait))
            except queue.Empty:
                return []
        while True:
            try:
                taken.append(self._results.get_nowait())
            except queue.Empty:
                return taken

    def stop(self) -> None:
        """Asks the threads to stop after their poll in progress."""
        self._stopping.set()

    def join(self) -> list[tuple[_Polled, list[Any] | BaseException]]:
        """Waits for the threads to stop; what they polled since the last take."""
        for t in self._threads:
            if t.ident is not None:
                t.join()
        return self.take(0)


def _kind_of(consumer: Any) -> str:
    """Which client ``consumer`` is, by the classes of the client libraries already imported."""
    ck = sys.modules.get("confluent_kafka")
    if ck is not None:
        if isinstance(consumer, ck.Consumer):
            return "confluent"
        share = getattr(ck, "ShareConsumer", None)
        if share is not None and isinstance(consumer, share):
            return "confluent-share"
    kp = sys.modules.get("kafka")
    if kp is not None and isinstance(consumer, getattr(kp, "KafkaConsumer", ())):
        return "kafka-python"
    aio = sys.modules.get("aiokafka")
    if aio is not None and isinstance(consumer, getattr(aio, "AIOKafkaConsumer", ())):
        return "aiokafka"
    if callable(consumer):
        return "function"
    raise TypeError(f"poll_until cannot tell how to poll {consumer!r}: it polls {KNOWN}")


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


class _Wait:
    """What one call waits for: the consumers, the condition, the deadline, and what was seen."""

    def __init__(
        self,
        consumers: Any,
        condition: Any,
        timeout: float,
        cluster: FakeCluster | None,
        on_record: Callable[[Any, Any], Any] | None,
        interval: float,
        blocking: bool,
    ) -> None:
        from ..cluster.conditions import Condition

        if isinstance(consumers, Mapping):
            given = [(name, str(name), c) for name, c in consumers.items()]
        elif isinstance(consumers, (list, tuple)):
            given = [(c, f"consumers[{i}]", c) for i, c in enumerate(consumers)]
        else:
            given = [(consumers, "the consumer", consumers)]
        if not given:
            raise TypeError(
                "poll_until needs a consumer to poll (a consumer, a list of them or a dict name -> consumer)"
            )
        self.polled = [_Polled(*g) for g in given]
        loop_bound = [p.label for p in self.polled if p.kind == "aiokafka"]
        if blocking and loop_bound:
            raise TypeError(
                f"{', '.join(loop_bound)}: aiokafka polls on its event loop; use await poll_until_async(...)"
            )
        if on_record is None and any(p.kind == "confluent-share" for p in self.polled):
            raise TypeError(
                "a share consumer's records cannot be put back for your next poll: give on_record=(who, record) -> ... "
                "to take them (e.g. ledger.record)"
            )
        if on_record is not None and not callable(on_record):
            raise TypeError(f"on_record={on_record!r}: give a function (who, record) -> anything, or None")
        self.is_condition = isinstance(condition, Condition)
        if self.is_condition and cluster is None:
            raise TypeError(
                f"{condition.describe()} is a cluster condition: give the cluster too, "
                "poll_until(consumers, condition, cluster=cluster)"
            )
        if not self.is_condition and not callable(condition):
            raise TypeError(
                f"poll_until waits for a cluster condition or a function of no arguments, not {condition!r}"
            )
        for name, value in (("timeout", timeout), ("interval", interval)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise TypeError(f"{name}={value!r}: give seconds, more than 0")
        self.condition, self.cluster, self.on_record = condition, cluster, on_record
        self.timeout, self.interval = timeout, interval
        self.deadline = time.monotonic() + timeout
        self.last: Any = None
        self.error: BaseException | None = None

    def check(self) -> Any:
        """The condition's value now (falsy: not yet); an exception of a predicate counts as not
        yet, but a programming error is raised at once."""
        if self.is_condition:
            assert self.cluster is not None
            return self.cluster.call(self.condition, self.cluster)
        try:
            self.last, self.error = self.condition(), None
        except PROGRAMMING_ERRORS:
            raise
        except Exception as exc:
            self.last, self.error = None, exc
        return self.last

    async def acheck(self) -> Any:
        """:meth:`check`, awaiting a predicate's awaitable answer (an ``async def`` predicate)."""
        result = self.check()
        if inspect.isawaitable(result):
            try:
                self.last, self.error = await result, None
            except PROGRAMMING_ERRORS:
                raise
            except Exception as exc:
                self.last, self.error = None, exc
            result = self.last
        return result

    def hand(self, polled: _Polled, records: list[Any]) -> None:
        if self.on_record is not None:
            for r in records:
                self.on_record(polled.who, r)

    def hand_all(self, polls: list[tuple[_Polled, list[Any] | BaseException]], *, errors: bool = True) -> None:
        """Hands on what other threads polled, then raises the first error a poll raised (with
        ``errors``; as the wait ends, without, they are dropped)."""
        for polled, got in polls:
            if not isinstance(got, BaseException):
                self.hand(polled, got)
        for _, got in polls:
            if isinstance(got, BaseException) and errors:
                raise got

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def put_back(self) -> None:
        if self.on_record is None:
            for p in self.polled:
                p.put_back()

    def timed_out(self) -> BaseException:
        from ..cluster import WaitTimeout
        from ..cluster.conditions import describe

        if self.is_condition:
            what = describe(self.condition)
        else:
            name = getattr(self.condition, "__name__", repr(self.condition))
            seen = f"last exception: {self.error!r}" if self.error is not None else f"last value: {self.last!r}"
            what = f"{name} ({seen})"
        polled = "; ".join(p.describe() for p in self.polled)
        kept = "" if self.on_record is not None else " (put back for the next poll)"
        return WaitTimeout(f"poll_until waited {self.timeout:g} s for {what}, polling {polled}{kept}")


def poll_until(
    consumers: Any,
    condition: Any,
    timeout: float = 10.0,
    *,
    cluster: FakeCluster | None = None,
    on_record: Callable[[Any, Any], Any] | None = None,
    interval: float = 0.05,
) -> Any:
    """Poll ``consumers`` (one, a list, or a dict name -> consumer) round after round until
    ``condition`` holds, and return what it returned: a cluster condition (needs ``cluster``; it
    is checked on the cluster's loop, e.g. ``cond.GroupState("g", members=2)`` returns the
    group's view) or a function of no arguments (an exception from it counts as "not yet",
    except TypeError, NameError and AttributeError). It is checked before the first poll and
    after each round; each consumer's poll waits at most ``interval`` seconds.

    Records polled meanwhile go to ``on_record(who, record)``, or, without it, are put back
    (each consumer seeks back to the first record it polled on each partition), so the next poll
    returns them. Raises ``WaitTimeout`` (an AssertionError) after ``timeout`` seconds, saying
    what it waited for, what it saw last and what each consumer polled.

    For threads (a cluster run with ``run_in_thread()``); in async code use
    :func:`poll_until_async`."""
    try:
        import sniffio

        library = sniffio.current_async_library()
    except Exception:
        library = None
    if library is not None:
        raise RuntimeError(f"poll_until blocks; in {library} code use `await poll_until_async(...)`")
    wait = _Wait(consumers, condition, timeout, cluster, on_record, interval, blocking=True)
    pollers = _Pollers(wait)
    rest = [p for p in wait.polled if p not in pollers.polled]  # the others, polled in turn
    try:
        while True:
            result = wait.check()
            if result:
                return result
            if wait.out_of_time():
                raise wait.timed_out()
            pollers.start()
            for p in rest:
                wait.hand(p, p.poll(wait.interval))
            wait.hand_all(pollers.take(0 if rest else wait.interval))
    finally:
        pollers.stop()
        wait.hand_all(pollers.join(), errors=False)
        wait.put_back()


async def poll_until_async(
    consumers: Any,
    condition: Any,
    timeout: float = 10.0,
    *,
    cluster: FakeCluster | None = None,
    on_record: Callable[[Any, Any], Any] | None = None,
    interval: float = 0.05,
) -> Any:
    """:func:`poll_until` for async tests (anyio: asyncio or trio), e.g. with the
    ``async_fakebroker`` fixture, whose cluster runs on the test's own loop: aiokafka consumers
    are polled with ``await getmany(...)``; confluent-kafka and kafka-python consumers, which
    block in ``poll``, in a worker thread, so the loop (and a cluster on it) runs meanwhile; an
    async function is awaited, a plain one runs in a worker thread. A predicate may be async
    too. ``on_record`` is called on the loop."""
    import anyio

    wait = _Wait(consumers, condition, timeout, cluster, on_record, interval, blocking=False)
    pollers = _Pollers(wait)
    rest = [p for p in wait.polled if p not in pollers.polled]  # the others, polled in turn
    try:
        while True:
            result = await wait.acheck()
            if result:
                return result
            if wait.out_of_time():
                raise wait.timed_out()
            pollers.start()
            for p in rest:
                wait.hand(p, await p.apoll(wait.interval))
            if not rest:
                await anyio.sleep(wait.interval)
            wait.hand_all(pollers.take(0))
    finally:
        pollers.stop()
        if pollers.polled:
            with anyio.CancelScope(shield=True):  # each thread stops after its poll in progress
                wait.hand_all(await anyio.to_thread.run_sync(pollers.join), errors=False)
        wait.put_back()

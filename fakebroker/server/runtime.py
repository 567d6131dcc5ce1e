"""What every broker of one running cluster shares: the core, the clock, the fault rules,
the network cuts, and the signals that wake waiting requests.

The core never calls out. After anything changes it (a request, a timer, an action of the
facade), :meth:`Runtime.settle` tells event listeners what was appended, wakes whoever
waits for events, for new data, or for an earlier timer.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import Callable, Collection

import anyio

from ..core.cluster_state import ClusterState
from ..core.configs import BrokerConfig
from ..core.events import Event
from ..core.events.index import EventIndex, Key
from ..core.events.ring import DEFAULT_CAPACITY
from ..core.log import LogStorage
from ..faults import Faults
from ..protocol.framing import DEFAULT_MAX_FRAME_SIZE
from .clock import Clock

log = logging.getLogger("fakebroker")


class EventWatch:
    """One pending wait's mailbox: the events filed under its keys since it last looked."""

    __slots__ = ("keys", "inbox", "woken")

    def __init__(self, keys: Collection[Key]):
        self.keys = tuple(keys)
        self.inbox: list[Event] = []
        self.woken = anyio.Event()

    def deliver(self, event: Event) -> None:
        self.inbox.append(event)
        self.woken.set()

    async def next(self, timeout: float) -> list[Event]:
        """The events delivered since the last call, waiting up to ``timeout`` seconds for one."""
        if not self.inbox:
            with anyio.move_on_after(timeout):
                await self.woken.wait()
        delivered, self.inbox = self.inbox, []
        self.woken = anyio.Event()
        return delivered


class Runtime:
    def __init__(
        self,
        cluster_id: str,
        config: BrokerConfig,
        clock: Clock,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        coordinator_load_time_ms: int = 0,
        transaction_marker_delay_ms: int = 0,
        storage: LogStorage | None = None,
        event_log_size: int | None = DEFAULT_CAPACITY,
    ):
        self.clock = clock
        self.state = ClusterState(
            cluster_id,
            config,
            now_ms=clock.now_ms,
            wall=time.time,
            coordinator_load_time_ms=coordinator_load_time_ms,
            transaction_marker_delay_ms=transaction_marker_delay_ms,
            storage=storage,
            event_log_size=event_log_size,
        )
        self.max_frame_size = max_frame_size
        self.listeners: list[Callable[[Event], None]] = []
        self.after_events: list[Callable[[], None]] = []  # called once listeners have had a batch
        self.faults = Faults()
        self.cuts: set[tuple[str, int | None]] = set()  # (client id glob, broker or None for all)
        # parked fetches, by the partition they read (None: woken by any change of data)
        self._data_waiters: dict[tuple[str, int] | None, set[anyio.Event]] = {}
        self._event_added: anyio.Event | None = None  # made when someone waits for the next event
        self._event_watches: EventIndex[EventWatch] = EventIndex()  # waits woken only by their events
        self._timers_changed = anyio.Event()
        self._ticker_deadline: int | None = None  # the earliest deadline the ticker sleeps towards

    # -- after a change -------------------------------------------------------------------------
    def emit(self, event: Event) -> Event:
        """Append an event of the server's own (connections, requests, faults) and tell everyone."""
        stamped = self.state.events.append(event)
        self.settle()
        return stamped

    def settle(self, *, data_changed: bool = False, partitions: Collection[tuple[str, int]] = ()) -> None:
        """Tell listeners of new events and wake what waits on them, on new data (parked
        fetches re-check at once, as Kafka's DelayedFetch does) or on an earlier timer.
        ``partitions`` wakes the fetches reading those partitions, ``data_changed`` all."""
        events = self.state.events
        new = events.take_new() if events.has_new else ()
        debug = bool(new) and log.isEnabledFor(logging.DEBUG)  # describe() costs more than the rest of a heartbeat
        for event in new:
            if debug:
                log.debug("%s", event.describe())
            for listener in list(self.listeners):
                try:
                    listener(event)
                except Exception:  # a test's listener must not take a broker down
                    log.exception("event listener %r failed on %s", listener, event.kind)
        if new:
            for hook in list(self.after_events):
                try:
                    hook()
                except Exception:
                    log.exception("event hook %r failed", hook)
            if self._event_added is not None:
                self._event_added.set()
                self._event_added = None
            if self._event_watches:
                for event in new:
                    for watch in self._event_watches.watchers_of(event):
                        watch.deliver(event)
        if data_changed:
            waiting, self._data_waiters = self._data_waiters, {}
            for waiters in waiting.values():
                for waiter in waiters:
                    waiter.set()
        elif partitions and self._data_waiters:
            for key in (None, *partitions):
                for waiter in self._data_waiters.pop(key, ()):
                    waiter.set()
        deadline = self.state.next_deadline()
        if deadline is not None and (self._ticker_deadline is None or deadline < self._ticker_deadline):
            self._timers_changed.set()

    # -- waiting --------------------------------------------------------------------------------
    async def wait_event(self, timeout: float) -> None:
        """Until the next event or ``timeout`` seconds."""
        if self._event_added is None:
            self._event_added = anyio.Event()
        added = self._event_added
        with anyio.move_on_after(timeout):
            await added.wait()

    def watch_events(self, keys: Collection[Key]) -> EventWatch:
        """File a wait under ``keys`` (see ``core.events.index``): from now on each event
        settled that answers to one lands in its inbox, once; :meth:`unwatch` when done."""
        watch = EventWatch(keys)
        for key in watch.keys:
            self._event_watches.add(key, watch)
        return watch

    def unwatch(self, watch: EventWatch) -> None:
        for key in watch.keys:
            self._event_watches.discard(key, watch)

    async def wait_data(self, deadline: float, partitions: Collection[tuple[str, int]] | None = None) -> None:
        """Until data changes (of ``partitions`` only, when given, or of everything) or the
        loop's clock reaches ``deadline`` (anyio.current_time()). A waiter is filed under each
        partition it reads, so a change wakes only its own waiters, not every parked fetch."""
        woken = anyio.Event()
        keys: Collection[tuple[str, int] | None] = (None,) if partitions is None else partitions
        for key in keys:
            self._data_waiters.setdefault(key, set()).add(woken)
        try:
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                await woken.wait()
        finally:
            for key in keys:
                waiters = self._data_waiters.get(key)
                if waiters is not None:
                    waiters.discard(woken)
                    if not waiters:
                        del self._data_waiters[key]

    async def wait_timers(self, deadline_ms: int | None, timeout: float) -> None:
        """For the ticker: until a timer earlier than ``deadline_ms`` is scheduled, or ``timeout``."""
        self._ticker_deadline = deadline_ms
        self._timers_changed = anyio.Event()
        with anyio.move_on_after(timeout):
            await self._timers_changed.wait()

    # -- network cuts ---------------------------------------------------------------------------
    def is_cut_off(self, client_id: str | None, broker: int) -> bool:
        """Whether a network partition separates this client from this broker."""
        return bool(self.cuts) and any(
            b in (None, broker) and fnmatch.fnmatchcase(client_id or "", pattern) for pattern, b in self.cuts
        )

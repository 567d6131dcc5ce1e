"""Cluster actions: stop and start brokers, move leaders and coordinators, cut clients off.

Each action is a method of the core (which records its events) run on the cluster's loop
through the proxy; what involves sockets (closing a listener, resetting connections) is
asked of the brokers' servers.
"""

from __future__ import annotations

import fnmatch

import anyio

from ..core import events as ev
from ..server.broker import BrokerServer
from ..server.runtime import Runtime
from .errors import ClusterUsageError
from .proxy import LoopProxy


def check_broker(state, broker: int, *, alive: bool = False, what: str = "broker") -> None:
    """Raise :class:`ClusterUsageError` unless ``broker`` is one of the cluster's (and runs, with ``alive``)."""
    known = sorted(state.brokers)
    role = "" if what == "broker" else f" to be the {what}"
    if isinstance(broker, bool) or not isinstance(broker, int) or broker not in state.brokers:
        raise ClusterUsageError(f"no broker {broker!r}{role}; the cluster's brokers are {known}")
    if alive and not state.brokers[broker].alive:
        running = sorted(b.node_id for b in state.alive_brokers())
        raise ClusterUsageError(
            f"broker {broker} is stopped{role and ' and cannot' + role[3:]}; running brokers: {running or 'none'}"
        )


def live_brokers(state, purpose: str) -> list[int]:
    """The running brokers' ids; :class:`ClusterUsageError` (naming ``purpose``) when none runs."""
    alive = [b.node_id for b in state.alive_brokers()]
    if not alive:
        raise ClusterUsageError(
            f"no broker is running to {purpose}; start one first (brokers: {sorted(state.brokers)}, all stopped)"
        )
    return alive


def topic_of(state, topic: str):
    """A topic, or :class:`ClusterUsageError` naming the topics there are."""
    found = state.topics.get(topic) if isinstance(topic, str) else None
    if found is None:
        names = sorted(t for t in state.topics if not t.startswith("__"))
        shown = ", ".join(map(repr, names[:20])) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        raise ClusterUsageError(f"no topic {topic!r}; topics: {shown or 'none'}")
    return found


def partition_of(state, topic: str, partition: int):
    """A topic's partition, or :class:`ClusterUsageError` naming the topics or the valid partitions."""
    found = topic_of(state, topic)
    count = len(found.partitions)
    if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < count:
        raise ClusterUsageError(f"topic {topic!r} has no partition {partition!r}; its partitions are 0..{count - 1}")
    return found.partitions[partition]


class _Turns:
    """A ticket lock for one broker's starts and stops: a call takes its ticket at once, in
    call order, even where it cannot wait (a sync call on the loop thread), and the tickets are
    served in that order. An ``anyio.Lock`` cannot do that: a sync ``stop_broker`` on the loop
    could not queue behind a start in progress, and trio runs ``start_soon`` tasks in no
    promised order, so a sync start then stop could run stop first."""

    def __init__(self) -> None:
        self.issued = 0
        self.serving = 0
        self.abandoned: set[int] = set()  # tickets whose caller was cancelled before its turn
        self.moved = anyio.Event()  # set (and replaced) each time a turn ends; made on the loop

    def idle(self) -> bool:
        return self.serving == self.issued

    def take(self) -> int:
        self.issued += 1
        return self.issued - 1

    async def wait(self, ticket: int) -> None:
        """Return once it is ``ticket``'s turn; the caller must call :meth:`done` after."""
        try:
            while self.serving != ticket:
                await self.moved.wait()
        except BaseException:
            if self.serving == ticket:
                self.done()
            else:
                self.abandoned.add(ticket)
            raise

    def done(self) -> None:
        self.serving += 1
        while self.serving in self.abandoned:
            self.abandoned.discard(self.serving)
            self.serving += 1
        self.moved.set()
        self.moved = anyio.Event()


class BrokerActions:
    def __init__(self, proxy: LoopProxy, runtime: Runtime, servers: list[BrokerServer]):
        self._proxy = proxy
        self._runtime = runtime
        self._servers = servers
        self._turns: dict[int, _Turns] = {}  # one per broker: its starts and stops take turns

    def _now(self) -> int:
        return self._runtime.clock.now_ms()

    def _turns_of(self, broker: int) -> _Turns:
        """Made on the loop, at first use: starts and stops of one broker run one at a time and
        in call order, so two concurrent starts cannot both bind its port (the second finds it
        running) and a stop called after a start is not overtaken by it."""
        if broker not in self._turns:
            self._turns[broker] = _Turns()
        return self._turns[broker]

    def _stop_now(self, broker: int) -> None:
        if self._runtime.state.broker_stopped(broker, self._now()):
            self._servers[broker].stop()

    def stop(self, broker: int) -> None:
        self._proxy.check_running()  # before the broker check: a cluster not started has none
        check_broker(self._runtime.state, broker)
        if self._proxy.from_other_thread():
            self._proxy.run_async(self.stop_async, broker)
        elif not self._proxy.on_loop_thread() or self._turns_of(broker).idle():
            # Not running, or no start/stop of this broker under way: nothing to take turns
            # with, and the stop is synchronous, so it is the whole turn.
            self._proxy.act(self._stop_now, broker)
        else:  # behind a start or stop under way: queue (the server closes a moment later)
            self._proxy.start_soon(self._stop_in_turn, broker, self._turns_of(broker).take())

    async def stop_async(self, broker: int) -> None:
        """Stop a broker and return once its port is closed (on the cluster's loop); a
        stopped broker stays stopped (no-op)."""
        self._proxy.check_running()
        check_broker(self._runtime.state, broker)
        await self._stop_in_turn(broker, self._turns_of(broker).take())

    async def _stop_in_turn(self, broker: int, ticket: int) -> None:
        turns = self._turns_of(broker)
        await turns.wait(ticket)
        try:
            self._proxy.act(self._stop_now, broker)
            stopped = self._servers[broker].stopped
            if stopped is not None:
                await stopped.wait()
        finally:
            turns.done()

    def start(self, broker: int) -> None:
        self._proxy.check_running()
        check_broker(self._runtime.state, broker)
        if self._proxy.on_loop_thread():
            # the ticket now, so a stop called next on this thread comes after this start
            self._proxy.start_soon(self._start_in_turn, broker, self._turns_of(broker).take())
        else:  # from a test thread (or refused there: no portal serves it)
            self._proxy.run_async(self.start_async, broker)

    async def start_async(self, broker: int) -> None:
        """Start a stopped broker and return once it listens (on the cluster's loop); a
        running broker keeps running (no-op)."""
        self._proxy.check_running()
        check_broker(self._runtime.state, broker)
        await self._start_in_turn(broker, self._turns_of(broker).take())

    async def _start_in_turn(self, broker: int, ticket: int) -> None:
        state = self._runtime.state
        turns = self._turns_of(broker)
        await turns.wait(ticket)
        try:
            if state.brokers[broker].alive:
                return
            server = self._servers[broker]
            if server.stopped is not None:
                await server.stopped.wait()
            assert self._proxy.task_group is not None
            await self._proxy.task_group.start(server.serve)
            endpoints = server.advertised()
            first_host, first_port = endpoints[server.endpoints[0].name]
            self._proxy.act(state.broker_started, broker, first_host, first_port, self._now(), None, endpoints)
        finally:
            turns.done()

    def elect_preferred_leaders(self) -> int:
        state = self._runtime.state
        return self._proxy.act(lambda: state.elect_preferred_leaders(self._now()))

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        state = self._runtime.state

        def move() -> None:
            found = partition_of(state, topic, partition)
            live_brokers(state, f"lead {topic}-{partition}")
            check_broker(state, broker, alive=True, what="leader")
            state.move_leader(found, broker, self._now())

        self._proxy.act(move)

    def move_coordinator(self, group_id: str, broker: int | None, load_time_ms: int | None) -> int:
        state = self._runtime.state

        def move() -> int:
            live_brokers(state, f"coordinate group {group_id!r}")  # before the offsets topic is made
            if broker is not None:
                check_broker(state, broker, alive=True, what="coordinator")
            return state.move_coordinator(
                state.groups.placement, group_id, broker, self._now(), load_time_ms=load_time_ms
            )

        return self._proxy.act(move)


class NetworkActions:
    def __init__(self, proxy: LoopProxy, runtime: Runtime, servers: list[BrokerServer]):
        self._proxy = proxy
        self._runtime = runtime
        self._servers = servers

    def cut(self, client_id: str, broker: int | None) -> None:
        runtime = self._runtime
        self._proxy.check_running()
        if broker is not None:
            check_broker(runtime.state, broker)

        def cut() -> None:
            runtime.cuts.add((client_id, broker))
            runtime.state.events.append(ev.NetworkCut(broker=broker, client_id=client_id))
            for server in self._servers:
                if broker is None or server.node_id == broker:
                    server.cut()

        self._proxy.act(cut)

    def expire_sessions(self, client_id: str | None) -> int:
        self._proxy.check_running()
        clock = self._runtime.clock

        def expire() -> int:
            ended, now = 0, clock.now_ms()
            for server in self._servers:
                for conn in server.connections:
                    auth = conn.peer.auth
                    if auth is None or not auth.authenticated:
                        continue
                    if client_id is None or fnmatch.fnmatchcase(conn.peer.client_id or "", client_id):
                        auth.session_end_ms = now  # its next request closes it, unless it re-authenticates
                        ended += 1
            return ended

        return self._proxy.act(expire)

    def heal(self, client_id: str | None, broker: int | None) -> None:
        runtime = self._runtime
        self._proxy.check_running()
        if broker is not None:
            check_broker(runtime.state, broker)

        def heal() -> None:
            for cut in sorted(runtime.cuts, key=lambda c: (c[0], c[1] is None, c[1] or 0)):
                if (client_id is None or cut[0] == client_id) and (broker is None or cut[1] == broker):
                    runtime.cuts.discard(cut)
                    runtime.state.events.append(ev.NetworkHealed(broker=cut[1], client_id=cut[0]))

        self._proxy.act(heal)

    def cuts(self) -> list[tuple[str, int | None]]:
        return self._proxy.read(lambda: sorted(self._runtime.cuts, key=lambda c: (c[0], c[1] is None, c[1] or 0)))

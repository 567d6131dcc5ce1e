"""Cluster actions: stop and start brokers, move leaders and coordinators, cut clients off.

Each action is a method of the core (which records its events) run on the cluster's loop
through the proxy; what involves sockets (closing a listener, resetting connections) is
asked of the brokers' servers.
"""

from __future__ import annotations

import anyio

from ..core import events as ev
from ..server.broker import BrokerServer
from ..server.runtime import Runtime
from .proxy import LoopProxy


class ClusterUsageError(ValueError):
    """A facade call named something the cluster does not have (a broker id, a topic, a
    partition) or asked for what cannot be done (a leader when no broker runs). The message
    names the problem and what is valid. A ``ValueError``, so ``except ValueError`` catches it."""


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


class BrokerActions:
    def __init__(self, proxy: LoopProxy, runtime: Runtime, servers: list[BrokerServer]):
        self._proxy = proxy
        self._runtime = runtime
        self._servers = servers
        self._locks: dict[int, anyio.Lock] = {}  # one per broker: its starts and stops take turns

    def _now(self) -> int:
        return self._runtime.clock.now_ms()

    def _lock(self, broker: int) -> anyio.Lock:
        """Made on the loop, at first use: starts and stops of one broker run one at a time, so
        two concurrent starts cannot both bind its port (the second finds it running)."""
        if broker not in self._locks:
            self._locks[broker] = anyio.Lock()
        return self._locks[broker]

    def _stop_now(self, broker: int) -> None:
        if self._runtime.state.broker_stopped(broker, self._now()):
            self._servers[broker].stop()

    def stop(self, broker: int) -> None:
        check_broker(self._runtime.state, broker)
        if self._proxy.from_other_thread():
            self._proxy.run_async(self.stop_async, broker)
        else:
            self._proxy.act(self._stop_now, broker)

    async def stop_async(self, broker: int) -> None:
        """Stop a broker and return once its port is closed (on the cluster's loop); a
        stopped broker stays stopped (no-op)."""
        check_broker(self._runtime.state, broker)
        async with self._lock(broker):
            self._proxy.act(self._stop_now, broker)
            stopped = self._servers[broker].stopped
            if stopped is not None:
                await stopped.wait()

    def start(self, broker: int) -> None:
        check_broker(self._runtime.state, broker)
        if self._proxy.on_loop_thread():
            self._proxy.start_soon(self.start_async, broker)
        elif self._proxy.portal is not None:
            self._proxy.run_async(self.start_async, broker)
        else:
            raise RuntimeError("the cluster is not running")

    async def start_async(self, broker: int) -> None:
        """Start a stopped broker and return once it listens (on the cluster's loop); a
        running broker keeps running (no-op)."""
        state = self._runtime.state
        check_broker(state, broker)
        async with self._lock(broker):
            if state.brokers[broker].alive:
                return
            server = self._servers[broker]
            if server.stopped is not None:
                await server.stopped.wait()
            assert self._proxy.task_group is not None
            await self._proxy.task_group.start(server.serve)
            self._proxy.act(state.broker_started, broker, server.advertised_host, server.port, self._now())

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
            alive = live_brokers(state, f"coordinate group {group_id!r}")  # before the offsets topic is made
            partition = state.offsets_topic().partitions[state.group_partition(group_id)]
            current = partition.leader
            if broker is not None:
                check_broker(state, broker, alive=True, what="coordinator")
                chosen = broker
            else:
                chosen = alive[(alive.index(current) + 1) % len(alive)] if current in alive else alive[0]
            state.move_leader(partition, chosen, self._now(), load_time_ms=load_time_ms)
            return chosen

        return self._proxy.act(move)


class NetworkActions:
    def __init__(self, proxy: LoopProxy, runtime: Runtime, servers: list[BrokerServer]):
        self._proxy = proxy
        self._runtime = runtime
        self._servers = servers

    def cut(self, client_id: str, broker: int | None) -> None:
        runtime = self._runtime
        if broker is not None:
            check_broker(runtime.state, broker)

        def cut() -> None:
            runtime.cuts.add((client_id, broker))
            runtime.state.events.append(ev.NetworkCut(broker=broker, client_id=client_id))
            for server in self._servers:
                if broker is None or server.node_id == broker:
                    server.cut()

        self._proxy.act(cut)

    def heal(self, client_id: str | None, broker: int | None) -> None:
        runtime = self._runtime
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

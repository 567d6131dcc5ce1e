"""FakeCluster: the public facade. N brokers on loopback in one task group, one cluster id.

Three ways to run it::

    async with FakeCluster(brokers=3) as cluster:          # under trio, or asyncio via anyio
        ...

    with FakeCluster(brokers=3).run_in_thread() as cluster:  # synchronous tests
        ...

Control methods (``create_topic``, ``records``, ...) are safe to call from the test's own
thread while the cluster runs in its background thread.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from .clock import RealClock, VirtualClock
from .control.actions import ClusterActions
from .control.clock_control import ClockControl
from .control.fault_control import FaultControl
from .control.timeline import TimelineMethods
from .core.cluster_state import ClusterState, Topic
from .core.configs import BrokerConfig
from .core.groups.placement import OFFSETS_TOPIC
from .protocol import records as rec
from .protocol.framing import DEFAULT_MAX_FRAME_SIZE
from .server.broker import BrokerServer
from .server.runtime import Event, Runtime

T = TypeVar("T")


def _cluster_id() -> str:
    """22-character URL-safe base64 of a random UUID, like Kafka's cluster ids."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class FakeCluster(ClusterActions, TimelineMethods):
    """An in-process Kafka cluster for tests.

    :param brokers: number of brokers (node ids 0..N-1).
    :param port: port of the first broker; the others take port+1, port+2, ... (0 = free ports).
    :param topics: topics to create at start, ``{"orders": 6}`` or ``{"orders": {"partitions": 6, "config": {...}}}``.
    :param config: broker settings under Kafka's names (``{"auto.create.topics.enable": False}``).
    :param coordinator_load_time_ms: how long a coordinator that takes a group over answers
        COORDINATOR_LOAD_IN_PROGRESS while it "reads the offsets topic".
    :param virtual_time: run the broker's timers on a virtual clock that only moves when the
        test calls ``cluster.clock.advance(seconds)`` (see ``fakebroker.clock``).
    :param control_port: also serve the loopback HTTP control endpoint on this port (0 = a free
        one); see ``cluster.control_url``, ``cluster.control_token`` and ``fakebroker.control_http``.
    :param control_token: the endpoint's bearer token (default: a random one).
    """

    def __init__(self, brokers: int = 1, *, host: str = "127.0.0.1", port: int = 0, topics: dict[str, Any] | None = None,
                 config: dict[str, Any] | None = None, cluster_id: str | None = None,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, coordinator_load_time_ms: int = 0,
                 virtual_time: bool = False, control_port: int | None = None, control_token: str | None = None):
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.state = ClusterState(cluster_id or _cluster_id(), BrokerConfig(config))
        raw_clock = VirtualClock() if virtual_time else RealClock()
        self.clock = ClockControl(self, raw_clock)
        self.runtime = Runtime(self.state, raw_clock, int(self.state.config.get("socket.request.max.bytes"))
                               if max_frame_size == DEFAULT_MAX_FRAME_SIZE else max_frame_size)
        self._faults = FaultControl(self, self.runtime.faults)
        self.host = host
        self.coordinator_load_time_ms = coordinator_load_time_ms
        self.servers = [BrokerServer(i, self.runtime, host, port + i if port else 0) for i in range(brokers)]
        self.state.groups.on_event = self._group_event
        self._initial_topics = dict(topics or {})
        self._stack: AsyncExitStack | None = None
        self._portal: BlockingPortal | None = None
        self._loop_thread: int | None = None
        self._control_port = control_port
        self.control_token: str | None = control_token
        self.control_url: str | None = None  # "http://127.0.0.1:PORT" once the endpoint runs

    def _group_event(self, kind: str, details: dict[str, Any]) -> None:
        """A coordinator event, placed on the broker that coordinates its group."""
        group = details.get("group")
        broker = self.state.coordinator_of(group) if isinstance(group, str) else -1
        self.runtime.emit(kind, broker if broker >= 0 else None, **details)

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> FakeCluster:
        self._loop_thread = threading.get_ident()
        stack = AsyncExitStack()
        tg = await stack.enter_async_context(anyio.create_task_group())
        try:
            for server in self.servers:
                port = await tg.start(server.serve)
                self.state.add_broker(server.node_id, self.host, port)
                self.runtime.emit("broker_started", server.node_id, host=self.host, port=port)
            for name, spec in self._initial_topics.items():
                self._create_topic_now(name, spec)
            if self._control_port is not None:
                from .control_http import start as start_control  # hypercorn is imported only when asked for

                control_port, self.control_token = await start_control(self, self._control_port, self.control_token,
                                                                       task_group=tg)
                self.control_url = f"http://127.0.0.1:{control_port}"
        except BaseException:
            tg.cancel_scope.cancel()
            await stack.aclose()
            raise
        tg.start_soon(self._retention_loop)
        tg.start_soon(self._timer_loop)
        tg.start_soon(self._offset_expiry_loop)
        self._task_group = tg
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        self._task_group.cancel_scope.cancel()
        stack, self._stack = self._stack, None
        assert stack is not None
        return await stack.__aexit__(*exc_info)

    async def _timer_loop(self) -> None:
        """Fire the coordinator's timers (sessions, rebalance and sync timeouts) when due."""
        timers = self.state.groups.timers
        changed = anyio.Event()

        def wake() -> None:
            changed.set()

        timers.changed = wake
        while True:
            now = self.clock.now_ms()
            deadline = timers.next_deadline()
            if deadline is not None and deadline <= now:
                timers.fire_due(now)
                continue
            if self.clock.virtual:
                deadline = None  # virtual deadlines are reached by clock.advance, not by waiting
            with anyio.move_on_after(math.inf if deadline is None else (deadline - now) / 1000):
                await changed.wait()
            changed = anyio.Event()

    async def _retention_loop(self) -> None:
        """Apply retention every ``log.retention.check.interval.ms``, as Kafka's log cleaner does."""
        while True:
            await anyio.sleep(self.state.config.get_int("log.retention.check.interval.ms") / 1000)
            self._apply_retention_now()

    async def _offset_expiry_loop(self) -> None:
        """Expire committed offsets every ``offsets.retention.check.interval.ms`` (Kafka's rule:
        ``offsets.retention.minutes`` after the group became Empty, or after a simple commit)."""
        while True:
            await anyio.sleep(self.state.config.get_int("offsets.retention.check.interval.ms") / 1000)
            dropped = self.state.offsets.expire(self.clock.now_ms())
            if dropped:
                self.runtime.emit("offsets_expired", None, count=dropped)

    def _time_checks(self) -> None:
        """The periodic checks, run at once after a virtual-time jump."""
        self._apply_retention_now()
        dropped = self.state.offsets.expire(self.clock.now_ms())
        if dropped:
            self.runtime.emit("offsets_expired", None, count=dropped)

    def _apply_retention_now(self) -> int:
        dropped = self.state.apply_retention(self.clock.now_ms())
        if dropped:
            self.runtime.emit("retention_applied", None, batches_dropped=dropped)
        return dropped

    def apply_retention(self) -> int:
        """Apply retention now instead of waiting for the next check; returns batches dropped."""
        return self._call(self._apply_retention_now)

    @contextmanager
    def run_in_thread(self, backend: str = "trio") -> Iterator[FakeCluster]:
        """Run the cluster in a background thread; returns once every listener accepts."""
        with start_blocking_portal(backend) as portal:
            self._portal = portal
            try:
                with portal.wrap_async_context_manager(self):
                    yield self
            finally:
                self._portal = None

    def _on_loop_thread(self) -> bool:
        return threading.get_ident() == self._loop_thread

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a state change on the cluster's loop when called from another thread."""
        if self._portal is not None and not self._on_loop_thread():
            return self._portal.call(fn, *args)
        return fn(*args)

    # -- facts -------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:P1,127.0.0.1:P2,..."`` for the clients' bootstrap setting."""
        return ",".join(f"{self.host}:{s.port}" for s in self.servers)

    @property
    def cluster_id(self) -> str:
        return self.state.cluster_id

    @property
    def events(self) -> list[Event]:
        return list(self.runtime.events)

    @property
    def faults(self) -> FaultControl:
        """The fault rules: ``cluster.faults.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS", times=3)``."""
        return self._faults

    def on_event(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener(event)`` for every event from now on (on the cluster's thread)."""
        self.runtime.listeners.append(listener)

    # -- topics ------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, *, replication_factor: int = -1,
                     config: dict[str, Any] | None = None) -> Topic:
        return self._call(self._create_topic_now, name, {"partitions": partitions, "replication_factor": replication_factor,
                                                         "config": config or {}})

    def _create_topic_now(self, name: str, spec: Any) -> Topic:
        if isinstance(spec, int):
            spec = {"partitions": spec}
        config = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (spec.get("config") or {}).items()}
        topic = self.state.create_topic(name, spec.get("partitions", -1), spec.get("replication_factor", -1), config)
        self.runtime.emit("topic_created", None, topic=name, partitions=len(topic.partitions))
        return topic

    def delete_topic(self, name: str) -> None:
        def delete() -> None:
            self.state.delete_topic(name)
            self.runtime.emit("topic_deleted", None, topic=name)

        self._call(delete)

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        return self._call(lambda: {t.name: len(t.partitions) for t in self.state.topics.values() if not t.internal})

    def leader(self, topic: str, partition: int) -> int:
        return self._call(lambda: self.state.topics[topic].partitions[partition].leader)

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        """Make ``broker`` the leader of a partition (bumps the leader epoch); clients still
        talking to the old leader get NOT_LEADER_OR_FOLLOWER and refresh their metadata."""
        def move() -> None:
            p = self.state.topics[topic].partitions[partition]
            if broker not in p.replicas:
                p.replicas.append(broker)
            self.state.elect_leader(p, broker)
            self.runtime.emit("leader_moved", None, topic=topic, partition=partition, leader=broker, epoch=p.leader_epoch)
            self.runtime.data_changed()  # parked fetches re-check at once, as Kafka's DelayedFetch does
            if topic == OFFSETS_TOPIC:
                self._reload_offsets_partition(partition)

        self._call(move)

    def move_coordinator(self, group_id: str, broker: int | None = None, *, load_time_ms: int | None = None) -> int:
        """Move a group's coordinator (its offsets partition's leader) to ``broker`` (default:
        the next live broker). The new coordinator reloads the group from its persisted state,
        answering COORDINATOR_LOAD_IN_PROGRESS for ``load_time_ms`` (default: the cluster's
        ``coordinator_load_time_ms``); the old one answers NOT_COORDINATOR. Returns the new
        coordinator's id."""
        if load_time_ms is not None:
            self.coordinator_load_time_ms = load_time_ms
        def target() -> tuple[int, int]:
            partition = self.state.group_partition(group_id)
            current = self.state.offsets_topic().partitions[partition].leader
            alive = [b.node_id for b in self.state.alive_brokers()]
            chosen = broker if broker is not None else alive[(alive.index(current) + 1) % len(alive)] if current in alive else alive[0]
            return partition, chosen

        partition, chosen = self._call(target)
        self.move_leader(OFFSETS_TOPIC, partition, chosen)
        return chosen

    def coordinator(self, group_id: str) -> int:
        """The broker id coordinating ``group_id``."""
        return self._call(lambda: self.state.coordinator_of(group_id))

    def _reload_offsets_partition(self, partition: int) -> None:
        groups = self.state.groups_of_partition(partition)
        coordinator = self.state.groups
        coordinator.unload(groups)
        now = self.clock.now_ms()
        until = now + self.coordinator_load_time_ms
        self.state.loading_until_ms[partition] = until

        def load(t: int) -> None:
            coordinator.load(groups, t)
            self.state.loading_until_ms.pop(partition, None)

        if until <= now:
            load(now)
        else:
            coordinator.timers.schedule(f"load-{partition}", until, load)

    def offsets(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start offset, high watermark) of a partition."""
        def read() -> tuple[int, int]:
            log = self.state.topics[topic].partitions[partition].log
            return log.log_start_offset, log.high_watermark

        return self._call(read)

    def records(self, topic: str, partition: int | None = None) -> list[tuple[int, int, bytes | None, bytes | None]]:
        """Every record stored, as (partition, offset, key, value), in partition and offset order."""
        def read() -> list[tuple[int, int, bytes | None, bytes | None]]:
            out = []
            for p in self.state.topics[topic].partitions:
                if partition is not None and p.index != partition:
                    continue
                for stored in p.log.batches:
                    for entry in rec.read_batches(stored.data):
                        if isinstance(entry, rec.RecordBatch):
                            if entry.is_control:
                                continue
                            out.extend((p.index, entry.offset_of(r), r.key, r.value) for r in entry.records
                                       if entry.offset_of(r) >= p.log.log_start_offset)
                        else:
                            out.extend((p.index, m.offset, m.key, m.value) for m in entry.messages)
            return out

        return self._call(read)

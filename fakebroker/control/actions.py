"""Cluster-level actions and waiting, mixed into ``FakeCluster``: stop and start brokers,
elect leaders, add partitions, cut a client off, look at groups, wait for conditions.

Every action runs on the cluster's loop (through ``_call`` from a test thread) and leaves
an event in the cluster's log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import anyio

from ..core.groups.placement import OFFSETS_TOPIC
from .conditions import describe
from .views import GroupView, committed_offsets, group_view

if TYPE_CHECKING:
    from ..core.cluster_state import ClusterState, Partition
    from ..server.broker import BrokerServer
    from ..server.runtime import Runtime


class WaitTimeout(AssertionError, TimeoutError):
    """``wait_for`` gave up; the message says what it waited for and what it saw last."""


class ClusterActions:
    state: ClusterState
    runtime: Runtime
    servers: list[BrokerServer]
    # provided by FakeCluster
    _call: Callable[..., Any]
    _portal: Any
    _task_group: Any
    _on_loop_thread: Callable[[], bool]
    _reload_offsets_partition: Callable[[int], None]

    # -- brokers -----------------------------------------------------------------------------
    def stop_broker(self, broker: int) -> None:
        """Stop a broker as if its process died: its listener and connections close, and the
        partitions it led (coordinators included) move to the next live replica, as Kafka's
        controller moves them; a partition with no other replica goes offline (leader -1).
        From a test thread this returns once the port is closed."""
        def stop() -> None:
            info = self.state.brokers[broker]
            if not info.alive:
                return
            info.alive = False
            self.servers[broker].stop()
            self.runtime.emit("broker_stopped", broker)
            self._move_leaders_off(broker)
            self.runtime.data_changed()

        async def stop_and_wait() -> None:
            stop()
            stopped = self.servers[broker].stopped
            if stopped is not None:
                await stopped.wait()

        if self._portal is not None and not self._on_loop_thread():
            self._portal.call(stop_and_wait)
        else:
            stop()

    def start_broker(self, broker: int) -> None:
        """Start a stopped broker again on the same port. From a test thread this returns once
        it listens; from async code on the cluster's loop it returns at once and the broker
        listens a moment later (a ``broker_started`` event marks it). Offline partitions
        whose replica it is get it as leader; leadership moved away stays moved until
        ``elect_preferred_leaders()``."""
        if self._on_loop_thread():
            self._task_group.start_soon(self._start_broker, broker)
        elif self._portal is not None:
            self._portal.call(self._start_broker, broker)
        else:
            raise RuntimeError("the cluster is not running")

    def restart_broker(self, broker: int) -> None:
        self.stop_broker(broker)
        self.start_broker(broker)

    async def _start_broker(self, broker: int) -> None:
        info = self.state.brokers[broker]
        if info.alive:
            return
        server = self.servers[broker]
        await server.stopped.wait()
        await self._task_group.start(server.serve)
        info.alive = True
        self.runtime.emit("broker_started", broker, host=server.host, port=server.port, restarted=True)
        for partition in self._all_partitions():
            if partition.leader == -1 and broker in partition.replicas:
                self._elect(partition, broker, reason="replica back")

    def elect_preferred_leaders(self) -> int:
        """Give every partition back to its preferred (first) replica where that broker is
        alive, as Kafka's preferred leader election does; returns how many moved."""
        def elect() -> int:
            alive = {b.node_id for b in self.state.alive_brokers()}
            moved = 0
            for partition in self._all_partitions():
                preferred = partition.replicas[0]
                if preferred in alive and partition.leader != preferred:
                    self._elect(partition, preferred, reason="preferred")
                    moved += 1
            return moved

        return self._call(elect)

    def _all_partitions(self) -> list[Partition]:
        return [p for topic in list(self.state.topics.values()) for p in topic.partitions]

    def _move_leaders_off(self, broker: int) -> None:
        for partition in self._all_partitions():
            if partition.leader == broker:
                self._elect(partition, None, reason=f"broker {broker} stopped")

    def _elect(self, partition: Partition, leader: int | None, *, reason: str) -> None:
        self.state.elect_leader(partition, leader)
        self.runtime.emit("leader_moved", None, topic=partition.topic, partition=partition.index, leader=partition.leader,
                          epoch=partition.leader_epoch, reason=reason)
        self.runtime.data_changed()  # parked fetches re-check at once, as Kafka's DelayedFetch does
        if partition.topic == OFFSETS_TOPIC:
            if partition.leader == -1:
                groups = self.state.groups_of_partition(partition.index)
                self.state.groups.unload(groups)
            else:
                self._reload_offsets_partition(partition.index)

    # -- topics ------------------------------------------------------------------------------
    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions (CreatePartitions). Consumers notice at their
        next metadata refresh (``metadata.max.age.ms``) and their group rebalances, as with Kafka."""
        def grow() -> None:
            self.state.create_partitions(topic, total)
            self.runtime.emit("partitions_created", None, topic=topic, count=total)

        self._call(grow)

    # -- network -----------------------------------------------------------------------------
    def cut(self, client_id: str, broker: int | None = None) -> None:
        """A network partition between clients whose id matches ``client_id`` (a glob such as
        ``"svc-*"`` works) and ``broker`` (default: every broker): their connections close and
        every new one is closed at its first request, until ``heal``."""
        def cut() -> None:
            self.runtime.cuts.add((client_id, broker))
            self.runtime.emit("network_cut", broker, client_id=client_id)
            for server in self.servers:
                if broker is None or server.node_id == broker:
                    for conn in list(server.connections):
                        if self.runtime.is_cut_off(conn.client_id, server.node_id):
                            conn.abort()

        self._call(cut)

    def heal(self, client_id: str | None = None, broker: int | None = None) -> None:
        """Undo ``cut`` for that client (default: every cut) and broker (default: any)."""
        def heal() -> None:
            for cut in list(self.runtime.cuts):
                if (client_id is None or cut[0] == client_id) and (broker is None or cut[1] == broker):
                    self.runtime.cuts.discard(cut)
                    self.runtime.emit("network_healed", cut[1], client_id=cut[0])

        self._call(heal)

    # -- groups ------------------------------------------------------------------------------
    def group(self, group_id: str) -> GroupView | None:
        """A snapshot of a group (state, generation, members and decoded assignments)."""
        return self._call(self._group_now, group_id)

    def groups(self) -> list[str]:
        return self._call(lambda: sorted(self.state.groups.groups))

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the group's committed offset."""
        return self._call(self._committed_now, group_id)

    def _group_now(self, group_id: str) -> GroupView | None:
        return group_view(self.state, group_id)

    def _committed_now(self, group_id: str) -> dict[tuple[str, int], int]:
        return committed_offsets(self.state, group_id)

    # -- waiting -----------------------------------------------------------------------------
    async def wait_for(self, condition: Callable[[Any], Any], timeout: float = 10.0, *, poll: float = 0.05) -> Any:
        """Wait until ``condition(cluster)`` is truthy and return its value; it is checked
        after every event and every ``poll`` seconds. Raises ``WaitTimeout`` (an
        AssertionError) naming the condition and what it saw last."""
        deadline = anyio.current_time() + timeout
        while True:
            result = condition(self)
            if result:
                return result
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                raise WaitTimeout(f"waited {timeout:g} s for {describe(condition)}")
            await self.runtime.wait_event(min(poll, remaining))

    def wait_for_sync(self, condition: Callable[[Any], Any], timeout: float = 10.0, *, poll: float = 0.05) -> Any:
        """``wait_for`` for threaded tests (the cluster started with ``run_in_thread``)."""
        if self._portal is None or self._on_loop_thread():
            raise RuntimeError("wait_for_sync is for a cluster run with run_in_thread(); in async code use `await cluster.wait_for(...)`")
        return self._portal.call(lambda: self.wait_for(condition, timeout, poll=poll))

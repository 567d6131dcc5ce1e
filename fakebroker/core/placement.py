"""Which broker coordinates a key — a group id in ``__consumer_offsets``, a transactional id in
``__transaction_state`` — and whether it has loaded that key's partition yet.

The coordinator of a key is the leader of partition ``Utils.abs(key.hashCode()) % N`` of the
internal topic (``groups/placement.py`` has the hash). When that partition's leader moves, the
new leader loads the partition's state before it answers for the keys: meanwhile they get
COORDINATOR_LOAD_IN_PROGRESS. Loading lasts until the load has actually run, not until the
clock passes its deadline: a request between the two would find nothing loaded.
"""

from __future__ import annotations

from collections.abc import Callable

from ..protocol.error_codes import ErrorCode
from .groups.placement import partition_for
from .timers import Timers
from .topics import Topic


class CoordinatorPlacement:
    """Coordinator placement over one internal topic.

    :param topic: the internal topic, created on first use as Kafka creates it.
    :param exists: whether that topic has been created.
    :param alive: whether a broker id is a live broker.
    :param timers: where a partition's load is scheduled (keys ``(kind, partition)``).
    :param kind: the timer kind of a load, e.g. ``"load"``.
    """

    def __init__(
        self,
        topic: Callable[[], Topic],
        exists: Callable[[], bool],
        alive: Callable[[int], bool],
        timers: Timers,
        kind: str,
    ):
        self.topic = topic
        self.exists = exists
        self._alive = alive
        self._timers = timers
        self._kind = kind
        self.loading_until_ms: dict[int, int] = {}  # partition -> end of its (re)load

    def partition_of(self, key: str) -> int:
        return partition_for(key, len(self.topic().partitions))

    def coordinator_of(self, key: str) -> int:
        """The broker coordinating ``key`` (its partition's leader), -1 if that is not alive."""
        leader = self.topic().partitions[self.partition_of(key)].leader
        return leader if leader is not None and leader >= 0 and self._alive(leader) else -1

    def placed_coordinator_of(self, key: str) -> int:
        """As :meth:`coordinator_of`, but -1 before the topic exists (asking does not create it)."""
        return self.coordinator_of(key) if self.exists() else -1

    def epoch_of(self, key: str) -> int:
        """The coordinator epoch: the leader epoch of the key's partition."""
        return self.topic().partitions[self.partition_of(key)].leader_epoch

    def error_for(self, key: str, broker_id: int) -> ErrorCode:
        """NOT_COORDINATOR unless ``broker_id`` coordinates ``key``, COORDINATOR_LOAD_IN_PROGRESS
        while the key's partition is being (re)loaded."""
        if self.coordinator_of(key) != broker_id:
            return ErrorCode.NOT_COORDINATOR
        if self.partition_of(key) in self.loading_until_ms:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def available(self, key: str) -> bool:
        """The key's coordinator is up and loaded."""
        coordinator = self.coordinator_of(key)
        return coordinator >= 0 and not self.error_for(key, coordinator)

    def is_loading(self, partitions: set[int]) -> bool:
        return not partitions.isdisjoint(self.loading_until_ms)

    def moved(
        self,
        partition: int,
        leader: int,
        now_ms: int,
        load_time_ms: int,
        load: Callable[[int], None],
        *,
        load_at_once: bool = True,
    ) -> None:
        """The partition's leader moved to ``leader`` (-1: none): the new leader runs ``load``
        (with the time it runs at) after ``load_time_ms``; when that is 0, at once, or not at all
        unless ``load_at_once``."""
        key = (self._kind, partition)
        self._timers.cancel(key)
        until = now_ms + load_time_ms
        if leader == -1 or (until <= now_ms and not load_at_once):
            self.loading_until_ms.pop(partition, None)
            return
        self.loading_until_ms[partition] = until

        def run(t: int) -> None:
            self.loading_until_ms.pop(partition, None)
            load(t)

        if until <= now_ms:
            run(now_ms)
        else:
            self._timers.schedule(key, until, run)

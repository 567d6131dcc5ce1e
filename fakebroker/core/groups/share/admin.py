"""Share groups' offsets for admins (keys 90-92): describe the share partitions' start offsets
and lag, reset them on an empty group, delete them per topic — what ``kafka-share-groups.sh``
and the Admin clients use. The data are the share coordinator's (``state.py``): the start
offset as last written, which trails the live one by one write, as in Kafka."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from ....lazy_dataclasses import dataclass
from ....protocol.error_codes import ErrorCode as E
from ... import events as ev
from .coordinator import ShareCoordinator
from .model import ShareGroup
from .partitions import SharePartitions
from .state import ShareStateStore

ZERO_UUID = uuid.UUID(int=0)
UNKNOWN_PARTITION = "This server does not host this topic-partition."  # Kafka's message with the error
NO_OFFSETS = "There is no offset information to delete."
TopicsView = Callable[[], dict[str, tuple[uuid.UUID, int]]]


@dataclass(frozen=True)
class PartitionOffset:
    partition: int
    start_offset: int = -1
    leader_epoch: int = 0
    lag: int = -1
    error: E = E.NONE
    message: str | None = None


@dataclass(frozen=True)
class TopicOffsets:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionOffset, ...]


class ShareOffsets:
    def __init__(
        self,
        coordinator: ShareCoordinator,
        shares: SharePartitions,
        store: ShareStateStore,
        topics: TopicsView,
        latest_offset: Callable[[str, int], int],
    ):
        self.coordinator = coordinator
        self.shares = shares
        self.store = store
        self.topics = topics
        self.latest_offset = latest_offset

    def describe(self, group_id: str, wanted: list[tuple[str, list[int]]] | None) -> list[TopicOffsets]:
        """DescribeShareGroupOffsets of one group: ``wanted`` None = every initialized partition.
        No existence or type check: the data come from the store's summaries."""
        view = self.topics()
        if wanted is None:
            group = self.coordinator.live(group_id)
            initialized = group.initialized if group is not None else {}
            wanted = [(t, sorted(ps)) for t, ps in sorted(initialized.items()) if t in view]
        out = []
        for name, partitions in wanted:
            partitions = sorted(partitions)  # Kafka answers them in offset-map order
            if name not in view:
                out.append(TopicOffsets(name, ZERO_UUID, tuple(PartitionOffset(p) for p in partitions)))
                continue
            topic_id = view[name][0]
            parts = []
            for p in partitions:
                state = self.store.summary((group_id, topic_id, p))
                if state is None or state.start_offset < 0:
                    parts.append(PartitionOffset(p, -1, max(state.leader_epoch, 0) if state else 0, -1))
                    continue
                lag = -1  # Kafka's: not clamped (a start offset reset past the end gives a negative lag)
                if state.delivery_complete_count >= 0:
                    lag = self.latest_offset(name, p) - state.start_offset - state.delivery_complete_count
                parts.append(PartitionOffset(p, state.start_offset, max(state.leader_epoch, 0), lag))
            out.append(TopicOffsets(name, topic_id, tuple(parts)))
        return out

    def _group_for_change(self, group_id: str, other_type: Callable[[str], bool]) -> tuple[E, str | None]:
        if other_type(group_id):
            return E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
        group = self.coordinator.live(group_id)
        if group is not None and group.members:
            return E.NON_EMPTY_GROUP, "The group is not empty."
        return E.NONE, None

    def alter(
        self, group_id: str, topics: list[tuple[str, list[tuple[int, int]]]], other_type: Callable[[str], bool]
    ) -> tuple[E, str | None, list[TopicOffsets]]:
        """AlterShareGroupOffsets: an empty (or missing) share group's partitions start again at
        the given offsets (re-initialized, no range check)."""
        if not group_id:
            return E.INVALID_GROUP_ID, None, []
        error, message = self._group_for_change(group_id, other_type)
        if error:
            return error, message, []
        group = self.coordinator.live(group_id)
        if group is None:
            # Kafka creates an empty share group with its target assignment at epoch 1
            group = self.coordinator.groups[group_id] = ShareGroup(group_id, assignment_epoch=1)
        view = self.topics()
        out = []
        for name, partitions in topics:
            if name not in view:
                parts = tuple(
                    PartitionOffset(p, error=E.UNKNOWN_TOPIC_OR_PARTITION, message=UNKNOWN_PARTITION)
                    for p, _ in partitions
                )
                out.append(TopicOffsets(name, ZERO_UUID, parts))
                continue
            topic_id, count = view[name]
            results = []
            reset: dict[int, int] = {}
            for p, offset in partitions:
                if not 0 <= p < count:
                    results.append(PartitionOffset(p, error=E.UNKNOWN_TOPIC_OR_PARTITION, message=UNKNOWN_PARTITION))
                    continue
                key = (group_id, topic_id, p)
                stored = self.store.summary(key)
                epoch = max(group.group_epoch, stored.state_epoch if stored else 0)
                self.store.initialize(key, offset, epoch)
                self.shares.unload(group_id, name, p)
                group.initialized.setdefault(name, set()).add(p)
                results.append(PartitionOffset(p))
                reset[p] = offset
            if reset:
                self.coordinator.events.append(ev.ShareOffsetsReset(group=group_id, topic=name, offsets=reset))
            out.append(TopicOffsets(name, topic_id, tuple(results)))
        return E.NONE, None, out

    def delete(
        self, group_id: str, topics: list[str], other_type: Callable[[str], bool]
    ) -> tuple[E, str | None, list[tuple[str, uuid.UUID, E, str | None]]]:
        """DeleteShareGroupOffsets: a topic's share state goes (an empty group's only)."""
        group = self.coordinator.live(group_id)
        if group is None:
            if other_type(group_id):
                return E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.", []
            return E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", []
        if group.members:
            return E.NON_EMPTY_GROUP, "The group is not empty.", []
        view = self.topics()
        out: list[tuple[str, uuid.UUID, E, str | None]] = []
        for name in topics:
            if name not in view:
                out.append((name, ZERO_UUID, E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_PARTITION))
                continue
            topic_id = view[name][0]
            partitions = group.initialized.pop(name, None)
            if not partitions:  # Kafka names no topic id for a topic without share state
                out.append((name, ZERO_UUID, E.UNKNOWN_TOPIC_OR_PARTITION, NO_OFFSETS))
                continue
            for p in partitions:
                self.store.delete((group_id, topic_id, p))
                self.shares.unload(group_id, name, p)
            self.coordinator.events.append(ev.ShareOffsetsDeleted(group=group_id, topic=name))
            out.append((name, topic_id, E.NONE, None))
        return E.NONE, None, out

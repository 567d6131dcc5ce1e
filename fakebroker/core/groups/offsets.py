"""Committed offsets and the group admin operations (describe, list, delete).

Offsets are written at commit time into the store that stands for the offsets topic, so a
coordinator that takes a group over finds them there. Offsets committed in a transaction
(TxnOffsetCommit) wait per producer until the transaction's marker reaches the group's
offsets partition: COMMIT makes them the group's (unless a plain commit came later), ABORT
drops them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...protocol import data as consumer_protocol
from ...protocol.error_codes import ErrorCode as E
from .. import events as ev
from .consumer.coordinator import ConsumerCoordinator
from .consumer.model import ConsumerGroup
from .coordinator import GroupCoordinator
from .model import ClassicGroup, GroupState
from .results import DescribedMember, GroupDescription, GroupListing

S = GroupState


@dataclass
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1
    written: int = 0  # order of writes to the offsets topic: a transaction's offsets win only if newer


class OffsetStore:
    def __init__(self, coordinator: GroupCoordinator, consumer: ConsumerCoordinator | None = None):
        self.coordinator = coordinator
        self.consumer = consumer  # KIP-848 consumer groups, whose members commit with their epoch
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        # group -> producer id -> offsets committed in that producer's open transaction
        self.pending: dict[str, dict[int, dict[tuple[str, int], CommittedOffset]]] = {}
        self._writes = 0

    def consumer_group(self, group_id: str | None) -> ConsumerGroup | None:
        if self.consumer is None or group_id is None:
            return None
        group = self.consumer.groups.get(group_id)
        return group if group is not None and not group.dead else None

    # -- OffsetCommit ---------------------------------------------------------------------------
    def validate_commit(
        self,
        now_ms: int,
        *,
        group_id: str | None,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        version: int,
    ) -> E:
        """The group-level checks of OffsetCommit, in Kafka's order (``validateOffsetCommit``)."""
        consumer_group = self.consumer_group(group_id)
        if consumer_group is not None:
            assert self.consumer is not None
            return self.consumer.validate_commit(consumer_group, member_id, generation_id, version)
        coord = self.coordinator
        if group_id is None:
            return E.INVALID_GROUP_ID
        group = coord.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                coord.create_simple_group(group_id, now_ms)
                return E.NONE
            return E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION
        if group.is_state(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_state(S.EMPTY):
            return E.NONE
        if generation_id >= 0 or member_id or group_instance_id:
            error = _member_at_generation(coord, group, member_id, group_instance_id, generation_id)
            if error:
                return error
        elif not group.is_state(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        if group.is_state(S.COMPLETING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        member = group.members.get(member_id)
        if member is not None and group.is_state(S.STABLE, S.PREPARING_REBALANCE):
            coord.keep_alive(group, member, now_ms)
        return E.NONE

    def validate_partition_commit(
        self, group_id: str, member_id: str, generation_id: int, topic: str, partition: int
    ) -> E:
        """Per-partition checks after the group-level ones: a KIP-848 member's older epoch."""
        consumer_group = self.consumer_group(group_id)
        if consumer_group is None or self.consumer is None:
            return E.NONE
        return self.consumer.validate_partition_commit(consumer_group, member_id, generation_id, topic, partition)

    def commit(
        self,
        now_ms: int,
        group_id: str,
        topic: str,
        partition: int,
        offset: int,
        leader_epoch: int,
        metadata: str | None,
        retention_ms: int = -1,
    ) -> E:
        limit = self.coordinator.config.get_int("offset.metadata.max.bytes")
        text = metadata or ""
        if len(text.encode("utf-16-le")) // 2 > limit:  # Java measures String.length in UTF-16 units
            return E.OFFSET_METADATA_TOO_LARGE
        expire = now_ms + retention_ms if retention_ms not in (-1, None) and retention_ms >= 0 else -1
        self._writes += 1
        self.offsets.setdefault(group_id, {})[(topic, partition)] = CommittedOffset(
            offset, leader_epoch, text, now_ms, expire, self._writes
        )
        self.coordinator.emit(
            ev.OffsetCommitted(group=group_id, topic=topic, partition=partition, offset=offset), now_ms
        )
        return E.NONE

    # -- TxnOffsetCommit ------------------------------------------------------------------------
    def validate_txn_commit(
        self,
        now_ms: int,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        precise_errors: bool = False,
    ) -> E:
        """OMM ``validateTransactionalOffsetCommit`` (KIP-447): the producer's view of the group
        must be current, so a zombie that lost its partitions in a rebalance cannot commit.
        ``precise_errors`` (TxnOffsetCommit v6, KIP-1319): a missing group is GROUP_ID_NOT_FOUND
        and a consumer-protocol member's stale epoch STALE_MEMBER_EPOCH, where older versions
        answer both ILLEGAL_GENERATION."""
        consumer_group = self.consumer_group(group_id)
        if consumer_group is not None:
            if generation_id < 0 and not consumer_group.members:
                return E.NONE
            if generation_id == -1 and not member_id and group_instance_id is None:
                return E.NONE  # a producer that is not a member (no group metadata)
            member = consumer_group.members.get(member_id)
            if member is None:
                return E.UNKNOWN_MEMBER_ID
            if generation_id <= member.member_epoch:
                return E.NONE  # an older epoch is judged per partition (validate_partition_commit)
            # before v6 a stale epoch is ILLEGAL_GENERATION, which older producers understand
            return E.STALE_MEMBER_EPOCH if precise_errors and not member.is_classic else E.ILLEGAL_GENERATION
        coord = self.coordinator
        group = coord.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                coord.create_simple_group(group_id, now_ms)
                return E.NONE
            return E.GROUP_ID_NOT_FOUND if precise_errors else E.ILLEGAL_GENERATION
        if group.is_state(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_state(S.EMPTY):
            return E.NONE
        if generation_id >= 0 or member_id or group_instance_id:
            return _member_at_generation(coord, group, member_id, group_instance_id, generation_id)
        return E.NONE

    def commit_in_txn(
        self,
        now_ms: int,
        group_id: str,
        producer_id: int,
        topic: str,
        partition: int,
        offset: int,
        leader_epoch: int,
        metadata: str | None,
    ) -> E:
        limit = self.coordinator.config.get_int("offset.metadata.max.bytes")
        text = metadata or ""
        if len(text.encode("utf-16-le")) // 2 > limit:
            return E.OFFSET_METADATA_TOO_LARGE
        self._writes += 1
        self.pending.setdefault(group_id, {}).setdefault(producer_id, {})[(topic, partition)] = CommittedOffset(
            offset, leader_epoch, text, now_ms, -1, self._writes
        )
        return E.NONE

    def end_txn(self, group_ids: list[str], producer_id: int, commit: bool, now_ms: int) -> int:
        """A transaction marker reached these groups' offsets partition: its offsets become the
        groups' (COMMIT) or are dropped (ABORT). Returns how many were committed."""
        committed = 0
        for gid in group_ids:
            by_producer = self.pending.get(gid)
            offsets = by_producer.pop(producer_id, None) if by_producer is not None else None
            if by_producer is not None and not by_producer:
                del self.pending[gid]
            if not offsets or not commit:
                continue
            stored = self.offsets.setdefault(gid, {})
            for (topic, partition), o in sorted(offsets.items()):
                current = stored.get((topic, partition))
                if current is None or current.written < o.written:
                    stored[(topic, partition)] = CommittedOffset(
                        o.offset, o.leader_epoch, o.metadata, now_ms, -1, o.written
                    )
                    committed += 1
                    self.coordinator.emit(
                        ev.OffsetCommitted(group=gid, topic=topic, partition=partition, offset=o.offset), now_ms
                    )
        return committed

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """A transaction holds an uncommitted offset for the partition (OffsetFetch require_stable)."""
        return any((topic, partition) in offsets for offsets in self.pending.get(group_id, {}).values())

    def pending_groups(self) -> list[str]:
        return sorted(self.pending)

    # -- OffsetFetch ----------------------------------------------------------------------------
    def fetch(
        self, group_id: str, partitions: list[tuple[str, int]] | None
    ) -> list[tuple[str, int, CommittedOffset | None]]:
        """Stored offsets; a missing group is no error (every offset -1); ``None`` = all stored."""
        stored = self.offsets.get(group_id, {})
        if partitions is None:
            return [(t, p, o) for (t, p), o in sorted(stored.items())]
        return [(t, p, stored.get((t, p))) for t, p in partitions]

    # -- OffsetDelete ---------------------------------------------------------------------------
    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> tuple[E, dict[tuple[str, int], E]]:
        group = self.coordinator.groups.get(group_id)
        if not group_id:
            return E.INVALID_GROUP_ID, {}
        consumer_group = self.consumer_group(group_id)
        if consumer_group is not None:
            subscribed = consumer_group.subscribed_topics() if consumer_group.members else set()
            stored = self.offsets.get(group_id, {})
            out = {}
            for tp in partitions:
                if tp[0] in subscribed:
                    out[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    self._delete(group_id, stored, tp)
                    out[tp] = E.NONE
            return E.NONE, out
        if group is None or group.is_state(S.DEAD):
            return E.GROUP_ID_NOT_FOUND, {}
        if not group.is_state(S.EMPTY) and group.protocol_type != "consumer":
            return E.NON_EMPTY_GROUP, {}
        subscribed = subscribed_topics(group)
        out = {}
        stored = self.offsets.get(group_id, {})
        for tp in partitions:
            if not group.is_state(S.EMPTY) and (subscribed is None or tp[0] in subscribed):
                out[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                self._delete(group_id, stored, tp)
                out[tp] = E.NONE
        return E.NONE, out

    def _delete(self, group_id: str, stored: dict[tuple[str, int], CommittedOffset], tp: tuple[str, int]) -> None:
        if stored.pop(tp, None) is not None:
            self.coordinator.emit(ev.OffsetDeleted(group=group_id, topic=tp[0], partition=tp[1]))

    def forget(self, group_ids: list[str]) -> None:
        for gid in group_ids:
            self.offsets.pop(gid, None)
            self.pending.pop(gid, None)

    def expire(self, now_ms: int) -> int:
        """Kafka's offset expiry: offsets.retention.minutes after the group became Empty (or
        after the commit for simple groups); an explicit expire time wins."""
        retention = self.coordinator.config.get_int("offsets.retention.minutes") * 60_000
        dropped = 0
        for gid, stored in list(self.offsets.items()):
            group = self.coordinator.groups.get(gid)
            consumer_group = self.consumer_group(gid)
            if consumer_group is not None and consumer_group.members:
                continue  # a live consumer group keeps its offsets
            for tp, o in list(stored.items()):
                if self.has_pending(gid, *tp):
                    continue  # a partition with a pending transactional offset never expires
                if o.expire_timestamp_ms >= 0:
                    gone = now_ms >= o.expire_timestamp_ms
                elif group is None or group.protocol_type is None:
                    gone = now_ms - o.commit_timestamp_ms >= retention
                elif group.is_state(S.EMPTY):
                    gone = now_ms - max(group.state_timestamp_ms, 0) >= retention
                else:
                    gone = False
                if gone:
                    del stored[tp]
                    dropped += 1
        return dropped


def _member_at_generation(
    coord: GroupCoordinator, group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int
) -> E:
    """The member is the group's (and holds its instance id) at the group's generation."""
    error = coord.validate_member(group, member_id, instance_id)
    if error:
        return error
    return E.ILLEGAL_GENERATION if generation_id != group.generation_id else E.NONE


def subscribed_topics(group: ClassicGroup) -> set[str] | None:
    """Topics a ``consumer`` group subscribes to (from its members' metadata); None = all."""
    if group.protocol_type != "consumer":
        return set()
    topics: set[str] = set()
    for member in group.members.values():
        try:
            topics.update(consumer_protocol.decode_subscription(member.metadata(group.protocol_name)).topics)
        except Exception:  # undecodable metadata: Kafka treats the group as subscribed to everything
            return None
    return topics


def describe_group(store: OffsetStore, group_id: str) -> GroupDescription:
    group = store.coordinator.groups.get(group_id)
    if group is None or group.is_state(S.DEAD):
        return GroupDescription(E.GROUP_ID_NOT_FOUND, "Dead")
    stable = group.is_state(S.STABLE)
    members = tuple(
        DescribedMember(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.metadata(group.protocol_name) if stable else b"",
            m.assignment,
        )
        for m in group.members.values()
    )
    return GroupDescription(
        E.NONE, group.state.value, group.protocol_type or "", (group.protocol_name or "") if stable else "", members
    )


def list_groups(
    store: OffsetStore, states: list[str] | None = None, types: list[str] | None = None
) -> list[GroupListing]:
    wanted_states = {s.lower() for s in states} if states else None
    wanted_types = {t.lower() for t in types} if types else None
    out = []
    for group in store.coordinator.groups.values():
        if group.is_state(S.DEAD):
            continue
        if wanted_states is not None and group.state.value.lower() not in wanted_states:
            continue
        if wanted_types is not None and "classic" not in wanted_types:
            continue
        out.append(GroupListing(group.group_id, group.protocol_type or "", group.state.value))
    for consumer_group in store.consumer.groups.values() if store.consumer is not None else ():
        state = consumer_group.state.value
        if consumer_group.dead or wanted_states is not None and state.lower() not in wanted_states:
            continue
        if wanted_types is not None and "consumer" not in wanted_types:
            continue
        out.append(GroupListing(consumer_group.group_id, "consumer", state, "consumer"))
    return out


def delete_group(store: OffsetStore, group_id: str | None) -> E:
    coord = store.coordinator
    if group_id is None:
        return E.INVALID_GROUP_ID
    consumer_group = store.consumer_group(group_id)
    if consumer_group is not None:
        if consumer_group.members:
            return E.NON_EMPTY_GROUP
        assert store.consumer is not None
        store.offsets.pop(group_id, None)
        store.consumer.delete(group_id)
        return E.NONE
    group = coord.groups.get(group_id)
    if group is None or group.is_state(S.DEAD):
        return E.GROUP_ID_NOT_FOUND
    if not group.is_state(S.EMPTY):
        return E.NON_EMPTY_GROUP
    store.offsets.pop(group_id, None)
    coord.delete(group_id)
    return E.NONE

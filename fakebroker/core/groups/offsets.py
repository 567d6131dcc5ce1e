"""Committed offsets, per group: what the offsets topic holds for each.

Offsets are written at commit time into the store that stands for the offsets topic, so a
coordinator that takes a group over finds them there. Offsets committed in a transaction
(TxnOffsetCommit) wait per producer until the transaction's marker reaches the group's
offsets partition: COMMIT makes them the group's (unless a plain commit came later), ABORT
drops them. Nothing here asks what type a group is: the group service does the checks
before it stores (``service.py``, ``commits.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from ...lazy_dataclasses import dataclass
from ...protocol.error_codes import ErrorCode as E
from .. import events as ev
from ..configs import BrokerConfig
from ..events import EventSink


@dataclass
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1
    written: int = 0  # order of writes to the offsets topic: a transaction's offsets win only if newer


class OffsetStore:
    def __init__(self, config: BrokerConfig, events: EventSink):
        self.config = config
        self.events = events
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        # group -> producer id -> offsets committed in that producer's open transaction
        self.pending: dict[str, dict[int, dict[tuple[str, int], CommittedOffset]]] = {}
        self._writes = 0

    # -- OffsetCommit ---------------------------------------------------------------------------
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
        limit = self.config.get_int("offset.metadata.max.bytes")
        text = metadata or ""
        if len(text.encode("utf-16-le")) // 2 > limit:  # Java measures String.length in UTF-16 units
            return E.OFFSET_METADATA_TOO_LARGE
        expire = now_ms + retention_ms if retention_ms not in (-1, None) and retention_ms >= 0 else -1
        self._writes += 1
        self.offsets.setdefault(group_id, {})[(topic, partition)] = CommittedOffset(
            offset, leader_epoch, text, now_ms, expire, self._writes
        )
        self.events.append(ev.OffsetCommitted(group=group_id, topic=topic, partition=partition, offset=offset), now_ms)
        return E.NONE

    # -- TxnOffsetCommit ------------------------------------------------------------------------
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
        limit = self.config.get_int("offset.metadata.max.bytes")
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
                    self.events.append(
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
    def delete(self, group_id: str, partitions: list[tuple[str, int]]) -> None:
        stored = self.offsets.get(group_id, {})
        for tp in partitions:
            if stored.pop(tp, None) is not None:
                self.events.append(ev.OffsetDeleted(group=group_id, topic=tp[0], partition=tp[1]))

    def forget(self, group_ids: list[str]) -> None:
        for gid in group_ids:
            self.offsets.pop(gid, None)
            self.pending.pop(gid, None)

    def expire(self, now_ms: int, retained_from: Callable[[str, CommittedOffset], int | None]) -> int:
        """Kafka's offset expiry: an explicit expire time wins; otherwise an offset goes
        ``offsets.retention.minutes`` after ``retained_from`` (the group service's answer, by the
        group's type and state: None while the group uses its offsets)."""
        retention = self.config.get_int("offsets.retention.minutes") * 60_000
        dropped = 0
        for gid, stored in list(self.offsets.items()):
            for tp, o in list(stored.items()):
                if self.has_pending(gid, *tp):
                    continue  # a partition with a pending transactional offset never expires
                if o.expire_timestamp_ms >= 0:
                    gone = now_ms >= o.expire_timestamp_ms
                else:
                    since = retained_from(gid, o)
                    gone = since is not None and now_ms - since >= retention
                if gone:
                    del stored[tp]
                    dropped += 1
        return dropped

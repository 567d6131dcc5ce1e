"""The share partitions of every share group (Kafka's SharePartitionManager): loading a share
partition from the share coordinator's store on the partition's leader, acquiring records
with their locks, acknowledgements, releases, lock expiries, and persisting every change.

Acquisition is never persisted; everything else is written at once, with the start offset
the partition had before the write moved it (so, as in Kafka, the persisted start offset
trails the live one by one write). A new leader (a higher leader epoch) reloads: records
acquired under the old one are available again, with the delivery count they had.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ....lazy_dataclasses import dataclass
from ....protocol.error_codes import ErrorCode as E
from ... import events as ev
from ...configs import BrokerConfig
from ...events import EventSink
from ...group_configs import GroupConfigs
from ...log import PartitionLog
from ...timers import Timers
from ...topics import Partition
from .records import AckBatch, AckError, AckType, Acquired, InFlight, LogBatch
from .sessions import ShareSession, ShareSessions
from .state import ShareStateStore, StateKey

if TYPE_CHECKING:  # imported when a share partition is first loaded or archives records
    from .dead_letters import DeadLetters
    from .partition import SharePartition

PartitionKey = tuple[str, str, int]  # group id, topic, partition
OUTCOMES = {AckType.GAP: "gap", AckType.ACCEPT: "accept", AckType.RELEASE: "release", AckType.REJECT: "reject"}


def lock_key(group_id: str, topic: str, partition: int, lock: int) -> tuple[str, str, str, int, int]:
    return ("share-lock", group_id, topic, partition, lock)


@dataclass(frozen=True)
class Fetched:
    """One partition's part of a ShareFetch answer."""

    error: E = E.NONE
    message: str | None = None
    acquired: tuple[Acquired, ...] = ()
    records: bytes = b""


def _aborted_ranges(log: PartitionLog, start: int, end: int) -> list[tuple[int, int, int]]:
    return [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_between(start, end)]


class SharePartitions:
    def __init__(
        self,
        config: BrokerConfig,
        group_configs: GroupConfigs,
        timers: Timers,
        events: EventSink,
        store: ShareStateStore,
        partition_of: Callable[[str, int], Partition | None],
        topic_id_of: Callable[[str], uuid.UUID | None],
        topic_name_of: Callable[[uuid.UUID], str | None],
        wall_ms: Callable[[], int],
    ):
        self.config = config
        self.group_configs = group_configs
        self.timers = timers
        self.events = events
        self.store = store
        self.partition_of = partition_of
        self.topic_id_of = topic_id_of
        self.topic_name_of = topic_name_of
        self.wall_ms = wall_ms
        self.partitions: dict[PartitionKey, SharePartition] = {}
        self.sessions = ShareSessions(lambda: config.get_int("group.share.max.share.sessions"))
        self._locks = itertools.count(1)
        self.dead_letters: DeadLetters | None = None  # the cluster's writer (KIP-1191)
        self.dead_letter_writes: set[tuple[str, int]] = set()  # partitions written: their fetches wake

    def limit(self, group_id: str) -> int:
        return self.group_configs.get_int(group_id, "share.delivery.count.limit")

    def lock_duration(self, group_id: str) -> int:
        return self.group_configs.get_int(group_id, "share.record.lock.duration.ms")

    # -- loading ---------------------------------------------------------------------------------
    def loaded(self, group_id: str, topic: str, index: int) -> bool:
        """Whether the share partition is loaded under the partition's current leader."""
        sp = self.partitions.get((group_id, topic, index))
        partition = self.partition_of(topic, index)
        return sp is not None and partition is not None and sp.leader_epoch == partition.leader_epoch

    def load(self, group_id: str, topic: str, index: int, now_ms: int) -> SharePartition | None:
        """The share partition, (re)loaded from the store when this leader has not loaded it."""
        partition = self.partition_of(topic, index)
        topic_id = self.topic_id_of(topic)
        key = (group_id, topic, index)
        if partition is None or topic_id is None:
            self.partitions.pop(key, None)
            return None
        sp = self.partitions.get(key)
        if sp is not None and sp.leader_epoch == partition.leader_epoch:
            return sp
        state_key = (group_id, topic_id, index)
        log = partition.log
        # no share group initialized it: Kafka's read of its state fails (and nothing is kept)
        error, _, state = self.store.read(state_key, partition.leader_epoch)
        if error or state is None:
            return None
        start = state.start_offset
        if start < 0:
            start = self._reset_offset(group_id, log)
        from .partition import SharePartition

        sp = SharePartition(group_id, topic, index, start, partition.leader_epoch)
        sp.state_epoch = state.state_epoch
        sp.load(start, state.batches)
        sp.skip_to(log.log_start_offset)
        self.partitions[key] = sp
        return sp

    def _reset_offset(self, group_id: str, log: PartitionLog) -> int:
        """``share.auto.offset.reset``, resolved at the share partition's first load."""
        reset = self.group_configs.get(group_id, "share.auto.offset.reset")
        if reset == "earliest":
            return log.log_start_offset
        if reset.startswith("by_duration:"):
            offset, _ = log.offset_for_timestamp(self.wall_ms() - _duration_ms(reset.split(":", 1)[1]))
            return offset if offset >= 0 else log.log_end_offset
        return log.high_watermark

    def _state_key(self, sp: SharePartition) -> StateKey | None:
        topic_id = self.topic_id_of(sp.topic)
        return (sp.group_id, topic_id, sp.partition) if topic_id is not None else None

    def _persist(self, sp: SharePartition, start_before: int, now_ms: int) -> None:
        key = self._state_key(sp)
        if key is None:
            return
        _, batches = sp.snapshot()
        self.store.write(
            key,
            sp.leader_epoch,
            sp.state_epoch,
            start_before,
            batches,
            sp.delivery_complete_count(),
            now_ms,
            replace=True,
        )

    # -- acquisition -----------------------------------------------------------------------------
    def available_bytes(self, sp: SharePartition, read_committed: bool, enough: int) -> int:
        """About how many bytes a fetch could acquire now (to stop at ``enough``)."""
        partition = self.partition_of(sp.topic, sp.partition)
        if partition is None:
            return 0
        if sp.has_available():
            return enough
        log = partition.log
        upper = log.last_stable_offset if read_committed else log.high_watermark
        total = 0
        for batch in log.iter_batches(sp.read_from()):
            if batch.base_offset >= upper or total >= enough:
                break
            total += batch.size
        return total

    def acquire(
        self,
        group_id: str,
        member_id: str,
        client_id: str | None,
        sp: SharePartition,
        max_records: int,
        batch_size: int,
        now_ms: int,
        *,
        record_limit: bool = False,
    ) -> Fetched:
        partition = self.partition_of(sp.topic, sp.partition)
        if partition is None:
            return Fetched(E.UNKNOWN_TOPIC_OR_PARTITION)
        log = partition.log
        if log.log_start_offset > sp.start:
            start_before = sp.start
            sp.skip_to(log.log_start_offset)
            self._persist(sp, start_before, now_ms)
        read_committed = self.group_configs.get(group_id, "share.isolation.level") == "read_committed"
        upper = log.last_stable_offset if read_committed else log.high_watermark
        aborted = _aborted_ranges(log, sp.read_from(), upper) if read_committed else []

        def batches() -> Iterator[LogBatch]:
            for b in log.iter_batches(sp.read_from()):
                if b.base_offset >= upper:
                    return
                is_aborted = (
                    b.is_transactional
                    and not b.is_control
                    and any(pid == b.producer_id and first <= b.base_offset <= last for pid, first, last in aborted)
                )
                yield LogBatch(b.base_offset, b.last_offset, b.data, is_aborted)

        lock = next(self._locks)
        limit = self.limit(group_id)
        acquired, _ = sp.acquire(
            member_id,
            lock,
            max_records,
            batch_size,
            batches(),
            delivery_limit=limit,
            max_locks=self.group_configs.get_int(group_id, "share.partition.max.record.locks"),
            record_limit=record_limit,
        )
        if not acquired:
            return Fetched()
        self._arm_lock(sp, lock, now_ms + self.lock_duration(group_id))
        for a in acquired:
            self.events.append(
                ev.ShareRecordsAcquired(
                    group=group_id,
                    member=member_id,
                    topic=sp.topic,
                    partition=sp.partition,
                    first=a.first,
                    last=a.last,
                    delivery_count=a.count,
                    client_id=client_id,
                ),
                now_ms,
            )
        return Fetched(acquired=tuple(acquired), records=_records_of(log, acquired))

    def _arm_lock(self, sp: SharePartition, lock: int, deadline_ms: int) -> None:
        key = (sp.group_id, sp.topic, sp.partition)

        def expire(t: int) -> None:
            if self.partitions.get(key) is not sp:
                return  # reloaded since: that acquisition is gone
            start_before = sp.start
            released = sp.release(self.limit(sp.group_id), lock=lock)
            if released:
                self._persist(sp, start_before, t)
                sp.finish()
                self._released_events(sp, released, "lock expired", t)
                self._dead_letter(sp.group_id, sp.topic, sp.partition, released, t)

        self.timers.schedule(lock_key(sp.group_id, sp.topic, sp.partition, lock), deadline_ms, expire)

    def _dead_letter(self, group_id: str, topic: str, index: int, archived: list[Any], now_ms: int) -> None:
        """Archived records go to the group's dead-letter topic too, when it has one: ``archived``
        holds DeadLetters, or a release's (range, archived) pairs."""
        if self.dead_letters is None:
            return
        from .dead_letters import DeadLetter

        letters = [
            a if isinstance(a, DeadLetter) else DeadLetter(a[0].first, a[0].last, a[0].count, False)
            for a in archived
            if isinstance(a, DeadLetter) or a[1]
        ]
        source = self.partition_of(topic, index)
        if letters and source is not None:
            written = self.dead_letters.write(group_id, source, letters, now_ms)
            if written is not None:
                self.dead_letter_writes.add(written)

    def take_dead_letter_writes(self) -> list[tuple[str, int]]:
        """The dead-letter partitions written since the last call (their fetches should wake)."""
        written, self.dead_letter_writes = sorted(self.dead_letter_writes), set()
        return written

    def _released_events(
        self, sp: SharePartition, released: list[tuple[InFlight, bool]], reason: str, now_ms: int
    ) -> None:
        by_member: dict[str, int] = {}
        for r, archived in released:
            by_member[r.member] = by_member.get(r.member, 0) + r.last - r.first + 1
            if archived:
                self.events.append(
                    ev.ShareRecordsArchived(
                        group=sp.group_id,
                        topic=sp.topic,
                        partition=sp.partition,
                        first=r.first,
                        last=r.last,
                        reason="delivery limit",
                    ),
                    now_ms,
                )
        for member, count in by_member.items():
            self.events.append(
                ev.ShareRecordsReleased(
                    group=sp.group_id,
                    member=member,
                    topic=sp.topic,
                    partition=sp.partition,
                    records=count,
                    reason=reason,
                ),
                now_ms,
            )

    # -- acknowledgement -------------------------------------------------------------------------
    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        client_id: str | None,
        topic: str,
        index: int,
        batches: list[AckBatch],
        now_ms: int,
        *,
        loaded_only: bool = False,
    ) -> tuple[E, str | None]:
        if not batches:
            return E.NONE, None
        sp = self.partitions.get((group_id, topic, index)) if loaded_only else self.load(group_id, topic, index, now_ms)
        if sp is None:
            return E.UNKNOWN_TOPIC_OR_PARTITION, None
        partition = self.partition_of(topic, index)
        if partition is None or partition.leader_epoch != sp.leader_epoch:
            return E.NOT_LEADER_OR_FOLLOWER, None
        renew = any(AckType.RENEW in b.types for b in batches)
        if renew and not self.group_configs.get_bool(group_id, "share.renew.acknowledge.enable"):
            return E.INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group."
        lock = next(self._locks) if renew else 0
        start_before = sp.start
        try:
            changed = sp.acknowledge(member_id, batches, self.limit(group_id), lock)
        except AckError as exc:
            return exc.code, exc.message
        if renew:
            self._arm_lock(sp, lock, now_ms + self.lock_duration(group_id))
        if any(kind != AckType.RENEW for _, _, kind, _, _ in changed):
            self._persist(sp, start_before, now_ms)
        sp.finish()
        from .dead_letters import DeadLetter

        letters = [
            DeadLetter(first, last, count, kind == AckType.REJECT)
            for first, last, kind, archived, count in changed
            if archived and kind in (AckType.REJECT, AckType.RELEASE)
        ]
        self._dead_letter(group_id, topic, index, letters, now_ms)
        for first, last, kind, archived, _ in changed:
            if kind == AckType.RENEW:
                continue
            self.events.append(
                ev.ShareRecordsAcknowledged(
                    group=group_id,
                    member=member_id,
                    topic=topic,
                    partition=index,
                    first=first,
                    last=last,
                    outcome=OUTCOMES[AckType(kind)],
                    client_id=client_id,
                ),
                now_ms,
            )
            if archived and kind != AckType.GAP:
                reason = "rejected" if kind == AckType.REJECT else "delivery limit"
                self.events.append(
                    ev.ShareRecordsArchived(
                        group=group_id, topic=topic, partition=index, first=first, last=last, reason=reason
                    ),
                    now_ms,
                )
        return E.NONE, None

    # -- sessions closing ------------------------------------------------------------------------
    def release_session(self, session: ShareSession, now_ms: int) -> list[tuple[str, int]]:
        """The member's acquired records in the session's partitions come back. Returns the
        partitions that changed (their waiting fetches wake)."""
        woken = []
        for topic_id, index in session.partitions:
            topic = self.topic_name_of(topic_id)
            if topic is None:
                continue
            sp = self.partitions.get((session.group_id, topic, index))
            if sp is None:
                continue
            start_before = sp.start
            released = sp.release(self.limit(session.group_id), member=session.member_id)
            if released:
                self._persist(sp, start_before, now_ms)
                sp.finish()
                self._released_events(sp, released, "session closed", now_ms)
                self._dead_letter(sp.group_id, sp.topic, sp.partition, released, now_ms)
                woken.append((topic, index))
        return woken

    def connection_closed(self, broker: int, connection: str, now_ms: int) -> list[tuple[str, int]]:
        woken: list[tuple[str, int]] = []
        for session in self.sessions.of_connection(broker, connection):
            self.sessions.close(broker, session)
            woken += self.release_session(session, now_ms)
        return woken + self.take_dead_letter_writes()

    # -- the group's life ------------------------------------------------------------------------
    def drop_group(self, group_id: str) -> None:
        """The group is deleted: its share partitions and their state go."""
        for key in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[key]
        for state_key in self.store.keys_of(group_id):
            self.store.delete(state_key)
        for session in self.sessions.of_group(group_id):
            for k, s in list(self.sessions.sessions.items()):
                if s is session:
                    del self.sessions.sessions[k]

    def unload(self, group_id: str, topic: str, index: int) -> None:
        self.partitions.pop((group_id, topic, index), None)


def _records_of(log: PartitionLog, acquired: list[Acquired]) -> bytes:
    """The stored batches holding the acquired offsets, each once, in offset order."""
    out: list[bytes] = []
    seen: set[int] = set()
    for a in acquired:
        for batch in log.iter_batches(a.first):
            if batch.base_offset > a.last:
                break
            if batch.base_offset not in seen:
                seen.add(batch.base_offset)
                out.append(batch.data)
    return b"".join(out)


def _duration_ms(text: str) -> int:
    """An ISO-8601 duration as ``java.time.Duration.parse`` reads it (PnDTnHnMn.nS)."""
    import re

    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text.strip().upper())
    if not m:
        return 0
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    return int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)

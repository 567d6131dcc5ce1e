"""The group service: every group request enters the core here.

One lookup, group id -> a group of one type, decides which coordinator answers: a classic
group (``coordinator.py``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup) or a KIP-848 consumer
group (``consumer/coordinator.py``: ConsumerGroupHeartbeat, and classic members inside it).
Share and streams groups join as two more types. The handlers never ask which type a group
is: they decode, make one call here, and encode. This module also holds what involves more
than one type: replacing an empty group of another type, the online upgrade and downgrade
between classic and consumer (``migration.py``), offset commit and fetch checks
(``commits.py``), describe, list and delete, coordinator placement and moves, and the
committed offsets (``offsets.py``, which knows nothing of group types).
"""

from __future__ import annotations

import enum
import functools
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...lazy_dataclasses import dataclass
from ...protocol import data as consumer_protocol
from ...protocol.error_codes import ErrorCode as E
from ..configs import BrokerConfig
from ..events import EventLog, GroupEvents
from ..group_configs import GroupConfigs
from ..placement import CoordinatorPlacement
from ..timers import Pending, Timers
from ..topics import Partition, Topic
from . import commits, migration
from .classic.coordinator import GroupCoordinator
from .classic.model import ClassicGroup, GroupState
from .consumer.coordinator import ConsumerCoordinator
from .consumer.model import ConsumerGroup
from .offsets import CommittedOffset, OffsetStore
from .requests import (
    CommitRequest,
    ConsumerHeartbeatRequest,
    HeartbeatRequest,
    JoinRequest,
    LeaveRequest,
    SyncRequest,
)
from .results import (
    DescribedMember,
    GroupDescription,
    GroupListing,
    HeartbeatResult,
    JoinResult,
    LeaveResult,
    SyncResult,
    join_error,
    sync_error,
)

if TYPE_CHECKING:  # share and streams groups: imported when the service first needs them
    from .share.admin import ShareOffsets
    from .share.coordinator import ShareCoordinator, ShareHeartbeatRequest
    from .share.dead_letters import DeadLetters
    from .share.model import ShareGroup
    from .share.partitions import SharePartitions
    from .share.state import ShareStateStore
    from .streams.coordinator import StreamsCoordinator
    from .streams.heartbeat import StreamsHeartbeatRequest, StreamsHeartbeatResult
    from .streams.model import StreamsGroup

S = GroupState


class GroupType(enum.Enum):
    """ListGroups' ``group_type``: the protocol a group's members speak."""

    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"
    STREAMS = "streams"


@dataclass(frozen=True)
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True)
class FetchedOffset:
    """One partition of an OffsetFetch answer: its committed offset (None: none) or its error."""

    topic: str | None
    partition: int
    committed: CommittedOffset | None
    error: E = E.NONE


@dataclass(frozen=True)
class ConsumerGroupView:
    """ConsumerGroupDescribe's view of one group: the group (None with an error) and the
    assignor it uses."""

    error: E
    group: ConsumerGroup | None = None
    assignor: str = ""


class GroupService:
    """Every group of the cluster, by id, whatever its type (see the module's docstring).

    :param topics_view: the subscribable topics (name -> id and partition count).
    :param offsets_topic: ``__consumer_offsets``, created on first use.
    :param offsets_topic_exists: whether it has been created (listing must not create it).
    :param alive: whether a broker id is a live broker.
    """

    def __init__(
        self,
        config: BrokerConfig,
        group_configs: GroupConfigs,
        timers: Timers,
        events: EventLog,
        topics_view: Callable[[], dict[str, tuple[uuid.UUID, int]]],
        offsets_topic: Callable[[], Topic],
        offsets_topic_exists: Callable[[], bool],
        alive: Callable[[int], bool],
        partition_of: Callable[[str, int], Partition | None] = lambda topic, index: None,
        topic_id_of: Callable[[str], uuid.UUID | None] = lambda topic: None,
        topic_name_of: Callable[[uuid.UUID], str | None] = lambda topic_id: None,
        wall_ms: Callable[[], int] = lambda: 0,
    ):
        self.config = config
        self.group_configs = group_configs
        self.placement = CoordinatorPlacement(offsets_topic, offsets_topic_exists, alive, timers, "load")
        # every group event is placed on its group's coordinator and names its member's client
        self.events = GroupEvents(events, self.placement.placed_coordinator_of, self.member_client)
        self.classic = GroupCoordinator(config, timers, self.events)
        self.consumer = ConsumerCoordinator(config, timers, self.events, topics_view)
        self.consumer.on_only_classic_members = self._downgrade
        self.consumer.group_configs = group_configs  # consumer.* group configs count
        self.offsets = OffsetStore(config, self.events)
        # share and streams groups: their parts are made on first use (below)
        self._timers = timers
        self._topics_view = topics_view
        self._partition_of = partition_of
        self._topic_id_of = topic_id_of
        self._topic_name_of = topic_name_of
        self._wall_ms = wall_ms
        self.dead_letters: Callable[[], DeadLetters] | None = None  # makes the cluster's writer (KIP-1191)

    # -- share and streams groups, made on first use ---------------------------------------------
    # A cluster that never sees a share or a streams group needs neither coordinator (nor their
    # modules): each part is made when first asked for, and the checks every group request makes
    # ("is this id a share group?") ask only a part that exists (one never made has no groups).
    @functools.cached_property
    def share_states(self) -> ShareStateStore:
        """The share coordinator's store of share-partition states."""
        from .share.state import ShareStateStore

        return ShareStateStore()

    @functools.cached_property
    def share(self) -> ShareCoordinator:
        """The group coordinator's side of share groups."""
        from .share.coordinator import ShareCoordinator

        return ShareCoordinator(
            self.config, self.group_configs, self._timers, self.events, self._topics_view, self._initialize_share
        )

    @functools.cached_property
    def shares(self) -> SharePartitions:
        """The share groups' data path: share partitions, sessions, acknowledgements."""
        from .share.partitions import SharePartitions

        shares = SharePartitions(
            self.config,
            self.group_configs,
            self._timers,
            self.events,
            self.share_states,
            self._partition_of,
            self._topic_id_of,
            self._topic_name_of,
            self._wall_ms,
        )
        if self.dead_letters is not None:
            shares.dead_letters = self.dead_letters()
        return shares

    @functools.cached_property
    def share_offsets(self) -> ShareOffsets:
        """Share groups' offsets as the admin APIs describe, alter and delete them."""
        from .share.admin import ShareOffsets

        def latest_offset(topic: str, index: int) -> int:
            partition = self._partition_of(topic, index)
            return partition.log.high_watermark if partition is not None else -1

        return ShareOffsets(self.share, self.shares, self.share_states, self._topics_view, latest_offset)

    @functools.cached_property
    def streams(self) -> StreamsCoordinator:
        """The coordinator of streams groups (KIP-1071)."""
        from .streams.coordinator import StreamsCoordinator

        return StreamsCoordinator(self.config, self.group_configs, self._timers, self.events, self._topics_view)

    def made(self, part: str) -> bool:
        """Whether ``part`` (``share``, ``shares``, ``share_states``, ``share_offsets``, ``streams``)
        has been made: one never made holds nothing, and reading it would make it."""
        return part in self.__dict__

    def _lazy_coordinators(self) -> tuple[ShareCoordinator | None, StreamsCoordinator | None]:
        """The share and the streams coordinator, each None while it has not been made."""
        return self.__dict__.get("share"), self.__dict__.get("streams")

    # -- the one lookup: a group id's type -------------------------------------------------------
    # Each type's coordinator keeps its own groups; an id names at most one live group. The
    # service asks the consumer coordinator first (a live KIP-848 group), else the id is the
    # classic coordinator's (which answers for a missing group as Kafka does).
    def ids(self) -> list[str]:
        """Every group id the coordinators know, of every type (Dead ones included until unloaded)."""
        names = set(self.classic.groups) | set(self.consumer.groups)
        for coordinator in self._lazy_coordinators():
            if coordinator is not None:
                names |= set(coordinator.groups)
        return sorted(names)

    def _consumer_group(self, group_id: str | None) -> ConsumerGroup | None:
        group = self.consumer.groups.get(group_id) if group_id is not None else None
        return group if group is not None and not group.dead else None

    def _share_group(self, group_id: str | None) -> ShareGroup | None:
        share = self._lazy_coordinators()[0]
        return share.live(group_id) if share is not None else None

    def _streams_group(self, group_id: str | None) -> StreamsGroup | None:
        streams = self._lazy_coordinators()[1]
        return streams.live(group_id) if streams is not None else None

    def _not_consumer(self, group_id: str | None) -> str | None:
        """Kafka's message when ``group_id`` names a share or streams group (one id, one type)."""
        other = self._share_group(group_id) is not None or self._streams_group(group_id) is not None
        return f"Group {group_id} is not a consumer group." if other else None

    def coordinator_error(self, group_id: str, broker_id: int) -> E:
        """NOT_COORDINATOR unless ``broker_id`` coordinates the group, COORDINATOR_LOAD_IN_PROGRESS
        while its offsets partition loads."""
        return self.placement.error_for(group_id, broker_id)

    def coordinator_of(self, group_id: str) -> int:
        return self.placement.coordinator_of(group_id)

    def partition_of(self, group_id: str) -> int:
        return self.placement.partition_of(group_id)

    # -- the classic protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup -------------------------
    def join(self, now_ms: int, broker_id: int, req: JoinRequest) -> JoinResult | Pending:
        low = self.config.get_int("group.min.session.timeout.ms")
        high = self.config.get_int("group.max.session.timeout.ms")
        timeout_ok = low <= req.session_timeout_ms <= high
        # 4.x checks the session timeout before coordinator placement; the group id first.
        if req.group_id and timeout_ok:
            error = self.coordinator_error(req.group_id, broker_id)
            if error:
                return join_error(error)
        if self._share_group(req.group_id) is not None:
            return join_error(E.INCONSISTENT_GROUP_PROTOCOL)
        streams = self._streams_group(req.group_id)
        if streams is not None:
            if streams.members:  # a non-empty streams group: member id ""
                return join_error(E.INCONSISTENT_GROUP_PROTOCOL)
            self.streams.delete(streams.group_id, now_ms)  # an empty one becomes classic
        group = self._consumer_group(req.group_id)
        if group is not None:
            if group.members and timeout_ok:
                # a classic member in a KIP-848 group: the server assigns, the answer comes at once
                return self.consumer.classic_join(now_ms, group, req)
            if not group.members:
                self.consumer.delete(group.group_id, now_ms)  # an empty group of the other type goes
        return self.classic.join(now_ms, req)

    def sync(self, now_ms: int, broker_id: int, req: SyncRequest) -> SyncResult | Pending:
        missing_protocol = req.version >= 5 and (req.protocol_type is None or req.protocol_name is None)
        if req.group_id and not missing_protocol:  # INCONSISTENT_GROUP_PROTOCOL comes first
            error = self.coordinator_error(req.group_id, broker_id)
            if error:
                return sync_error(error)
        group = self._consumer_group(req.group_id)
        if group is not None:  # a classic member in a KIP-848 group gets the server's assignment
            return self.consumer.classic_sync(now_ms, group, req)
        return self.classic.sync(now_ms, req)

    def heartbeat(self, now_ms: int, broker_id: int, req: HeartbeatRequest) -> E:
        if req.group_id:
            error = self.coordinator_error(req.group_id, broker_id)
            if error == E.COORDINATOR_LOAD_IN_PROGRESS:
                return E.NONE  # Kafka answers NONE while loading
            if error:
                return error
        group = self._consumer_group(req.group_id)
        if group is not None:
            return self.consumer.classic_heartbeat(now_ms, group, req)
        return self.classic.heartbeat(now_ms, req)

    def leave(self, now_ms: int, broker_id: int, req: LeaveRequest) -> LeaveResult:
        if req.group_id:
            error = self.coordinator_error(req.group_id, broker_id)
            if error:
                return LeaveResult(error)
        group = self._consumer_group(req.group_id)
        if group is not None:
            return self.consumer.classic_leave(now_ms, group, req.members)
        return self.classic.leave(now_ms, req)

    # -- the consumer protocol (KIP-848) ------------------------------------------------------------
    def consumer_heartbeat(self, now_ms: int, broker_id: int, req: ConsumerHeartbeatRequest) -> HeartbeatResult:
        if not self.consumer.enabled():
            return HeartbeatResult(
                E.UNSUPPORTED_VERSION,
                "The new group coordinator is not enabled: group.coordinator.rebalance.protocols has no consumer.",
            )
        if req.group_id:
            error = self.coordinator_error(req.group_id, broker_id)
            if error:
                return HeartbeatResult(error)
            not_consumer = self._not_consumer(req.group_id)
            if not_consumer:
                return HeartbeatResult(E.GROUP_ID_NOT_FOUND, not_consumer)
            classic = self.classic.groups.get(req.group_id)
            if classic is not None and not classic.is_state(S.DEAD):
                if classic.is_state(S.EMPTY):
                    self.classic.delete(req.group_id)  # an empty group of the other type is replaced
                elif not migration.upgrade(self.classic, self.consumer, req.group_id, now_ms):
                    # not allowed by group.consumer.migration.policy, or the classic group is rebalancing
                    return HeartbeatResult(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group.")
        return self.consumer.heartbeat(now_ms, req)

    def _downgrade(self, group: ConsumerGroup, now_ms: int) -> None:
        """Only classic members are left in a consumer group (see ``migration.py``)."""
        migration.downgrade(self.classic, self.consumer, self.config, group, now_ms)

    # -- share groups (KIP-932) --------------------------------------------------------------------
    def share_heartbeat(self, now_ms: int, broker_id: int, req: ShareHeartbeatRequest) -> HeartbeatResult:
        """ShareGroupHeartbeat: a group of another type, even an empty one, is not converted."""
        error = self.coordinator_error(req.group_id, broker_id) if req.group_id.strip() else E.NONE
        if error:
            return HeartbeatResult(error)
        if req.member_id.strip() and req.group_id.strip() and self._other_type(req.group_id, "share"):
            return HeartbeatResult(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group.")
        return self.share.heartbeat(now_ms, req)

    def share_describe(self, broker_id: int, group_id: str | None) -> tuple[E, str | None, ShareGroup | None]:
        """ShareGroupDescribe of one group."""
        if not group_id:
            return E.INVALID_GROUP_ID, None, None
        error = self.coordinator_error(group_id, broker_id)
        if error:
            return error, None, None
        group = self._share_group(group_id)
        if group is None:
            if self._other_type(group_id, "share"):
                return E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.", None
            return E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        return E.NONE, None, group

    def is_other_than_share(self, group_id: str) -> bool:
        return self._other_type(group_id, "share")

    # -- streams groups (KIP-1071) -----------------------------------------------------------------
    def streams_heartbeat(self, now_ms: int, broker_id: int, req: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        """StreamsGroupHeartbeat: the request's checks, the coordinator, then the group's type
        (a join converts an Empty classic group; any other type is GROUP_ID_NOT_FOUND)."""
        from .streams.heartbeat import StreamsHeartbeatResult

        invalid = self.streams.validate(req)
        if invalid is not None:
            return invalid
        error = self.coordinator_error(req.group_id, broker_id)
        if error:
            return StreamsHeartbeatResult(error)
        if self._other_type(req.group_id, "streams"):
            classic = self.classic.groups.get(req.group_id)
            if req.member_epoch == 0 and classic is not None and classic.is_state(S.EMPTY):
                self.classic.delete(req.group_id)  # an empty classic group is converted
            else:
                return StreamsHeartbeatResult(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a streams group.")
        return self.streams.heartbeat(now_ms, req)

    def streams_describe(self, broker_id: int, group_id: str | None) -> tuple[E, str | None, StreamsGroup | None]:
        """StreamsGroupDescribe of one group."""
        if not group_id:
            return E.INVALID_GROUP_ID, None, None
        error = self.coordinator_error(group_id, broker_id)
        if error:
            return error, None, None
        group = self._streams_group(group_id)
        if group is None:
            if self._other_type(group_id, "streams"):
                return E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.", None
            return E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        return E.NONE, None, group

    def _other_type(self, group_id: str, wanted: str) -> bool:
        """Whether ``group_id`` names a live group of a type other than ``wanted``."""
        if wanted != "streams" and self._streams_group(group_id) is not None:
            return True
        if wanted != "share" and self._share_group(group_id) is not None:
            return True
        if wanted != "consumer" and self._consumer_group(group_id) is not None:
            return True
        classic = self.classic.groups.get(group_id)
        return wanted != "classic" and classic is not None and not classic.is_state(S.DEAD)

    def _initialize_share(self, group_id: str, topic: str, partitions: list[int], state_epoch: int) -> None:
        """InitializeShareGroupState for a group's new share partitions (start offset -1)."""
        topic_id = self._topic_id_of(topic)
        if topic_id is None:
            return
        for p in partitions:
            key = (group_id, topic_id, p)
            if self.share_states.summary(key) is None:
                self.share_states.initialize(key, -1, state_epoch)

    # -- offsets ----------------------------------------------------------------------------------
    def commit(
        self, now_ms: int, broker_id: int, req: CommitRequest, offsets: list[OffsetToCommit], retention_ms: int = -1
    ) -> list[E]:
        """OffsetCommit: the group's checks, then each partition's; one error per offset, in order."""
        error = self.commit_error(now_ms, broker_id, req)
        out = []
        for o in offsets:
            out.append(
                error
                or self.partition_commit_error(req, o.topic, o.partition)
                or self.offsets.commit(
                    now_ms, req.group_id or "", o.topic, o.partition, o.offset, o.leader_epoch, o.metadata, retention_ms
                )
            )
        return out

    def commit_error(self, now_ms: int, broker_id: int, req: CommitRequest) -> E:
        """OffsetCommit's group-level checks."""
        if req.group_id is None:
            return E.INVALID_GROUP_ID
        error = self.coordinator_error(req.group_id, broker_id)
        if error:
            return error
        if self._share_group(req.group_id) is not None:
            return E.GROUP_ID_NOT_FOUND
        streams = self._streams_group(req.group_id)
        if streams is not None:
            return self.streams.validate_commit(streams, req.member_id, req.generation_id, req.version)
        group = self._consumer_group(req.group_id)
        if group is not None:
            return self.consumer.validate_commit(group, req.member_id, req.generation_id, req.version)
        return commits.classic_commit_error(self.classic, now_ms, req)

    def partition_commit_error(self, req: CommitRequest, topic: str, partition: int) -> E:
        """A KIP-848 member's older epoch: fine for a partition it has held since then (a
        streams member's: for an active task it has held since then)."""
        streams = self._streams_group(req.group_id)
        if streams is not None:
            return self.streams.validate_partition_commit(streams, req.member_id, req.generation_id, topic, partition)
        group = self._consumer_group(req.group_id)
        if group is None:
            return E.NONE
        return self.consumer.validate_partition_commit(group, req.member_id, req.generation_id, topic, partition)

    def commit_in_txn(
        self,
        now_ms: int,
        broker_id: int,
        req: CommitRequest,
        producer_id: int,
        offsets: list[OffsetToCommit],
        verify: Callable[[], E],
    ) -> list[E]:
        """TxnOffsetCommit: the coordinator, ``verify`` (the transaction holds the group's offsets
        partition: the transaction coordinator's answer), the group's checks, each partition's;
        then the offsets wait for the transaction's marker. One error per offset, in order."""
        error = self.txn_commit_error(now_ms, broker_id, req, verify)
        if not error:
            for o in offsets:
                stale = self.partition_commit_error(req, o.topic, o.partition)
                if stale:  # one stale partition fails the whole request (Kafka throws)
                    error = stale if req.precise_errors else E.ILLEGAL_GENERATION
                    break
        if error:
            return [error for _ in offsets]
        group_id = req.group_id or ""
        return [
            self.offsets.commit_in_txn(
                now_ms, group_id, producer_id, o.topic, o.partition, o.offset, o.leader_epoch, o.metadata
            )
            for o in offsets
        ]

    def txn_commit_error(
        self, now_ms: int, broker_id: int, req: CommitRequest, verify: Callable[[], E] = lambda: E.NONE
    ) -> E:
        """TxnOffsetCommit's group-level checks (``verify``: the transaction coordinator's)."""
        if not req.group_id:
            return E.INVALID_GROUP_ID
        error = self.coordinator_error(req.group_id, broker_id) or verify()
        if error:
            return error
        if self._share_group(req.group_id) is not None:
            return E.GROUP_ID_NOT_FOUND
        streams = self._streams_group(req.group_id)
        if streams is not None:
            error = self.streams.validate_commit(
                streams, req.member_id, req.generation_id, req.version, transactional=True
            )
            stale = error == E.STALE_MEMBER_EPOCH and not req.precise_errors
            return E.ILLEGAL_GENERATION if stale else error
        group = self._consumer_group(req.group_id)
        if group is not None:
            return commits.consumer_txn_commit_error(group, req)
        return commits.classic_txn_commit_error(self.classic, now_ms, req)

    def fetch_offsets(
        self,
        broker_id: int,
        group_id: str | None,
        partitions: list[tuple[str | None, int]] | None,
        member: tuple[str | None, int] | None = None,
        *,
        stable: bool = False,
    ) -> tuple[E, list[FetchedOffset]]:
        """OffsetFetch of one group: ``partitions`` None for all it has; ``member`` (v9+) the
        KIP-848 member's id and epoch; ``stable``: a partition a transaction holds an offset of
        answers UNSTABLE_OFFSET_COMMIT. A missing group is no error (no offsets)."""
        if group_id is None:
            return E.INVALID_GROUP_ID, []
        error = self.coordinator_error(group_id, broker_id)
        group = self._consumer_group(group_id)
        if not error and member is not None and group is not None:
            error = self.consumer.validate_fetch(group, member[0] or "", member[1])
        streams = self._streams_group(group_id)
        if not error and member is not None and streams is not None and (member[0] is not None or member[1] >= 0):
            error = self.streams.validate_fetch(streams, member[0] or "", member[1])
        if error:
            return error, [FetchedOffset(t, p, None, error) for t, p in partitions or []]
        wanted = None if partitions is None else [(t, p) for t, p in partitions if t is not None]
        found = {(t, p): o for t, p, o in self.offsets.fetch(group_id, wanted)}
        keys = list(found) if partitions is None else partitions
        out = []
        for t, p in keys:
            if stable and t is not None and self.offsets.has_pending(group_id, t, p):
                out.append(FetchedOffset(t, p, None, E.UNSTABLE_OFFSET_COMMIT))  # the consumer retries
            else:
                out.append(FetchedOffset(t, p, found.get((t, p)) if t is not None else None))
        return E.NONE, out

    def delete_offsets(
        self, broker_id: int, group_id: str | None, partitions: list[tuple[str, int]]
    ) -> tuple[E, dict[tuple[str, int], E]]:
        """OffsetDelete: a partition of a topic the group still subscribes to is refused."""
        if not group_id:
            return E.INVALID_GROUP_ID, {}
        error = self.coordinator_error(group_id, broker_id)
        if error:
            return error, {}
        if self._share_group(group_id) is not None:
            return E.GROUP_ID_NOT_FOUND, {}
        group = self._consumer_group(group_id)
        streams = self._streams_group(group_id)
        if streams is not None:
            subscribed: set[str] | None = streams.source_topics() if streams.members else set()
        elif group is not None:
            subscribed = group.subscribed_topics() if group.members else set()
        else:
            classic = self.classic.groups.get(group_id)
            if classic is None or classic.is_state(S.DEAD):
                return E.GROUP_ID_NOT_FOUND, {}
            if not classic.is_state(S.EMPTY) and classic.protocol_type != "consumer":
                return E.NON_EMPTY_GROUP, {}
            subscribed = set() if classic.is_state(S.EMPTY) else subscribed_topics(classic)
        out = {}
        for tp in partitions:
            if subscribed is None or tp[0] in subscribed:
                out[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                self.offsets.delete(group_id, [tp])
                out[tp] = E.NONE
        return E.NONE, out

    def expire_offsets(self, now_ms: int) -> int:
        return self.offsets.expire(now_ms, self._retained_from)

    def _retained_from(self, group_id: str, committed: CommittedOffset) -> int | None:
        """When an offset's retention starts counting: after the commit for an offsets-only
        group, once the group became Empty for a classic one; never while members use it."""
        consumer = self._consumer_group(group_id)
        if consumer is not None and consumer.members:
            return None
        streams = self._streams_group(group_id)
        if streams is not None and streams.members:
            return None
        group = self.classic.groups.get(group_id)
        if group is None or group.protocol_type is None:
            return committed.commit_timestamp_ms
        if group.is_state(S.EMPTY):
            return max(group.state_timestamp_ms, 0)
        return None

    def end_txn(self, partition: int, producer_id: int, commit: bool, now_ms: int) -> None:
        """A transaction marker reached this offsets partition: its groups' pending offsets of the
        producer become committed (COMMIT) or are dropped (ABORT)."""
        groups = [g for g in self.offsets.pending_groups() if self.placement.partition_of(g) == partition]
        self.offsets.end_txn(groups, producer_id, commit, now_ms)

    # -- admin: DescribeGroups, ConsumerGroupDescribe, ListGroups, DeleteGroups -----------------------
    def describe(self, broker_id: int, group_id: str) -> GroupDescription:
        """DescribeGroups' view: a missing group (or one of another type) is GROUP_ID_NOT_FOUND, Dead."""
        error = self.coordinator_error(group_id, broker_id)
        if error:
            return GroupDescription(error, "")
        group = self.classic.groups.get(group_id)
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
        protocol = (group.protocol_name or "") if stable else ""
        return GroupDescription(E.NONE, group.state.value, group.protocol_type or "", protocol, members)

    def describe_consumer(self, broker_id: int, group_id: str) -> ConsumerGroupView:
        error = self.coordinator_error(group_id, broker_id)
        if error:
            return ConsumerGroupView(error)
        group = self._consumer_group(group_id)
        if group is None:
            return ConsumerGroupView(E.GROUP_ID_NOT_FOUND)
        assignor = next((m.server_assignor for m in group.members.values() if m.server_assignor), None)
        return ConsumerGroupView(E.NONE, group, assignor or self.consumer.assignors()[0])

    def list_groups(
        self, broker_id: int, states: list[str] | None = None, types: list[str] | None = None
    ) -> tuple[E, list[GroupListing]]:
        """ListGroups of one broker: the groups it coordinates; a partition of its still loading
        fails the whole call (Kafka 4.x)."""
        if not self.placement.exists():
            return E.NONE, []
        led = {p.index for p in self.placement.topic().partitions if p.leader == broker_id}
        if self.placement.is_loading(led):
            return E.COORDINATOR_LOAD_IN_PROGRESS, []
        wanted_states = {s.lower() for s in states} if states else None
        wanted_types = {t.lower() for t in types} if types else None
        out = []
        for group in self.classic.groups.values():
            if group.is_state(S.DEAD) or wanted_states is not None and group.state.value.lower() not in wanted_states:
                continue
            if wanted_types is None or GroupType.CLASSIC.value in wanted_types:
                out.append(GroupListing(group.group_id, group.protocol_type or "", group.state.value))
        for consumer_group in self.consumer.groups.values():
            state = consumer_group.state.value
            if consumer_group.dead or wanted_states is not None and state.lower() not in wanted_states:
                continue
            if wanted_types is None or GroupType.CONSUMER.value in wanted_types:
                out.append(GroupListing(consumer_group.group_id, "consumer", state, GroupType.CONSUMER.value))
        share, streams = self._lazy_coordinators()
        for share_group in share.groups.values() if share is not None else ():
            state = share_group.state.value
            if share_group.dead or wanted_states is not None and state.lower() not in wanted_states:
                continue
            if wanted_types is None or GroupType.SHARE.value in wanted_types:
                out.append(GroupListing(share_group.group_id, "share", state, GroupType.SHARE.value))
        for streams_group in streams.groups.values() if streams is not None else ():
            state = streams_group.state.value
            if streams_group.dead or wanted_states is not None and state.lower() not in wanted_states:
                continue
            if wanted_types is None or GroupType.STREAMS.value in wanted_types:
                out.append(GroupListing(streams_group.group_id, "streams", state, GroupType.STREAMS.value))
        return E.NONE, [g for g in out if self.coordinator_of(g.group_id) == broker_id]

    def delete_group(self, broker_id: int, group_id: str | None) -> E:
        """DeleteGroups of one group: only an empty one goes, with its offsets."""
        if group_id is None:
            return E.INVALID_GROUP_ID
        error = self.coordinator_error(group_id, broker_id)
        if error:
            return error
        share_group = self._share_group(group_id)
        if share_group is not None:
            if share_group.members:
                return E.NON_EMPTY_GROUP
            self.shares.drop_group(group_id)  # DeleteShareGroupState for its partitions
            self.share.delete(group_id)
            return E.NONE
        streams_group = self._streams_group(group_id)
        if streams_group is not None:
            if streams_group.members:
                return E.NON_EMPTY_GROUP
            self.offsets.offsets.pop(group_id, None)  # its internal topics stay, as in Kafka
            self.streams.delete(group_id)
            return E.NONE
        group = self._consumer_group(group_id)
        if group is not None:
            if group.members:
                return E.NON_EMPTY_GROUP
            self.offsets.offsets.pop(group_id, None)  # committed ones (a transaction's wait for its marker)
            self.consumer.delete(group_id)
            return E.NONE
        classic = self.classic.groups.get(group_id)
        if classic is None or classic.is_state(S.DEAD):
            return E.GROUP_ID_NOT_FOUND
        if not classic.is_state(S.EMPTY):
            return E.NON_EMPTY_GROUP
        self.offsets.offsets.pop(group_id, None)
        self.classic.delete(group_id)
        return E.NONE

    # -- coordinator moves and clean-up ------------------------------------------------------------
    def groups_of_partition(self, partition: int) -> list[str]:
        names = set(self.classic.groups) | set(self.classic.snapshots) | set(self.consumer.groups)
        for coordinator in self._lazy_coordinators():
            if coordinator is not None:
                names |= set(coordinator.groups)
        return sorted(g for g in names if self.placement.partition_of(g) == partition)

    def coordinator_moved(self, partition: int, leader: int, previous: int, now_ms: int, load_time_ms: int) -> None:
        """An offsets partition's leader moved: the old coordinator unloads its groups (parked
        requests get NOT_COORDINATOR) and the new one loads them after ``load_time_ms``."""
        groups = self.groups_of_partition(partition)
        self.classic.unload(groups, now_ms, previous if previous >= 0 else None)
        self.consumer.unload(groups)
        for coordinator in self._lazy_coordinators():
            if coordinator is not None:
                coordinator.unload(groups)

        def load(t: int) -> None:
            self.classic.load(groups, t)
            self.consumer.load(groups, t)
            for coordinator in self._lazy_coordinators():
                if coordinator is not None:
                    coordinator.load(groups, t)

        self.placement.moved(partition, leader, now_ms, load_time_ms, load)

    def member_client(self, group_id: str, member_id: str) -> str | None:
        """A classic member's client id (the event log names it)."""
        group = self.classic.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        return member.client_id if member is not None else None

    def forget(self, group_ids: list[str]) -> None:
        """Drop groups and their offsets without a trace (a shared cluster between tests)."""
        self.classic.forget(group_ids)
        self.consumer.forget(group_ids)
        for coordinator in self._lazy_coordinators():
            if coordinator is not None:
                coordinator.forget(group_ids)
        if self.made("shares") or self.made("share_states"):  # else there is no share state to drop
            for group_id in group_ids:
                self.shares.drop_group(group_id)
        self.offsets.forget(group_ids)


def subscribed_topics(group: ClassicGroup) -> set[str] | None:
    """Topics a classic ``consumer`` group subscribes to (from its members' metadata); None = all."""
    if group.protocol_type != "consumer":
        return set()
    topics: set[str] = set()
    for member in group.members.values():
        try:
            topics.update(consumer_protocol.decode_subscription(member.metadata(group.protocol_name)).topics)
        except Exception:  # undecodable metadata: Kafka treats the group as subscribed to everything
            return None
    return topics

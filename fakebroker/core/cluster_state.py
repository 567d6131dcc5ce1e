"""The cluster: brokers, topics, partitions and their leaders, the group coordinator and its
offsets, one event log and one set of timers. Pure state, no I/O, no clock: every method that
depends on time takes ``now_ms``, and :meth:`ClusterState.tick` fires the timers that are due.

Every change of the cluster is a method here (or of the coordinator it owns) that records an
event; handlers and the facade call these methods and never edit the state behind them.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..protocol.error_codes import ErrorCode
from . import events as ev
from .configs import (
    BrokerConfig,
    TopicConfig,
    offsets_topic_configs,
    share_state_topic_configs,
    transaction_topic_configs,
)
from .events import EventLog
from .events.ring import DEFAULT_CAPACITY
from .features import Features
from .group_configs import GroupConfigs
from .groups.placement import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTION_TOPIC
from .groups.service import GroupService
from .log import LogStorage, MemoryStorage, PartitionLog, PartitionProducers
from .log.appends import AppendResult, Checked, append_batches, check_batches, produce_limits
from .placement import CoordinatorPlacement
from .quotas import ClientQuotas
from .releases import DEFAULT_RELEASE, release
from .security.acls import Operation, ResourceType
from .security.authorizer import Authorizer
from .security.users import Users
from .timers import Timers
from .topics import (
    BrokerInfo,
    Partition,
    Topic,
    TopicError,
    topic_name_error,
)
from .topics import layout as topic_layout
from .topics.reassignments import Reassignment, complete_ready
from .transactions.coordinator import TransactionCoordinator
from .transactions.producer_ids import ProducerIds

if TYPE_CHECKING:
    from .groups.share.dead_letters import DeadLetters
    from .security.tokens import DelegationTokens

__all__ = ["BrokerInfo", "ClusterState", "Partition", "Topic", "TopicError", "topic_name_error"]

# Timer keys of the periodic checks (Kafka's log cleaner and offsets expiry schedules).
RETENTION_CHECK = ("retention",)
OFFSETS_EXPIRY_CHECK = ("offsets-expiry",)
TXN_TIMEOUT_CHECK = ("txn-timeouts",)
TXN_EXPIRY_CHECK = ("txn-id-expiry",)
TOKEN_EXPIRY_CHECK = ("delegation-token-expiry",)


class ClusterState:
    """Brokers, topics, groups and offsets of one fake cluster.

    :param now_ms: reads the cluster's clock, for event stamps only (the server passes it).
    :param wall: reads the real time, for event stamps only.
    """

    def __init__(
        self,
        cluster_id: str,
        broker_config: BrokerConfig | None = None,
        *,
        now_ms: Callable[[], int] = lambda: 0,
        wall: Callable[[], float] = lambda: 0.0,
        coordinator_load_time_ms: int = 0,
        transaction_marker_delay_ms: int = 0,
        storage: LogStorage | None = None,
        event_log_size: int | None = DEFAULT_CAPACITY,
    ):
        self.cluster_id = cluster_id
        self.storage: LogStorage = storage if storage is not None else MemoryStorage()
        self.brokers: dict[int, BrokerInfo] = {}
        self.controller_id = 0
        self.config = broker_config or BrokerConfig()
        self.topics: dict[str, Topic] = {}
        self.kafka_version = DEFAULT_RELEASE
        self.features = Features()
        self.quotas = ClientQuotas()
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.producer_ids = ProducerIds()
        self._next_start = 0  # where the next topic's leaders start, so leadership spreads
        self.events = EventLog(now_ms, wall, event_log_size)
        # PLAIN passwords, SCRAM credentials (users.py); the delegation tokens its tokenauth logins
        # check join it when they are made (``tokens``, below)
        self.users = Users(self.events)
        self.authorizer = Authorizer(self.config, self.events)  # ACLs (core/security/authorizer.py)
        self.timers = Timers()
        self.group_configs = GroupConfigs(self.config)
        self.groups = GroupService(
            self.config,
            self.group_configs,
            self.timers,
            self.events,
            self._topics_view,
            self.offsets_topic,
            lambda: OFFSETS_TOPIC in self.topics,
            self._alive,
            self.partition,
            lambda name: self.topics[name].topic_id if name in self.topics else None,
            lambda topic_id: self.topics_by_id[topic_id].name if topic_id in self.topics_by_id else None,
            lambda: int(wall() * 1000),
        )
        self.groups.consumer.may_describe = self._may_describe_topic
        self.groups.dead_letters = self._dead_letters  # the share groups' writer, made with them
        self.coordinator_load_time_ms = coordinator_load_time_ms
        self.transactions = TransactionCoordinator(
            self.config,
            self.events,
            self.producer_ids,
            self.write_marker,
            CoordinatorPlacement(
                self.transaction_topic, lambda: TRANSACTION_TOPIC in self.topics, self._alive, self.timers, "txn-load"
            ),
            lambda: self.features.transaction_version,
            self.timers,
            lambda: self.transaction_marker_delay_ms,
        )
        self.transaction_marker_delay_ms = transaction_marker_delay_ms
        self.reassignments: dict[tuple[str, int], Reassignment] = {}  # in progress (core/topics/reassignments.py)

    @functools.cached_property
    def tokens(self) -> DelegationTokens:
        """Delegation tokens (core/security/tokens.py), made on first use: a cluster that never
        sees one never imports them. SCRAM's tokenauth logins check them from then on."""
        from .security.tokens import DelegationTokens

        tokens = DelegationTokens(
            self.config, self.events, metadata_version=lambda: self.features.finalized.get("metadata.version", 0)
        )
        self.users.tokens = tokens
        return tokens

    def _sweep_tokens(self, now_ms: int) -> int:
        """The delegation tokens' expiry sweep (none to sweep while none were ever made)."""
        return self.tokens.sweep(now_ms) if "tokens" in self.__dict__ else 0

    def pose_as(self, kafka_version: str) -> None:
        """Serve the API window and feature levels of Kafka ``kafka_version`` (before clients
        connect: a fresh broker of that release); UnknownRelease names the valid ones."""
        chosen = release(kafka_version)
        self.kafka_version = chosen.name
        self.features = Features(dict(chosen.supported), dict(chosen.finalized))

    def _alive(self, node_id: int) -> bool:
        broker = self.brokers.get(node_id)
        return broker is not None and broker.alive

    def _topics_view(self) -> dict[str, tuple[uuid.UUID, int]]:
        return {t.name: (t.topic_id, len(t.partitions)) for t in self.topics.values() if not t.internal}

    # -- time ------------------------------------------------------------------------------
    def next_deadline(self) -> int | None:
        """When the earliest timer is due (ms on the cluster clock), or None."""
        return self.timers.next_deadline()

    def tick(self, now_ms: int) -> int:
        """Fire every timer due at ``now_ms``, earliest first; returns how many fired."""
        return self.timers.fire_due(now_ms)

    def start_periodic_checks(self, now_ms: int) -> None:
        """Schedule retention every ``log.retention.check.interval.ms`` and offset expiry every
        ``offsets.retention.check.interval.ms``, as Kafka's schedulers run them."""

        def every(key: tuple[str], setting: str, check: Callable[[int], int]) -> None:
            def run(t: int) -> None:
                check(t)
                self.timers.schedule(key, t + self.config.get_int(setting), run)

            self.timers.schedule(key, now_ms + self.config.get_int(setting), run)

        every(RETENTION_CHECK, "log.retention.check.interval.ms", self.apply_retention)
        every(OFFSETS_EXPIRY_CHECK, "offsets.retention.check.interval.ms", self.expire_offsets)
        every(TXN_TIMEOUT_CHECK, "transaction.abort.timed.out.transaction.cleanup.interval.ms", self.abort_timed_out)
        every(TXN_EXPIRY_CHECK, "transaction.remove.expired.transaction.cleanup.interval.ms", self.expire_txn_ids)
        # named here, not in security/tokens.py, which a cluster without tokens never imports
        every(TOKEN_EXPIRY_CHECK, "delegation.token.expiry.check.interval.ms", self._sweep_tokens)

    def run_periodic_checks(self, now_ms: int) -> None:
        """Every periodic check at once (after a virtual-time jump)."""
        self.apply_retention(now_ms)
        self.expire_offsets(now_ms)
        self.abort_timed_out(now_ms)
        self.expire_txn_ids(now_ms)
        self._sweep_tokens(now_ms)

    def expire_offsets(self, now_ms: int) -> int:
        dropped = self.groups.expire_offsets(now_ms)
        if dropped:
            self.events.append(ev.OffsetsExpired(count=dropped), now_ms)
        return dropped

    def _may_describe_topic(self, principal: str, host: str, topic: str) -> bool:
        """DESCRIBE on a topic, for the group coordinator's regex subscriptions."""
        authorizer = self.authorizer
        return not authorizer.enabled or authorizer.authorize(
            principal, host, Operation.DESCRIBE, ResourceType.TOPIC, topic
        )

    # -- brokers ---------------------------------------------------------------------------
    def add_broker(
        self,
        node_id: int,
        host: str,
        port: int,
        rack: str | None = None,
        endpoints: dict[str, tuple[str, int]] | None = None,
    ) -> BrokerInfo:
        info = self.brokers[node_id] = BrokerInfo(node_id, host, port, rack, endpoints=dict(endpoints or {}))
        return info

    def broker_started(
        self,
        node_id: int,
        host: str,
        port: int,
        now_ms: int,
        rack: str | None = None,
        endpoints: dict[str, tuple[str, int]] | None = None,
    ) -> None:
        """A broker listens (first start or restart): offline partitions it replicates get it as
        leader; leadership moved away while it was down stays moved. A restart keeps its rack.
        ``host`` and ``port`` are its first listener's; ``endpoints`` every listener's by name
        (when it has several)."""
        known = self.brokers.get(node_id)
        if known is not None and known.alive:
            return
        if known is None:
            self.add_broker(node_id, host, port, rack, endpoints)
            self.events.append(ev.BrokerStarted(broker=node_id, host=host, port=port), now_ms)
            return
        known.alive, known.host, known.port = True, host, port
        known.endpoints = dict(endpoints or {})
        if not self.brokers[self.controller_id].alive:
            self.controller_id = node_id
        self.events.append(ev.BrokerStarted(broker=node_id, host=host, port=port, restarted=True), now_ms)
        for partition in self.all_partitions():
            if partition.leader == -1 and node_id in partition.replicas:
                self.move_leader(partition, node_id, now_ms, reason="replica back")
        complete_ready(self, now_ms)  # reassignments waiting for this broker to be in sync

    def broker_stopped(self, node_id: int, now_ms: int) -> bool:
        """A broker died: the partitions it led move to the next live replica, as Kafka's
        controller moves them, or go offline (leader -1). False if it was not running."""
        info = self.brokers[node_id]
        if not info.alive:
            return False
        info.alive = False
        alive = self.alive_brokers()
        if self.controller_id == node_id and alive:  # Metadata names a live node, as a KRaft broker does
            self.controller_id = alive[0].node_id
        self.events.append(ev.BrokerStopped(broker=node_id), now_ms)
        for partition in self.all_partitions():
            if partition.leader == node_id:
                self.move_leader(partition, None, now_ms, reason=f"broker {node_id} stopped")
        return True

    def alive_brokers(self) -> list[BrokerInfo]:
        return [b for b in sorted(self.brokers.values(), key=lambda b: b.node_id) if b.alive]

    # -- topics ----------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: dict[str, str] | None = None,
        assignments: dict[int, list[int]] | None = None,
        *,
        validate_only: bool = False,
        auto: bool = False,
        internal: bool = False,
    ) -> Topic:
        """Create a topic as CreateTopics would, or raise TopicError with Kafka's error."""
        layout = topic_layout.new_topic(
            name,
            num_partitions,
            replication_factor,
            assignments,
            existing=self.topics,
            registered=set(self.brokers),
            alive=[b.node_id for b in self.alive_brokers()],
            defaults=(self.config.get_int("num.partitions"), self.config.get_int("default.replication.factor")),
            spread=self._spread,
        )
        config = TopicConfig(self.config, configs)
        topic_id = uuid.uuid4()
        if validate_only:
            partitions = [Partition(name, i, r, r[0]) for i, r in enumerate(layout)]
        else:
            partitions = [
                Partition(name, i, r, r[0], log=self._open_log(name, topic_id, i, config)) for i, r in enumerate(layout)
            ]
        topic = Topic(name, topic_id, partitions, config, internal)
        if not validate_only:
            self.topics[name] = topic
            self.topics_by_id[topic.topic_id] = topic
        if not validate_only and not internal:
            self.events.append(ev.TopicCreated(topic=name, partitions=len(topic.partitions), auto=auto or None))
        return topic

    def _spread(self, count: int, replication: int, brokers: list[int], first_partition: int = 0) -> list[list[int]]:
        """Round-robin replica placement, each topic starting one broker further along (Kafka
        starts at a random broker; a rotating start keeps tests deterministic). With racks the
        brokers are taken rack by rack in turn, so a partition's replicas land on different racks
        as Kafka places them."""
        start = self._next_start
        self._next_start += 1
        brokers = topic_layout.rack_alternated(brokers, {b: self.brokers[b].rack for b in brokers if b in self.brokers})
        n = len(brokers)
        return [
            [brokers[(start + p + r) % n] for r in range(replication)]
            for p in range(first_partition, first_partition + count)
        ]

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        self.topics_by_id.pop(topic.topic_id, None)
        for key in [k for k in self.reassignments if k[0] == name]:
            del self.reassignments[key]
        for p in topic.partitions:
            self.storage.remove(name, topic.topic_id, p.index)
        self.events.append(ev.TopicDeleted(topic=name))
        return topic

    def create_partitions(
        self, name: str, count: int, assignments: list[list[int]] | None = None, *, validate_only: bool = False
    ) -> None:
        """Kafka's controller checks, in its order and with its messages."""
        topic = self.topics.get(name)
        alive = [b.node_id for b in self.alive_brokers()]
        current, layout = topic_layout.new_partitions(
            topic, name, count, assignments, registered=set(self.brokers), alive=alive, spread=self._spread
        )
        assert topic is not None  # new_partitions refuses an unknown topic
        if not validate_only:
            alive_set = set(alive)
            topic.partitions.extend(
                Partition(
                    name,
                    current + i,
                    r,
                    next(b for b in r if b in alive_set),
                    log=self._open_log(name, topic.topic_id, current + i, topic.config),
                )
                for i, r in enumerate(layout)
            )
            self.events.append(ev.PartitionsCreated(topic=name, count=count))

    def _open_log(self, topic: str, topic_id: uuid.UUID, index: int, config: TopicConfig) -> PartitionLog:
        return PartitionLog(self.storage.open(topic, topic_id, index), config)

    def restore_topic(
        self,
        name: str,
        topic_id: uuid.UUID,
        replicas: list[list[int]],
        configs: dict[str, str],
        *,
        leader_epochs: list[int],
        log_start_offsets: list[int],
        internal: bool,
        now_ms: int,
    ) -> Topic:
        """Bring back a topic kept by the storage (a restart): same id, partitions, configs,
        and each partition's log reopened from its stored segments."""
        config = TopicConfig(self.config, configs)
        partitions = []
        for i, r in enumerate(replicas):
            log = self._open_log(name, topic_id, i, config)
            producers = PartitionProducers()
            open_txns = log.recover(now_ms, log_start_offsets[i], producers.replay)
            for producer_id, epoch in open_txns.items():
                if self.transactions.knows_open(producer_id, (name, i)):
                    continue  # the restored coordinator ends it (markers, or its timeout)
                # a transaction its coordinator does not know: abort, as its timeout would have
                log.append_marker(producer_id, epoch, False, 0, leader_epoch=leader_epochs[i], now_ms=now_ms)
                producers.record_marker(producer_id, epoch, 0, now_ms)
            partition = Partition(name, i, list(r), r[0], leader_epoch=leader_epochs[i], log=log, producers=producers)
            partitions.append(partition)
        topic = self.topics[name] = Topic(name, topic_id, partitions, config, internal)
        self.topics_by_id[topic_id] = topic
        if not internal:
            self.events.append(ev.TopicRestored(topic=name, partitions=len(partitions)), now_ms)
        return topic

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    def all_partitions(self) -> list[Partition]:
        return [p for topic in list(self.topics.values()) for p in topic.partitions]

    def elect_leader(self, partition: Partition, leader: int | None = None) -> None:
        """Move leadership (to ``leader`` or the first live replica) and bump the leader epoch."""
        alive = {b.node_id for b in self.alive_brokers()}
        if leader is None:
            candidates = [r for r in partition.replicas if r in alive]
            leader = candidates[0] if candidates else -1
        if leader != partition.leader:
            partition.leader = leader
            partition.leader_epoch += 1

    def move_leader(
        self,
        partition: Partition,
        broker: int | None,
        now_ms: int,
        *,
        reason: str | None = None,
        load_time_ms: int | None = None,
    ) -> None:
        """Make ``broker`` (None: the first live replica) lead ``partition``, adding it to the
        replicas if needed. A moved ``__consumer_offsets`` partition moves its groups' coordinator:
        the old one unloads them, the new one reloads them from their persisted records."""
        if broker is not None and broker not in partition.replicas:
            partition.replicas.append(broker)
        previous = partition.leader
        self.elect_leader(partition, broker)
        self.events.append(
            ev.LeaderMoved(
                topic=partition.topic,
                partition=partition.index,
                leader=partition.leader,
                epoch=partition.leader_epoch,
                reason=reason,
            ),
            now_ms,
        )
        load = self.coordinator_load_time_ms if load_time_ms is None else load_time_ms
        if partition.topic == OFFSETS_TOPIC:
            self._coordinator_moved(partition, now_ms, previous, load)
        elif partition.topic == TRANSACTION_TOPIC:
            # the new leader reloads the ids' state; open transactions stay open (their timeout runs on)
            self.transactions.placement.moved(
                partition.index, partition.leader, now_ms, load, self.transactions.retry_markers, load_at_once=False
            )
        if partition.leader != -1:
            self.transactions.retry_markers(now_ms)  # markers owed to this partition can be written now

    def elect_preferred_leaders(self, now_ms: int) -> int:
        """Give every partition back to its preferred (first) replica where that broker is
        alive, as Kafka's preferred leader election does; returns how many moved."""
        alive = {b.node_id for b in self.alive_brokers()}
        moved = 0
        for partition in self.all_partitions():
            preferred = partition.replicas[0]
            if preferred in alive and partition.leader != preferred:
                self.move_leader(partition, preferred, now_ms, reason="preferred")
                moved += 1
        return moved

    def _coordinator_moved(self, partition: Partition, now_ms: int, previous: int, load_time_ms: int) -> None:
        self.groups.coordinator_moved(partition.index, partition.leader, previous, now_ms, load_time_ms)

    # -- records -----------------------------------------------------------------------------
    def append(
        self,
        partition: Partition,
        data: bytes | None,
        *,
        produce_version: int,
        transactional_id: str | None,
        now_ms: int,
        checked: Checked | None = None,
    ) -> AppendResult:
        """Validate and append produced batches to a partition this broker leads. Records too
        costly to check here raise :class:`~..protocol.records.OverBudget`: the caller then
        runs :meth:`produce_check` where it may take long and calls again with its verdict."""
        verify = None
        if transactional_id:

            def verify(producer_id: int, epoch: int) -> ErrorCode:
                return self._verify_txn(transactional_id, partition, producer_id, epoch, produce_version, now_ms)

        return append_batches(
            self.events,
            partition,
            self.topics[partition.topic].config,
            data,
            produce_version=produce_version,
            transactional_id=transactional_id,
            now_ms=now_ms,
            verify_txn=verify,
            checked=checked,
        )

    def produce_check(
        self, partition: Partition, data: bytes | None, *, produce_version: int, now_ms: int
    ) -> Callable[[], Checked]:
        """The validation of :meth:`append` as a call without a budget that touches no state,
        for a worker thread; its verdict goes to :meth:`append` as ``checked``."""
        limits = produce_limits(self.topics[partition.topic].config)
        return functools.partial(check_batches, partition, limits, data, produce_version=produce_version, now_ms=now_ms)

    def ask_txn_coordinator(
        self, tid: str, producer_id: int, epoch: int, tp: tuple[str, int], now_ms: int, *, adds: bool
    ) -> ErrorCode:
        """What a partition leader asks the transaction coordinator before a transaction's first
        write to ``tp`` (AddPartitionsToTxnManager): add it (transaction version 2) or verify it
        was added. The coordinator's own answer; COORDINATOR_NOT_AVAILABLE when it cannot be
        reached. With ``transaction.partition.verification.enable`` off, a verification passes."""
        if not adds and not self.config.get_bool("transaction.partition.verification.enable"):
            return ErrorCode.NONE
        if not self.transactions.placement.available(tid):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if adds:
            return self.transactions.add_partitions(tid, producer_id, epoch, [tp], now_ms, version=2)
        return self.transactions.verify_partitions(tid, producer_id, epoch, [tp])[tp]

    def _verify_txn(
        self, tid: str, partition: Partition, producer_id: int, epoch: int, produce_version: int, now_ms: int
    ) -> ErrorCode:
        """What the partition leader asks the transaction coordinator before a transaction's first
        write to a partition (AddPartitionsToTxnManager), mapped to the error Produce answers.
        Produce v12+ (transaction version 2) adds the partition; older versions only verify it."""
        adds = produce_version >= 12
        error = self.ask_txn_coordinator(tid, producer_id, epoch, (partition.topic, partition.index), now_ms, adds=adds)
        if error in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
            return ErrorCode.NOT_ENOUGH_REPLICAS
        if error == ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if error == ErrorCode.TRANSACTION_ABORTABLE and produce_version <= 10:
            return ErrorCode.INVALID_TXN_STATE
        if error == ErrorCode.CONCURRENT_TRANSACTIONS and not adds:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return error

    def log_size(self, partition: Partition) -> int:
        """The bytes of a partition's segments (DescribeLogDirs): those DeleteRecords moved the log
        start past stay until their whole segment is below it, as in Kafka."""
        return partition.log.size_bytes

    def delete_records(self, partition: Partition, before: int) -> None:
        partition.log.delete_records_before(before)
        self.events.append(ev.RecordsDeleted(topic=partition.topic, partition=partition.index, before=before))

    def init_producer_id(
        self,
        transactional_id: str | None,
        producer_id: int = -1,
        producer_epoch: int = -1,
        *,
        timeout_ms: int = 60_000,
        now_ms: int | None = None,
    ) -> tuple[ErrorCode, int, int]:
        """InitProducerId past the coordinator checks: a new id for an idempotent producer, the
        transaction coordinator's answer for a transactional id."""
        if transactional_id is None:
            pid, epoch = self.producer_ids.init_idempotent()
            self.events.append(ev.ProducerId(producer_id=pid, epoch=epoch, transactional_id=None), now_ms)
            return ErrorCode.NONE, pid, epoch
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, -1, -1
        now = self.events.now_ms() if now_ms is None else now_ms
        return self.transactions.init_producer_id(transactional_id, timeout_ms, producer_id, producer_epoch, now)

    def replace_configs(self, store: dict[str, str], new: dict[str, str], resource: str) -> None:
        """Set a topic's overrides or the brokers' dynamic settings to ``new``."""
        store.clear()
        store.update(new)
        self.events.append(ev.ConfigsAltered(resource=resource or "(cluster)", configs=dict(new)))

    def replace_group_configs(self, group_id: str, new: dict[str, str]) -> None:
        """Set a group's configs (resource type GROUP) to ``new`` (checked by the caller)."""
        self.group_configs.replace(group_id, new)
        self.events.append(ev.GroupConfigsAltered(group=group_id, configs=dict(new)))

    def apply_retention(self, now_ms: int) -> int:
        """Kafka's retention check (``UnifiedLog.deleteOldSegments`` for every partition):
        segments below the log start offset always go; under cleanup.policy ``delete`` also
        those past retention.bytes and retention.ms. Returns how many batches went."""
        dropped = 0
        for topic in self.topics.values():
            if "delete" in topic.config.get("cleanup.policy"):
                ms, size = topic.config.get_int("retention.ms"), topic.config.get_int("retention.bytes")
            else:
                ms = size = -1
            for p in topic.partitions:
                p.producers.expire(now_ms, self.config.get_int("producer.id.expiration.ms"), p.log.open_txns)
                for reason, batches in p.log.retention_breaches(now_ms, ms, size):
                    dropped += batches
                    self.events.append(
                        ev.SegmentsDeleted(
                            topic=topic.name,
                            partition=p.index,
                            reason=reason,
                            batches=batches,
                            log_start_offset=p.log.log_start_offset,
                        ),
                        now_ms,
                    )
        if dropped:
            self.events.append(ev.RetentionApplied(batches_dropped=dropped), now_ms)
        return dropped

    # -- group coordinator placement ---------------------------------------------------------
    def offsets_topic(self) -> Topic:
        """``__consumer_offsets``, created on first use as Kafka does (internal, not listed by
        default), with ``offsets.topic.num.partitions`` partitions."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            n = self.config.get_int("offsets.topic.num.partitions")
            rf = min(self.config.get_int("offsets.topic.replication.factor"), len(self.alive_brokers()))
            topic = self.create_topic(OFFSETS_TOPIC, n, rf, offsets_topic_configs(self.config), internal=True)
        return topic

    # -- transaction coordinator placement and markers ------------------------------------------
    def _dead_letters(self) -> DeadLetters:
        """The writer of share groups' dead letters (KIP-1191), made with their share partitions."""
        from .groups.share.dead_letters import DeadLetters

        return DeadLetters(
            self.config,
            self.group_configs,
            lambda: self.features.finalized.get("share.version", 0),
            self.topics.get,
            self._create_dead_letter_topic,
            self._append_dead_letters,
        )

    def _create_dead_letter_topic(self, name: str, partitions: int) -> Topic:
        """A share group's dead-letter topic, created when the broker allows it."""
        configs = {"errors.deadletterqueue.group.enable": "true", "message.timestamp.type": "CreateTime"}
        return self.create_topic(name, partitions, min(3, len(self.alive_brokers())) or 1, configs)

    def _append_dead_letters(self, partition: Partition, data: bytes, now_ms: int) -> bool:
        result = self.append(partition, data, produce_version=11, transactional_id=None, now_ms=now_ms)
        return result.error == ErrorCode.NONE

    def share_state_topic(self) -> Topic:
        """``__share_group_state``, created on first use (the share coordinator's partitions)."""
        topic = self.topics.get(SHARE_STATE_TOPIC)
        if topic is None:
            n = self.config.get_int("share.coordinator.state.topic.num.partitions")
            rf = min(self.config.get_int("share.coordinator.state.topic.replication.factor"), len(self.alive_brokers()))
            configs = share_state_topic_configs(self.config)
            topic = self.create_topic(SHARE_STATE_TOPIC, n, max(rf, 1), configs, internal=True)
        return topic

    def transaction_topic(self) -> Topic:
        """``__transaction_state``, created on first use with ``transaction.state.log.num.partitions``."""
        topic = self.topics.get(TRANSACTION_TOPIC)
        if topic is None:
            n = self.config.get_int("transaction.state.log.num.partitions")
            rf = min(self.config.get_int("transaction.state.log.replication.factor"), len(self.alive_brokers()))
            configs = transaction_topic_configs(self.config)
            topic = self.create_topic(TRANSACTION_TOPIC, n, max(rf, 1), configs, internal=True)
        return topic

    def move_coordinator(
        self,
        placement: CoordinatorPlacement,
        key: str,
        broker: int | None,
        now_ms: int,
        *,
        reason: str | None = None,
        load_time_ms: int | None = None,
    ) -> int:
        """Move the coordinator of ``key`` (a group or transactional id, by its ``placement``)
        to ``broker``, or to the next live broker after the current one; returns the new one."""
        partition = placement.topic().partitions[placement.partition_of(key)]
        alive = [b.node_id for b in self.alive_brokers()]
        current = partition.leader
        if broker is None:
            broker = alive[(alive.index(current) + 1) % len(alive)] if current in alive else alive[0]
        self.move_leader(partition, broker, now_ms, reason=reason, load_time_ms=load_time_ms)
        return broker

    def write_marker(
        self, topic: str, index: int, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int, now_ms: int
    ) -> bool:
        """WriteTxnMarkers inside the cluster: a control batch in a data partition, the pending
        offsets of its groups in an offsets partition. False while the partition has no leader."""
        partition = self.partition(topic, index)
        if partition is None:
            return True  # the topic is gone: Kafka drops markers for unknown partitions
        leader = self.brokers.get(partition.leader)
        if leader is None or not leader.alive:
            return False
        if topic == OFFSETS_TOPIC:
            self.groups.end_txn(index, producer_id, commit, now_ms)
            return True
        partition.log.append_marker(
            producer_id, epoch, commit, coordinator_epoch, leader_epoch=partition.leader_epoch, now_ms=now_ms
        )
        partition.producers.record_marker(producer_id, epoch, coordinator_epoch, now_ms)
        return True

    def forget_transactions(self, transactional_ids: list[str], now_ms: int) -> None:
        """Drop transactional ids without a trace, aborting their open transactions."""
        self.transactions.forget(transactional_ids, now_ms)

    def abort_timed_out(self, now_ms: int) -> int:
        return self.transactions.abort_timed_out(now_ms, self.transactions.placement.available)

    def expire_txn_ids(self, now_ms: int) -> int:
        return self.transactions.expire_ids(now_ms, self.transactions.placement.available)

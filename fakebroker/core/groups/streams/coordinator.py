"""The streams group coordinator (StreamsGroupHeartbeat, KIP-1071): membership, the topology,
epochs, the target assignment and each member's reconciliation towards it, with Kafka's
checks in Kafka's order (``GroupCoordinatorService.streamsGroupHeartbeat``'s request checks,
then ``GroupMetadataManager.streamsGroupHeartbeat``; ``CurrentAssignmentBuilder``).

The order of one heartbeat (GMM's steps): the group and the member (or the error), the
topology (first joiner sets it; a later one must send the same, or an older epoch), the
configured topology (internal topic counts, tasks, status), one group-epoch bump for
whatever changed, the initial-delay timer on a join into an Empty group, the target
assignment (unless delayed), the member's reconciliation, the session timer, the answer.
Internal topics the topology needs are returned in ``to_create``: as in Kafka, the API layer
creates them after answering (so the member sees MISSING_INTERNAL_TOPICS once, and the next
heartbeat finds them). The task assignor is one call, :func:`_assign`. Beside it: the request
and its checks (``heartbeat.py``), the reconciliation (``reconcile.py``), and the partitions
each endpoint serves (``endpoints.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from ....protocol.error_codes import ErrorCode as E
from ... import events as ev
from ...configs import BrokerConfig
from ...events import EventSink
from ...group_configs import GroupConfigs
from ...timers import Timers
from ..results import HeartbeatError
from . import assignor, reconcile
from .endpoints import endpoints as iq_endpoints
from .heartbeat import StreamsHeartbeatRequest, StreamsHeartbeatResult, validate
from .model import (
    EMPTY,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    MemberState,
    StreamsGroup,
    StreamsMember,
    Task,
    Tasks,
)
from .topology import ConfiguredTopology, InvalidTopology, Status, Topology, configure

TopicsView = Callable[[], dict[str, tuple[uuid.UUID, int]]]

INITIAL_DELAY_MESSAGE = "Assignment delayed due to the configured initial rebalance delay."
INTERVAL_MESSAGE = "Assignment delayed due to the configured assignment interval."


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("streams-session", group_id, member_id)


def rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("streams-rebalance", group_id, member_id)


def initial_delay_key(group_id: str) -> tuple[str, str]:
    return ("streams-initial-rebalance", group_id)


def plain(tasks: frozenset[Task]) -> dict[str, list[int]]:
    """Tasks as subtopology id -> sorted partitions, by subtopology id."""
    out: dict[str, list[int]] = {}
    for sub, p in sorted(tasks):
        out.setdefault(sub, []).append(p)
    return out


def _assign(group: StreamsGroup, configured: ConfiguredTopology, num_standbys: int) -> dict[str, Tasks]:
    """Each member's target tasks from Kafka's ``sticky`` task assignor (``assignor.py``)."""
    assert group.topology is not None
    stateful = {s.subtopology_id for s in group.topology.subtopologies if s.stateful}
    specs = {}
    for mid, m in group.members.items():
        offsets: dict[str, dict[int, int]] = {}
        for (sub, p), offset in m.task_offsets.items():
            offsets.setdefault(sub, {})[p] = offset
        specs[mid] = assignor.MemberSpec(
            m.process_id,
            m.rack_id,
            m.instance_id,
            dict(m.client_tags),
            assignor.tasks_by_subtopology(m.assigned.active),
            assignor.tasks_by_subtopology(m.assigned.standby),
            assignor.tasks_by_subtopology(m.assigned.warmup),
            offsets,
        )
    subs = {sid: assignor.Subtopology(n, sid in stateful) for sid, n in configured.tasks.items()}
    result = assignor.assign(specs, subs, assignor.AssignmentConfigs(num_standbys))

    def flat(by_sub: dict[str, tuple[int, ...]]) -> frozenset[Task]:
        return frozenset((sub, p) for sub, ps in by_sub.items() for p in ps)

    return {mid: Tasks(flat(a.active), flat(a.standby), flat(a.warmup)) for mid, a in result.items()}


class StreamsCoordinator:
    def __init__(
        self, config: BrokerConfig, group_configs: GroupConfigs, timers: Timers, events: EventSink, topics: TopicsView
    ):
        self.config = config
        self.group_configs = group_configs
        self.timers = timers
        self.events = events
        self.topics = topics
        self.groups: dict[str, StreamsGroup] = {}

    def enabled(self) -> bool:
        protocols = {p.strip() for p in self.config.get("group.coordinator.rebalance.protocols").split(",")}
        return "streams" in protocols

    def live(self, group_id: str | None) -> StreamsGroup | None:
        group = self.groups.get(group_id) if group_id is not None else None
        return group if group is not None and not group.dead else None

    # -- StreamsGroupHeartbeat -------------------------------------------------------------------
    @staticmethod
    def validate(req: StreamsHeartbeatRequest) -> StreamsHeartbeatResult | None:
        """The request's own checks (they come before the coordinator's placement)."""
        try:
            validate(req)
        except HeartbeatError as exc:
            return StreamsHeartbeatResult(exc.error, exc.message)
        return None

    def heartbeat(self, now_ms: int, req: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        try:
            validate(req)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(now_ms, req)
            return self._heartbeat(now_ms, req)
        except HeartbeatError as exc:
            return StreamsHeartbeatResult(exc.error, exc.message)
        except InvalidTopology as exc:
            return StreamsHeartbeatResult(E.STREAMS_INVALID_TOPOLOGY, str(exc))
        except assignor.TaskAssignorError:
            return StreamsHeartbeatResult(E.UNKNOWN_SERVER_ERROR)

    def _member_of(
        self, group: StreamsGroup, req: StreamsHeartbeatRequest
    ) -> tuple[StreamsMember, StreamsMember | None]:
        """The member the request speaks for (a new one on a join), and the static member it
        replaces (GMM ``getOrMaybeCreate(Static)StreamsGroupMember``)."""
        gid, mid, epoch = group.group_id, req.member_id, req.member_epoch
        max_size = self.config.get_int("group.streams.max.size")
        if req.instance_id is None:
            member = group.members.get(mid)
            if member is None:
                if epoch != 0:
                    raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
                if len(group.members) >= max_size:
                    raise HeartbeatError(
                        E.GROUP_MAX_SIZE_REACHED,
                        f"The streams group has reached its maximum capacity of {max_size} members.",
                    )
                return StreamsMember(mid), None
            if epoch != 0:
                self._check_epoch(member, req)
            return member, None
        iid = req.instance_id
        holder = group.static_member(iid)
        if epoch == 0:
            if holder is None:
                if mid not in group.members and len(group.members) >= max_size:
                    raise HeartbeatError(
                        E.GROUP_MAX_SIZE_REACHED,
                        f"The streams group has reached its maximum capacity of {max_size} members.",
                    )
                return group.members.get(mid) or StreamsMember(mid, instance_id=iid), None
            if holder.member_epoch != STATIC_LEAVE_EPOCH:
                raise HeartbeatError(
                    E.UNRELEASED_INSTANCE_ID,
                    f"Static member {mid} with instance id {iid} cannot join the group because the instance id "
                    f"is owned by {holder.member_id} member.",
                )
            # the new member id takes the old one's place: its metadata and its tasks
            successor = replace(holder, member_id=mid, member_epoch=0, previous_epoch=0, revoking=EMPTY)
            return successor, holder
        if holder is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {iid} is unknown.")
        if holder.member_id != mid:
            raise HeartbeatError(
                E.FENCED_INSTANCE_ID,
                f"Static member {mid} with instance id {iid} was fenced by member {holder.member_id}.",
            )
        self._check_epoch(holder, req)
        return holder, None

    @staticmethod
    def _check_epoch(member: StreamsMember, req: StreamsHeartbeatRequest) -> None:
        """``throwIfStreamsGroupMemberEpochIsInvalid``: the previous epoch is a lost answer's,
        accepted only with owned tasks the member still has."""
        epoch = req.member_epoch
        if epoch > member.member_epoch:
            raise HeartbeatError(
                E.FENCED_MEMBER_EPOCH,
                f"The streams group member has a greater member epoch ({epoch}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                "rejoin.",
            )
        if epoch < member.member_epoch:
            owned = req.owned()
            if epoch != member.previous_epoch or owned is None or not owned.all() <= member.assigned.all():
                raise HeartbeatError(
                    E.FENCED_MEMBER_EPOCH,
                    f"The streams group member has a smaller member epoch ({epoch}) than the one known by the "
                    f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                    "rejoin.",
                )

    def _existing_counts(self) -> dict[str, int]:
        return {name: count for name, (_, count) in self.topics().items()}

    def _metadata_hash(self, topology: Topology, existing: dict[str, int]) -> int:
        return hash(tuple((t, existing.get(t, -1)) for t in sorted(topology.required_topics())))

    def _heartbeat(self, now_ms: int, req: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        gid, mid = req.group_id, req.member_id
        group = self.live(gid)
        created = group is None
        if group is None:
            if req.member_epoch != 0:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Streams group {gid} not found.")
            group = StreamsGroup(gid)
        member, replaced = self._member_of(group, req)
        joined = mid not in group.members
        # the topology: the first joiner's, the same again, or an older epoch (STALE_TOPOLOGY)
        topology = group.topology
        if req.topology is not None:
            if topology is None:
                topology = req.topology
            elif req.topology.epoch >= topology.epoch and not req.topology.same_as(topology):
                raise HeartbeatError(E.INVALID_REQUEST, "Topology updates are not supported yet.")
        assert topology is not None  # a group exists only once a joiner gave it one
        existing = self._existing_counts()
        metadata_hash = self._metadata_hash(topology, existing)
        configured = group.configured
        if group.topology is None or configured is None or metadata_hash != group.metadata_hash:
            configured = configure(topology, existing)  # InvalidTopology: 130
        owned = req.owned()
        if configured.ready and owned is not None:
            self._check_tasks(owned, configured)
        if (
            not configured.tasks  # Kafka: no configured subtopologies (a failure, not missing internal topics)
            and req.member_epoch == 0
            and req.user_endpoint is not None
            and (mid not in group.members or req.endpoint_information_epoch != group.endpoint_epoch)
        ):
            # Kafka 4.4 builds a joiner's PartitionsByUserEndpoint from the configured
            # subtopologies, absent when configuring failed (missing source topics, wrong
            # partitioning; not mere missing internal topics): an exception, the heartbeat rolled
            # back (STREAMS-GROUPS.md §9.11, observed on a real broker)
            raise HeartbeatError(E.UNKNOWN_SERVER_ERROR)
        # -- nothing fails from here: apply ---------------------------------------------------------
        written_before = None if joined else self._persisted(group, member)
        was_empty = not group.members
        if created:
            self.groups[gid] = group
            self.events.append(ev.GroupCreated(group=gid), now_ms)
        if replaced is not None:
            group.target[mid] = group.target.pop(replaced.member_id, EMPTY)
            self._drop_member(group, replaced.member_id)
        old_relevant = None if joined else member.relevant(member.instance_id is not None)
        old_endpoint = member.user_endpoint
        old_tasks = member.assigned
        self._update_member(member, req)
        reasons: list[str] = []
        if joined:
            group.members[mid] = member
            self.events.append(
                ev.MemberJoined(group=gid, member=mid, instance=member.instance_id, client_id=req.client_id or None),
                now_ms,
            )
            if replaced is None or replaced.relevant(True) != member.relevant(True):
                reasons.append("member joined")
        elif old_relevant != member.relevant(member.instance_id is not None):
            reasons.append("member changed")
        if group.topology is None:
            group.topology = topology
        if configured is not group.configured:
            if group.configured is not None and metadata_hash != group.metadata_hash:
                reasons.append("topic metadata changed")
            group.configured, group.metadata_hash = configured, metadata_hash
        validated = topology.epoch if configured.ready else -1
        if validated != group.validated_topology_epoch:
            group.validated_topology_epoch = validated
            reasons.append("topology validated" if validated >= 0 else "topology not ready")
        assignment_configs = self._assignment_configs(gid)
        if assignment_configs != group.assignment_configs:
            if group.assignment_configs is not None:
                reasons.append("assignment configs changed")
            group.assignment_configs = assignment_configs
        if req.task_offsets is not None:
            member.task_offsets = dict(req.task_offsets)
        if req.task_end_offsets is not None:
            member.task_end_offsets = dict(req.task_end_offsets)
        if reasons:
            self._bump(group, now_ms, reasons[0])
        if req.shutdown_application:
            group.shutdown_requested_by = mid
        # the initial rebalance delay: armed by a join into an Empty group
        delay = self.group_configs.get_int(gid, "streams.initial.rebalance.delay.ms")
        if was_empty and delay > 0 and self.timers.deadline(initial_delay_key(gid)) is None:
            self._arm_initial_delay(group, now_ms + delay)
        statuses: list[tuple[int, str]] = []
        if member.topology_epoch < topology.epoch:
            statuses.append(
                (
                    Status.STALE_TOPOLOGY,
                    f"The member's topology epoch {member.topology_epoch} is behind the group's "
                    f"topology epoch {topology.epoch}.",
                )
            )
        delayed = self._maybe_update_target(group, now_ms)
        if delayed:
            statuses.append((Status.ASSIGNMENT_DELAYED, delayed))
        if configured.status is not None:
            statuses.append((int(configured.status[0]), configured.status[1]))
        if group.shutdown_requested_by is not None:
            statuses.append(
                (
                    Status.SHUTDOWN_APPLICATION,
                    f"Streams group member {group.shutdown_requested_by} encountered a fatal error and requested "
                    "a shutdown for the entire application.",
                )
            )
        tags = self.group_configs.get(gid, "streams.rack.aware.assignment.tags")
        missing = [t for t in (tags.split(",") if tags else []) if t.strip() and t.strip() not in member.client_tags]
        if req.version >= 1 and missing:  # told on v1 only; the assignor runs without them
            statuses.append(
                (
                    Status.MISSING_CLIENT_TAGS,
                    f"Missing required client tags for rack-aware standby assignment: "
                    f"[{', '.join(t.strip() for t in missing)}]. Configure them via 'client.tag.<tagKey>' in "
                    "your Streams config.",
                )
            )
        self._reconcile(group, member, owned if not joined else Tasks(), now_ms)
        tasks_changed = member.assigned != old_tasks
        if not created and (
            member.user_endpoint != old_endpoint or (member.user_endpoint is not None and tasks_changed)
        ):
            group.endpoint_epoch += 1
        if not created:  # Kafka (re)computes its in-memory configured topology (model.py)
            group.memory_configured = group.configured
            if written_before != self._persisted(group, member):
                group.described_configured = group.memory_configured
        else:
            # Kafka ran the creating join on a transient group object: what it keeps outside its
            # records (the task offsets, the shutdown request) is gone after this answer
            member.task_offsets, member.task_end_offsets = {}, {}
            group.shutdown_requested_by = None
        self._arm_session(group, member, now_ms)
        endpoints = None
        if req.endpoint_information_epoch != group.endpoint_epoch:
            endpoints = iq_endpoints(group, mid, self._existing_counts())
        return StreamsHeartbeatResult(
            E.NONE,
            member_id=mid,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.group_configs.get_int(gid, "streams.heartbeat.interval.ms"),
            task_offset_interval_ms=self.group_configs.get_int(gid, "streams.task.offset.interval.ms"),
            acceptable_recovery_lag=self.group_configs.get_int(gid, "streams.acceptable.recovery.lag"),
            statuses=tuple(statuses),
            tasks=member.assigned if req.member_epoch == 0 or tasks_changed else None,
            endpoint_epoch=group.endpoint_epoch,
            endpoints=endpoints,
            to_create=configured.to_create,
        )

    @staticmethod
    def _persisted(group: StreamsGroup, member: StreamsMember) -> tuple[object, ...]:
        """What Kafka keeps in records for a heartbeat: when it changes, the heartbeat wrote some."""
        return (
            group.group_epoch,
            group.assignment_epoch,
            member.relevant(False),
            member.member_epoch,
            member.previous_epoch,
            member.state,
            member.assigned,
            member.revoking,
        )

    @staticmethod
    def _check_tasks(owned: Tasks, configured: ConfiguredTopology) -> None:
        """``throwIfRequestContainsInvalidTasks``."""
        for role in (owned.active, owned.standby, owned.warmup):
            for sub, p in sorted(role):
                if sub not in configured.tasks:
                    raise HeartbeatError(E.INVALID_REQUEST, f"Subtopology {sub} does not exist in the topology.")
                n = configured.tasks[sub]
                if not 0 <= p < n:
                    raise HeartbeatError(
                        E.INVALID_REQUEST,
                        f"Task {p} for subtopology {sub} is invalid. Number of tasks for this subtopology: {n}",
                    )

    @staticmethod
    def _update_member(member: StreamsMember, req: StreamsHeartbeatRequest) -> None:
        """GMM step 2: what the request carries replaces what the member had."""
        if req.instance_id is not None:
            member.instance_id = req.instance_id
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.topology is not None:
            member.topology_epoch = req.topology.epoch
        if req.process_id is not None:
            member.process_id = req.process_id
        if req.client_tags is not None:
            member.client_tags = dict(req.client_tags)
        member.client_id, member.client_host = req.client_id, req.client_host
        if req.member_epoch == 0 or req.user_endpoint is not None:
            member.user_endpoint = req.user_endpoint

    def _assignment_configs(self, group_id: str) -> tuple[object, ...]:
        return (
            self.group_configs.get_int(group_id, "streams.num.standby.replicas"),
            self.group_configs.get(group_id, "streams.rack.aware.assignment.tags"),
        )

    # -- epochs and the target assignment ----------------------------------------------------------
    def _bump(self, group: StreamsGroup, now_ms: int, reason: str) -> None:
        group.group_epoch += 1
        self.events.append(ev.GroupEpochBumped(group=group.group_id, epoch=group.group_epoch, reason=reason), now_ms)

    def _arm_initial_delay(self, group: StreamsGroup, deadline_ms: int) -> None:
        gid = group.group_id

        def fire(t: int) -> None:
            live = self.live(gid)
            if live is not None and live.members and live.group_epoch > live.assignment_epoch:
                self._compute_target(live, t)
                live.described_configured = live.memory_configured  # records written

        self.timers.schedule(initial_delay_key(gid), deadline_ms, fire)

    def _maybe_update_target(self, group: StreamsGroup, now_ms: int) -> str | None:
        """Compute the target for the group epoch unless delayed; the delay's status detail."""
        if group.group_epoch <= group.assignment_epoch:
            return None
        if self.timers.deadline(initial_delay_key(group.group_id)) is not None:
            return INITIAL_DELAY_MESSAGE
        interval = self.group_configs.get_int(group.group_id, "streams.assignment.interval.ms")
        last = group.assignment_timestamp_ms
        if last != 0 and interval != 0 and now_ms < last + interval:
            return INTERVAL_MESSAGE
        self._compute_target(group, now_ms)
        return None

    def _compute_target(self, group: StreamsGroup, now_ms: int) -> None:
        configured = group.configured
        if configured is not None and configured.ready and group.topology is not None:
            standbys = self.group_configs.get_int(group.group_id, "streams.num.standby.replicas")
            target = _assign(group, configured, standbys)
        else:
            target = {}  # not ready: nothing to run
        group.target = {mid: target.get(mid, EMPTY) for mid in group.members}
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = now_ms
        self.events.append(
            ev.TargetAssignmentComputed(
                group=group.group_id,
                epoch=group.assignment_epoch,
                assignment={mid: _named(t) for mid, t in sorted(group.target.items())},
            ),
            now_ms,
        )

    # -- reconciliation (reconcile.py) -----------------------------------------------------------
    def _reconcile(self, group: StreamsGroup, member: StreamsMember, owned: Tasks | None, now_ms: int) -> None:
        if member.state == MemberState.UNREVOKED_TASKS:
            if not reconcile.revocation_done(member, owned):
                return  # still waiting for the member to give them up
            reconcile.finish_revocation(member)
            self._advance(group, member, now_ms, force=True)
            return
        self._advance(group, member, now_ms)

    def _advance(self, group: StreamsGroup, member: StreamsMember, now_ms: int, *, force: bool = False) -> None:
        state = reconcile.advance(group, member, force=force)
        if state is not None:
            self._set_state(group, member, state, now_ms)

    def _set_state(self, group: StreamsGroup, member: StreamsMember, state: MemberState, now_ms: int) -> None:
        member.state = state
        if state == MemberState.UNREVOKED_TASKS:
            self._arm_rebalance(group, member, now_ms)
        else:
            self.timers.cancel(rebalance_key(group.group_id, member.member_id))
        self.events.append(
            ev.MemberReconciled(
                group=group.group_id,
                member=member.member_id,
                epoch=member.member_epoch,
                state=state.value,
                assignment=plain(member.assigned.active),
                revoking=plain(member.revoking.active) or None,
                client_id=member.client_id or None,
                standby=plain(member.assigned.standby) or None,
                warmup=plain(member.assigned.warmup) or None,
            ),
            now_ms,
        )

    # -- leaving, fencing, timers ----------------------------------------------------------------
    def _leave(self, now_ms: int, req: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        gid, mid = req.group_id, req.member_id
        group = self.live(gid)
        if group is None:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
        if req.instance_id is None:
            member = group.members.get(mid)
            if member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
        else:
            holder = group.static_member(req.instance_id)
            if holder is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if holder.member_id != mid:
                raise HeartbeatError(
                    E.FENCED_INSTANCE_ID,
                    f"Static member {mid} with instance id {req.instance_id} was fenced by member {holder.member_id}.",
                )
            member = holder
        if req.shutdown_application:
            group.shutdown_requested_by = mid
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            member.member_epoch = STATIC_LEAVE_EPOCH
            member.revoking = EMPTY
            member.active_epochs = dict.fromkeys(member.active_epochs, 0)
            group.described_configured = group.memory_configured  # a record written
            self.events.append(ev.MemberLeft(group=gid, member=mid, instance=member.instance_id), now_ms)
        else:
            self._fence(group, mid, now_ms)
            self.events.append(ev.MemberLeft(group=gid, member=mid, instance=member.instance_id), now_ms)
        return StreamsHeartbeatResult(E.NONE, member_id=mid, member_epoch=req.member_epoch)

    def _drop_member(self, group: StreamsGroup, member_id: str) -> None:
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        self.timers.cancel(session_key(group.group_id, member_id))
        self.timers.cancel(rebalance_key(group.group_id, member_id))

    def _fence(self, group: StreamsGroup, member_id: str, now_ms: int) -> None:
        """The member is gone (left with -1, or its session or rebalance timeout expired)."""
        self._drop_member(group, member_id)
        self._bump(group, now_ms, "member left")
        group.described_configured = group.memory_configured  # records written
        if not group.members:
            group.assignment_epoch = group.group_epoch
            group.assignment_timestamp_ms = 0
            group.target = {}
            group.shutdown_requested_by = None

    def _arm_session(self, group: StreamsGroup, member: StreamsMember, now_ms: int) -> None:
        gid, mid = group.group_id, member.member_id
        timeout = self.group_configs.get_int(gid, "streams.session.timeout.ms")

        def expire(t: int) -> None:
            live = self.live(gid)
            if live is not None and mid in live.members:
                self._fence(live, mid, t)
                self.events.append(ev.MemberExpired(group=gid, member=mid, session_timeout_ms=timeout), t)

        self.timers.schedule(session_key(gid, mid), now_ms + timeout, expire)

    def _arm_rebalance(self, group: StreamsGroup, member: StreamsMember, now_ms: int) -> None:
        gid, mid, epoch = group.group_id, member.member_id, member.member_epoch
        timeout = max(member.rebalance_timeout_ms, 0)

        def expire(t: int) -> None:
            live = self.live(gid)
            m = live.members.get(mid) if live is not None else None
            if (
                live is not None
                and m is not None
                and m.member_epoch == epoch
                and m.state == MemberState.UNREVOKED_TASKS
            ):
                self._fence(live, mid, t)
                self.events.append(ev.MemberExpired(group=gid, member=mid), t)

        self.timers.schedule(rebalance_key(gid, mid), now_ms + timeout, expire)

    # -- the group's life ----------------------------------------------------------------------
    def unload(self, group_ids: list[str]) -> None:
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is not None:
                for member_id in group.members:
                    self.timers.cancel(session_key(gid, member_id))
                    self.timers.cancel(rebalance_key(gid, member_id))
                self.timers.cancel(initial_delay_key(gid))

    def load(self, group_ids: list[str], now_ms: int) -> None:
        """Kafka re-arms every session timer and the UNREVOKED members' rebalance timers."""
        for gid in group_ids:
            group = self.live(gid)
            if group is None:
                continue
            for member in group.members.values():
                self._arm_session(group, member, now_ms)
                if member.state == MemberState.UNREVOKED_TASKS:
                    self._arm_rebalance(group, member, now_ms)
            self.events.append(ev.GroupLoaded(group=gid, state=group.state.value, generation=group.group_epoch), now_ms)

    def delete(self, group_id: str, now_ms: int | None = None) -> StreamsGroup | None:
        group = self.groups.pop(group_id, None)
        if group is not None:
            for member_id in list(group.members):
                self._drop_member(group, member_id)
            self.timers.cancel(initial_delay_key(group_id))
            self.events.append(ev.GroupDeleted(group=group_id), now_ms)
        return group

    def forget(self, group_ids: list[str]) -> None:
        for gid in group_ids:
            group = self.groups.pop(gid, None)
            if group is not None:
                for member_id in list(group.members):
                    self._drop_member(group, member_id)
                self.timers.cancel(initial_delay_key(gid))
                self.events.append(ev.GroupForgotten(group=gid))

    # -- offsets (StreamsGroup.validateOffsetCommit / validateOffsetFetch) ------------------------
    def validate_commit(
        self, group: StreamsGroup, member_id: str | None, epoch: int, version: int, *, transactional: bool = False
    ) -> E:
        if epoch < 0 and not group.members:
            return E.NONE  # admin tools, reset tools
        if transactional and epoch == -1 and not member_id:
            return E.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if not transactional and version < 9:
            return E.UNSUPPORTED_VERSION
        if epoch > member.member_epoch:
            return E.STALE_MEMBER_EPOCH
        return E.NONE

    def validate_partition_commit(
        self, group: StreamsGroup, member_id: str | None, epoch: int, topic: str, partition: int
    ) -> E:
        """An older epoch commits only for an active task it was granted at or before that epoch."""
        member = group.members.get(member_id or "")
        if member is None or epoch < 0 or epoch >= member.member_epoch or group.topology is None:
            return E.NONE
        for sub in group.topology.subtopologies:
            topics = set(sub.source_topics) | {t.name for t in sub.repartition_source_topics}
            task = (sub.subtopology_id, partition)
            if topic in topics and task in member.assigned.active | member.revoking.active:
                granted = member.active_epochs.get(task)
                if granted is not None and granted <= epoch:
                    return E.NONE
        return E.STALE_MEMBER_EPOCH

    def validate_fetch(self, group: StreamsGroup, member_id: str, epoch: int) -> E:
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if epoch != member.member_epoch:
            return E.STALE_MEMBER_EPOCH
        return E.NONE


def _named(tasks: Tasks) -> dict[str, list[int]]:
    """An event's view of a target: ``active:<subtopology>`` and ``standby:<subtopology>`` keys."""
    out = {f"active:{s}": ps for s, ps in plain(tasks.active).items()}
    out.update({f"standby:{s}": ps for s, ps in plain(tasks.standby).items()})
    out.update({f"warmup:{s}": ps for s, ps in plain(tasks.warmup).items()})
    return out

"""The classic group coordinator: every group transition happens in this module.

Pure and synchronous: each request method takes ``now_ms`` and returns either a result or a
:class:`Pending` that a later request or timer completes. Error checks run in Kafka's order
(see shared/kafka-protocol/GROUP-COORDINATOR.md, which names the Kafka methods mirrored here).

It is longer than the project's other modules on purpose: like h11's ``_state.py`` (and Kafka's
GroupMetadataManager), one file holding every transition is what lets a reader check them
against each other; the data and the state table are in ``model.py``, the answers in
``results.py``.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from ....lazy_dataclasses import dataclass
from ....protocol.data import assignment_dict
from ....protocol.error_codes import ErrorCode as E
from ....protocol.errors import DecodeError
from ... import events as ev
from ...configs import BrokerConfig
from ...events import EventLog, EventSink
from ...timers import Pending, Timers
from ..requests import HeartbeatRequest, JoinRequest, LeaveRequest, SyncRequest
from ..results import JoinedMember, JoinResult, LeaveResult, SyncResult, join_error, sync_error
from .model import ClassicGroup, GroupState, Member

S = GroupState
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000  # Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS


@dataclass
class GroupSnapshot:
    """What Kafka's group record holds: the log keeps only Empty or Stable-with-assignment."""

    group_id: str
    protocol_type: str | None
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    state_timestamp_ms: int
    members: list[dict[str, Any]]


def _decoded_assignment(group: ClassicGroup, member: Member) -> dict[str, list[int]] | None:
    """The assignment as {topic: [partitions]} for the event log (timelines show it), when the
    group speaks the consumer protocol; other protocols' assignments are opaque bytes."""
    if group.protocol_type != "consumer" or not member.assignment:
        return None
    try:
        return assignment_dict(member.assignment)
    except (DecodeError, ValueError):  # a client's malformed bytes are passed on as they are; the event just lacks them
        return None


# Timer keys: ("heartbeat", group, member), ("join", group), ("sync", group).
def heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("heartbeat", group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("sync", group_id)


class GroupCoordinator:
    def __init__(self, config: BrokerConfig, timers: Timers | None = None, events: EventSink | None = None):
        self.config = config
        self.timers = timers or Timers()
        self.events = events if events is not None else EventLog()
        self.groups: dict[str, ClassicGroup] = {}
        self.snapshots: dict[str, GroupSnapshot] = {}  # the "offsets topic" view of each group

    # -- helpers ----------------------------------------------------------------------------
    def emit(self, event: ev.Event, now_ms: int | None = None) -> None:
        """Record an event at the time of the transition (``now_ms``; the clock's when unknown)."""
        self.events.append(event, now_ms)

    def _transition(self, group: ClassicGroup, state: GroupState, now_ms: int) -> None:
        old = group.state
        group.transition_to(state, now_ms)
        self.emit(
            ev.GroupStateChanged(group=group.group_id, old=old.value, new=state.value, generation=group.generation_id),
            now_ms,
        )

    def _rearm(self, group: ClassicGroup, member_id: str, now_ms: int, timeout_ms: int) -> None:
        gid = group.group_id
        self.timers.schedule(
            heartbeat_key(gid, member_id), now_ms + timeout_ms, lambda t: self._expire_heartbeat(gid, member_id, t)
        )

    def keep_alive(self, group: ClassicGroup, member: Member, now_ms: int) -> None:
        """A request that counts as a heartbeat (an offset commit) restarts the member's session."""
        self._rearm(group, member.member_id, now_ms, member.session_timeout_ms)

    def _persist(self, group: ClassicGroup) -> None:
        self.snapshots[group.group_id] = GroupSnapshot(
            group.group_id,
            group.protocol_type,
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            group.state_timestamp_ms,
            [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms,
                    "session_timeout_ms": m.session_timeout_ms,
                    "protocol_type": m.protocol_type,
                    "protocols": list(m.protocols),
                    "assignment": m.assignment,
                }
                for m in group.members.values()
            ],
        )

    def validate_member(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> E:
        """Kafka's ``validateMember``."""
        if instance_id:
            holder = group.static_members.get(instance_id)
            if holder is None:
                return E.UNKNOWN_MEMBER_ID
            if holder != member_id:
                return E.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE

    def _new_member_id(self, client_id: str | None, instance_id: str | None) -> str:
        return f"{instance_id or client_id or ''}-{uuid.uuid4()}"

    # -- JoinGroup ----------------------------------------------------------------------------
    def join(self, now_ms: int, req: JoinRequest) -> JoinResult | Pending:
        group_id, member_id = req.group_id, req.member_id
        if not group_id:
            return join_error(E.INVALID_GROUP_ID, member_id)
        low = self.config.get_int("group.min.session.timeout.ms")
        high = self.config.get_int("group.max.session.timeout.ms")
        if not low <= req.session_timeout_ms <= high:
            return join_error(E.INVALID_SESSION_TIMEOUT, member_id)
        if req.version == 0:  # v0 has no rebalance timeout: the session timeout stands for it
            req = dataclasses.replace(req, rebalance_timeout_ms=req.session_timeout_ms)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return join_error(E.UNKNOWN_MEMBER_ID, member_id)
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=now_ms)
            self._persist(group)
            self.emit(ev.GroupCreated(group=group_id), now_ms)
        if not self._accept_joining_member(group, member_id):
            removed = group.remove(member_id)
            if removed is not None:
                self.timers.cancel(heartbeat_key(group.group_id, member_id))
            return join_error(E.GROUP_MAX_SIZE_REACHED)
        if not member_id:
            return self._join_new_member(group, now_ms, req)
        return self._join_existing_member(group, now_ms, member_id, req)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.config.get_int("group.max.size")
        if group.is_state(S.EMPTY, S.DEAD):
            return True
        if group.is_state(S.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or group.awaiting_join_count() < limit
        return member_id in group.members or len(group.members) < limit

    def _join_new_member(self, group: ClassicGroup, now_ms: int, req: JoinRequest) -> JoinResult | Pending:
        if group.is_state(S.DEAD):
            return join_error(E.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            return join_error(E.INCONSISTENT_GROUP_PROTOCOL)
        instance_id = req.group_instance_id
        new_id = self._new_member_id(req.client_id, instance_id)
        if instance_id:
            if instance_id in group.static_members:
                return self._replace_static_member(group, now_ms, new_id, instance_id, req)
            return self._add_member_and_rebalance(group, now_ms, new_id, req)
        if req.version >= 4:  # KIP-394: hand out an id first, the member joins with it
            group.pending_members.add(new_id)
            gid = group.group_id
            self.timers.schedule(
                heartbeat_key(group.group_id, new_id),
                now_ms + req.session_timeout_ms,
                lambda t: self._expire_heartbeat(gid, new_id, t),
            )
            self.emit(ev.MemberIdRequired(group=gid, member=new_id, client_id=req.client_id or None), now_ms)
            return join_error(E.MEMBER_ID_REQUIRED, new_id)
        return self._add_member_and_rebalance(group, now_ms, new_id, req)

    def _join_existing_member(
        self, group: ClassicGroup, now_ms: int, member_id: str, req: JoinRequest
    ) -> JoinResult | Pending:
        if group.is_state(S.DEAD):
            return join_error(E.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            return join_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if member_id in group.pending_members:
            if req.group_instance_id:
                return join_error(E.UNKNOWN_MEMBER_ID, member_id)
            return self._add_member_and_rebalance(group, now_ms, member_id, req)
        error = self.validate_member(group, member_id, req.group_instance_id)
        if error:
            return join_error(error, member_id)
        member = group.members[member_id]
        if group.is_state(S.PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, now_ms, member, req)
        if group.is_state(S.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                return self._join_success(group, member, req.version)
            return self._update_member_and_rebalance(group, now_ms, member, req)
        if group.is_state(S.STABLE):
            if member_id == group.leader_id or not member.matches(req.protocols):
                return self._update_member_and_rebalance(group, now_ms, member, req)
            return self._join_success(group, member, req.version)
        return join_error(E.UNKNOWN_MEMBER_ID, member_id)  # Empty

    def _join_success(
        self,
        group: ClassicGroup,
        member: Member,
        version: int,
        *,
        leader: str | None = None,
        skip_assignment: bool = False,
    ) -> JoinResult:
        is_leader = member.member_id == group.leader_id
        members = (
            tuple(
                JoinedMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                for m in group.members.values()
            )
            if is_leader
            else ()
        )
        return JoinResult(
            E.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            leader if leader is not None else group.leader_id or "",
            members,
            skip_assignment,
        )

    def _add_member_and_rebalance(self, group: ClassicGroup, now_ms: int, member_id: str, req: JoinRequest) -> Pending:
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            req.protocols,
            is_new=True,
        )
        pending = member.join_pending = Pending()
        member.join_version = req.version
        group.pending_members.discard(member_id)
        group.add(member)
        if group.is_state(S.PREPARING_REBALANCE) and group.previous_state == S.EMPTY:
            group.new_member_added = True  # extends the initial delay window (Kafka's newMemberAdded)
        self.emit(
            ev.MemberJoined(
                group=group.group_id, member=member_id, instance=member.group_instance_id, client_id=member.client_id
            ),
            now_ms,
        )
        # A new member gets a fixed window to complete its join before it can expire.
        self._rearm(group, member_id, now_ms, NEW_MEMBER_JOIN_TIMEOUT_MS)
        if group.is_state(S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group, now_ms)
        else:
            self._prepare_rebalance(group, now_ms, f"member {member_id} joined")
        return pending  # may be complete already (a join can finish at once)

    def _update_member_and_rebalance(
        self, group: ClassicGroup, now_ms: int, member: Member, req: JoinRequest
    ) -> Pending:
        # A duplicate JoinGroup replaces a parked one, which is then never answered (Kafka).
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        pending = member.join_pending = Pending()
        member.join_version = req.version
        if group.is_state(S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group, now_ms)
        else:
            self._prepare_rebalance(group, now_ms, f"member {member.member_id} rejoined")
        return pending

    def _replace_static_member(
        self, group: ClassicGroup, now_ms: int, new_id: str, instance_id: str, req: JoinRequest
    ) -> JoinResult | Pending:
        old_id = group.static_members[instance_id]
        old = group.members[old_id]
        was_leader = group.leader_id == old_id
        old_protocol = group.protocol_name
        if old.join_pending is not None:
            old.join_pending.complete(join_error(E.FENCED_INSTANCE_ID, old_id))
            old.join_pending = None
        if old.sync_pending is not None:
            old.sync_pending.complete(sync_error(E.FENCED_INSTANCE_ID))
            old.sync_pending = None
        self.timers.cancel(heartbeat_key(group.group_id, old_id))
        # The new member takes the old one's place, position, assignment and leadership.
        new = Member(
            new_id,
            instance_id,
            old.client_id,
            old.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            req.protocols,
            assignment=old.assignment,
        )
        group.replace(old_id, new)
        group.static_members[instance_id] = new_id
        if group.pending_sync and old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        if was_leader:
            group.leader_id = new_id
        self.emit(
            ev.MemberFenced(group=group.group_id, member=old_id, instance=instance_id, replaced_by=new_id), now_ms
        )
        self._rearm(group, new_id, now_ms, new.session_timeout_ms)
        if group.is_state(S.STABLE) and group.select_protocol() == old_protocol:
            self._persist(group)
            self.emit(ev.StaticMemberRejoined(group=group.group_id, member=new_id, instance=instance_id), now_ms)
            if req.version >= 9:
                return self._join_success(group, new, req.version, skip_assignment=was_leader)
            result = self._join_success(group, new, req.version, leader=old_id if was_leader else group.leader_id)
            return dataclasses.replace(result, members=())  # v5-8: a returning leader acts as a follower
        pending = new.join_pending = Pending()
        new.join_version = req.version
        if group.is_state(S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group, now_ms)
        else:
            self._prepare_rebalance(group, now_ms, f"static member {instance_id} rejoined")
        return pending

    # -- rebalance mechanics ------------------------------------------------------------------
    def _prepare_rebalance(self, group: ClassicGroup, now_ms: int, reason: str) -> None:
        if group.is_state(S.COMPLETING_REBALANCE):
            self._reset_assignments_with_error(group, E.REBALANCE_IN_PROGRESS)
        self.timers.cancel(sync_key(group.group_id))
        group.pending_sync.clear()
        initial = group.is_state(S.EMPTY)
        self._transition(group, S.PREPARING_REBALANCE, now_ms)
        self.emit(ev.RebalanceStarted(group=group.group_id, reason=reason, generation=group.generation_id), now_ms)
        if initial:
            delay = self.config.get_int("group.initial.rebalance.delay.ms")
            self._initial_rebalance(group, now_ms, delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            self._maybe_complete_join_else_schedule(group, now_ms)

    def _initial_rebalance(self, group: ClassicGroup, now_ms: int, delay: int, remaining: int) -> None:
        if delay == 0:
            self._complete_join(group, now_ms)
            return
        gid = group.group_id

        def expire(t: int) -> None:
            g = self.groups.get(gid)
            if g is None or not g.is_state(S.PREPARING_REBALANCE):
                return
            if g.new_member_added and remaining != 0:
                g.new_member_added = False
                initial = self.config.get_int("group.initial.rebalance.delay.ms")
                self._initial_rebalance(g, t, min(initial, remaining), max(remaining - delay, 0))
            else:
                self._complete_join(g, t)

        self.timers.schedule(join_key(group.group_id), now_ms + delay, expire)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup, now_ms: int) -> None:
        if group.has_all_members_joined():
            self._complete_join(group, now_ms)
        else:
            gid = group.group_id
            self.timers.schedule(
                join_key(group.group_id),
                now_ms + group.rebalance_timeout_ms(),
                lambda t: self._complete_join(self.groups[gid], t) if gid in self.groups else None,
            )

    def _maybe_complete_join_phase(self, group: ClassicGroup, now_ms: int, *, even_initial: bool = False) -> None:
        if (
            group.is_state(S.PREPARING_REBALANCE)
            and group.has_all_members_joined()
            and (even_initial or group.previous_state != S.EMPTY)
        ):
            self._complete_join(group, now_ms)

    def _complete_join(self, group: ClassicGroup, now_ms: int) -> None:
        if not group.is_state(S.PREPARING_REBALANCE):
            return
        self.timers.cancel(join_key(group.group_id))
        for member in list(group.members.values()):
            if not member.awaiting_join and not member.group_instance_id:
                self._remove_member(group, member.member_id, "did not rejoin in time", now_ms)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only absent static members remain: wait another rebalance timeout for them.
            gid = group.group_id
            self.timers.schedule(
                join_key(group.group_id),
                now_ms + group.rebalance_timeout_ms(),
                lambda t: self._complete_join(self.groups[gid], t) if gid in self.groups else None,
            )
            return
        group.generation_id += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            self._transition(group, S.COMPLETING_REBALANCE, now_ms)
        else:
            group.protocol_name = None  # Kafka's initNextGeneration keeps the protocol type
            self._transition(group, S.EMPTY, now_ms)
            self._persist(group)
            self.emit(ev.GenerationStarted(group=group.group_id, generation=group.generation_id, members=0), now_ms)
            return
        self.emit(
            ev.GenerationStarted(
                group=group.group_id,
                generation=group.generation_id,
                members=len(group.members),
                protocol=group.protocol_name,
                leader=group.leader_id,
            ),
            now_ms,
        )
        for member in group.members.values():
            if member.join_pending is not None:
                pending, member.join_pending = member.join_pending, None
                pending.complete(self._join_success(group, member, member.join_version))
            self._rearm(group, member.member_id, now_ms, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        gid, generation = group.group_id, group.generation_id
        self.timers.schedule(
            sync_key(group.group_id),
            now_ms + group.rebalance_timeout_ms(),
            lambda t: self._expire_pending_sync(gid, generation, t),
        )

    def _reset_assignments_with_error(self, group: ClassicGroup, error: E) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.sync_pending is not None:
                pending, member.sync_pending = member.sync_pending, None
                pending.complete(sync_error(error))

    def _remove_member(self, group: ClassicGroup, member_id: str, reason: str, now_ms: int) -> Member | None:
        member = group.remove(member_id)
        if member is None:
            return None
        self.timers.cancel(heartbeat_key(group.group_id, member_id))
        if member.join_pending is not None:
            member.join_pending.complete(join_error(E.UNKNOWN_MEMBER_ID))
        if member.sync_pending is not None:
            member.sync_pending.complete(sync_error(E.UNKNOWN_MEMBER_ID))
        self.emit(
            ev.MemberRemoved(group=group.group_id, member=member_id, reason=reason, client_id=member.client_id or None),
            now_ms,
        )
        return member

    def _remove_and_rebalance(self, group: ClassicGroup, member_id: str, now_ms: int, reason: str) -> None:
        self._remove_member(group, member_id, reason, now_ms)
        if group.is_state(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms, reason)
        elif group.is_state(S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group, now_ms)

    def _expire_heartbeat(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_state(S.DEAD):
            return
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.emit(ev.MemberExpired(group=group_id, member=member_id, pending=True), now_ms)
            self._maybe_complete_join_phase(group, now_ms, even_initial=True)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if member.is_new:
            self.emit(
                ev.MemberExpired(group=group_id, member=member_id, new=True, client_id=member.client_id or None), now_ms
            )
            self._remove_member(group, member_id, "new member did not complete its join", now_ms)
            self._maybe_complete_join_phase(group, now_ms, even_initial=True)
            return
        if member.awaiting_join or member.awaiting_sync:
            return  # waiting in a request counts as alive; the timer is not re-armed
        self.emit(
            ev.MemberExpired(
                group=group_id,
                member=member_id,
                session_timeout_ms=member.session_timeout_ms,
                client_id=member.client_id or None,
            ),
            now_ms,
        )
        self._remove_and_rebalance(group, member_id, now_ms, f"member {member_id} session expired")

    def _expire_pending_sync(self, group_id: str, generation: int, now_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is None or group.generation_id != generation or not group.pending_sync:
            return
        if not group.is_state(S.COMPLETING_REBALANCE, S.STABLE):
            return
        for member_id in list(group.pending_sync):
            self._remove_member(group, member_id, "did not send SyncGroup in time", now_ms)
        group.pending_sync.clear()
        self._prepare_rebalance(group, now_ms, "members did not sync in time")

    # -- SyncGroup ------------------------------------------------------------------------------
    def sync(self, now_ms: int, req: SyncRequest) -> SyncResult | Pending:
        group_id, member_id, protocol_type, protocol_name = (
            req.group_id,
            req.member_id,
            req.protocol_type,
            req.protocol_name,
        )
        if req.version >= 5 and (protocol_type is None or protocol_name is None):
            return sync_error(E.INCONSISTENT_GROUP_PROTOCOL)
        if not group_id:
            return sync_error(E.INVALID_GROUP_ID)
        group = self.groups.get(group_id)
        if group is None or group.is_state(S.EMPTY):
            return sync_error(E.UNKNOWN_MEMBER_ID)
        if group.is_state(S.DEAD):
            return sync_error(E.COORDINATOR_NOT_AVAILABLE)
        error = self.validate_member(group, member_id, req.group_instance_id)
        if error:
            return sync_error(error)
        if req.generation_id != group.generation_id:
            return sync_error(E.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return sync_error(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_state(S.PREPARING_REBALANCE):
            return sync_error(E.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        if group.is_state(S.STABLE):
            self._remove_pending_sync(group, member_id)
            self.emit(
                ev.AssignmentDelivered(
                    group=group_id,
                    member=member_id,
                    generation=group.generation_id,
                    assignment=_decoded_assignment(group, member),
                ),
                now_ms,
            )
            return self._sync_success(group, member)
        # CompletingRebalance: park until the leader's assignment arrives.
        member.sync_pending = Pending()
        pending = member.sync_pending
        self._remove_pending_sync(group, member_id)
        if member_id == group.leader_id:
            for mid, m in group.members.items():
                m.assignment = req.assignments.get(mid, b"")
            self._persist(group)
            self._transition(group, S.STABLE, now_ms)
            self.emit(
                ev.LeaderAssigned(
                    group=group_id, leader=member_id, generation=group.generation_id, members=len(group.members)
                ),
                now_ms,
            )
            for m in group.members.values():
                if m.sync_pending is not None:
                    p, m.sync_pending = m.sync_pending, None
                    p.complete(self._sync_success(group, m))
                    self.emit(
                        ev.AssignmentDelivered(
                            group=group_id,
                            member=m.member_id,
                            generation=group.generation_id,
                            assignment=_decoded_assignment(group, m),
                        ),
                        now_ms,
                    )
                    self._rearm(group, m.member_id, now_ms, m.session_timeout_ms)
        return pending

    def _sync_success(self, group: ClassicGroup, member: Member) -> SyncResult:
        return SyncResult(E.NONE, group.protocol_type, group.protocol_name, member.assignment)

    def _remove_pending_sync(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self.timers.cancel(sync_key(group.group_id))

    # -- Heartbeat and LeaveGroup -------------------------------------------------------------------
    def heartbeat(self, now_ms: int, req: HeartbeatRequest) -> E:
        group_id, member_id = req.group_id, req.member_id
        if not group_id:
            return E.INVALID_GROUP_ID
        group = self.groups.get(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_state(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        error = self.validate_member(group, member_id, req.group_instance_id)
        if error:
            return error
        if req.generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if group.is_state(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        self._rearm(group, member_id, now_ms, member.session_timeout_ms)
        if group.is_state(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def leave(self, now_ms: int, req: LeaveRequest) -> LeaveResult:
        """The top-level error and per-member errors for (member_id, group_instance_id) pairs."""
        group_id, members = req.group_id, req.members
        if not group_id:
            return LeaveResult(E.INVALID_GROUP_ID)
        group = self.groups.get(group_id)
        if group is None:
            return LeaveResult(E.NONE, [E.UNKNOWN_MEMBER_ID for _ in members])
        if group.is_state(S.DEAD):
            return LeaveResult(E.COORDINATOR_NOT_AVAILABLE)
        errors: list[E] = []
        removed = False
        for member_id, instance_id in members:
            if not member_id:
                holder = group.static_members.get(instance_id) if instance_id else None
                if holder is None:
                    errors.append(E.UNKNOWN_MEMBER_ID)
                    continue
                member_id = holder
            elif member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.timers.cancel(heartbeat_key(group.group_id, member_id))
                errors.append(E.NONE)
                continue
            else:
                error = self.validate_member(group, member_id, instance_id)
                if error:
                    errors.append(error)
                    continue
            self._remove_member(group, member_id, "left the group", now_ms)
            self.emit(ev.MemberLeft(group=group_id, member=member_id, instance=instance_id), now_ms)
            errors.append(E.NONE)
            removed = True
        if removed or any(e == E.NONE for e in errors):
            if group.is_state(S.STABLE, S.COMPLETING_REBALANCE):
                self._prepare_rebalance(group, now_ms, "members left")
            elif group.is_state(S.PREPARING_REBALANCE):
                # GMM maybeCompleteJoinPhase: a LeaveGroup never ends an initial rebalance early.
                self._maybe_complete_join_phase(group, now_ms)
        return LeaveResult(E.NONE, errors)

    # -- groups made and removed outside a rebalance ---------------------------------------------
    def create_simple_group(self, group_id: str, now_ms: int) -> ClassicGroup:
        """A group that only stores offsets (a commit with generation -1 to an unknown group)."""
        group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=now_ms)
        self._persist(group)
        self.emit(ev.GroupCreated(group=group_id, simple=True), now_ms)
        return group

    def delete(self, group_id: str) -> None:
        """DeleteGroups of an Empty group: 4.x removes it (its tombstone is replayed), no Dead state."""
        self.groups.pop(group_id, None)
        self.snapshots.pop(group_id, None)
        self.timers.cancel_under(("join", group_id))
        self.timers.cancel_under(("sync", group_id))
        self.emit(ev.GroupDeleted(group=group_id))

    def hand_over(self, group_id: str) -> ClassicGroup | None:
        """Give a group up to the other protocol's coordinator (an online upgrade): it leaves this
        coordinator with its timers; its offsets stay where they are."""
        group = self.groups.pop(group_id, None)
        self.snapshots.pop(group_id, None)
        for kind in ("heartbeat", "join", "sync"):
            self.timers.cancel_under((kind, group_id))
        if group is not None:
            self._answer_parked(group, E.REBALANCE_IN_PROGRESS)
        return group

    def adopt(
        self, group_id: str, members: list[Member], generation: int, protocol_name: str | None, now_ms: int
    ) -> ClassicGroup:
        """Take a group over from the consumer protocol (an online downgrade): its members keep
        their assignments and are asked to rejoin in a rebalance, as GMM convertToClassicGroup does."""
        group = ClassicGroup(
            group_id,
            state=S.STABLE,
            previous_state=S.COMPLETING_REBALANCE,
            state_timestamp_ms=now_ms,
            generation_id=generation,
            protocol_type="consumer",
            protocol_name=protocol_name,
        )
        for member in members:
            group.add(member)
        if group.protocol_name is None and group.candidate_protocols():
            group.protocol_name = group.select_protocol()
        self.groups[group_id] = group
        self._persist(group)
        for member in members:
            self._rearm(group, member.member_id, now_ms, member.session_timeout_ms)
        self._prepare_rebalance(group, now_ms, "converted from a consumer group")
        return group

    def forget(self, group_ids: list[str]) -> None:
        """Drop groups with their members, timers and persisted records, leaving no trace (the
        pytest plugin's clean-up between tests sharing one cluster)."""
        for gid in group_ids:
            group = self.groups.pop(gid, None)
            for kind in ("heartbeat", "join", "sync"):
                self.timers.cancel_under((kind, gid))
            if group is not None:
                self._answer_parked(group, E.NOT_COORDINATOR)
            if self.snapshots.pop(gid, None) is not None or group is not None:
                self.emit(ev.GroupForgotten(group=gid))

    @staticmethod
    def _answer_parked(group: ClassicGroup, error: E) -> None:
        for m in group.members.values():
            if m.join_pending is not None:
                m.join_pending.complete(join_error(error))
                m.join_pending = None
            if m.sync_pending is not None:
                m.sync_pending.complete(sync_error(error))
                m.sync_pending = None

    # -- loading and unloading (coordinator moves) ------------------------------------------------
    def unload(self, group_ids: list[str], now_ms: int, broker: int | None = None) -> None:
        """The coordinator lost these groups (GMM ``onUnloaded``): each goes to Dead, its parked
        requests get NOT_COORDINATOR and its timers stop. A Dead group stays visible until the
        next load of its partition replaces it with its persisted record. ``broker`` is the
        coordinator that lost them (their events are its, not the new coordinator's)."""
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is None or group.is_state(S.DEAD):
                continue
            for kind in ("heartbeat", "join", "sync"):
                self.timers.cancel_under((kind, gid))
            self._answer_parked(group, E.NOT_COORDINATOR)
            old = group.state
            group.transition_to(S.DEAD, now_ms)
            self.emit(
                ev.GroupStateChanged(
                    group=gid, old=old.value, new=S.DEAD.value, generation=group.generation_id, broker=broker
                ),
                now_ms,
            )
            self.emit(ev.GroupUnloaded(group=gid, broker=broker), now_ms)

    def load(self, group_ids: list[str], now_ms: int) -> None:
        """Rebuild groups from their last persisted record: Stable with members, else Empty."""
        for gid in group_ids:
            snap = self.snapshots.get(gid)
            if snap is None:
                self.groups.pop(gid, None)
                continue
            group = ClassicGroup(
                gid,
                state_timestamp_ms=snap.state_timestamp_ms,
                generation_id=snap.generation_id,
                protocol_type=snap.protocol_type,
                protocol_name=snap.protocol_name,
                leader_id=snap.leader_id,
            )
            for m in snap.members:
                group.put(Member(**m))
            if group.members:
                group.state = S.STABLE
                group.previous_state = S.COMPLETING_REBALANCE
            self.groups[gid] = group
            for member in group.members.values():
                self._rearm(group, member.member_id, now_ms, member.session_timeout_ms)
            self.emit(ev.GroupLoaded(group=gid, state=group.state.value, generation=group.generation_id), now_ms)

"""The share group coordinator (ShareGroupHeartbeat, KIP-932): membership, epochs and the
server-side assignment of share groups, with Kafka's checks in Kafka's order
(GroupMetadataManager's ``shareGroupHeartbeat`` path, ShareGroupAssignmentBuilder).

A heartbeat that changes membership or subscriptions bumps the group epoch; the target
assignment is computed by the ``simple`` assignor over the initialized share partitions of
the subscribed topics, and each member jumps to its target (there is nothing to revoke: a
partition may be read by several members at once).

Kafka initializes a group's new share partitions after answering the heartbeat that found
them, so only the next heartbeat, one interval (5 s) later, can assign them: a new group's
first member gets epoch 2 with nothing, then epoch 3 with its partitions. By default they are
initialized here before the assignment is computed, so the first answer carries them (as
Kafka answers a member joining a group whose partitions are already initialized) and a test
does not wait 5 s; the broker setting ``fakebroker.share.late.assignment`` restores Kafka's
sequence.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from ....lazy_dataclasses import dataclass
from ....protocol.error_codes import ErrorCode as E
from ... import events as ev
from ...configs import BrokerConfig
from ...events import EventSink
from ...group_configs import GroupConfigs
from ...timers import Timers
from ..results import HeartbeatError, HeartbeatResult
from . import assignor
from .model import LEAVE_EPOCH, Assignment, ShareGroup, ShareMember

# topic name -> (topic id, partition count), for the topics that exist
TopicsView = Callable[[], dict[str, tuple[uuid.UUID, int]]]
# (group id, topic name, partitions, state epoch): the share coordinator initializes their state
Initialize = Callable[[str, str, list[int], int], None]


@dataclass(frozen=True)
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("share-session", group_id, member_id)


def _plain(assignment: Assignment) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(assignment.items()) if ps}


class ShareCoordinator:
    def __init__(
        self,
        config: BrokerConfig,
        group_configs: GroupConfigs,
        timers: Timers,
        events: EventSink,
        topics: TopicsView,
        initialize: Initialize,
    ):
        self.config = config
        self.group_configs = group_configs
        self.timers = timers
        self.events = events
        self.topics = topics
        self.initialize = initialize
        self.groups: dict[str, ShareGroup] = {}

    def live(self, group_id: str | None) -> ShareGroup | None:
        group = self.groups.get(group_id) if group_id is not None else None
        return group if group is not None and not group.dead else None

    # -- ShareGroupHeartbeat ---------------------------------------------------------------------
    def heartbeat(self, now_ms: int, req: ShareHeartbeatRequest) -> HeartbeatResult:
        try:
            self._validate(req)
            if req.member_epoch == LEAVE_EPOCH:
                return self._leave(now_ms, req)
            return self._heartbeat(now_ms, req)
        except HeartbeatError as exc:
            return HeartbeatResult(exc.error, exc.message)

    @staticmethod
    def _validate(req: ShareHeartbeatRequest) -> None:
        """throwIfShareGroupHeartbeatRequestIsInvalid."""
        if not req.member_id.strip():
            raise HeartbeatError(E.INVALID_REQUEST, "MemberId can't be empty.")
        if not req.group_id.strip():
            raise HeartbeatError(E.INVALID_REQUEST, "GroupId can't be empty.")
        if req.rack_id is not None and not req.rack_id.strip():
            raise HeartbeatError(E.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch == 0 and not req.subscribed_names:
            raise HeartbeatError(E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        if req.member_epoch < LEAVE_EPOCH:
            raise HeartbeatError(E.INVALID_REQUEST, "MemberEpoch is invalid.")

    def _heartbeat(self, now_ms: int, req: ShareHeartbeatRequest) -> HeartbeatResult:
        gid, mid = req.group_id, req.member_id
        group = self.live(gid)
        if group is None:
            if req.member_epoch != 0:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Share group {gid} not found.")
            group = self.groups[gid] = ShareGroup(gid, created_ms=now_ms)
            self.events.append(ev.GroupCreated(group=gid), now_ms)
        member = group.members.get(mid)
        if member is None:
            max_size = self.config.get_int("group.share.max.size")
            if len(group.members) >= max_size:
                raise HeartbeatError(
                    E.GROUP_MAX_SIZE_REACHED, f"The share group has reached its maximum capacity of {max_size} members."
                )
            if req.member_epoch != 0:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
        elif req.member_epoch != 0:
            self._check_epoch(member, req.member_epoch)
        joined = member is None
        if member is None:
            member = ShareMember(mid)
        old_assignment = _plain(member.assigned)
        member.client_id, member.client_host = req.client_id, req.client_host
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        subscription_changed = joined
        if req.subscribed_names is not None and tuple(sorted(req.subscribed_names)) != member.subscribed_names:
            member.subscribed_names = tuple(sorted(req.subscribed_names))
            subscription_changed = True
        if joined:
            group.members[mid] = member
            self.events.append(ev.MemberJoined(group=gid, member=mid, client_id=req.client_id or None), now_ms)
        if subscription_changed:
            self._bump(group, now_ms, "member joined" if joined else "subscription changed")
        else:
            self._refresh_metadata(group, now_ms)
        late = self.config.get_bool("fakebroker.share.late.assignment")
        if late:
            self._initialized_since(group, now_ms)
        else:
            self._initialize_subscribed(group)
        self._maybe_assign(group, now_ms)
        self._reconcile(group, member, subscription_changed)
        self._arm_session(group, member, now_ms)
        if late:  # Kafka's persister runs after the answer: the next heartbeat can assign them
            self._initialize_subscribed(group, pending=True)
        full = req.member_epoch == 0 or req.subscribed_names is not None
        changed = _plain(member.assigned) != old_assignment
        return HeartbeatResult(
            E.NONE,
            member_id=mid,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.group_configs.get_int(gid, "share.heartbeat.interval.ms"),
            assignment={t: set(ps) for t, ps in member.assigned.items()} if full or changed else None,
        )

    @staticmethod
    def _check_epoch(member: ShareMember, epoch: int) -> None:
        """throwIfShareGroupMemberEpochIsInvalid: the previous epoch is a lost response's."""
        if epoch > member.member_epoch:
            raise HeartbeatError(
                E.FENCED_MEMBER_EPOCH,
                f"The share group member has a greater member epoch ({epoch}) than the one known by "
                f"the group coordinator ({member.member_epoch}). The member must abandon all its "
                "partitions and rejoin.",
            )
        if epoch < member.member_epoch and epoch != member.previous_epoch:
            raise HeartbeatError(
                E.FENCED_MEMBER_EPOCH,
                f"The share group member has a smaller member epoch ({epoch}) than the one known by "
                f"the group coordinator ({member.member_epoch}), and it does not match the previous member "
                f"epoch ({member.previous_epoch}). The member must abandon all its partitions and rejoin.",
            )

    # -- epochs, initialization and the target assignment ----------------------------------------
    def _bump(self, group: ShareGroup, now_ms: int, reason: str) -> None:
        group.group_epoch += 1
        group.subscription_hash = self.metadata_hash(group)
        self.events.append(ev.GroupEpochBumped(group=group.group_id, epoch=group.group_epoch, reason=reason), now_ms)

    def metadata_hash(self, group: ShareGroup) -> int:
        view = self.topics()
        return hash(tuple((t, view[t]) for t in sorted(group.subscribed_topics()) if t in view))

    def _refresh_metadata(self, group: ShareGroup, now_ms: int) -> None:
        """A subscribed topic was created, deleted or grew: the assignment is recomputed."""
        if self.metadata_hash(group) != group.subscription_hash:
            self._bump(group, now_ms, "topic metadata changed")

    def _initialize_subscribed(self, group: ShareGroup, *, pending: bool = False) -> None:
        """Subscribed partitions without share state get it (start offset -1: resolved with
        ``share.auto.offset.reset`` at the first fetch); ``pending``: they become assignable at
        the next heartbeat (Kafka's order)."""
        view = self.topics()
        for topic in sorted(group.subscribed_topics()):
            if topic not in view:
                continue
            count = view[topic][1]
            have = group.initialized.setdefault(topic, set())
            waiting = group.initializing.setdefault(topic, set())
            missing = [p for p in range(count) if p not in have and p not in waiting]
            if missing:
                self.initialize(group.group_id, topic, missing, group.group_epoch)
                (waiting if pending else have).update(missing)
        for topic in [t for t in group.initialized if t not in view]:
            del group.initialized[topic]  # the topic is gone

    def _initialized_since(self, group: ShareGroup, now_ms: int) -> None:
        """Partitions initialized after the last answer are assignable now; with no assignment
        pending, the group epoch moves when the target does not cover them
        (``initializedAssignmentPending``)."""
        for topic, waiting in group.initializing.items():
            group.initialized.setdefault(topic, set()).update(waiting)
            waiting.clear()
        if group.group_epoch > group.assignment_epoch:
            return
        subscribed = group.subscribed_topics()
        initialized = {(t, p) for t, ps in group.initialized.items() if t in subscribed for p in ps}
        targeted = {(t, p) for a in group.target.values() for t, ps in a.items() for p in ps}
        if initialized - targeted:
            self._bump(group, now_ms, "share partitions initialized")

    def _maybe_assign(self, group: ShareGroup, now_ms: int) -> None:
        if group.group_epoch <= group.assignment_epoch:
            return
        interval = self.group_configs.get_int(group.group_id, "share.assignment.interval.ms")
        if group.last_assignment_ms is not None and interval > 0 and now_ms - group.last_assignment_ms < interval:
            return  # a later heartbeat computes it
        view = self.topics()
        assignable = {t: len(ps) for t, ps in group.initialized.items() if t in view and ps}
        subscriptions = {mid: set(m.subscribed_names) for mid, m in group.members.items()}
        group.target = assignor.assign(subscriptions, group.target, assignable)
        group.assignment_epoch = group.group_epoch
        group.last_assignment_ms = now_ms
        self.events.append(
            ev.TargetAssignmentComputed(
                group=group.group_id,
                epoch=group.assignment_epoch,
                assignment={mid: _plain(a) for mid, a in sorted(group.target.items())},
            ),
            now_ms,
        )

    def _reconcile(self, group: ShareGroup, member: ShareMember, subscription_changed: bool) -> None:
        """ShareGroupAssignmentBuilder: straight to the target, filtered to what it subscribes."""
        if member.member_epoch != group.assignment_epoch or subscription_changed:
            target = group.target.get(member.member_id, {})
            subscribed = set(member.subscribed_names)
            member.assigned = {t: set(ps) for t, ps in target.items() if t in subscribed and ps}
            if member.member_epoch != group.assignment_epoch:
                member.previous_epoch = member.member_epoch
                member.member_epoch = group.assignment_epoch

    # -- leaving and session expiry --------------------------------------------------------------
    def _leave(self, now_ms: int, req: ShareHeartbeatRequest) -> HeartbeatResult:
        gid, mid = req.group_id, req.member_id
        group = self.groups.get(gid)
        if group is None or group.dead:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
        if mid not in group.members:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
        self._remove(group, mid, now_ms)
        self.events.append(ev.MemberLeft(group=gid, member=mid), now_ms)
        return HeartbeatResult(E.NONE, member_id=mid, member_epoch=LEAVE_EPOCH, assignment=None)

    def _remove(self, group: ShareGroup, member_id: str, now_ms: int) -> None:
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        self.timers.cancel(session_key(group.group_id, member_id))
        self._bump(group, now_ms, "member left")
        if not group.members:
            group.assignment_epoch = group.group_epoch
            group.target = {}

    def _arm_session(self, group: ShareGroup, member: ShareMember, now_ms: int) -> None:
        gid, mid = group.group_id, member.member_id
        timeout = self.group_configs.get_int(gid, "share.session.timeout.ms")

        def expire(t: int) -> None:
            live = self.live(gid)
            if live is not None and mid in live.members:
                self._remove(live, mid, t)
                self.events.append(ev.MemberExpired(group=gid, member=mid, session_timeout_ms=timeout), t)

        self.timers.schedule(session_key(gid, mid), now_ms + timeout, expire)

    # -- the group's life ----------------------------------------------------------------------
    def unload(self, group_ids: list[str]) -> None:
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is not None:
                for member_id in group.members:
                    self.timers.cancel(session_key(gid, member_id))

    def load(self, group_ids: list[str], now_ms: int) -> None:
        for gid in group_ids:
            group = self.live(gid)
            if group is None:
                continue
            for member in group.members.values():
                self._arm_session(group, member, now_ms)
            self.events.append(ev.GroupLoaded(group=gid, state=group.state.value, generation=group.group_epoch), now_ms)

    def delete(self, group_id: str, now_ms: int | None = None) -> ShareGroup | None:
        group = self.groups.pop(group_id, None)
        if group is not None:
            for member_id in list(group.members):
                self.timers.cancel(session_key(group_id, member_id))
            self.events.append(ev.GroupDeleted(group=group_id), now_ms)
        return group

    def forget(self, group_ids: list[str]) -> None:
        for gid in group_ids:
            group = self.groups.pop(gid, None)
            if group is not None:
                for member_id in list(group.members):
                    self.timers.cancel(session_key(gid, member_id))
                self.events.append(ev.GroupForgotten(group=gid))

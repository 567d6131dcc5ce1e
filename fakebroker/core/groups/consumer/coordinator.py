"""The KIP-848 consumer group coordinator (ConsumerGroupHeartbeat): every transition of a
consumer group happens here, with Kafka's checks in Kafka's order (GroupMetadataManager's
``consumerGroupHeartbeat`` path, CurrentAssignmentBuilder, TargetAssignmentBuilder).

The server decides the assignment: a heartbeat that changes membership or subscriptions bumps
the group epoch; the target assignment is recomputed for that epoch by the group's assignor;
each member then reconciles towards its target: partitions it keeps, partitions it must revoke
first (its epoch stays until it reports them gone), partitions it gets once nobody else owns
them. Pure and synchronous like the classic coordinator: time comes in as ``now_ms``.

Classic members in a consumer group (JoinGroup/SyncGroup/Heartbeat answered from the server's
assignment) and the online migration between the protocols are here too: like the classic
coordinator's module, this one is long on purpose, so that every transition of a consumer
group can be read against the others in one place.
"""

from __future__ import annotations

import base64
import functools
import uuid
from collections.abc import Callable
from typing import Any

from ....protocol import data
from ....protocol.error_codes import ErrorCode as E
from ....protocol.errors import DecodeError
from ... import events as ev
from ...configs import BrokerConfig
from ...events import EventSink
from ...group_configs import GroupConfigs
from ...timers import Timers
from ..requests import ConsumerHeartbeatRequest, HeartbeatRequest, JoinRequest, SyncRequest
from ..results import HeartbeatError, HeartbeatResult, JoinResult, LeaveResult, SyncResult, join_error, sync_error
from .assignors import ASSIGNORS, AssignorMember
from .model import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)

# topic name -> (topic id, partition count), for the topics that exist
TopicsView = Callable[[], dict[str, tuple[uuid.UUID, int]]]


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session", group_id, member_id)


def revocation_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-revocation", group_id, member_id)


@functools.lru_cache(maxsize=1)
def _re2() -> tuple[Any, Any]:
    """The re2 module and its options, imported when a group first names a regex (3 ms)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # a client's bad regex is its error answer, not a line on our stderr
    return re2, options


@functools.lru_cache(maxsize=256)
def compile_regex(pattern: str) -> Any:  # an re2 pattern (re2 is untyped)
    """RE2 syntax, as Kafka's RE2/J: what RE2 refuses (look-arounds, back-references) is refused."""
    re2, options = _re2()
    return re2.compile(pattern, options=options)


def new_member_id() -> str:
    """A Kafka ``Uuid`` as a member id: 22 characters of URL-safe base64 (v0: the server makes it)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _copy(assignment: Assignment) -> Assignment:
    return {t: set(ps) for t, ps in assignment.items() if ps}


def _minus(a: Assignment, b: Assignment) -> Assignment:
    return {t: ps - b.get(t, set()) for t, ps in a.items() if ps - b.get(t, set())}


def _and(a: Assignment, b: Assignment) -> Assignment:
    return {t: ps & b.get(t, set()) for t, ps in a.items() if ps & b.get(t, set())}


def _plain(assignment: Assignment) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(assignment.items()) if ps}


class ConsumerCoordinator:
    def __init__(self, config: BrokerConfig, timers: Timers, events: EventSink, topics: TopicsView):
        self.config = config
        self.timers = timers
        self.events = events
        self.topics = topics
        self.groups: dict[str, ConsumerGroup] = {}
        # Called when only classic members are left in a group (an online downgrade, if allowed).
        self.on_only_classic_members: Callable[[ConsumerGroup, int], None] | None = None
        # The groups' own configs (consumer.session.timeout.ms, consumer.heartbeat.interval.ms
        # override the broker's group.consumer.* for their group); None: the broker's for all.
        self.group_configs: GroupConfigs | None = None
        # May (principal, client host) describe the topic? Set when an authorizer can say no:
        # a regex subscription then resolves to the topics its member's principal may describe,
        # as Kafka's coordinator filters them (TopicRegexResolver)
        self.may_describe: Callable[[str, str, str], bool] | None = None

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's ``consumer.session.timeout.ms``, else the broker's (Kafka's GMM
        ``consumerGroupSessionTimeoutMs``)."""
        if self.group_configs is not None:
            return self.group_configs.get_int(group_id, "consumer.session.timeout.ms")
        return self.config.get_int("group.consumer.session.timeout.ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's ``consumer.heartbeat.interval.ms``, else the broker's."""
        if self.group_configs is not None:
            return self.group_configs.get_int(group_id, "consumer.heartbeat.interval.ms")
        return self.config.get_int("group.consumer.heartbeat.interval.ms")

    def enabled(self) -> bool:
        protocols = {p.strip() for p in self.config.get("group.coordinator.rebalance.protocols").split(",")}
        return "consumer" in protocols

    def migration_allows(self, direction: str) -> bool:
        """``group.consumer.migration.policy``: disabled, upgrade, downgrade or bidirectional."""
        policy = self.config.get("group.consumer.migration.policy").strip().lower()
        return policy in ("bidirectional", direction)

    def adopt_classic(
        self, now_ms: int, group_id: str, generation: int, members: list[tuple[ConsumerMember, Assignment]]
    ) -> ConsumerGroup:
        """An online upgrade (GMM convertToConsumerGroup): the classic group's members become
        classic members of a consumer group at its generation, keeping their assignments."""
        group = self.groups[group_id] = ConsumerGroup(group_id, generation, generation, created_ms=now_ms)
        for member, assigned in members:
            member.member_epoch, member.assigned = generation, _copy(assigned)
            member.assignment_epochs = {(t, p): generation for t, ps in assigned.items() for p in ps}
            member.last_sent = _copy(assigned)
            group.members[member.member_id] = member
            group.target[member.member_id] = _copy(assigned)
            if member.instance_id:
                group.static_members[member.instance_id] = member.member_id
            self._arm_session(group, member, now_ms)
        group.subscription_hash = self.subscription_hash_of(group)
        self.events.append(ev.GroupConverted(group=group_id, to="consumer", generation=generation), now_ms)
        return group

    def assignors(self) -> list[str]:
        return [a.strip() for a in self.config.get("group.consumer.assignors").split(",") if a.strip()]

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------------
    def heartbeat(self, now_ms: int, req: ConsumerHeartbeatRequest) -> HeartbeatResult:
        try:
            self._validate(req)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(now_ms, req.group_id, req.member_id, req.member_epoch, req.instance_id)
            return self._heartbeat(now_ms, req, req.member_id or new_member_id())
        except HeartbeatError as exc:
            return HeartbeatResult(exc.error, exc.message)

    def _validate(self, req: ConsumerHeartbeatRequest) -> None:
        """GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid, in its order."""
        member_id, group_id, epoch, version = req.member_id, req.group_id, req.member_epoch, req.version
        instance_id, rack_id, owned = req.instance_id, req.rack_id, req.owned
        names, regex, assignor = req.subscribed_names, req.subscribed_regex, req.server_assignor
        if version >= 1 and not member_id.strip():
            raise HeartbeatError(E.INVALID_REQUEST, "MemberId can't be empty.")
        if not group_id.strip():
            raise HeartbeatError(E.INVALID_REQUEST, "GroupId can't be empty.")
        if instance_id is not None and not instance_id.strip():
            raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be empty.")
        if rack_id is not None and not rack_id.strip():
            raise HeartbeatError(E.INVALID_REQUEST, "RackId can't be empty.")
        if epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise HeartbeatError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if owned is None or any(owned.values()):
                raise HeartbeatError(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if names is None and regex is None:
                raise HeartbeatError(
                    E.INVALID_REQUEST, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
                )
        elif epoch == STATIC_LEAVE_EPOCH:
            if instance_id is None:
                raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be null.")
        elif epoch < STATIC_LEAVE_EPOCH:
            raise HeartbeatError(E.INVALID_REQUEST, f"MemberEpoch is invalid: {epoch}.")
        if version == 0 and epoch != 0 and not member_id.strip():
            raise HeartbeatError(E.INVALID_REQUEST, "MemberId can't be empty.")
        if assignor is not None and assignor not in self.assignors():
            raise HeartbeatError(
                E.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {assignor} is not supported. Supported assignors: {', '.join(self.assignors())}.",
            )
        if regex is not None:
            try:
                compile_regex(regex)
            except _re2()[0].error as exc:
                reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
                raise HeartbeatError(
                    E.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {reason}.",
                ) from None

    def _heartbeat(self, now_ms: int, req: ConsumerHeartbeatRequest, member_id: str) -> HeartbeatResult:
        group_id, epoch, instance_id, rack_id = req.group_id, req.member_epoch, req.instance_id, req.rack_id
        rebalance_timeout_ms, names, regex, owned = (
            req.rebalance_timeout_ms,
            req.subscribed_names,
            req.subscribed_regex,
            req.owned,
        )
        assignor, client_id, client_host = req.server_assignor, req.client_id, req.client_host
        group = self.groups.get(group_id)
        if group is None or group.dead:
            if epoch != 0:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            group = self.groups[group_id] = ConsumerGroup(group_id, created_ms=now_ms)
            self.events.append(ev.GroupCreated(group=group_id), now_ms)
        member = group.members.get(member_id)
        replaced = self._static_member(group, member_id, epoch, instance_id, member) if instance_id else None
        changed = False
        if member is None:
            if epoch != 0:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if replaced is None and len(group.members) >= self.config.get_int("group.consumer.max.size"):
                raise HeartbeatError(
                    E.GROUP_MAX_SIZE_REACHED,
                    f"The consumer group has reached its maximum "
                    f"capacity of {self.config.get_int('group.consumer.max.size')} members.",
                )
            member = group.members[member_id] = ConsumerMember(member_id, instance_id, rack_id, client_id, client_host)
            if replaced is not None:  # the newcomer takes the static member's place, partitions and target
                member.assigned, member.member_epoch = _copy(replaced.assigned), replaced.previous_epoch
                member.subscribed_names, member.subscribed_regex = replaced.subscribed_names, replaced.subscribed_regex
                member.server_assignor = replaced.server_assignor
                group.target[member_id] = group.target.pop(replaced.member_id, {})
                self._drop(group, replaced.member_id)
                self.events.append(
                    ev.MemberFenced(
                        group=group_id, member=replaced.member_id, instance=instance_id, replaced_by=member_id
                    ),
                    now_ms,
                )
            else:
                changed = True  # a new member: the group epoch moves
            if instance_id is not None:
                group.static_members[instance_id] = member_id
            self.events.append(
                ev.MemberJoined(group=group_id, member=member_id, instance=instance_id, client_id=client_id or None),
                now_ms,
            )
        elif epoch == 0:
            # A known member rejoining with epoch 0 has lost its partitions: it starts over.
            member.assigned, member.revoking, member.member_epoch = {}, {}, 0
            member.state = MemberState.STABLE
        else:
            self._check_epoch(member, epoch, owned)
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if rack_id is not None:
            member.rack_id = rack_id
        if names is not None and tuple(sorted(names)) != member.subscribed_names:
            member.subscribed_names, changed = tuple(sorted(names)), True
        if regex is not None and regex != (member.subscribed_regex or ""):
            member.subscribed_regex, changed = regex or None, True
        member.principal = req.principal
        if assignor is not None and assignor != member.server_assignor:
            member.server_assignor, changed = assignor, True
        if self._resolve_regexes(group):
            changed = True
        fingerprint = self.subscription_hash_of(group)
        if changed or fingerprint != group.subscription_hash:
            group.subscription_hash = fingerprint
            self._bump(
                group,
                now_ms,
                f"member {member_id} joined or changed its subscription" if changed else "subscribed topics changed",
            )
        self._arm_session(group, member, now_ms)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, now_ms)
        self._reconcile(group, member, owned, now_ms)
        full = epoch == 0 or (
            rebalance_timeout_ms != -1 and (names is not None or regex is not None) and owned is not None
        )
        send = full or member.last_sent != member.assigned
        if send:
            member.last_sent = _copy(member.assigned)
        return HeartbeatResult(
            E.NONE,
            None,
            member.member_id,
            member.member_epoch,
            self.heartbeat_interval_ms(group.group_id),
            _copy(member.assigned) if send else None,
        )

    def _static_member(
        self, group: ConsumerGroup, member_id: str, epoch: int, instance_id: str, member: ConsumerMember | None
    ) -> ConsumerMember | None:
        """Kafka's static-member checks; returns the placeholder a joining newcomer replaces."""
        holder_id = group.static_members.get(instance_id)
        holder = group.members.get(holder_id) if holder_id else None
        if holder is None or holder.member_id == member_id:
            return None
        if epoch == 0:
            if holder.member_epoch != STATIC_LEAVE_EPOCH:
                raise HeartbeatError(
                    E.UNRELEASED_INSTANCE_ID,
                    f"Static member {holder.member_id} with instance id {instance_id} is not released yet.",
                )
            return holder
        raise HeartbeatError(
            E.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by member {holder_id}.",
        )

    def _check_epoch(self, member: ConsumerMember, epoch: int, owned: Assignment | None) -> None:
        """throwIfConsumerGroupMemberEpochIsInvalid: a newer epoch than known, or an older one that is
        not the previous epoch of a lost response, is fenced."""
        if epoch > member.member_epoch:
            raise HeartbeatError(
                E.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch "
                f"({epoch}) than the one known by the group coordinator ({member.member_epoch}).",
            )
        if epoch < member.member_epoch:
            lost_response = (
                epoch == member.previous_epoch
                and owned is not None
                and all(ps <= member.assigned.get(t, set()) for t, ps in owned.items())
            )
            if not lost_response:
                raise HeartbeatError(
                    E.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch "
                    f"({epoch}) than the one known by the group coordinator "
                    f"({member.member_epoch}).",
                )

    # -- epochs and the target assignment ---------------------------------------------------------
    def _bump(self, group: ConsumerGroup, now_ms: int, reason: str) -> None:
        group.group_epoch += 1
        self.events.append(ev.GroupEpochBumped(group=group.group_id, epoch=group.group_epoch, reason=reason), now_ms)

    def _resolve_regexes(self, group: ConsumerGroup) -> bool:
        """Regex subscriptions become the topics they match now; True when that changed a member's topics."""
        changed = False
        names = [t for t in self.topics() if not t.startswith("__")]
        may_describe = self.may_describe
        for member in group.members.values():
            if member.subscribed_regex is None:
                continue
            pattern = compile_regex(member.subscribed_regex)
            matched = tuple(sorted(t for t in names if pattern.fullmatch(t)))
            principal = member.principal
            if may_describe is not None and principal is not None and matched:
                host = member.client_host.lstrip("/")
                matched = tuple(t for t in matched if may_describe(principal, host, t))
            if matched != member.subscribed_names:
                member.subscribed_names, changed = matched, True
        return changed

    def subscription_hash_of(self, group: ConsumerGroup) -> int:
        topics = self.topics()
        return hash(tuple(sorted((t, topics[t][0], topics[t][1]) for t in group.subscribed_topics() if t in topics)))

    def _compute_target(self, group: ConsumerGroup, now_ms: int) -> None:
        topics = self.topics()
        counts = {t: topics[t][1] for t in group.subscribed_topics() if t in topics}
        choice = next((m.server_assignor for m in group.members.values() if m.server_assignor), None)
        assignor = ASSIGNORS.get(choice or self.assignors()[0], ASSIGNORS["uniform"])
        members = [AssignorMember(m.member_id, m.instance_id, set(m.subscribed_names)) for m in group.members.values()]
        group.target = assignor(members, counts, group.target)
        group.assignment_epoch = group.group_epoch
        self.events.append(
            ev.TargetAssignmentComputed(
                group=group.group_id,
                epoch=group.assignment_epoch,
                assignment={mid: _plain(a) for mid, a in sorted(group.target.items())},
            ),
            now_ms,
        )

    # -- reconciliation (CurrentAssignmentBuilder) --------------------------------------------------
    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None, now_ms: int) -> None:
        if member.member_epoch == STATIC_LEAVE_EPOCH:
            return
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            still = owned is None or any(owned.get(t, set()) & ps for t, ps in member.revoking.items())
            if still:
                return
            member.revoking = {}
        target = group.target.get(member.member_id, {})
        if (
            member.member_epoch == group.assignment_epoch
            and member.state == MemberState.STABLE
            and member.assigned == target
        ):
            return
        keep = _and(member.assigned, target)
        revoke = _minus(member.assigned, target)
        before = (member.member_epoch, member.state, _plain(member.assigned))
        if revoke:
            member.assigned, member.revoking = keep, revoke
            member.state = MemberState.UNREVOKED_PARTITIONS
            self._arm_revocation(group, member, now_ms)
        else:
            wanted = _minus(target, keep)
            free: Assignment = {}
            unreleased = False
            for topic, partitions in wanted.items():
                for p in partitions:
                    owner = group.owner_of(topic, p)
                    if owner is None or owner == member.member_id:
                        free.setdefault(topic, set()).add(p)
                    else:
                        unreleased = True
            for topic, partitions in free.items():
                for p in partitions:
                    member.assignment_epochs[(topic, p)] = group.assignment_epoch
            member.assigned = {t: keep.get(t, set()) | free.get(t, set()) for t in set(keep) | set(free)}
            if member.member_epoch != group.assignment_epoch:
                member.previous_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
            member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
            self.timers.cancel(revocation_key(group.group_id, member.member_id))
        if (member.member_epoch, member.state, _plain(member.assigned)) != before:
            self.events.append(
                ev.MemberReconciled(
                    group=group.group_id,
                    member=member.member_id,
                    epoch=member.member_epoch,
                    state=member.state.value,
                    assignment=_plain(member.assigned),
                    revoking=_plain(member.revoking) or None,
                ),
                now_ms,
            )

    # -- timers -----------------------------------------------------------------------------------
    def _arm_session(self, group: ConsumerGroup, member: ConsumerMember, now_ms: int) -> None:
        gid, mid = group.group_id, member.member_id
        timeout = member.session_timeout_ms or self.session_timeout_ms(gid)
        self.timers.schedule(session_key(gid, mid), now_ms + timeout, lambda t: self._expire(gid, mid, t, "session"))

    def _arm_revocation(self, group: ConsumerGroup, member: ConsumerMember, now_ms: int) -> None:
        gid, mid = group.group_id, member.member_id
        key = revocation_key(gid, mid)
        if self.timers.deadline(key) is None:
            timeout = max(member.rebalance_timeout_ms, 0)
            self.timers.schedule(key, now_ms + timeout, lambda t: self._expire(gid, mid, t, "revocation"))

    def _expire(self, group_id: str, member_id: str, now_ms: int, why: str) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        if why == "revocation" and member.state != MemberState.UNREVOKED_PARTITIONS:
            return
        self.events.append(
            ev.MemberExpired(
                group=group_id,
                member=member_id,
                client_id=member.client_id or None,
                session_timeout_ms=self.session_timeout_ms(group_id) if why == "session" else None,
            ),
            now_ms,
        )
        self._remove(group, member_id, now_ms, f"member {member_id} fenced: {why} timeout")

    # -- leaving ------------------------------------------------------------------------------------
    def _leave(
        self, now_ms: int, group_id: str, member_id: str, epoch: int, instance_id: str | None
    ) -> HeartbeatResult:
        group = self.groups.get(group_id)
        if group is None or group.dead:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        member = group.members.get(member_id)
        if instance_id is not None:
            holder_id = group.static_members.get(instance_id)
            if holder_id is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if holder_id != member_id:
                raise HeartbeatError(
                    E.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} was fenced by member {holder_id}.",
                )
        if member is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if epoch == STATIC_LEAVE_EPOCH:
            # The static member keeps its place, partitions and epoch until its instance id comes back.
            member.previous_epoch, member.member_epoch = member.member_epoch, STATIC_LEAVE_EPOCH
            self.timers.cancel(revocation_key(group_id, member_id))
            self.events.append(ev.MemberLeft(group=group_id, member=member_id, instance=instance_id), now_ms)
            self._arm_session(group, member, now_ms)
            return HeartbeatResult(E.NONE, None, member_id, STATIC_LEAVE_EPOCH, 0)
        self.events.append(ev.MemberLeft(group=group_id, member=member_id, instance=instance_id), now_ms)
        self._remove(group, member_id, now_ms, "left the group")
        return HeartbeatResult(E.NONE, None, member_id, LEAVE_EPOCH, 0)

    def _drop(self, group: ConsumerGroup, member_id: str) -> ConsumerMember | None:
        member = group.members.pop(member_id, None)
        if member is None:
            return None
        group.target.pop(member_id, None)
        if member.instance_id and group.static_members.get(member.instance_id) == member_id:
            del group.static_members[member.instance_id]
        self.timers.cancel(session_key(group.group_id, member_id))
        self.timers.cancel(revocation_key(group.group_id, member_id))
        return member

    def _remove(self, group: ConsumerGroup, member_id: str, now_ms: int, reason: str) -> None:
        member = self._drop(group, member_id)
        if member is None:
            return
        self.events.append(
            ev.MemberRemoved(group=group.group_id, member=member_id, reason=reason, client_id=member.client_id or None),
            now_ms,
        )
        self._bump(group, now_ms, reason)
        if not group.members:  # an empty group's assignment epoch follows its group epoch (GMM fence)
            group.assignment_epoch = group.group_epoch
            group.target.clear()
        only_classic = group.members and all(m.is_classic for m in group.members.values())
        if not member.is_classic and only_classic and self.on_only_classic_members is not None:
            self.on_only_classic_members(group, now_ms)

    # -- classic members in a consumer group (GMM classicGroup*ToConsumerGroup) ----------------------
    def classic_join(self, now_ms: int, group: ConsumerGroup, req: JoinRequest) -> JoinResult:
        """A classic JoinGroup to a consumer group: the server assigns, so every member is a
        follower and the answer comes at once, with the member's epoch as the generation."""
        member_id, instance_id, protocols = req.member_id, req.group_instance_id, req.protocols
        client_id, client_host = req.client_id, req.client_host
        if req.protocol_type != "consumer" or not protocols:
            return join_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id)
        try:
            subscription_version, subscription = data.decode_versioned(data.SUBSCRIPTION, protocols[0][1])
        except DecodeError:
            return join_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if not member_id and instance_id is None and req.version >= 4:
            return join_error(E.MEMBER_ID_REQUIRED, new_member_id())  # KIP-394, with a Kafka Uuid
        member_id = member_id or new_member_id()
        member = group.members.get(member_id)
        if member is not None and not member.is_classic:
            return join_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id)
        names = sorted(subscription.topics)
        owned: Assignment = {o.topic: set(o.partitions) for o in (subscription.owned_partitions or [])}
        if member is None:
            if instance_id is not None and instance_id in group.static_members:
                return join_error(E.UNRELEASED_INSTANCE_ID, member_id)
            member = group.members[member_id] = ConsumerMember(member_id, instance_id, None, client_id, client_host)
            if instance_id is not None:
                group.static_members[instance_id] = member_id
            self.events.append(
                ev.MemberJoined(
                    group=group.group_id, member=member_id, instance=instance_id, client_id=client_id or None
                ),
                now_ms,
            )
            changed = True
        else:
            changed = False
            # A rejoining classic member gave up whatever it no longer reports as owned.
            member.assigned = _and(member.assigned, owned)
        member.classic_protocols, member.classic_version = list(protocols), subscription_version
        # v0 has no rebalance timeout: the session timeout stands for it
        rebalance_timeout_ms = req.rebalance_timeout_ms if req.version >= 1 else req.session_timeout_ms
        member.session_timeout_ms, member.rebalance_timeout_ms = req.session_timeout_ms, rebalance_timeout_ms
        if tuple(names) != member.subscribed_names:
            member.subscribed_names, changed = tuple(names), True
        fingerprint = self.subscription_hash_of(group)
        if changed or fingerprint != group.subscription_hash:
            group.subscription_hash = fingerprint
            self._bump(group, now_ms, f"classic member {member_id} joined or changed its subscription")
        self._arm_session(group, member, now_ms)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, now_ms)
        self._reconcile(group, member, owned, now_ms)
        return JoinResult(E.NONE, member_id, member.member_epoch, "consumer", protocols[0][0], "", (), False)

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int
    ) -> ConsumerMember:
        member = group.members.get(member_id)
        if member is None or not member.is_classic:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID)
        if instance_id is not None and group.static_members.get(instance_id) != member_id:
            raise HeartbeatError(E.FENCED_INSTANCE_ID)
        if generation != member.member_epoch:
            raise HeartbeatError(E.ILLEGAL_GENERATION)
        return member

    def classic_sync(self, now_ms: int, group: ConsumerGroup, req: SyncRequest) -> SyncResult:
        """SyncGroup returns the server-side assignment in the consumer protocol's encoding."""
        member_id, protocol_type, protocol_name = req.member_id, req.protocol_type, req.protocol_name
        try:
            member = self._classic_member(group, member_id, req.group_instance_id, req.generation_id)
        except HeartbeatError as exc:
            return sync_error(exc.error)
        assert member.classic_protocols is not None
        names = [name for name, _ in member.classic_protocols]
        if (protocol_type is not None and protocol_type != "consumer") or (
            protocol_name is not None and protocol_name not in names
        ):
            return sync_error(E.INCONSISTENT_GROUP_PROTOCOL)
        self._arm_session(group, member, now_ms)
        member.last_sent = _copy(member.assigned)
        self.events.append(
            ev.AssignmentDelivered(
                group=group.group_id,
                member=member_id,
                generation=member.member_epoch,
                assignment=_plain(member.assigned),
            ),
            now_ms,
        )
        payload = data.encode_assignment(_plain(member.assigned), version=min(member.classic_version, 3))
        return SyncResult(E.NONE, "consumer", protocol_name or names[0], payload)

    def classic_heartbeat(self, now_ms: int, group: ConsumerGroup, req: HeartbeatRequest) -> E:
        """REBALANCE_IN_PROGRESS when the member has something to revoke or receive: it rejoins."""
        member_id = req.member_id
        try:
            member = self._classic_member(group, member_id, req.group_instance_id, req.generation_id)
        except HeartbeatError as exc:
            return exc.error
        self._arm_session(group, member, now_ms)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, now_ms)
        settled = (
            member.state == MemberState.STABLE
            and member.member_epoch == group.assignment_epoch
            and member.assigned == group.target.get(member_id, {})
        )
        return E.NONE if settled else E.REBALANCE_IN_PROGRESS

    def classic_leave(self, now_ms: int, group: ConsumerGroup, members: list[tuple[str, str | None]]) -> LeaveResult:
        errors = []
        for member_id, instance_id in members:
            if not member_id and instance_id is not None:
                member_id = group.static_members.get(instance_id, "")
            member = group.members.get(member_id)
            if member is None:
                errors.append(E.UNKNOWN_MEMBER_ID)
                continue
            self.events.append(ev.MemberLeft(group=group.group_id, member=member_id, instance=instance_id), now_ms)
            self._remove(group, member_id, now_ms, "left the group")
            errors.append(E.NONE)
        return LeaveResult(E.NONE, errors)

    # -- offsets and admin --------------------------------------------------------------------------
    def validate_commit(self, group: ConsumerGroup, member_id: str, epoch: int, version: int) -> E:
        """ConsumerGroup.validateOffsetCommit: members commit with their id and current epoch."""
        if not member_id and epoch < 0:
            return E.NONE if not group.members else E.UNKNOWN_MEMBER_ID
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if not member.is_classic and version < 9:
            return E.UNSUPPORTED_VERSION  # KIP-848 members need OffsetCommit v9+
        if epoch > member.member_epoch:  # a classic member's generation is its epoch
            return E.ILLEGAL_GENERATION if member.is_classic else E.STALE_MEMBER_EPOCH
        return E.NONE  # an older epoch is checked per partition (validate_partition_commit)

    def validate_partition_commit(
        self, group: ConsumerGroup, member_id: str, epoch: int, topic: str, partition: int
    ) -> E:
        """A commit with an epoch older than the member's is fine for a partition the member still
        holds since that epoch or earlier (it raced a reconciliation), stale for any other."""
        member = group.members.get(member_id)
        if member is None or epoch >= member.member_epoch:
            return E.NONE
        assigned_at = member.assignment_epochs.get((topic, partition))
        if (topic, partition) not in member.owns() or assigned_at is None or assigned_at > epoch:
            return E.ILLEGAL_GENERATION if member.is_classic else E.STALE_MEMBER_EPOCH
        return E.NONE

    def validate_fetch(self, group: ConsumerGroup, member_id: str, epoch: int) -> E:
        """ConsumerGroup.validateOffsetFetch: an admin fetch (epoch -1, no member) always passes."""
        if epoch < 0 and not member_id:
            return E.NONE
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE if epoch == member.member_epoch else E.STALE_MEMBER_EPOCH

    def unload(self, group_ids: list[str]) -> None:
        """The coordinator moved away: its timers stop (the state itself is what the records hold)."""
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is not None:
                for member_id in group.members:
                    self.timers.cancel(session_key(gid, member_id))
                    self.timers.cancel(revocation_key(gid, member_id))

    def load(self, group_ids: list[str], now_ms: int) -> None:
        """The new coordinator took the groups over: every session (and pending revocation) runs
        again from now, as Kafka reschedules them when it replays a group's records."""
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is None:
                continue
            for member in group.members.values():
                self._arm_session(group, member, now_ms)
                if member.state == MemberState.UNREVOKED_PARTITIONS:
                    self._arm_revocation(group, member, now_ms)
            self.events.append(ev.GroupLoaded(group=gid, state=group.state.value, generation=group.group_epoch), now_ms)

    def release(self, group_id: str, now_ms: int) -> ConsumerGroup | None:
        """Give a group up to the classic coordinator (an online downgrade)."""
        group = self.groups.pop(group_id, None)
        if group is not None:
            for member_id in list(group.members):
                self.timers.cancel(session_key(group_id, member_id))
                self.timers.cancel(revocation_key(group_id, member_id))
            self.events.append(ev.GroupConverted(group=group_id, to="classic", generation=group.group_epoch), now_ms)
        return group

    def delete(self, group_id: str, now_ms: int | None = None) -> None:
        group = self.groups.pop(group_id, None)
        if group is not None:
            for member_id in list(group.members):
                self._drop(group, member_id)
            self.events.append(ev.GroupDeleted(group=group_id), now_ms)

    def forget(self, group_ids: list[str]) -> None:
        for gid in group_ids:
            group = self.groups.pop(gid, None)
            if group is not None:
                for member_id in list(group.members):
                    self._drop(group, member_id)
                self.events.append(ev.GroupForgotten(group=gid))

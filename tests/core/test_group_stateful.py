"""Stateful property test of the classic group coordinator (sans-IO, explicit time).

One :class:`GroupCoordinator` and its offset commit checks are driven directly by a set of
simulated consumer clients. Each client models what a real consumer knows: its member id,
the generation of its last JoinGroup answer, whether it leads (and the member list it was
given), its assignment, and the JoinGroup/SyncGroup it has parked (a :class:`Pending`). As on
a real connection, a client with a parked request sends nothing else.

Rules: a new client joins (JoinGroup v5 with member id "" -> MEMBER_ID_REQUIRED -> rejoin with
the id; static clients carry a ``group_instance_id`` and skip that round), rejoins (optionally
with changed metadata), the leader computes a range or roundrobin assignment of a 6-partition
topic from its JoinGroup member list and syncs, followers sync, heartbeats, leaves (own, and an
admin removal by instance id), offset commits with the client's own view of the generation (and
anonymous ones), static restarts (the old process may live on as a zombie), "every client does
its natural next step", and clock advances that fire each timer at its own deadline.

Checked after every step (see GROUP-COORDINATOR.md in shared/kafka-protocol):
  (a) the generation never decreases (also across the transitions inside one step);
  (b) in every generation each partition belongs to at most one member: in the stored member
      assignments and in the assignments clients received; a received assignment is the one the
      leader sent for that member (or for the static member it replaced);
  (c) an OffsetCommit (current, late from the previous generation, zombie, anonymous) is
      accepted only with the group's current generation and a valid member (or anonymously,
      generation -1, on an Empty group), and otherwise refused with Kafka's error; every
      accepted commit is what OffsetFetch returns;
  (d) no JoinGroup (or SyncGroup) stays parked longer than the rebalance timeout (initial
      delay included), and every open Pending is held by the coordinator (none is dropped);
  (e) the state is one of the five and every ``group_state_changed`` transition is in
      ``model.TRANSITIONS``; JoinGroups are parked only in PreparingRebalance, SyncGroups only
      in CompletingRebalance.
Plus: an oracle for every JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit answer (error
precedence of §2); join completion (immediately once everyone is in outside the initial delay,
never early while a KIP-394 id is pending, the initial-delay windows of §3.2, dynamic absentees
dropped, a rejoined leader kept, the protocol vote); a model of the session timers (§3.5: what
re-arms them, expiry exactly at the deadline, nobody outliving it unless waiting in a request)
and of the sync timeout (§3.6); a parked request is answered UNKNOWN_MEMBER_ID only when an
admin LeaveGroup removed its member.
"""

from __future__ import annotations

import itertools
from dataclasses import astuple, dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from fakebroker.core.configs import BrokerConfig
from fakebroker.core.events import EventLog
from fakebroker.core.groups.classic.coordinator import GroupCoordinator
from fakebroker.core.groups.classic.model import TRANSITIONS, GroupState
from fakebroker.core.groups.commits import classic_commit_error
from fakebroker.core.groups.offsets import OffsetStore
from fakebroker.core.groups.requests import CommitRequest, HeartbeatRequest, JoinRequest, LeaveRequest, SyncRequest
from fakebroker.core.groups.results import LeaveResult
from fakebroker.core.timers import Pending
from fakebroker.protocol.data import assignment_dict, decode_subscription, encode_assignment, encode_subscription
from fakebroker.protocol.error_codes import ErrorCode as E

from ..conftest import examples

S = GroupState
GROUP = "g"
TOPIC = "t"
PARTITIONS = 6
SESSION_TIMEOUTS = (6000, 10000, 30000)
REBALANCE_TIMEOUTS = (5000, 8000, 20000)
MAX_REBALANCE_TIMEOUT = max(REBALANCE_TIMEOUTS)
MAX_CLIENTS = 6
JOIN_V, SYNC_V, COMMIT_V = 5, 5, 8

pick = st.integers(min_value=0, max_value=63)  # index into a candidate list (mod its length)


@dataclass(eq=False)
class Client:
    name: str
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    order: tuple[str, ...]  # protocol preference
    user_data: int = 0
    member_id: str = ""
    generation: int = -1
    join: Pending | None = None
    join_sent_ms: int = 0
    sync: Pending | None = None
    sync_sent_ms: int = 0
    leader: bool = False
    members: list[dict] = field(default_factory=list)  # the leader's JoinGroup member list
    protocol: str | None = None
    synced: bool = True  # nothing to sync until a JoinGroup succeeds
    needs_rejoin: bool = False
    assignment: dict[str, list[int]] | None = None
    replaced: bool = False  # a newer process with the same instance id was started
    fenced: bool = False  # got FENCED_INSTANCE_ID (fatal for a Kafka client)
    left: bool = False
    paused: bool = False  # stuck in processing: takes no part in step_all (max.poll.interval exceeded)

    @property
    def busy(self) -> bool:
        return self.join is not None or self.sync is not None

    @property
    def alive(self) -> bool:
        return not self.fenced and not self.left

    def protocols(self) -> list[tuple[str, bytes]]:
        meta = encode_subscription([TOPIC], bytes([self.user_data % 256]))
        return [(name, meta) for name in self.order]


def member_error(group, member_id: str, instance_id: str | None) -> E:
    """Kafka's ``validateMember`` (CG), as the spec states it."""
    if instance_id:
        holder = group.static_members.get(instance_id)
        if holder is None:
            return E.UNKNOWN_MEMBER_ID
        if holder != member_id:
            return E.FENCED_INSTANCE_ID
    if member_id not in group.members:
        return E.UNKNOWN_MEMBER_ID
    return E.NONE


def group_rebalance_timeout(group) -> int:
    """CG rebalanceTimeoutMs: the largest rebalance timeout of the current members."""
    return max((m.rebalance_timeout_ms for m in group.members.values()), default=0)


def leader_assignment(protocol: str, members: list[dict]) -> dict[str, bytes]:
    """What a consumer leader computes with Kafka's range / roundrobin assignor."""
    ids = sorted(m.member_id for m in members)
    metadata = {m.member_id: m.metadata for m in members}
    subscribed = [mid for mid in ids if TOPIC in decode_subscription(metadata[mid]).topics]
    owned: dict[str, list[int]] = {mid: [] for mid in ids}
    if subscribed:
        if protocol == "range":
            per, extra = divmod(PARTITIONS, len(subscribed))
            start = 0
            for i, mid in enumerate(subscribed):
                count = per + (1 if i < extra else 0)
                owned[mid] = list(range(start, start + count))
                start += count
        else:
            for p in range(PARTITIONS):
                owned[subscribed[p % len(subscribed)]].append(p)
    return {mid: encode_assignment({TOPIC: ps} if ps else {}) for mid, ps in owned.items()}


class ObservedLog(EventLog):
    """The coordinator's event log, also told of each event at the moment it is appended."""

    def __init__(self, observe):
        super().__init__()
        self.observe = observe

    def append(self, event, now_ms=None):
        stamped = super().append(event, now_ms)
        self.observe(stamped.kind, stamped.details)
        return stamped


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.coord: GroupCoordinator | None = None
        self.now = 1_000_000
        self.clients: list[Client] = []
        self.names = itertools.count()
        self.instances = itertools.count()
        self.offsets = itertools.count(100)
        self.accepted: dict[int, int] = {}  # partition -> last accepted committed offset
        self.plans: dict[int, dict[str, bytes]] = {}  # generation -> what the leader sent
        self.predecessor: dict[str, str] = {}  # static member id -> the id it replaced
        self.received: dict[int, dict[tuple[str, str], set[int]]] = {}  # generation -> owner -> partitions
        self.events_seen = 0
        self.in_timer = False  # True while the clock fires timers (not inside a request)
        self.preparing_from: GroupState | None = None  # state the current rebalance started from
        self.violations: list[str] = []  # found inside coordinator callbacks, asserted afterwards
        # Model of the session timers (§3.5): member id -> [deadline, seen awaiting since armed]
        self.hb: dict[str, list] = {}
        self.pending_deadline: dict[str, int] = {}  # KIP-394 ids handed out, not yet joined
        self.sync_deadline: dict[int, int] = {}  # generation -> when its sync timeout fires (§3.6)
        self.sync_due: tuple[int, int] | None = None  # (generation, deadline) of the armed sync timeout
        self.synced_members: dict[int, set[str]] = {}  # generation -> members whose SyncGroup was taken
        self.successors: set[str] = set()  # member ids created by a static replacement
        self.join_due: dict | None = None  # the rebalance timeout of a non-initial rebalance (§3.3)
        self.initial: dict | None = None  # the initial-delay windows of a rebalance from Empty (§3.2)
        self.expired_at: int | None = None  # last time a member or pending id expired
        self.leader_seen: str | None = None
        self.admin_removing = False
        self.seen_state = S.EMPTY
        self.seen_generation = 0
        self.max_generation = 0

    # -- set-up ---------------------------------------------------------------------------------
    @initialize(
        delay=st.sampled_from([0, 3000]),
        first=st.lists(
            st.tuples(
                st.booleans(), st.sampled_from(SESSION_TIMEOUTS), st.sampled_from(REBALANCE_TIMEOUTS), st.booleans()
            ),
            min_size=1,
            max_size=4,
        ),
        simple_first=st.booleans(),
    )
    def setup(self, delay: int, first: list[tuple[bool, int, int, bool]], simple_first: bool) -> None:
        self.delay = delay
        self.coord = GroupCoordinator(
            BrokerConfig({"group.initial.rebalance.delay.ms": delay}), events=ObservedLog(self._on_event)
        )
        self.store = OffsetStore(self.coord.config, self.coord.events)
        self.sending: dict[str, bytes] | None = None  # the assignments of the SyncGroup being sent
        self.sender: Client | None = None
        self.bound = max(delay, MAX_REBALANCE_TIMEOUT)  # longest a JoinGroup may stay parked
        if simple_first:  # an anonymous commit creates a simple group (§2.6 step 3) that consumers then join
            self._commit("", None, -1, 0)
        for static, session, rebalance, roundrobin_first in first:  # a few clients start at once
            self.new_client(static, session, rebalance, roundrobin_first, True)

    def group(self):
        return self.coord.groups.get(GROUP)

    def candidates(self, pred) -> list[Client]:
        return [c for c in self.clients if pred(c)]

    def choose(self, pred, i: int) -> Client | None:
        found = self.candidates(pred)
        return found[i % len(found)] if found else None

    def _snapshot(self) -> dict[str, Any]:
        g = self.group()
        return {"generation": g.generation_id, "members": set(g.members), "state": g.state, "leader": g.leader_id}

    # -- JoinGroup ------------------------------------------------------------------------------
    def _expect_join(self, c: Client, member_id: str) -> object:
        """'pending', 'immediate', 'either' or an error code, from the group before the call."""
        g = self.group()
        if not member_id:
            if c.instance_id is None:
                return E.MEMBER_ID_REQUIRED
            if g is not None and c.instance_id in g.static_members:
                return "either" if g.state == S.STABLE else "pending"
            return "pending"
        if g is None:
            return E.UNKNOWN_MEMBER_ID
        if member_id in g.pending_members:
            return E.UNKNOWN_MEMBER_ID if c.instance_id else "pending"
        error = member_error(g, member_id, c.instance_id)
        if error:
            return error
        member = g.members[member_id]
        same = member.protocols == c.protocols()
        if g.state == S.PREPARING_REBALANCE:
            return "pending"
        if g.state == S.COMPLETING_REBALANCE:
            return "immediate" if same else "pending"
        if g.state == S.STABLE:
            return "immediate" if same and member_id != g.leader_id else "pending"
        return E.UNKNOWN_MEMBER_ID  # Empty

    def _send_join(self, c: Client) -> None:
        assert not c.busy and c.alive
        member_id = c.member_id
        expect = self._expect_join(c, member_id)
        gen_before = self.group().generation_id if self.group() else 0
        result = self.coord.join(
            self.now,
            JoinRequest(
                group_id=GROUP,
                member_id=member_id,
                group_instance_id=c.instance_id,
                client_id=c.name,
                client_host="/127.0.0.1",
                session_timeout_ms=c.session_timeout_ms,
                rebalance_timeout_ms=c.rebalance_timeout_ms,
                protocol_type="consumer",
                protocols=c.protocols(),
                version=JOIN_V,
            ),
        )
        if isinstance(result, Pending):
            assert expect in ("pending", "either"), f"JoinGroup of {c.name} ({member_id!r}) parked, expected {expect}"
            c.join, c.join_sent_ms = result, self.now
            result.on_done(lambda: self._join_answered(c, result))
            return
        error = result.error
        if expect in ("immediate", "either"):
            assert error == E.NONE, f"JoinGroup of {c.name}: {error!r}, expected an immediate success"
            assert result.generation_id == gen_before
        else:
            assert error == expect, f"JoinGroup of {c.name} ({member_id!r}): {error!r}, expected {expect}"
        self._handle_join(c, result, self._snapshot(), immediate=True)

    def _join_answered(self, c: Client, pending: Pending) -> None:
        # Runs inside the coordinator at the moment the answer is decided.
        if c.join is pending:
            c.join = None
        error = pending.value.error
        if error == E.UNKNOWN_MEMBER_ID and not self.admin_removing:
            # A member waiting in JoinGroup is alive (CGM hasSatisfiedHeartbeat) and is never
            # dropped at join completion: only a LeaveGroup can remove it here.
            self.violations.append(f"{c.name}'s parked JoinGroup answered UNKNOWN_MEMBER_ID")
        if error == E.NONE:
            g = self.group()
            candidates = [n for n in ("range", "roundrobin") if all(n in dict(m.protocols) for m in g.members.values())]
            votes = {n: 0 for n in candidates}
            for m in g.members.values():
                votes[next(n for n, _ in m.protocols if n in candidates)] += 1
            assert votes.get(pending.value.protocol_name) == max(votes.values()), f"protocol vote {votes}"
        self._handle_join(c, pending.value, self._snapshot(), immediate=False)

    def _handle_join(self, c: Client, value: dict, snap: dict, *, immediate: bool) -> None:
        error = value.error
        if error == E.NONE:
            assert value.generation_id == snap["generation"], "JoinGroup answered with a stale generation"
            assert value.member_id in snap["members"], "JoinGroup answered for a non-member"
            if not immediate:
                assert snap["state"] == S.COMPLETING_REBALANCE, f"parked JoinGroup answered in {snap['state']}"
            c.member_id, c.generation = value.member_id, value.generation_id
            c.leader = value.leader == c.member_id
            c.protocol = value.protocol_name
            assert c.protocol in ("range", "roundrobin")
            if c.leader:
                assert {m.member_id for m in value.members} == snap["members"], "leader's member list"
            else:
                assert value.members == ()
            c.members = value.members
            c.synced = False
            c.needs_rejoin = False
        elif error == E.MEMBER_ID_REQUIRED:
            assert c.instance_id is None and value.member_id
            c.member_id, c.generation = value.member_id, -1
            self.pending_deadline[c.member_id] = self.now + c.session_timeout_ms
        elif error == E.UNKNOWN_MEMBER_ID:
            c.member_id, c.generation, c.needs_rejoin = "", -1, True
        elif error == E.FENCED_INSTANCE_ID:
            assert c.instance_id is not None
            c.fenced = True
        else:
            raise AssertionError(f"unexpected JoinGroup answer for {c.name}: {value}")

    # -- SyncGroup ------------------------------------------------------------------------------
    def _send_sync(self, c: Client) -> None:
        assert not c.busy and c.alive and c.generation >= 0
        g = self.group()
        state, gen = g.state, g.generation_id
        error = member_error(g, c.member_id, c.instance_id)
        if state == S.EMPTY:
            expect: object = E.UNKNOWN_MEMBER_ID
        elif error:
            expect = error
        elif c.generation != gen:
            expect = E.ILLEGAL_GENERATION
        elif state == S.PREPARING_REBALANCE:
            expect = E.REBALANCE_IN_PROGRESS
        elif state == S.STABLE:
            expect = ("stored", g.members[c.member_id].assignment)
        else:
            expect = "pending"
        assignments = leader_assignment(c.protocol, c.members) if c.leader else {}
        c.synced = True
        self.sending = assignments
        self.sender = c
        try:
            result = self.coord.sync(
                self.now,
                SyncRequest(
                    group_id=GROUP,
                    member_id=c.member_id,
                    group_instance_id=c.instance_id,
                    generation_id=c.generation,
                    protocol_type="consumer",
                    protocol_name=c.protocol,
                    assignments=assignments,
                    version=SYNC_V,
                ),
            )
        finally:
            self.sending = self.sender = None
        if isinstance(result, Pending) or (isinstance(expect, tuple) and result.error == E.NONE):
            self.synced_members.setdefault(c.generation, set()).add(c.member_id)
        if isinstance(result, Pending):
            assert expect == "pending", f"SyncGroup of {c.name} parked, expected {expect}"
            c.sync, c.sync_sent_ms = result, self.now
            generation = c.generation
            result.on_done(lambda: self._sync_answered(c, result, generation))
            return
        if isinstance(expect, tuple):
            assert result.error == E.NONE and result.assignment == expect[1]
        else:
            assert result.error == expect, f"SyncGroup of {c.name}: {result.error!r}, expected {expect}"
        self._handle_sync(c, result, c.generation)

    def _arm(self, member_id: str, timeout_ms: int) -> None:
        self.hb[member_id] = [self.now + timeout_ms, False]

    def _observe_awaiting(self) -> None:
        g = self.group()
        if g is not None:
            for mid, m in g.members.items():
                if m.awaiting_join or m.awaiting_sync:
                    self.hb[mid][1] = True

    def _on_event(self, kind: str, details: dict) -> None:
        # Called inside the coordinator, at the moment things happen.
        g = self.group()
        if kind == "member_joined":  # a new member: a fixed 5-minute join window (GCC)
            self.pending_deadline.pop(details["member"], None)
            self._arm(details["member"], 300_000)
            if self.initial is not None and g.state == S.PREPARING_REBALANCE:
                self.initial["added"] = True  # GMM newMemberAdded: the initial delay gets another window
        elif kind == "member_fenced":  # static replacement: the new id gets its session timeout
            self.successors.add(details["replaced_by"])
            self.hb.pop(details["member"], None)
            self._arm(details["replaced_by"], g.members[details["replaced_by"]].session_timeout_ms)
        elif kind == "generation_started" and details["members"]:
            old_leader = g.members.get(self.leader_seen) if self.leader_seen else None
            if old_leader is not None and old_leader.awaiting_join and g.leader_id != self.leader_seen:
                # CG maybeElectNewJoinedLeader keeps a leader that rejoined
                self.violations.append(f"leader {self.leader_seen} rejoined but {g.leader_id} leads")
            for mid, m in g.members.items():
                # §3.3: dynamic members not waiting in JoinGroup are dropped; static ones may stay.
                if not m.awaiting_join and not m.group_instance_id:
                    self.violations.append(f"dynamic member {mid} survived join completion without rejoining")
            for mid, m in g.members.items():  # join completion re-arms every member
                self._arm(mid, m.session_timeout_ms)
            self.sync_deadline[g.generation_id] = self.now + group_rebalance_timeout(g)
            self.sync_due = (g.generation_id, self.sync_deadline[g.generation_id])
        elif kind == "member_expired":
            self.expired_at = self.now
            mid = details["member"]
            if details.get("pending"):
                expected = self.pending_deadline.pop(mid, None)
            else:
                expected = self.hb.get(mid, [None])[0]
            if not self.in_timer or expected != self.now:
                self.violations.append(f"{mid} expired at {self.now}, its session timer was due at {expected}")
        elif kind == "member_removed":
            self.hb.pop(details["member"], None)
            self.leader_seen = g.leader_id  # CG remove: the leadership passes on
            if details["reason"] == "did not send SyncGroup in time":
                due = self.sync_deadline.get(g.generation_id)
                if not self.in_timer or due != self.now:
                    self.violations.append(f"{details['member']} removed for not syncing at {self.now}, due {due}")
                for c in self.clients:
                    if c.member_id == details["member"] and c.generation == g.generation_id and c.synced:
                        self.violations.append(f"{c.name} removed for not syncing though it sent SyncGroup")
        if kind in ("member_fenced", "generation_started", "member_joined"):
            self.leader_seen = g.leader_id
        if kind == "group_state_changed":
            old, new = S(details["old"]), S(details["new"])
            if new == S.PREPARING_REBALANCE:
                self.preparing_from = old
                self.sync_due = None  # prepareRebalance cancels the sync timeout
                if old != S.EMPTY:  # GMM maybeCompleteJoinElseSchedule: the group's rebalance timeout
                    self.join_due = {"deadline": self.now + group_rebalance_timeout(g), "due": False, "since": self.now}
                if old == S.EMPTY and self.delay > 0:
                    self.initial = {
                        "deadline": self.now + self.delay,
                        "window": self.delay,
                        "added": False,
                        "remaining": max(group_rebalance_timeout(g) - self.delay, 0),
                        "due": False,
                    }
            elif old == S.PREPARING_REBALANCE and self.join_due is not None:
                due, self.join_due = self.join_due, None
                # In a timer: the join timer itself, an expiry, or a rebalance that a timer started
                # and that ended at once because everyone was in.
                if self.in_timer and not (due["due"] or self.expired_at == self.now or due["since"] == self.now):
                    self.violations.append(
                        f"rebalance completed by a timer at {self.now}, before its rebalance "
                        f"timeout at {due['deadline']}"
                    )
                if not self.in_timer and g.pending_members:
                    # CG hasAllMembersJoined: an id handed out with MEMBER_ID_REQUIRED blocks early completion.
                    self.violations.append(
                        f"join completed by a request while {sorted(g.pending_members)} had not joined"
                    )
            elif old == S.PREPARING_REBALANCE and self.initial is not None:
                # GMM maybeCompleteJoinPhase: no request ends an initial rebalance early; only its
                # delay windows or a member/pending expiry do (§3.2, §3.3).
                ini, self.initial = self.initial, None
                if not (self.in_timer and (ini["due"] or self.expired_at == self.now)):
                    self.violations.append(
                        f"initial rebalance completed at {self.now} by a "
                        f"{'timer' if self.in_timer else 'request'}; its delay windows end at "
                        f"{ini['deadline']} (expiries excepted)"
                    )
        elif kind == "member_removed" and details["reason"] == "did not rejoin in time" and not self.in_timer:
            self.violations.append(f"{details['member']} removed for not rejoining, outside the join timer")
        elif kind == "leader_assigned":
            assert self.sender is not None and self.sender.leader, "assignment taken from a non-leader"
            assert details["generation"] == self.sender.generation
            self.plans[details["generation"]] = self.sending
            for mid, m in g.members.items():  # the answered SyncGroups re-arm their members
                if m.sync_pending is not None:
                    self._arm(mid, m.session_timeout_ms)

    def _sync_answered(self, c: Client, pending: Pending, generation: int) -> None:
        if c.sync is pending:
            c.sync = None
        if pending.value.error == E.UNKNOWN_MEMBER_ID and not self.admin_removing:
            self.violations.append(f"{c.name}'s parked SyncGroup answered UNKNOWN_MEMBER_ID")
        self._handle_sync(c, pending.value, generation)

    def _handle_sync(self, c: Client, value: dict, generation: int) -> None:
        error = value.error
        if error == E.NONE:
            assert value.protocol_name == c.protocol and value.protocol_type == "consumer"
            self._received(c, generation, value.assignment)
        elif error in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
            c.needs_rejoin = True
        elif error == E.UNKNOWN_MEMBER_ID:
            c.member_id, c.generation, c.needs_rejoin = "", -1, True
        elif error == E.FENCED_INSTANCE_ID:
            assert c.instance_id is not None
            c.fenced = True
        else:
            raise AssertionError(f"unexpected SyncGroup answer for {c.name}: {value}")

    def _received(self, c: Client, generation: int, raw: bytes) -> None:
        """(b) for what clients get: the leader's plan for this member, disjoint from the others."""
        plan = self.plans.get(generation)
        assert plan is not None, f"{c.name} got an assignment for generation {generation} before its leader sent one"
        mid = c.member_id
        while mid not in plan and mid in self.predecessor:
            mid = self.predecessor[mid]
        assert raw == plan.get(mid, b""), (
            f"{c.name} got {assignment_dict(raw)}, leader sent {assignment_dict(plan.get(mid, b''))}"
        )
        parts = set(assignment_dict(raw).get(TOPIC, []))
        c.assignment = assignment_dict(raw)
        owner = ("instance", c.instance_id) if c.instance_id else ("member", c.member_id)
        holders = self.received.setdefault(generation, {})
        holders[owner] = parts  # a restarted static member supersedes its fenced predecessor
        for other, theirs in holders.items():
            if other != owner:
                assert not parts & theirs, f"generation {generation}: {owner} and {other} both own {parts & theirs}"

    # -- rules ------------------------------------------------------------------------------------
    @precondition(lambda self: len([c for c in self.clients if c.alive and not c.replaced]) < MAX_CLIENTS)
    @rule(
        static=st.booleans(),
        session=st.sampled_from(SESSION_TIMEOUTS),
        rebalance=st.sampled_from(REBALANCE_TIMEOUTS),
        roundrobin_first=st.booleans(),
        immediate=st.booleans(),
    )
    def new_client(self, static, session, rebalance, roundrobin_first, immediate):
        order = ("roundrobin", "range") if roundrobin_first else ("range", "roundrobin")
        c = Client(f"c{next(self.names)}", f"i{next(self.instances)}" if static else None, session, rebalance, order)
        self.clients.append(c)
        self._send_join(c)
        if immediate and c.member_id and not c.busy and c.alive and c.generation < 0:
            self._send_join(c)  # the KIP-394 second JoinGroup with the id it was given

    @rule(i=pick, change=st.booleans())
    def rejoin(self, i, change):
        # A replaced process that never got an id is gone; joining with "" would replace its successor.
        c = self.choose(lambda c: c.alive and not c.busy and (c.member_id or not c.replaced), i)
        if c is None:
            return
        if change:
            c.user_data += 1  # changed metadata: a follower's rejoin now rebalances too
        self._send_join(c)

    @rule(i=pick, stale_ok=st.booleans())
    def sync(self, i, stale_ok):
        c = self.choose(lambda c: c.alive and not c.busy and c.generation >= 0 and (stale_ok or not c.synced), i)
        if c is not None:
            self._send_sync(c)

    @rule(i=pick)
    def heartbeat(self, i):
        c = self.choose(lambda c: c.alive and not c.busy and c.member_id, i)
        if c is not None:
            self._heartbeat(c)

    def _heartbeat(self, c: Client) -> None:
        g = self.group()
        error = member_error(g, c.member_id, c.instance_id)
        if error:
            expect = error
        elif c.generation != g.generation_id:
            expect = E.ILLEGAL_GENERATION
        elif g.state == S.EMPTY:
            expect = E.UNKNOWN_MEMBER_ID
        elif g.state == S.PREPARING_REBALANCE:
            expect = E.REBALANCE_IN_PROGRESS
        else:
            expect = E.NONE
        got = self.coord.heartbeat(
            self.now,
            HeartbeatRequest(
                group_id=GROUP, member_id=c.member_id, group_instance_id=c.instance_id, generation_id=c.generation
            ),
        )
        assert got == expect, f"Heartbeat of {c.name}: {got!r}, expected {expect!r}"
        if got in (E.NONE, E.REBALANCE_IN_PROGRESS):
            self._arm(c.member_id, g.members[c.member_id].session_timeout_ms)
        if got in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
            c.needs_rejoin = True
        elif got == E.UNKNOWN_MEMBER_ID:
            c.member_id, c.generation, c.needs_rejoin = "", -1, True
        elif got == E.FENCED_INSTANCE_ID:
            c.fenced = True

    @rule(i=pick)
    def leave(self, i):
        c = self.choose(lambda c: c.alive and not c.busy and c.member_id, i)
        if c is None:
            return
        g = self.group()
        expect = E.NONE if c.member_id in g.pending_members else member_error(g, c.member_id, c.instance_id)
        top, errors = astuple(
            self.coord.leave(self.now, LeaveRequest(group_id=GROUP, members=[(c.member_id, c.instance_id)]))
        )
        assert top == E.NONE and errors == [expect], f"LeaveGroup of {c.name}: {errors}, expected {expect!r}"
        if expect == E.NONE:
            assert c.member_id not in g.members and c.member_id not in g.pending_members
            self.pending_deadline.pop(c.member_id, None)
        c.left = True

    @rule(i=pick)
    def admin_remove_static(self, i):
        c = self.choose(lambda c: c.instance_id is not None and not c.replaced, i)
        if c is None:
            return
        g = self.group()
        holder = g.static_members.get(c.instance_id)
        self.admin_removing = True
        try:
            top, errors = astuple(
                self.coord.leave(self.now, LeaveRequest(group_id=GROUP, members=[("", c.instance_id)]))
            )
        finally:
            self.admin_removing = False
        assert top == E.NONE and errors == [E.UNKNOWN_MEMBER_ID if holder is None else E.NONE]
        assert c.instance_id not in g.static_members and holder not in g.members

    @rule(i=pick, partition=st.integers(0, PARTITIONS - 1))
    def commit(self, i, partition):
        c = self.choose(lambda c: c.alive and not c.busy, i)
        if c is not None:
            self._client_commit(c, partition)

    @rule(i=pick, partition=st.integers(0, PARTITIONS - 1))
    def late_commit(self, i, partition):
        """An async commit from the client's previous generation that arrives after it rejoined."""
        c = self.choose(lambda c: c.alive and not c.busy and c.generation >= 1, i)
        if c is not None:
            self._commit(c.member_id, c.instance_id, c.generation - 1, partition)

    @rule(partition=st.integers(0, PARTITIONS - 1))
    def anonymous_commit(self, partition):
        self._commit("", None, -1, partition)

    def _client_commit(self, c: Client, partition: int) -> None:
        got = self._commit(c.member_id, c.instance_id, c.generation, partition)
        if got == E.FENCED_INSTANCE_ID:
            c.fenced = True
        elif got == E.UNKNOWN_MEMBER_ID and c.member_id:
            c.member_id, c.generation, c.needs_rejoin = "", -1, True
        elif got in (E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS):
            c.needs_rejoin = True  # CommitFailedException: the consumer rejoins

    def _commit(self, member_id: str, instance_id: str | None, generation: int, partition: int) -> E:
        """(c): the acceptance rule of OffsetCommit (OMM/CG ``validateOffsetCommit``)."""
        g = self.group()
        if g is None:
            expect = E.NONE if generation < 0 else E.ILLEGAL_GENERATION
        elif generation < 0 and g.state == S.EMPTY:
            expect = E.NONE
        else:
            expect = E.NONE
            if generation >= 0 or member_id or instance_id:
                expect = member_error(g, member_id, instance_id)
                if not expect and generation != g.generation_id:
                    expect = E.ILLEGAL_GENERATION
            elif g.state != S.EMPTY:
                expect = E.UNKNOWN_MEMBER_ID
            if not expect and g.state == S.COMPLETING_REBALANCE:
                expect = E.REBALANCE_IN_PROGRESS
        current = None if g is None else (g.generation_id, g.state)
        got = classic_commit_error(
            self.coord, self.now, CommitRequest(GROUP, member_id, instance_id, generation, COMMIT_V)
        )
        event(f"OffsetCommit: {got.name} in {current[1].value if current else 'no group'}")
        assert got == expect, (
            f"OffsetCommit ({member_id!r}, {instance_id!r}, gen {generation}) in {current}: "
            f"{got!r}, expected {expect!r}"
        )
        if got == E.NONE:
            # The headline property, stated directly.
            assert (
                (g is None and generation < 0)
                or (generation < 0 and g.state == S.EMPTY)
                or (generation == g.generation_id and member_id in g.members and g.state != S.COMPLETING_REBALANCE)
            )
            offset = next(self.offsets)
            assert self.store.commit(self.now, GROUP, TOPIC, partition, offset, -1, f"by {member_id}") == E.NONE
            self.accepted[partition] = offset
            if g is not None and member_id in g.members and g.state in (S.STABLE, S.PREPARING_REBALANCE):
                self._arm(member_id, g.members[member_id].session_timeout_ms)
        return got

    @precondition(lambda self: any(c.instance_id and c.alive and not c.replaced for c in self.clients))
    @rule(
        i=pick,
        session=st.sampled_from(SESSION_TIMEOUTS),
        rebalance=st.sampled_from(REBALANCE_TIMEOUTS),
        flip=st.booleans(),
        zombie=st.booleans(),
    )
    def static_restart(self, i, session, rebalance, flip, zombie):
        """A static member's process restarts (same instance id, no member id): KIP-345 replacement."""
        old = self.choose(lambda c: c.instance_id and c.alive and not c.replaced, i)
        old.replaced = True
        if not old.busy and (not old.member_id or not zombie):
            old.left = True  # the old process is gone (else it lives on as a zombie until fenced)
        order = tuple(reversed(old.order)) if flip else old.order
        new = Client(f"c{next(self.names)}", old.instance_id, session, rebalance, order, user_data=old.user_data)
        self.clients.append(new)
        self._send_join(new)

    @rule(i=pick)
    def step_all(self, i):
        """Every idle client does what a real consumer would do next."""
        self._step_all(i)

    @rule(i=pick)
    def step_all_again(self, i):
        """The same rule twice, so that groups get to Stable and stay there more often."""
        self._step_all(i)

    @rule(i=pick)
    def toggle_pause(self, i):
        c = self.choose(lambda c: c.alive, i)
        if c is not None:
            c.paused = not c.paused

    @rule()
    def settle(self):
        """A few rounds of natural steps with little time passing: usually ends Stable."""
        for _ in range(4):
            self._step_all(2)

    def _step_all(self, i: int) -> None:
        for c in list(self.clients):
            if not c.alive or c.busy or c.paused or (c.replaced and not c.member_id):
                continue
            if c.replaced:  # a zombie: it commits and heartbeats until it learns it was fenced
                self._client_commit(c, i % PARTITIONS)
                if c.alive and c.member_id:
                    self._heartbeat(c)
            elif not c.member_id or c.needs_rejoin or c.generation < 0:
                if c.assignment and c.member_id:  # commit what it consumed before rejoining (onPartitionsRevoked)
                    self._client_commit(c, min(c.assignment.get(TOPIC, [i % PARTITIONS])))
                if c.alive:
                    self._send_join(c)
            elif not c.synced:
                self._send_sync(c)
            else:
                if c.assignment and c.assignment.get(TOPIC):
                    self._client_commit(c, max(c.assignment[TOPIC]))
                if c.alive and c.member_id:
                    self._heartbeat(c)
        self._advance(i * 50)

    @rule(dt=st.integers(1, 3000))
    def advance_small(self, dt):
        self._advance(dt)

    @rule(dt=st.integers(5000, 45000))
    def advance_large(self, dt):
        self._advance(dt)

    def _advance(self, dt: int) -> None:
        """Move the clock, firing each timer at its own deadline (as the server's timer loop does)."""
        target = self.now + dt
        timers = self.coord.timers
        while (deadline := timers.next_deadline()) is not None and deadline <= target:
            self.now = max(self.now, deadline)
            self._observe_awaiting()
            ini = self.initial
            if ini is not None and ini["deadline"] == self.now:
                # GMM tryCompleteInitialRebalanceElseSchedule
                if ini["added"] and ini["remaining"] != 0:
                    window = min(self.delay, ini["remaining"])
                    ini.update(
                        deadline=self.now + window,
                        remaining=max(ini["remaining"] - ini["window"], 0),
                        window=window,
                        added=False,
                    )
                else:
                    ini["due"] = True
            jd, g = self.join_due, self.group()
            if jd is not None and jd["deadline"] == self.now:
                # GMM completeClassicGroupJoin: dynamic absentees go; if nobody waits but static
                # members remain, it tries again one rebalance timeout later.
                waiting = [m for m in g.members.values() if m.awaiting_join]
                statics = [m for m in g.members.values() if m.group_instance_id]
                if not waiting and statics:
                    jd["deadline"] = self.now + max(m.rebalance_timeout_ms for m in statics)
                else:
                    jd["due"] = True
            self.in_timer = True
            try:
                timers.fire_due(self.now)
            finally:
                self.in_timer = False
            self._check_events()
            g = self.group()
            if self.sync_due == (g.generation_id, self.now) and g.state in (S.COMPLETING_REBALANCE, S.STABLE):
                # §3.6: at the sync timeout every member that has not sent SyncGroup is gone
                for mid in g.members:
                    assert mid in self.synced_members.get(g.generation_id, set()) or mid in self.successors, (
                        f"{mid} never sent SyncGroup for generation {g.generation_id} but is still a member"
                    )
                self.sync_due = None
        self.now = target

    # -- invariants -------------------------------------------------------------------------------
    def _check_events(self) -> None:
        """(a) and (e) over every transition, including those inside one step."""
        assert not self.violations, self.violations
        for kind, details in ((e.kind, e.details) for e in self.coord.events[self.events_seen :]):
            if kind == "group_state_changed":
                old, new = S(details["old"]), S(details["new"])
                event(f"transition {old.value} -> {new.value}")
                assert old == self.seen_state, f"transition from {old} but the group was {self.seen_state}"
                assert old in TRANSITIONS[new], f"illegal transition {old.value} -> {new.value}"
                assert new != S.DEAD  # only an unload (a coordinator move) kills a group; none happens here
                gen = details["generation"]
                if old == S.PREPARING_REBALANCE and new in (S.COMPLETING_REBALANCE, S.EMPTY):
                    assert gen == self.seen_generation + 1, "a join completion must bump the generation by one"
                else:
                    assert gen == self.seen_generation
                self.seen_state, self.seen_generation = new, gen
            elif kind == "member_fenced":
                self.predecessor[details["replaced_by"]] = details["member"]
        self.events_seen = len(self.coord.events)

    @invariant()
    def group_invariants(self):
        if self.coord is None:
            return
        self._check_events()
        assert set(self.coord.groups) <= {GROUP}
        g = self.group()
        if g is None:
            return
        # (e)
        assert g.state in set(GroupState) and g.state != S.DEAD
        # the running counts JoinGroup reads equal a recount
        assert (g.awaiting_join_count(), g._protocol_counts) == g.recount()
        assert g.state == self.seen_state
        # (a)
        assert g.generation_id >= self.max_generation, "generation went down"
        assert g.generation_id == self.seen_generation
        self.max_generation = g.generation_id
        # (b) stored assignments
        owned: dict[int, str] = {}
        for mid, member in g.members.items():
            for p in assignment_dict(member.assignment).get(TOPIC, []):
                assert p not in owned, f"partition {p} stored for both {owned[p]} and {mid}"
                owned[p] = mid
        # parked requests only where Kafka parks them
        for member in g.members.values():
            if member.join_pending is not None:
                assert g.state == S.PREPARING_REBALANCE, f"JoinGroup parked in {g.state}"
            if member.sync_pending is not None:
                assert g.state == S.COMPLETING_REBALANCE, f"SyncGroup parked in {g.state}"
        if g.leader_id is not None:
            assert g.leader_id in g.members or not g.members
        if self.join_due is not None:
            assert g.state == S.PREPARING_REBALANCE
            # (a timer due right now that a request just set fires at the next clock step)
            assert self.join_due["deadline"] >= self.now, "rebalance outlived its rebalance timeout"
        if self.initial is not None:
            assert g.state == S.PREPARING_REBALANCE
            assert self.initial["deadline"] > self.now or self.initial["due"], "initial rebalance outlived its delay"
        # Session timers (§3.5): nobody outlives its session unless it waited in Join/Sync.
        self._observe_awaiting()
        assert set(g.members) <= set(self.hb)
        for mid in g.members:
            deadline, awaited = self.hb[mid]
            assert awaited or deadline > self.now, f"{mid} outlived its session (due {deadline}, now {self.now})"
        for mid in g.pending_members:
            assert self.pending_deadline[mid] > self.now, f"pending id {mid} outlived its session timeout"
        # A rebalance that is not the initial one ends as soon as every member (and no pending
        # KIP-394 id) is in JoinGroup (GMM maybeCompleteJoinPhase after each Join/Leave/expiry).
        if g.state == S.PREPARING_REBALANCE and self.preparing_from != S.EMPTY:
            everyone_in = all(m.join_pending is not None for m in g.members.values()) and not g.pending_members
            assert not everyone_in, "all members joined but the join phase did not complete"
        assert set(g.static_members.values()) <= set(g.members)

    @invariant()
    def parked_requests_are_answered(self):
        """(d): no request is lost, none waits past the rebalance timeout."""
        if self.coord is None:
            return
        g = self.group()
        for c in self.clients:
            if c.join is not None:
                assert not c.join.done
                assert g is not None and any(m.join_pending is c.join for m in g.members.values()), (
                    f"{c.name}'s parked JoinGroup is no longer held by the coordinator: it can never be answered"
                )
                waited = self.now - c.join_sent_ms
                assert waited <= self.bound, f"{c.name}'s JoinGroup parked for {waited} ms (> {self.bound})"
            if c.sync is not None:
                assert not c.sync.done
                assert g is not None and any(m.sync_pending is c.sync for m in g.members.values()), (
                    f"{c.name}'s parked SyncGroup is no longer held by the coordinator"
                )
                waited = self.now - c.sync_sent_ms
                assert waited <= MAX_REBALANCE_TIMEOUT, f"{c.name}'s SyncGroup parked for {waited} ms"

    @invariant()
    def offsets_are_kept(self):
        """(c): OffsetFetch returns the last accepted commit of every partition."""
        if self.coord is None:
            return
        fetched = self.store.fetch(GROUP, [(TOPIC, p) for p in range(PARTITIONS)])
        for _, p, stored in fetched:
            if p in self.accepted:
                assert stored is not None and stored.offset == self.accepted[p], f"commit of partition {p} lost"
            else:
                assert stored is None

    def teardown(self):
        if self.coord is None:
            return
        self._advance(self.bound + 1)
        self.group_invariants()
        self.parked_requests_are_answered()
        for c in self.clients:
            assert c.join is None and c.sync is None, f"{c.name} still waits after the rebalance timeout"


GroupMachine.TestCase.settings = settings(
    max_examples=examples(150), stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestGroupStateful = GroupMachine.TestCase


def test_leave_does_not_end_the_initial_rebalance_early():
    """Regression found by the machine above: a LeaveGroup during the initial delay completed the
    join at once (Empty, generation 1) where Kafka's maybeCompleteJoinPhase waits for the delay
    timer (GROUP-COORDINATOR.md §2.5, §3.3), so the group stays PreparingRebalance until then."""
    coord = GroupCoordinator(BrokerConfig({"group.initial.rebalance.delay.ms": 3000}))
    meta = encode_subscription([TOPIC])
    parked = coord.join(
        0,
        JoinRequest(
            group_id=GROUP,
            member_id="",
            group_instance_id="i0",
            client_id="c",
            client_host="/h",
            session_timeout_ms=6000,
            rebalance_timeout_ms=5000,
            protocol_type="consumer",
            protocols=[("range", meta)],
            version=JOIN_V,
        ),
    )
    group = coord.groups[GROUP]
    assert isinstance(parked, Pending) and group.state == S.PREPARING_REBALANCE
    assert coord.leave(100, LeaveRequest(group_id=GROUP, members=[("", "i0")])) == LeaveResult(E.NONE, [E.NONE])
    assert parked.done and parked.value.error == E.UNKNOWN_MEMBER_ID
    assert (group.state, group.generation_id) == (S.PREPARING_REBALANCE, 0)
    # not Empty yet, so an anonymous commit is refused (§2.6 step 5)
    assert classic_commit_error(coord, 200, CommitRequest(GROUP, "", None, -1, COMMIT_V)) == E.UNKNOWN_MEMBER_ID
    coord.timers.fire_due(2999)
    assert group.state == S.PREPARING_REBALANCE
    coord.timers.fire_due(3000)
    assert (group.state, group.generation_id) == (S.EMPTY, 1)

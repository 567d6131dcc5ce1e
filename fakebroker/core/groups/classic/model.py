"""A classic consumer group and its members: the data, and the state table.

``TRANSITIONS`` is the whole state machine as data: which states a group may move to a
state from (Kafka's ``ClassicGroupState`` predecessors). Every transition goes through
``ClassicGroup.transition_to``, which refuses anything not in the table.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import field

from ....lazy_dataclasses import dataclass
from ...timers import Pending


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = GroupState
# new state -> the states it may be entered from
TRANSITIONS: dict[GroupState, frozenset[GroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset({S.EMPTY, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE, S.DEAD}),
}


class IllegalTransition(RuntimeError):
    pass


# Member attributes a group keeps running counts of (see ClassicGroup._track).
_COUNTED = frozenset({"join_pending", "protocols"})


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # in the member's order of preference
    assignment: bytes = b""
    join_pending: Pending | None = None
    sync_pending: Pending | None = None
    join_version: int = 0  # JoinGroup version of the parked request (shapes its answer)
    is_new: bool = False

    def __setattr__(self, name: str, value: object) -> None:
        # Whoever sets a counted attribute, the owning group's counts follow (a JoinGroup
        # must not recount every member).
        group: ClassicGroup | None = self.__dict__.get("_group") if name in _COUNTED else None
        if group is None:
            object.__setattr__(self, name, value)
            return
        group._untrack(self)
        object.__setattr__(self, name, value)
        group._track(self)

    @property
    def awaiting_join(self) -> bool:
        return self.join_pending is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_pending is not None

    def metadata(self, protocol: str | None) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # insertion order = Kafka's map order
    pending_members: set[str] = field(default_factory=set)  # ids handed out with MEMBER_ID_REQUIRED
    pending_sync: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    new_member_added: bool = False
    subscribed_topics: set[str] | None = None  # None = unknown (treated as every topic)
    # Running counts over ``members`` (kept by _track/_untrack): members parked in JoinGroup,
    # and per protocol name how many members offer it.
    _awaiting_join: int = field(default=0, repr=False, compare=False)
    _protocol_counts: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def transition_to(self, new: GroupState, now_ms: int) -> None:
        if self.state not in TRANSITIONS[new]:
            raise IllegalTransition(
                f"group {self.group_id}: {self.state.value} -> {new.value} is not a legal transition"
            )
        self.previous_state, self.state = self.state, new
        self.state_timestamp_ms = now_ms

    def is_state(self, *states: GroupState) -> bool:
        return self.state in states

    # -- membership ---------------------------------------------------------------------
    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.put(member)
        if self.leader_id is None:
            self.leader_id = member.member_id

    def put(self, member: Member) -> None:
        """Insert a member as is (no protocol type or leader choice: a load from a snapshot)."""
        self.members[member.member_id] = member
        self._attach(member)
        if member.group_instance_id:
            self.static_members[member.group_instance_id] = member.member_id

    def replace(self, old_id: str, new: Member) -> None:
        """``new`` takes ``old_id``'s place in the member order (a static member's return)."""
        self._detach(self.members[old_id])
        self.members = {
            (new.member_id if mid == old_id else mid): (new if mid == old_id else m) for mid, m in self.members.items()
        }
        self._attach(new)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._detach(member)
        if member.group_instance_id and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        if not self.members:  # a dict keeps the table it grew to: an emptied group lets it go
            self.members, self.pending_members = {}, set(self.pending_members)
        return member

    # -- running counts -----------------------------------------------------------------
    def _attach(self, member: Member) -> None:
        member.__dict__["_group"] = self
        self._track(member)

    def _detach(self, member: Member) -> None:
        if member.__dict__.pop("_group", None) is self:
            self._untrack(member)

    def _track(self, member: Member) -> None:
        self._awaiting_join += member.join_pending is not None
        counts = self._protocol_counts
        for name in {name for name, _ in member.protocols}:
            counts[name] = counts.get(name, 0) + 1

    def _untrack(self, member: Member) -> None:
        self._awaiting_join -= member.join_pending is not None
        counts = self._protocol_counts
        for name in {name for name, _ in member.protocols}:
            if counts[name] == 1:
                del counts[name]
            else:
                counts[name] -= 1

    def recount(self) -> tuple[int, dict[str, int]]:
        """The running counts computed afresh from ``members`` (tests check they agree)."""
        votes = Counter(name for m in self.members.values() for name in {name for name, _ in m.protocols})
        return sum(1 for m in self.members.values() if m.awaiting_join), dict(votes)

    def awaiting_join_count(self) -> int:
        return self._awaiting_join

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.awaiting_join_count() and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else the first member waiting in JoinGroup leads."""
        leader = self.members.get(self.leader_id) if self.leader_id else None
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols ------------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """Kafka's ``supportsProtocols``: an Empty group takes any non-empty offer; otherwise the
        type must match and some offered name must be supported by every member (counting a
        rejoining member's old protocols, as Kafka does)."""
        if self.state == GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        counts, size = self._protocol_counts, len(self.members)
        return protocol_type == self.protocol_type and any(counts.get(n, 0) == size for n in names)

    def _candidate_counts(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for member in self.members.values():
            counts.update({name for name, _ in member.protocols})
        return counts

    def candidate_protocols(self) -> list[str]:
        counts = self._candidate_counts()
        return [name for name, n in counts.items() if n == len(self.members)]

    def select_protocol(self) -> str:
        """Each member votes for its first candidate in its own order; most votes wins
        (ties: the first candidate by first appearance, where Kafka's HashMap order is arbitrary)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id}: no protocol every member supports")
        votes: Counter[str] = Counter()
        for member in self.members.values():
            votes[next(name for name, _ in member.protocols if name in candidates)] += 1
        best = max(votes.values())
        return next(name for name in candidates if votes[name] == best)

"""A hypothesis state machine over KIP-848 consumer groups: random joins, heartbeats that
revoke at once or late, leaves, partitions added, topics matched by a regex and clock jumps.

After every step: no partition is owned by two members at once (revoke before assign), the
group epoch and every member's epoch only grow, live clients never believe they own the same
partition, and a fenced member's commits are refused. On demand, every live client heartbeats
until nothing changes, and then the group is Stable with every partition assigned once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.groups.consumer.model import ConsumerGroupState
from fakebroker.core.groups.requests import CommitRequest, ConsumerHeartbeatRequest
from fakebroker.protocol.error_codes import ErrorCode as E

from ..conftest import examples

G = "g"
NAMES = [f"m{i}" for i in range(4)]
SESSION_MS, REBALANCE_MS = 10_000, 6_000


@dataclass
class Client:
    name: str
    epoch: int | None = None  # None: not in the group
    owned: dict[str, set[int]] = field(default_factory=dict)
    fenced_epochs: list[int] = field(default_factory=list)
    instance_id: str | None = None  # static members: m0 and m1
    member_id: str = ""  # a static member restarts under a new member id
    topics: tuple[str, ...] = ("t-a", "t-b")


class ConsumerGroupMachine(RuleBasedStateMachine):
    @initialize(partitions=st.integers(1, 8), regex=st.booleans())
    def setup(self, partitions: int, regex: bool) -> None:
        self.state = ClusterState("c", BrokerConfig({"group.consumer.session.timeout.ms": SESSION_MS}))
        self.state.broker_started(0, "127.0.0.1", 9092, 0)
        self.state.create_topic("t-a", partitions)
        self.regex = regex
        self.now = 0
        self.clients = {
            name: Client(name, instance_id=f"i-{name}" if name in ("m0", "m1") else None, member_id=name)
            for name in NAMES
        }
        self.group_epoch = 0
        self.member_epochs: dict[str, int] = {}

    # -- what a client does ---------------------------------------------------------------------------
    def _beat(self, client: Client, *, report: dict[str, set[int]] | None = None, names: list[str] | None = None):
        joining = client.epoch is None
        subscription = (
            {"subscribed_regex": "t-.*", "subscribed_names": None}
            if self.regex
            else {"subscribed_regex": None, "subscribed_names": list(client.topics) if joining else names}
        )
        result = self.state.groups.consumer.heartbeat(
            self.now,
            ConsumerHeartbeatRequest(
                group_id=G,
                member_id=client.member_id,
                member_epoch=0 if joining else client.epoch,
                instance_id=client.instance_id,
                rack_id=None,
                rebalance_timeout_ms=REBALANCE_MS if joining else -1,
                server_assignor=None,
                owned={} if joining else (client.owned if report is None else report),
                client_id=client.name,
                client_host="/h",
                version=1,
                **subscription,
            ),
        )
        if result.error == E.UNRELEASED_INSTANCE_ID:
            return result  # its previous incarnation still holds the instance id: it tries again later
        if result.error in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID, E.GROUP_ID_NOT_FOUND, E.FENCED_INSTANCE_ID):
            client.fenced_epochs.append(client.epoch if client.epoch is not None else -1)
            client.epoch, client.owned = None, {}  # it lost its partitions: rejoin later with epoch 0
            return result
        assert result.error == E.NONE, result
        client.epoch = result.member_epoch
        if result.assignment is not None:
            client.owned = {t: set(ps) for t, ps in result.assignment.items()}
        return result

    @rule(i=st.integers(0, len(NAMES) - 1))
    def join_or_heartbeat(self, i: int) -> None:
        self._beat(self.clients[NAMES[i]])

    @rule(i=st.integers(0, len(NAMES) - 1))
    def heartbeat_before_revoking(self, i: int) -> None:
        """The client reports what it owned before the last answer (it has not revoked yet)."""
        client = self.clients[NAMES[i]]
        if client.epoch is None:
            return
        member = self.state.groups.consumer.groups[G].members.get(client.member_id)
        before = dict(client.owned)
        if member is not None and member.revoking:
            before = {
                t: client.owned.get(t, set()) | member.revoking.get(t, set())
                for t in set(client.owned) | set(member.revoking)
            }
        self._beat(client, report=before)

    def _leave_beat(self, client: Client, epoch: int):
        """A heartbeat leaving the group: for good (-1) or, for a static member, for now (-2)."""
        return self.state.groups.consumer.heartbeat(
            self.now,
            ConsumerHeartbeatRequest(
                group_id=G,
                member_id=client.member_id,
                member_epoch=epoch,
                instance_id=client.instance_id,
                rack_id=None,
                rebalance_timeout_ms=-1,
                subscribed_names=None,
                subscribed_regex=None,
                server_assignor=None,
                owned=None,
                client_id=client.name,
                client_host="/h",
                version=1,
            ),
        )

    @rule(i=st.integers(0, len(NAMES) - 1))
    def leave(self, i: int) -> None:
        client = self.clients[NAMES[i]]
        if client.epoch is None:
            return
        result = self._leave_beat(client, -1)
        assert result.error in (E.NONE, E.UNKNOWN_MEMBER_ID, E.GROUP_ID_NOT_FOUND, E.FENCED_INSTANCE_ID)
        client.epoch, client.owned = None, {}

    @rule(i=st.integers(0, 1))
    def static_restart(self, i: int) -> None:
        """A static member leaves with epoch -2 and comes back under a new member id: it holds its
        partitions again (it may be told to revoke some if the target moved meanwhile)."""
        client = self.clients[NAMES[i]]
        group = self.state.groups.consumer.groups.get(G)
        member = group.members.get(client.member_id) if group is not None else None
        if client.epoch is None or member is None:
            return
        result = self._leave_beat(client, -2)
        assert result.error == E.NONE and result.member_epoch == -2
        kept, epoch = {t: set(ps) for t, ps in member.assigned.items() if ps}, member.previous_epoch
        client.member_id += "+"
        client.epoch, client.owned = None, {}
        back = self._beat(client)
        assert back.error == E.NONE and back.member_epoch >= epoch
        inherited = self.state.groups.consumer.groups[G].members[client.member_id].owns()
        assert {(t, p) for t, ps in kept.items() for p in ps} <= inherited, "the restart lost partitions"

    @rule(i=st.integers(0, len(NAMES) - 1), both=st.booleans())
    def change_subscription(self, i: int, both: bool) -> None:
        client = self.clients[NAMES[i]]
        topics = ("t-a", "t-b") if both else ("t-a",)
        if client.epoch is None or self.regex or topics == client.topics:
            return
        client.topics = topics
        before = self.state.groups.consumer.groups[G].group_epoch
        result = self._beat(client, names=list(topics))
        if result.error == E.NONE:
            assert self.state.groups.consumer.groups[G].group_epoch > before

    @rule(more=st.integers(1, 3))
    def add_partitions(self, more: int) -> None:
        topic = self.state.topics["t-a"]
        self.state.create_partitions("t-a", len(topic.partitions) + more)

    @rule(count=st.integers(1, 3))
    def create_matching_topic(self, count: int) -> None:
        if "t-b" not in self.state.topics:
            self.state.create_topic("t-b", count)

    @rule(ms=st.integers(1, 15_000))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        self.state.tick(self.now)

    @rule(i=st.integers(0, len(NAMES) - 1))
    def commit(self, i: int) -> None:
        client = self.clients[NAMES[i]]
        if client.epoch is None and not client.fenced_epochs:
            return
        epoch = client.epoch if client.epoch is not None else client.fenced_epochs[-1]
        commit = CommitRequest(G, client.member_id, None, epoch, 9)
        error = self.state.groups.commit_error(self.now, 0, commit)
        group = self.state.groups.consumer.groups.get(G)
        member = group.members.get(client.member_id) if group is not None else None
        if member is None:
            assert error != E.NONE, "a commit of a member that is gone was accepted"
        elif epoch <= member.member_epoch:
            assert error == E.NONE
            for t, ps in client.owned.items():  # per partition: only what it held since that epoch
                for p in ps:
                    got = self.state.groups.partition_commit_error(commit, t, p)
                    held = (t, p) in member.owns() and member.assignment_epochs.get((t, p), epoch + 1) <= epoch
                    assert got == (E.NONE if held or epoch == member.member_epoch else E.STALE_MEMBER_EPOCH)
        else:
            assert error == E.STALE_MEMBER_EPOCH

    @rule()
    def everyone_settles(self) -> None:
        live = [c for c in self.clients.values() if c.epoch is not None]
        for _ in range(12):
            before = [(c.epoch, {t: set(p) for t, p in c.owned.items()}) for c in live]
            for client in live:
                self._beat(client)
            live = [c for c in live if c.epoch is not None]
            if before == [(c.epoch, c.owned) for c in live] and len(before) == len(live):
                break
        group = self.state.groups.consumer.groups.get(G)
        if group is None or not live:
            return
        assert group.state == ConsumerGroupState.STABLE, group.state
        expected = sorted(
            (t, p)
            for t in group.subscribed_topics()
            if t in self.state.topics
            for p in range(len(self.state.topics[t].partitions))
        )
        got = sorted((t, p) for c in live for t, ps in c.owned.items() for p in ps)
        assert got == expected, "every subscribed partition is owned by exactly one live member"

    # -- invariants -----------------------------------------------------------------------------------
    @invariant()
    def no_partition_has_two_owners(self) -> None:
        group = self.state.groups.consumer.groups.get(G) if hasattr(self, "state") else None
        if group is None:
            return
        seen: dict[tuple[str, int], str] = {}
        for member in group.members.values():
            for tp in member.owns():
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {member.member_id}"
                seen[tp] = member.member_id
        believed: dict[tuple[str, int], str] = {}
        for client in self.clients.values():
            if client.epoch is None or client.member_id not in group.members:
                continue  # a fenced client's beliefs no longer count (its commits are refused)
            for t, ps in client.owned.items():
                for p in ps:
                    assert (t, p) not in believed, f"{client.name} and {believed[(t, p)]} both consume {t}-{p}"
                    believed[(t, p)] = client.name

    @invariant()
    def epochs_only_grow(self) -> None:
        group = self.state.groups.consumer.groups.get(G) if hasattr(self, "state") else None
        if group is None:
            return
        assert group.group_epoch >= self.group_epoch
        assert group.assignment_epoch <= group.group_epoch
        self.group_epoch = group.group_epoch
        for member_id, member in group.members.items():
            if member.member_epoch >= 0:
                assert member.member_epoch >= self.member_epochs.get(member_id, 0) or member.member_epoch == 0
                self.member_epochs[member_id] = member.member_epoch


ConsumerGroupMachine.TestCase.settings = settings(max_examples=examples(100), stateful_step_count=40, deadline=None)
TestConsumerGroupStateful = ConsumerGroupMachine.TestCase

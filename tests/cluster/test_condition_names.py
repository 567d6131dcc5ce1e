"""Issue 36: a condition given a name that can never match (a misspelt event kind, a field its
events lack, a group state in the wrong case, an archive reason never recorded) is refused when
it is made, with the closest valid names, instead of waiting out its timeout."""

from __future__ import annotations

import importlib
import pkgutil
import time

import pytest

import fakebroker.core
from fakebroker.cluster import ClusterUsageError, FakeCluster, WaitTimeout
from fakebroker.cluster import conditions as cond
from fakebroker.core.events import KINDS, event_kinds


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("broker_stoped", "unknown event kind 'broker_stoped': did you mean 'broker_stopped' or 'broker_started'?"),
        ("MemberJoined", "unknown event kind 'MemberJoined': did you mean 'member_joined'?"),
        ("member-expired", "did you mean 'member_expired'?"),
        ("group_event", "unknown event kind 'group_event'"),  # a base of kinds, never recorded itself
        ("zzz", "unknown event kind 'zzz'; event kinds: access_denied, acls_created, acls_deleted"),
    ],
)
def test_an_unknown_event_kind_names_the_closest(kind, message):
    with pytest.raises(ClusterUsageError) as caught:
        cond.event(kind)
    assert message in str(caught.value)
    assert "txn_timed_out" in str(caught.value)  # and every kind after them


def test_a_kind_that_is_not_a_string_is_refused():
    with pytest.raises(ClusterUsageError, match="event kind must be a string, not 5"):
        cond.event(5)  # type: ignore[arg-type]


def test_a_field_the_kind_does_not_have_names_its_fields():
    with pytest.raises(
        ClusterUsageError,
        match=r"an event of kind 'member_joined' has no field 'grup' \(did you mean 'group'\?\), so none would "
        r"ever match; its fields: group, member, instance, client_id, broker",
    ):
        cond.event("member_joined", grup="g")
    with pytest.raises(ClusterUsageError, match="'broker_stopped' has no field 'group'.*its fields: broker"):
        cond.event("broker_stopped", group="g")
    with pytest.raises(ClusterUsageError, match="'topic_created' has no field"):
        cond.EventSeen("topic_created", {"name": "t"})  # the class itself checks too
    cond.event("fault_added", api=["Fetch"])  # its details are the rule's: any rule keyword


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ("stable", "unknown group state 'stable': did you mean 'Stable'?"),
        ("PREPARING_REBALANCE", "did you mean 'PreparingRebalance'?"),
        ("Rebalancing", "did you mean 'Reconciling'?"),
        ("nope", "unknown group state 'nope'; group states: Empty, PreparingRebalance, CompletingRebalance, Stable"),
    ],
)
def test_an_unknown_group_state_names_the_valid_states(state, message):
    with pytest.raises(ClusterUsageError) as caught:
        cond.GroupState("g", state)
    assert message in str(caught.value) and "Assigning, Reconciling" in str(caught.value)


def test_other_enumerated_names_and_counts_are_checked():
    with pytest.raises(ClusterUsageError, match=r"members must be a whole number >= 0, not '2'"):
        cond.GroupState("g", "Stable", members="2")  # type: ignore[arg-type]
    with pytest.raises(ClusterUsageError, match=r"unknown archive reason 'gap'; archive reasons: delivery limit, rej"):
        cond.record_archived("g", "t", 0, reason="gap")
    with pytest.raises(ClusterUsageError, match="did you mean 'delivery limit'"):
        cond.record_archived("g", "t", 0, reason="delivery_limit")
    with pytest.raises(ClusterUsageError, match=r"times must be a whole number >= 1, not 0"):
        cond.record_delivered("g", "t", 0, 5, times=0)
    assert cond.GroupState("g", None).describe() == "group 'g'"  # any state
    assert cond.GroupState("g", "Reconciling", members=0)


def test_event_kinds_are_every_recorded_kind():
    for module in pkgutil.walk_packages(fakebroker.core.__path__, "fakebroker.core."):
        importlib.import_module(module.name)  # every module that could define a kind
    assert cond.EVENT_KINDS == tuple(event_kinds())
    assert set(KINDS) - set(cond.EVENT_KINDS) == {"group_event", "member_event", "txn_event"}
    assert "partition_reassigned" in cond.EVENT_KINDS  # a kind defined outside core/events


def test_a_wait_matches_the_broker_an_event_happened_on():
    with FakeCluster(brokers=3).run_in_thread() as cluster:
        mark = cluster.event_count
        cluster.stop_broker(1)
        stopped = cluster.wait_for_sync(cond.event("broker_stopped", broker=1, since=mark), timeout=2)
        assert stopped.broker == 1
        start = time.monotonic()
        with pytest.raises(WaitTimeout, match=r"event broker_stopped\(broker=2\)"):
            cluster.wait_for_sync(cond.event("broker_stopped", broker=2, since=mark), timeout=0.2)
        assert time.monotonic() - start < 2
        with pytest.raises(ClusterUsageError, match="did you mean 'broker_stopped'"):  # at once, not at 10 s
            cluster.wait_for_sync(cond.event("broker_stoped", broker=1))

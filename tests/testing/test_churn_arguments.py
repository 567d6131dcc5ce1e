"""``churn``'s arguments, checked before anything starts: block names (as the control endpoint
takes them) resolved, and every wrong block, topic, group, member or number refused with
``ClusterUsageError`` naming the valid choices. A running cluster, members that only pretend
(``tests/clients/test_churn_names.py`` has real ones)."""

from __future__ import annotations

import random
import time

import pytest

from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.testing.churn import (
    BLOCKS,
    CLUSTER_BLOCKS,
    Block,
    RemoteMember,
    Target,
    churn,
    partition_growth,
    resolve_blocks,
)

NAMES = ", ".join(b.name for b in BLOCKS)


class Untouched:
    """A member handle that fails the test if churn starts it."""

    def __init__(self, name: str) -> None:
        self.name = self.client_id = name

    def start(self) -> None:
        raise AssertionError(f"{self.name} was started before the arguments were checked")

    def stop(self) -> None:
        raise AssertionError("stopped")

    def stall(self, seconds: float) -> None:
        raise AssertionError("stalled")


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster(topics={"orders": 2, "payments": 1}).run_in_thread() as c:
        yield c


def call(cluster, **overrides):
    args = {"group": "billing", "topic": "orders", "blocks": ["partition_growth"], "steps": 1}
    args.update(overrides)
    members = args.pop("members", [Untouched("m0"), Untouched("m1")])
    return churn(cluster, members, **args)


def test_block_names_resolve_to_the_blocks_the_control_endpoint_names():
    by_name = {b.name: b for b in BLOCKS}
    assert resolve_blocks(["rolling_restart", "network_cut"]) == [by_name["rolling_restart"], by_name["network_cut"]]
    assert resolve_blocks("broker_bounce") == [by_name["broker_bounce"]]  # one name alone
    mixed = resolve_blocks([CLUSTER_BLOCKS[0], "member_stall", partition_growth])
    assert [b.name for b in mixed] == [CLUSTER_BLOCKS[0].name, "member_stall", "partition_growth"]
    assert mixed[2] == Block("partition_growth", partition_growth)  # a function is named by its __name__

    def my_block(target: Target, rng: random.Random) -> str:
        return "did nothing"

    assert resolve_blocks([my_block]) == [Block("my_block", my_block)]


def test_an_unknown_block_name_says_which_were_meant_and_lists_the_blocks(cluster):
    with pytest.raises(ClusterUsageError) as failed:
        call(cluster, blocks=["rolling_restart", "rolling_restrat", "network_cutt", 42])
    text = str(failed.value)
    assert text.startswith("churn(): no churn block 'rolling_restrat' (did you mean 'rolling_restart'?); ")
    assert "no churn block 'network_cutt' (did you mean 'network_cut'?)" in text
    assert "blocks[3] is 42 (int), not a block name, Block or function" in text
    assert f"the blocks are {NAMES}" in text
    with pytest.raises(ClusterUsageError, match=r"blocks is empty: give at least one; the blocks are rolling_restart"):
        call(cluster, blocks=[])
    with pytest.raises(ClusterUsageError, match=r"give a list of block names or blocks"):
        call(cluster, blocks={"network_cut"})  # a set has no order for the seed to replay


def test_an_unknown_topic_names_the_topics(cluster):
    with pytest.raises(ClusterUsageError) as failed:
        call(cluster, topic="order")
    assert str(failed.value) == "churn(): no topic 'order' (did you mean 'orders'?); topics: 'orders', 'payments'"


def test_members_must_be_handles(cluster):
    class NoStall:
        name = client_id = "x"

        def start(self) -> None: ...

        def stop(self) -> None: ...

    with pytest.raises(ClusterUsageError, match=r"members\[1\] \(.*NoStall.*\) lacks stall; a member handle has name"):
        call(cluster, members=[Untouched("m0"), NoStall()])
    with pytest.raises(ClusterUsageError, match=r"members='m0': give a non-empty list of member handles"):
        call(cluster, members="m0")
    with pytest.raises(ClusterUsageError, match=r"members=\[\]: give a non-empty list"):
        call(cluster, members=[])
    with pytest.raises(ClusterUsageError, match=r"members share names \['m0'\]"):
        call(cluster, members=[Untouched("m0"), Untouched("m0")])


def test_members_running_elsewhere_take_only_the_cluster_blocks(cluster):
    remote = [RemoteMember("member-1", "js-1")]
    with pytest.raises(ClusterUsageError) as failed:
        call(cluster, members=remote, blocks=["rolling_restart", "network_cut"])
    text = str(failed.value)
    assert "no group 'billing' for members that run elsewhere; groups: none" in text  # they are in no group
    assert (
        "members member-1 run elsewhere: churn cannot restart or stall them (rolling_restart); their blocks are "
        in text
    )
    assert text.startswith("churn(): 2 problems:\n- ")


def test_every_problem_is_named_at_once_and_nothing_starts(cluster):
    start = time.monotonic()
    with pytest.raises(ClusterUsageError) as failed:
        call(cluster, topic="nope", group="", blocks=["x"], steps=-1, seed="7", settle_timeout=0, between=3, ledger=1)
    assert time.monotonic() - start < 5
    lines = str(failed.value).splitlines()
    assert lines[0] == "churn(): 8 problems:"
    assert [line.split("=")[0].split(" ")[1] for line in lines[1:]] == [
        "no",  # the block
        "no",  # the topic
        "group",
        "steps",
        "seed",
        "settle_timeout",
        "between",
        "ledger",
    ]
    assert "group='': give the group id your members join (groups now: none)" in lines[3]


def test_whose_members_a_group_has():
    """A target's members match the group's by client id: one member per plain consumer (two
    handles may share a client id; a stopped member beside its replacement is one too many), one
    or more per Kafka Streams instance (``<client.id>-StreamThread-<n>-consumer``)."""
    from types import SimpleNamespace

    from fakebroker.testing.churn import Target

    def target(*client_ids: str) -> Target:
        handles = [SimpleNamespace(name=f"m{i}", client_id=c) for i, c in enumerate(client_ids)]
        return Target(None, "g", "t", handles, running={h.name for h in handles})  # type: ignore[arg-type]

    assert target("a", "b")._members_are_ours(["b", "a"])
    assert target("svc", "svc")._members_are_ours(["svc", "svc"])
    assert not target("a")._members_are_ours(["a", "a"])  # a ghost beside its replacement
    assert not target("a", "b")._members_are_ours(["a"])
    assert not target("a")._members_are_ours(["a", "other"])
    streams = target("wc-a", "wc-b")
    assert streams._members_are_ours(
        ["wc-a-StreamThread-1-consumer", "wc-a-StreamThread-2-consumer", "wc-b-StreamThread-1-consumer"]
    )
    assert not streams._members_are_ours(["wc-a-StreamThread-1-consumer"])

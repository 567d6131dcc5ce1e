"""The assertion helpers of ``fakebroker.testing`` without a broker, and the kit's documented
import paths (README, examples, the pytest plugin's README)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

import fakebroker
from fakebroker.cluster import conditions
from fakebroker.testing import assert_assignment, eventually, lag, partitions_covered_once, total_lag, values


def test_eventually_returns_the_first_truthy_value():
    calls = iter([0, None, "ready"])
    assert eventually(lambda: next(calls), timeout=5, interval=0.001) == "ready"


def test_eventually_fails_with_the_message_and_the_last_exception():
    def flaky():
        raise ConnectionError("not yet")

    with pytest.raises(AssertionError, match=r"the topic did not hold within 0.05 s \(last exception: Connection"):
        eventually(flaky, timeout=0.05, interval=0.01, message="the topic")


def test_eventually_raises_a_programming_error_at_once():
    with pytest.raises(AttributeError):
        eventually(lambda: None.missing, timeout=30)


def test_eventually_refuses_a_cluster_condition():
    with pytest.raises(TypeError, match=r"is a cluster condition: use cluster.wait_for_sync"):
        eventually(conditions.generation_above("g", 1), timeout=1)
    with pytest.raises(TypeError, match="takes a function to call"):
        eventually(42, timeout=1)


class StubCluster:
    """What the helpers read of a cluster: a group view, topics, offsets, commits and records."""

    def __init__(self):
        members = [SimpleNamespace(assignment={"t": [0, 1]}), SimpleNamespace(assignment={"t": [2]})]
        self.view = SimpleNamespace(members=members, assignment={"c1": {"t": [1, 0]}, "c2": {"t": [2], "u": []}})

    def group(self, group):
        return self.view if group == "g" else None

    def groups(self):
        return ["g"]

    def topics(self):
        return {"t": 3}

    def offsets(self, topic, partition):
        return (0, 10)

    def committed(self, group):
        return {("t", 0): 10, ("t", 1): 4}

    def records(self, topic, partition=None):
        return [(0, 0, b"k", b"a"), (0, 1, None, None)]


def test_the_helpers_read_the_cluster():
    cluster = StubCluster()
    assert_assignment(cluster, "g", {"c1": {"t": [0, 1]}, "c2": {"t": [2]}})
    with pytest.raises(AssertionError, match="expected"):
        assert_assignment(cluster, "g", {"c1": {"t": [0, 1, 2]}})
    with pytest.raises(AssertionError, match=r"group 'h' does not exist \(groups: \['g'\]\)"):
        assert_assignment(cluster, "h", {})
    assert partitions_covered_once(cluster, "g", "t")
    assert lag(cluster, "g", "t") == {0: 0, 1: 6, 2: None}
    assert total_lag(cluster, "g", "t") == 16
    assert values(cluster, "t") == [b"a", None]


def test_the_documented_imports():
    from fakebroker.cli import main
    from fakebroker.cli.scenario import play
    from fakebroker.testing import DeliveryLedger
    from fakebroker.testing.churn import BLOCKS, CLUSTER_BLOCKS, churn, remote_members
    from fakebroker.testing.region import ConfluentRegionConsumer, Record, Region

    assert fakebroker.DeliveryLedger is DeliveryLedger
    assert main.name == "main" and callable(play) and callable(churn) and callable(remote_members)
    assert set(CLUSTER_BLOCKS) <= set(BLOCKS)
    assert ConfluentRegionConsumer and Record and Region


def test_the_kit_loads_no_cluster_until_it_is_used():
    """``from fakebroker import DeliveryLedger`` and ``fakebroker.testing`` stay free of trio."""
    code = (
        "import sys; from fakebroker import DeliveryLedger; import fakebroker.testing\n"
        "print(sorted(m for m in sys.modules if m.startswith(('trio', 'anyio', 'fakebroker.cluster'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"

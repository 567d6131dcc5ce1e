"""Fault rules as data: validation, matching and how often they fire."""

from __future__ import annotations

import pytest

from fakebroker.faults import Faults, Leaf, RequestView, api_key_of
from fakebroker.faults.rules import ACTIONS

HEARTBEAT, PRODUCE, FETCH = 12, 0, 1


def view(groups=(), leaves=(), txn=()):
    return RequestView(set(groups), set(txn), list(leaves))


def fire(faults, api=HEARTBEAT, *, broker=0, version=4, client="c1", v=None):
    return faults.fire(broker, api, version, client, v or view(["g"]))


def test_names_are_checked_with_suggestions():
    faults = Faults()
    with pytest.raises(ValueError, match="Did you mean Heartbeat"):
        faults.add(api="Hartbeat", error="NONE")
    with pytest.raises(ValueError, match="Did you mean REBALANCE_IN_PROGRESS"):
        faults.add(api="Heartbeat", error="REBALANCE_IN_PROGRES")
    with pytest.raises(ValueError, match="valid actions: error"):
        faults.add(api="Heartbeat", action="explode")
    with pytest.raises(ValueError, match="needs error="):
        faults.add(api="Heartbeat", action="replace_error")
    assert api_key_of("JoinGroupRequest") == api_key_of("joingroup") == api_key_of(11) == 11
    assert faults.add(api=["Heartbeat", 14], error=27).apis == {12, 14}


def test_matching_on_every_criterion():
    faults = Faults()
    rule = faults.add(api="Heartbeat", version=(3, 4), broker=[0, 2], client_id="svc-*", group="g", error=27)
    assert fire(faults, client="svc-1") == [rule]
    assert fire(faults, client="other") == []
    assert fire(faults, client="svc-1", broker=1) == []
    assert fire(faults, client="svc-1", version=2) == []
    assert fire(faults, client="svc-1", v=view(["h"])) == []
    assert fire(faults, api=PRODUCE, client="svc-1") == []
    assert rule.matched == rule.fired == 1


def test_topic_partition_and_transactional_filters():
    faults = Faults()
    rule = faults.add(api="Produce", topic="orders", partition=1, error="NOT_LEADER_OR_FOLLOWER")
    txn = faults.add(transactional_id="tx-1", action="drop")
    hit = view(leaves=[Leaf(None, "orders", 0), Leaf(None, "orders", 1)])
    miss = view(leaves=[Leaf(None, "orders", 0), Leaf(None, "other", 1)])
    assert fire(faults, PRODUCE, v=hit) == [rule]
    assert fire(faults, PRODUCE, v=miss) == []
    assert fire(faults, PRODUCE, v=view(txn=["tx-1"])) == [txn]
    assert rule.hits_leaf(Leaf(None, "orders", 1)) and not rule.hits_leaf(Leaf(None, "orders", 0))


def test_occurrence_nth_after_times():
    faults = Faults()
    third = faults.add(api="Heartbeat", error=27, nth=3)
    fired = [bool(fire(faults)) for _ in range(6)]
    assert fired == [False, False, True, False, False, False] and not third.active
    faults.clear()
    two_after_one = faults.add(api="Heartbeat", error=27, after=1, times=2)
    assert [bool(fire(faults)) for _ in range(5)] == [False, True, True, False, False]
    assert (two_after_one.matched, two_after_one.fired, two_after_one.active) == (3, 2, False)


def test_probability_is_reproducible_with_a_seed():
    def run(seed):
        faults = Faults()
        rule = faults.add(api="Heartbeat", error=27, probability=0.3, seed=seed)
        pattern = [bool(fire(faults)) for _ in range(200)]
        return pattern, rule.fired

    (a, fired_a), (b, _), (c, _) = run(7), run(7), run(8)
    assert a == b and a != c
    assert 40 <= fired_a <= 80  # ~60 expected


def test_first_matching_rules_all_fire_and_remove_clear():
    faults = Faults()
    one = faults.add(api="Heartbeat", error=27)
    two = faults.add(api="Heartbeat", delay=0.1)
    assert fire(faults) == [one, two]
    faults.remove(one)
    assert fire(faults) == [two]
    with pytest.raises(KeyError):
        faults.remove(one.id)
    assert faults.get(two.id) is two
    faults.clear()
    assert len(faults) == 0 and fire(faults) == []


def test_to_dict_is_plain_json():
    import json

    rule = Faults().add(api="Fetch", broker=1, delay=0.5, times=2)
    data = json.loads(json.dumps(rule.to_dict()))
    assert data == {
        "id": 1,
        "action": "delay",
        "matched": 0,
        "fired": 0,
        "active": True,
        "api": ["Fetch"],
        "times": 2,
        "brokers": [1],
        "delay": 0.5,
    }


# -- issue 16: every numeric field is checked against its domain when the rule is added -------------
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"delay": -1}, "delay must be a number of seconds in 0..86400"),
        ({"delay": float("nan")}, "delay must be"),
        ({"delay": float("inf")}, "delay must be"),
        ({"delay": 86_401}, "delay must be"),
        ({"delay": True}, "delay must be"),
        ({"action": "blackhole", "duration": -0.5}, "duration must be"),
        ({"action": "blackhole", "duration": float("nan")}, "duration must be"),
        ({"action": "blackhole", "duration": float("inf")}, "duration must be"),
        ({"throttle_ms": 2**31}, r"throttle_ms must be 0\.\.2147483647"),
        ({"action": "throttle", "throttle_ms": -5}, "throttle_ms must be"),
        ({"throttle_ms": 1.5}, "throttle_ms must be"),
        ({"error": 27, "probability": float("nan")}, "probability must be a number between 0 and 1"),
        ({"error": 27, "probability": 1.5}, "probability must be"),
        ({"error": 27, "nth": 0}, "nth must be a whole number >= 1"),
        ({"error": 27, "after": -1}, "after must be a whole number >= 0"),
        ({"error": 27, "times": -1}, "times must be a whole number >= 0"),
        ({"error": 27, "times": 2.5}, "times must be"),
        ({"action": "drop", "error": "NOT_LEADER_OR_FOLLOWER"}, "error= is not used by the action"),
        ({"action": "delay", "delay": 1, "error": 6}, "error= is not used by the action"),
    ],
)
def test_out_of_domain_numbers_and_an_unused_error_are_refused(fields, message):
    faults = Faults()
    with pytest.raises(ValueError, match=message):
        faults.add(api="Produce", **fields)
    assert faults.list() == []


def test_the_edges_of_each_domain_are_accepted():
    faults = Faults()
    faults.add(api="Produce", delay=86_400)
    faults.add(api="Produce", action="blackhole", duration=0)
    faults.add(api="Produce", throttle_ms=2**31 - 1)
    faults.add(api="Produce", error=6, nth=1, after=0, times=0, probability=0)
    faults.add(api="Produce", action="drop", probability=1)
    assert len(faults.list()) == 5


def test_drop_after_handles_then_closes_and_takes_only_a_delay():
    """``action="drop_after"``: the request is handled, then its connection closed instead of
    answering (the server carries it out; tests/server/test_fault_actions.py). As data it is a
    rule like any other: it counts and stops like one, and of its own takes ``delay=`` only."""
    faults = Faults()
    rule = faults.add(api="Produce", action="drop_after", delay=0.2, times=2)
    assert (rule.action, rule.delay, rule.error) == ("drop_after", 0.2, None)
    assert [fire(faults, PRODUCE) for _ in range(3)] == [[rule], [rule], []]
    assert rule.to_dict() == {
        "id": 1,
        "action": "drop_after",
        "matched": 2,
        "fired": 2,
        "active": False,
        "api": ["Produce"],
        "times": 2,
        "delay": 0.2,
    }
    with pytest.raises(ValueError, match="error= is not used by the action 'drop_after', which takes delay="):
        faults.add(api="Produce", action="drop_after", error="NOT_LEADER_OR_FOLLOWER")
    assert "then close the connection instead of answering" in ACTIONS["drop_after"]

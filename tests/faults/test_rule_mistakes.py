"""Issue 17: a fault rule that is misspelt, incomplete or contradictory is refused with
FaultRuleError (a ValueError) naming what is valid; no argument is silently ignored."""

from __future__ import annotations

import re

import pytest

from fakebroker.faults import ACTIONS, FaultRuleError, Faults
from fakebroker.faults.rules import ACTION_ARGUMENTS, KEYWORDS


def refused(**kwargs) -> str:
    faults = Faults()
    with pytest.raises(FaultRuleError) as caught:
        faults.add(**kwargs)
    assert faults.list() == []
    return str(caught.value)


def test_a_rule_without_an_action_says_one_is_needed_and_which_exist():
    assert refused(api="Fetch") == (
        "a fault rule needs an action: give error=NAME (answer with that error), delay=SECONDS, "
        "throttle_ms=MS, or action= one of error, replace_error, delay, drop, drop_after, blackhole, throttle"
    )
    assert refused(api="Fetch", duration=3).startswith("a fault rule needs an action")


def test_a_misspelt_action_gets_the_nearest_and_the_list():
    message = refused(api="Fetch", action="dorp")
    assert message.startswith("unknown action 'dorp' (did you mean 'drop'?); valid actions: error: answer")


def test_a_misspelt_keyword_names_the_nearest_valid_one():
    assert refused(apis="Fetch", error="NOT_COORDINATOR").startswith(
        "unknown fault rule keyword(s) 'apis' (did you mean 'api'?); valid keywords: api, version, broker,"
    )
    assert "'erorr' (did you mean 'error'?)" in refused(api="Fetch", erorr="NOT_COORDINATOR")
    assert set(KEYWORDS) == {
        "api", "version", "broker", "client_id", "group", "topic", "partition", "transactional_id", "error",
        "action", "delay", "duration", "throttle_ms", "nth", "after", "times", "probability", "seed",
    }  # fmt: skip


def test_a_misspelt_error_lists_only_the_near_names():
    message = refused(api="FindCoordinator", error="NOT_COORDINATR")
    assert message == (
        "unknown Kafka error name 'NOT_COORDINATR'. Did you mean NOT_COORDINATOR, NOT_CONTROLLER? "
        "(`fakebroker errors` lists all 138 names)"
    )
    assert "UNKNOWN_SERVER_ERROR" not in message
    assert refused(api="Fetch", error="XYZZY").startswith("unknown Kafka error name 'XYZZY'. (`fakebroker errors`")
    assert "unknown Kafka error code 9999" in refused(api="Fetch", error=9999)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"action": "drop", "error": "NOT_COORDINATOR"},
            "error= is not used by the action 'drop', which takes no arguments of its own (besides the matching and "
            "counting ones); leave error= out, or pick an action that uses it: error, replace_error",
        ),
        ({"action": "drop", "delay": 1}, "delay= is not used by the action 'drop', which takes no arguments"),
        ({"action": "blackhole", "delay": 1}, "delay= is not used by the action 'blackhole', which takes duration="),
        ({"action": "blackhole", "error": 6}, "error= is not used by the action 'blackhole'"),
        ({"action": "blackhole", "throttle_ms": 5}, "throttle_ms= is not used by the action 'blackhole'"),
        (
            {"error": "NOT_COORDINATOR", "throttle_ms": 5},
            "throttle_ms= is not used by the action 'error', which takes error=, delay=",
        ),
        ({"error": 6, "duration": 2}, "duration= is not used by the action 'error', which takes error=, delay="),
        (
            {"action": "delay", "delay": 1, "duration": 3},
            "leave duration= out, or pick an action that uses it: blackhole",
        ),
        ({"action": "delay", "delay": 1, "error": 6}, "error= is not used by the action 'delay', which takes delay="),
        ({"action": "drop_after", "error": 6}, "error= is not used by the action 'drop_after', which takes delay="),
        ({"action": "drop_after", "throttle_ms": 6}, "throttle_ms= is not used by the action 'drop_after'"),
        ({"action": "replace_error", "error": 6, "duration": 1}, "duration= is not used by the action 'replace_error'"),
        ({"action": "throttle", "throttle_ms": 5, "error": 6}, "error= is not used by the action 'throttle'"),
        ({"action": "throttle", "throttle_ms": 5, "duration": 1}, "duration= is not used by the action 'throttle'"),
        (
            {"action": "replace_error"},
            "action 'replace_error' needs error= (a Kafka error name such as NOT_COORDINATOR",
        ),
        ({"action": "error"}, "action 'error' needs error="),
        ({"action": "throttle"}, "action 'throttle' needs throttle_ms > 0"),
        (
            {"error": 6, "version": (5, 3)},
            "version must be a version number >= 0 or a (lowest, highest) pair, not (5, 3)",
        ),
        ({"error": 6, "version": "4"}, "version must be a version number >= 0"),
    ],
)
def test_contradictory_or_incomplete_rules_are_refused(kwargs, message):
    assert message in refused(api="Produce", **kwargs)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_every_action_takes_its_own_arguments(action):
    """The table of what each action takes is complete, and what it takes is accepted."""
    values = {"error": "NOT_COORDINATOR", "delay": 0.5, "duration": 2.0, "throttle_ms": 10}
    Faults().add(api="Produce", action=action, **{k: values[k] for k in ACTION_ARGUMENTS[action]})
    for other in sorted(set(values) - set(ACTION_ARGUMENTS[action])):
        needed = {k: values[k] for k in ACTION_ARGUMENTS[action]}
        assert re.match(
            rf"{other}= is not used by the action '{action}'",
            refused(api="Produce", action=action, **needed, **{other: values[other]}),
        )


def test_a_delayed_error_and_a_watching_rule_stay_valid():
    faults = Faults()
    assert faults.add(api="Produce", error=6, delay=0.5).action == "error"
    assert faults.add(api="Produce", action="delay", delay=0).action == "delay"
    assert faults.add(api="Produce", throttle_ms=5, delay=0.1).action == "throttle"


def test_an_unknown_rule_id_lists_the_rules():
    faults = Faults()
    rule = faults.add(api="Produce", error=6)
    with pytest.raises(KeyError, match=rf"no fault rule 99; rules: \[{rule.id}\]"):
        faults.remove(99)

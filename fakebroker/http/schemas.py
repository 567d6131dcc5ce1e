"""The control endpoint's request schemas (the subset of JSON Schema ``check_body`` reads):
fault rules and wait conditions, and the helpers the route table builds its bodies with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..cluster import conditions as cond
from ..faults.rules import ACTIONS


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False, **extra}
    if required:
        schema["required"] = list(required)
    return schema


INT, NUM, STR = {"type": "integer"}, {"type": "number"}, {"type": "string"}


def one_or_many(kind: str) -> dict[str, Any]:
    return {"type": [kind, "array"], "items": {"type": kind}}


FAULT_BODY = obj(
    {
        "api": {
            "type": ["string", "integer", "array"],
            "items": {"type": ["string", "integer"]},
            "description": 'Kafka API name ("Heartbeat") or key, or a list of them',
        },
        "version": {"type": ["integer", "array"], "items": INT, "description": "a version or [lowest, highest]"},
        "broker": one_or_many("integer"),
        "client_id": {**STR, "description": "exact, or a glob such as svc-*"},
        "group": one_or_many("string"),
        "topic": one_or_many("string"),
        "partition": one_or_many("integer"),
        "transactional_id": STR,
        "error": {"type": ["string", "integer"], "description": "Kafka error name (REBALANCE_IN_PROGRESS) or code"},
        "action": {**STR, "enum": sorted(ACTIONS), "description": "; ".join(f"{a}: {d}" for a, d in ACTIONS.items())},
        "delay": NUM,
        "duration": NUM,
        "throttle_ms": INT,
        "nth": INT,
        "after": INT,
        "times": INT,
        "probability": NUM,
        "seed": INT,
    }
)
WAIT_CONDITIONS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "group_state": (
        cond.GroupState,
        obj({"group": STR, "state": STR, "members": INT, "generation_above": INT}, ("group",)),
    ),
    "generation_above": (cond.generation_above, obj({"group": STR, "generation": INT}, ("group", "generation"))),
    "event": (
        lambda kind, since=0, details=None: cond.event(kind, since=since, **(details or {})),
        obj({"kind": STR, "since": INT, "details": {"type": "object"}}, ("kind",)),
    ),
    "member_expired": (
        cond.member_expired,
        obj({"group": STR, "client_id": STR, "since": INT}, ("group", "client_id")),
    ),
    "committed_offset": (
        cond.committed_offset,
        obj(
            {"group": STR, "topic": STR, "partition": INT, "at_least": INT}, ("group", "topic", "partition", "at_least")
        ),
    ),
}

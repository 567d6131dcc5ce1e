"""The control endpoint's request schemas (the subset of JSON Schema ``check_body`` reads):
fault rules and wait conditions, the helpers the route table builds its bodies with, and the
check of a body against its schema (``HTTPError`` 400 naming the field and what is valid)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..cluster import conditions as cond
from ..cluster.settings import FAULT_ACTIONS, close_matches


class HTTPError(Exception):
    """An answer other than 2xx: ``status`` with ``{"error": message}``."""

    def __init__(self, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


# -- request body checks ------------------------------------------------------------------------
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _type_ok(schema: dict[str, Any], value: Any) -> bool:
    kinds = schema.get("type")
    if kinds is None:
        return True
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not any(_JSON_TYPES[k](value) for k in kinds):
        return False
    items = schema.get("items")
    return not (isinstance(value, list) and items is not None and not all(_type_ok(items, v) for v in value))


def check_body(schema: dict[str, Any], body: Any) -> dict[str, Any]:
    """The subset of JSON Schema the table uses: an object's property types, required
    properties, and (unless ``additionalProperties``) no unknown ones. A null optional
    property counts as absent."""
    if not isinstance(body, dict):
        raise HTTPError(400, "the request body must be a JSON object")
    props = schema.get("properties", {})
    if not schema.get("additionalProperties", False):
        unknown = sorted(set(body) - set(props))
        if unknown:
            named = []
            for name in unknown:
                close = close_matches(name, list(props), n=2, cutoff=0.6)
                named.append(repr(name) + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""))
            raise HTTPError(400, f"unknown field(s) {', '.join(named)}; valid fields: {', '.join(props)}")
    missing = [name for name in schema.get("required", []) if body.get(name) is None]
    if missing:
        raise HTTPError(400, f"missing field(s): {', '.join(missing)}")
    out = {}
    for name, value in body.items():
        if value is None:
            continue
        if name in props and not _type_ok(props[name], value):
            want = props[name].get("type")
            raise HTTPError(
                400,
                f"field {name!r} must be {' or '.join(want) if isinstance(want, list) else want}, "
                f"got {json.dumps(value)}",
            )
        out[name] = value
    return out


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
        "action": {
            **STR,
            "enum": sorted(FAULT_ACTIONS),
            "description": "; ".join(f"{a}: {d}" for a, d in FAULT_ACTIONS.items()),
        },
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
    # share groups (KIP-932)
    "share_group_stable": (cond.share_group_stable, obj({"group": STR, "members": INT}, ("group",))),
    "streams_group_stable": (cond.streams_group_stable, obj({"group": STR, "members": INT}, ("group",))),
    "share_start_offset": (
        cond.share_start_offset,
        obj({"group": STR, "topic": STR, "partition": INT, "at_least": INT}, ("group", "topic", "partition")),
    ),
    "record_delivered": (
        cond.record_delivered,
        obj(
            {"group": STR, "topic": STR, "partition": INT, "offset": INT, "times": INT, "since": INT},
            ("group", "topic", "partition", "offset"),
        ),
    ),
    "record_archived": (
        cond.record_archived,
        obj(
            {"group": STR, "topic": STR, "partition": INT, "offset": INT, "reason": STR, "since": INT},
            ("group", "topic", "partition"),
        ),
    ),
}

"""DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44) for topics and brokers."""

from __future__ import annotations

from ..core.configs import BROKER_DEFAULTS, TOPIC_DEFAULTS, ConfigEntry, validate
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from .context import RequestContext
from .registry import api

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def describe(ctx: RequestContext, request: Message) -> Message:
    results = []
    for r in request.resources:
        out = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        entries, error = _entries(ctx, r.resource_type, r.resource_name)
        if error:
            out.update(error_code=error[0], error_message=error[1])
        else:
            keys = set(r.configuration_keys) if r.configuration_keys is not None else None
            out["configs"] = [_describe_entry(e, request) for e in entries if keys is None or e.name in keys]
        results.append(out)
    return ctx.response(results=results, throttle_time_ms=0)


def _describe_entry(e: ConfigEntry, request: Message) -> dict:
    synonyms = [{"name": n, "value": v, "source": s} for n, v, s in e.synonyms] if request.include_synonyms else []
    return {
        "name": e.name,
        "value": e.value,
        "read_only": e.read_only,
        "config_source": e.source,
        "is_sensitive": e.is_sensitive,
        "synonyms": synonyms,
        "config_type": e.type,
        "documentation": None,
    }


def _entries(ctx: RequestContext, kind: int, name: str) -> tuple[list[ConfigEntry], tuple[ErrorCode, str] | None]:
    if kind == TOPIC:
        topic = ctx.cluster.topics.get(name)
        if topic is None:
            return [], (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")
        return topic.config.describe(), None
    if kind == BROKER:
        if name and (not name.isdigit() or int(name) not in ctx.cluster.brokers):
            return [], (
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}",
            )
        return ctx.cluster.config.describe(), None
    if kind == BROKER_LOGGER:
        return [], None
    return [], (ErrorCode.INVALID_REQUEST, f"Unsupported resource type {kind}")


def alter(ctx: RequestContext, request: Message) -> Message:
    """AlterConfigs: the given set replaces every override of the resource."""
    responses = []
    for r in request.resources:
        wanted = {c.name: c.value for c in r.configs}
        responses.append(
            _apply(
                ctx,
                r,
                lambda current: {k: v for k, v in wanted.items() if v is not None},
                wanted,
                request.validate_only,
            )
        )
    return ctx.response(responses=responses, throttle_time_ms=0)


def incremental_alter(ctx: RequestContext, request: Message) -> Message:
    responses = []
    for r in request.resources:
        ops = [(c.name, c.config_operation, c.value) for c in r.configs]

        def change(current: dict[str, str], ops=ops) -> dict[str, str]:
            new = dict(current)
            for name, op, value in ops:
                if op == SET:
                    new[name] = value
                elif op == DELETE:
                    new.pop(name, None)
                elif op in (APPEND, SUBTRACT):
                    items = [x for x in (new.get(name) or _default(r.resource_type, name)).split(",") if x]
                    for x in (value or "").split(","):
                        if op == APPEND and x and x not in items:
                            items.append(x)
                        elif op == SUBTRACT and x in items:
                            items.remove(x)
                    new[name] = ",".join(items)
                else:
                    raise ValueError(f"Unknown config operation {op}")
            return new

        bad_op = next((op for _, op, _ in ops if op not in (SET, DELETE, APPEND, SUBTRACT)), None)
        if bad_op is not None:
            responses.append(_result(r, ErrorCode.INVALID_REQUEST, f"Unknown operation type {bad_op}"))
            continue
        list_ops = [n for n, op, _ in ops if op in (APPEND, SUBTRACT) and _kind(r.resource_type, n) != "LIST"]
        if list_ops:
            responses.append(
                _result(
                    r,
                    ErrorCode.INVALID_CONFIG,
                    f"Config {list_ops[0]} is not a list: APPEND and SUBTRACT need a list config",
                )
            )
            continue
        # DELETE ignores the value (the Java Admin sends "" with it), so only its name is checked
        responses.append(
            _apply(ctx, r, change, {n: None if op == DELETE else v for n, op, v in ops}, request.validate_only)
        )
    return ctx.response(responses=responses, throttle_time_ms=0)


def _apply(ctx: RequestContext, r: Message, change, named: dict[str, str | None], validate_only: bool) -> dict:
    is_topic = r.resource_type == TOPIC
    if r.resource_type not in (TOPIC, BROKER):
        return _result(r, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}")
    if is_topic:
        topic = ctx.cluster.topics.get(r.resource_name)
        if topic is None:
            return _result(r, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {r.resource_name} does not exist.")
        store = topic.config.overrides
    else:
        store = ctx.cluster.config.dynamic
    for name, value in named.items():
        reason = validate(name, value, topic=is_topic)
        if reason:
            return _result(r, ErrorCode.INVALID_CONFIG, reason)
    new = change(store)
    if not validate_only:
        ctx.cluster.replace_configs(store, new, r.resource_name)
    return _result(r, ErrorCode.NONE, None)


def _result(r: Message, code: ErrorCode, message: str | None) -> dict:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": r.resource_type,
        "resource_name": r.resource_name,
    }


def _kind(resource_type: int, name: str) -> str:
    table = TOPIC_DEFAULTS if resource_type == TOPIC else BROKER_DEFAULTS
    return table[name][-1] if name in table else ""


def _default(resource_type: int, name: str) -> str:
    if resource_type == TOPIC:
        return TOPIC_DEFAULTS.get(name, (None, ""))[1]
    return BROKER_DEFAULTS.get(name, ("", ""))[0]


APIS = (
    api(32, (0, 4), describe),
    api(33, (0, 2), alter),
    api(44, (0, 1), incremental_alter),
)

"""DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44) for topics, brokers
(this broker's id, or ``""`` for the cluster default), broker loggers and groups (any id, also
one that names no group: ``core/group_configs.py``).

With an authorizer, as Kafka checks each resource: DESCRIBE_CONFIGS (describing) or
ALTER_CONFIGS (altering) on the cluster for a broker, broker logger or client-metrics resource,
on the topic for a topic, on the group for a group; refused, CLUSTER_, TOPIC_ or
GROUP_AUTHORIZATION_FAILED with Kafka's default text. Describing, the refused resources are
answered after the others; altering, a resource is checked after the broker's own checks of the
request (a key twice, a null value, another broker's id) and before everything else."""

from __future__ import annotations

from ..core.configs import (
    BROKER_KEYS,
    SOURCE_DYNAMIC_BROKER_LOGGER,
    TOPIC_KEYS,
    ConfigEntry,
    validate,
    validate_topic,
)
from ..core.security.acls import CLUSTER_NAME, Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import CLUSTER_DENIED, GROUP_DENIED, TOPIC_DENIED
from .context import RequestContext
from .registry import api

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DOCS = "https://kafka.apache.org/documentation/"
LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")


# the ACL resource a config resource is authorized on, and the error and text of a refusal
_AUTHORIZED_ON = {
    BROKER: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED),
    BROKER_LOGGER: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED),
    CLIENT_METRICS: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED),
    TOPIC: (ResourceType.TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED),
    GROUP: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_DENIED),
}


def _refusal(ctx: RequestContext, operation: Operation, r: Message) -> tuple[ErrorCode, str] | None:
    """The error and text refusing ``operation`` on the config resource, or None when allowed (or
    no authorizer, or a resource type Kafka answers otherwise)."""
    if not ctx.cluster.authorizer.enabled or r.resource_type not in _AUTHORIZED_ON:
        return None
    resource_type, error, text = _AUTHORIZED_ON[r.resource_type]
    name = CLUSTER_NAME if resource_type == ResourceType.CLUSTER else r.resource_name
    if ctx.allowed(operation, resource_type, name):
        return None
    return error, text


def describe(ctx: RequestContext, request: Message) -> Message:
    results = []
    refused = []  # ConfigHelper answers the resources it may not describe after the others
    for r in request.resources:
        out = {
            "error_code": ErrorCode.NONE,
            "error_message": "",
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        denied = _refusal(ctx, Operation.DESCRIBE_CONFIGS, r)
        if denied is not None:
            out.update(error_code=denied[0], error_message=denied[1])
            refused.append(out)
            continue
        entries, error = _entries(ctx, r.resource_type, r.resource_name)
        if error:
            out.update(error_code=error[0], error_message=error[1])
        else:
            keys = set(r.configuration_keys) if r.configuration_keys else None  # [] is every key too
            out["configs"] = [
                _describe_entry(e, request, r.resource_type) for e in entries if keys is None or e.name in keys
            ]
        results.append(out)
    return ctx.response(results=results + refused, throttle_time_ms=0)


def _describe_entry(e: ConfigEntry, request: Message, kind: int) -> dict:
    synonyms = [{"name": n, "value": v, "source": s} for n, v, s in e.synonyms] if request.include_synonyms else []
    return {
        "name": e.name,
        "value": e.value,
        "read_only": e.read_only,
        "config_source": e.source,
        "is_default": e.source == 5,
        "is_sensitive": e.is_sensitive,
        "synonyms": synonyms,
        "config_type": e.type,
        "documentation": _documentation_of(e.name, kind, request.include_documentation),
    }


def _documentation_of(name: str, kind: int, wanted: bool) -> str | None:
    if kind == BROKER_LOGGER:
        return ""  # Kafka's answer for a logger, asked or not
    return _documentation(name, kind) if wanted else None


def _documentation(name: str, kind: int) -> str:
    """A pointer to Kafka's documentation of the key (Kafka's own text is not copied here)."""
    anchor = {TOPIC: "topicconfigs", GROUP: "groupconfigs"}.get(kind, "brokerconfigs")
    return f"Kafka's {name}: see {DOCS}#{anchor}_{name}"


def _broker_error(ctx: RequestContext, name: str) -> tuple[ErrorCode, str] | None:
    if name and name != str(ctx.broker_id):
        return (
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}",
        )
    return None


def _entries(ctx: RequestContext, kind: int, name: str) -> tuple[list[ConfigEntry], tuple[ErrorCode, str] | None]:
    if kind == TOPIC:
        topic = ctx.cluster.topics.get(name)
        if not name:
            return [], (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
        if topic is None:
            return [], (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        return topic.config.describe(ctx.broker_id), None
    if kind == BROKER:
        error = _broker_error(ctx, name)
        if error:
            return [], error
        if not name:
            return ctx.cluster.config.describe(None), None
        return ctx.cluster.config.describe(ctx.broker_id, _identity(ctx)), None
    if kind == BROKER_LOGGER:
        error = _broker_error(ctx, name) if name else (ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        if error:
            return [], error
        loggers = sorted(ctx.cluster.config.loggers.items())
        return [ConfigEntry(n, v, SOURCE_DYNAMIC_BROKER_LOGGER, False, False, 0, []) for n, v in loggers], None
    if kind == GROUP:
        if not name:
            return [], (ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        return ctx.cluster.group_configs.describe(name, ctx.broker_id), None
    return [], (ErrorCode.INVALID_REQUEST, f"Unsupported resource type {kind}")


def _identity(ctx: RequestContext) -> dict[str, str]:
    """The settings a broker is started with (a KRaft node that is broker and controller)."""
    info = ctx.cluster.brokers.get(ctx.broker_id)
    endpoints = (info.endpoints or {"PLAINTEXT": (info.host, info.port)}) if info else {}
    listener = ",".join(f"{name}://{host}:{port}" for name, (host, port) in endpoints.items())
    return {
        "node.id": str(ctx.broker_id),
        "broker.id": str(ctx.broker_id),
        "process.roles": "broker,controller",
        "listeners": listener,
        "advertised.listeners": listener,
    }


def alter(ctx: RequestContext, request: Message) -> Message:
    """AlterConfigs: the given set replaces every override of the resource."""
    responses = []
    for r in request.resources:
        if r.resource_type == BROKER_LOGGER:
            responses.append(_result(r, ErrorCode.INVALID_REQUEST, "AlterConfigs does not support BROKER_LOGGER"))
            continue
        if r.resource_type == GROUP:
            responses.append(_replace_group(ctx, r, request.validate_only))
            continue
        wanted = {c.name: c.value for c in r.configs}
        null_set = next((n for n, v in wanted.items() if v is None), None)
        if null_set is None and (denied := _alter_refusal(ctx, r)) is not None:
            responses.append(denied)
            continue
        responses.append(_apply(ctx, r, lambda current: dict(wanted), wanted, request.validate_only, null_set))
    return ctx.response(responses=responses, throttle_time_ms=0)


def incremental_alter(ctx: RequestContext, request: Message) -> Message:
    responses = []
    for r in request.resources:
        ops = [(c.name, c.config_operation, c.value) for c in r.configs]

        def change(current: dict[str, str], ops=ops, kind=r.resource_type) -> dict[str, str]:
            new = dict(current)
            for name, op, value in ops:
                if op == SET:
                    new[name] = value
                elif op == DELETE:
                    new.pop(name, None)
                else:
                    base = new[name] if name in new else _default(kind, name)
                    items = [x.strip() for x in (base or "").split(",") if x.strip()]
                    for x in (value or "").split(","):
                        x = x.strip()
                        if op == APPEND and x and x not in items:
                            items.append(x)
                        elif op == SUBTRACT and x in items:
                            items.remove(x)
                    new[name] = ",".join(items)
            return new

        if r.resource_type == GROUP:
            responses.append(_alter_group(ctx, r, ops, request.validate_only))
            continue
        names = [n for n, _, _ in ops]
        preprocessed = len(set(names)) == len(names) and all(op == DELETE or v is not None for _, op, v in ops)
        if preprocessed and (denied := _alter_refusal(ctx, r)) is not None:
            responses.append(denied)
            continue
        bad_op = next((op for _, op, _ in ops if op not in (SET, DELETE, APPEND, SUBTRACT)), None)
        if bad_op is not None:  # Kafka fails on it while decoding the operation
            responses.append(_result(r, ErrorCode.UNKNOWN_SERVER_ERROR, None))
            continue
        if r.resource_type == BROKER_LOGGER:
            responses.append(_alter_loggers(ctx, r, ops, request.validate_only))
            continue
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            responses.append(_result(r, ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"))
            continue
        list_ops = [
            (n, op) for n, op, _ in ops if op in (APPEND, SUBTRACT) and _kind(r.resource_type, n) not in ("LIST", "")
        ]
        if list_ops:
            name, op = list_ops[0]
            what = "append" if op == APPEND else "subtract"
            responses.append(
                _result(r, ErrorCode.INVALID_CONFIG, f"Config value {what} is not allowed for config key: {name}")
            )
            continue
        # DELETE ignores the value (the Java Admin sends "" with it) and an unknown name
        named = {n: v for n, op, v in ops if op != DELETE}
        null_set = next((n for n, op, v in ops if op != DELETE and v is None), None)
        responses.append(_apply(ctx, r, change, named, request.validate_only, null_set))
    return ctx.response(responses=responses, throttle_time_ms=0)


def _apply(
    ctx: RequestContext,
    r: Message,
    change,
    named: dict[str, str | None],
    validate_only: bool,
    null_set: str | None = None,
) -> dict:
    is_topic = r.resource_type == TOPIC
    if r.resource_type not in (TOPIC, BROKER):
        return _result(r, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}")
    if is_topic:
        topic = ctx.cluster.topics.get(r.resource_name)
        if topic is None:
            return _result(r, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {r.resource_name} does not exist.")
        store = topic.config.overrides
    else:
        error = _broker_error(ctx, r.resource_name)
        if error:
            return _result(r, *error)
        config = ctx.cluster.config
        store = config.broker_store(ctx.broker_id) if r.resource_name else config.dynamic
    for name, value in named.items():
        if not is_topic and name not in BROKER_KEYS:
            continue  # Kafka keeps an unknown broker setting (and describes it as sensitive)
        if not is_topic and BROKER_KEYS[name][2]:
            return _result(r, ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: [{name}]")
        reason = validate(name, value, topic=is_topic)
        if reason:
            # a broker setting's bad value is INVALID_REQUEST, a topic config's INVALID_CONFIG
            return _result(r, ErrorCode.INVALID_CONFIG if is_topic else ErrorCode.INVALID_REQUEST, reason)
    if null_set is not None:
        return _result(r, ErrorCode.INVALID_REQUEST, f"Null value not supported for : {null_set}")
    new = {k: v for k, v in change(store).items() if v is not None}
    if is_topic and (reason := validate_topic(new, ctx.cluster.config)):
        return _result(r, ErrorCode.INVALID_CONFIG, reason)
    if not validate_only:
        ctx.cluster.replace_configs(store, new, r.resource_name)
    return _result(r, ErrorCode.NONE, None)


def _alter_refusal(ctx: RequestContext, r: Message) -> dict | None:
    """The answer refusing ALTER_CONFIGS on the resource, after the broker's own checks passed
    (a broker's id is one of them), or None. A broker logger's refusal, the broker's own, carries
    no text; the controller's carry Kafka's default."""
    if r.resource_type == BROKER and _broker_error(ctx, r.resource_name):
        return None
    denied = _refusal(ctx, Operation.ALTER_CONFIGS, r)
    if denied is None:
        return None
    return _result(r, denied[0], None if r.resource_type == BROKER_LOGGER else denied[1])


def _group_refusal(r: Message, ops: list) -> dict | None:
    """The broker's own checks of a group's change, before its controller's: a key twice, then
    every SET of null (ConfigAdminManager.preprocess)."""
    names = [name for name, _, _ in ops]
    if len(set(names)) != len(names):
        return _result(r, ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [name for name, op, value in ops if op != DELETE and value is None]
    if nulls:
        return _result(r, ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
    return None


def _alter_group(ctx: RequestContext, r: Message, ops: list, validate_only: bool) -> dict:
    refused = _group_refusal(r, ops) or _alter_refusal(ctx, r)
    if refused is not None:
        return refused
    if any(op not in (SET, DELETE, APPEND, SUBTRACT) for _, op, _ in ops):
        return _result(r, ErrorCode.UNKNOWN_SERVER_ERROR, None)  # the controller fails on it
    error, new = ctx.cluster.group_configs.check_incremental(r.resource_name, ops)
    return _group_outcome(ctx, r, error, new, validate_only)


def _replace_group(ctx: RequestContext, r: Message, validate_only: bool) -> dict:
    """AlterConfigs of a group: the given set replaces every setting of the group."""
    refused = _group_refusal(r, [(c.name, SET, c.value) for c in r.configs]) or _alter_refusal(ctx, r)
    if refused is not None:
        return refused
    error, new = ctx.cluster.group_configs.check_replace(r.resource_name, {c.name: c.value for c in r.configs})
    return _group_outcome(ctx, r, error, new, validate_only)


def _group_outcome(
    ctx: RequestContext, r: Message, error: tuple[ErrorCode, str] | None, new: dict[str, str], validate_only: bool
) -> dict:
    if error is not None:
        return _result(r, *error)
    if not validate_only:
        ctx.cluster.replace_group_configs(r.resource_name, new)
    return _result(r, ErrorCode.NONE, None)


def _alter_loggers(ctx: RequestContext, r: Message, ops: list, validate_only: bool) -> dict:
    """Log levels of this broker's loggers (kept and described; nothing logs through them)."""
    error = _broker_error(ctx, r.resource_name)
    if error:
        return _result(r, *error)
    loggers = ctx.cluster.config.loggers
    new = dict(loggers)
    for name, op, value in ops:
        if op in (APPEND, SUBTRACT):
            message = f"Operation {op} is not allowed for the BROKER_LOGGER resource"
            return _result(r, ErrorCode.INVALID_REQUEST, message)
        if op == DELETE:
            if name == "root":
                return _result(r, ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
            new.pop(name, None)
        elif name not in new:  # Kafka knows the loggers its classes made; here only root
            return _result(r, ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
        elif value not in LOG_LEVELS:
            return _result(
                r, ErrorCode.INVALID_CONFIG, f"Cannot set the log level of {name} to {value} as it is not a supported"
            )
        else:
            new[name] = value
    if not validate_only:
        loggers.clear()
        loggers.update(new)
    return _result(r, ErrorCode.NONE, None)


def _result(r: Message, code: ErrorCode, message: str | None) -> dict:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": r.resource_type,
        "resource_name": r.resource_name,
    }


def _kind(resource_type: int, name: str) -> str:
    if resource_type == TOPIC:
        return TOPIC_KEYS[name][1] if name in TOPIC_KEYS else ""
    return BROKER_KEYS[name][1] if name in BROKER_KEYS else ""


def _default(resource_type: int, name: str) -> str | None:
    if resource_type == TOPIC:
        return TOPIC_KEYS[name][0] if name in TOPIC_KEYS else ""
    return BROKER_KEYS[name][0] if name in BROKER_KEYS else ""


APIS = (
    api(ApiKey.DESCRIBE_CONFIGS, (0, 4), describe),
    api(ApiKey.ALTER_CONFIGS, (0, 2), alter),
    api(ApiKey.INCREMENTAL_ALTER_CONFIGS, (0, 1), incremental_alter),
)

"""``fakebroker serve --config FILE``: brokers, topics, settings and initial faults in TOML.

Example::

    brokers = 3
    port = 9092
    racks = ["a", "b", "c"]         # each broker's rack (broker.rack), in node id order
    virtual_time = false
    coordinator_load_time_ms = 200
    transaction_marker_delay_ms = 5
    kafka_version = "4.4"           # or "4.3", "3.9": that release's API versions and features
    data_dir = "/var/tmp/fakebroker"  # keep logs, topics and offsets across restarts
    event_log_size = 100000         # events kept (the oldest are dropped, and counted, past it)

    [settings]                      # broker settings under Kafka's names
    "auto.create.topics.enable" = false

    [oauth_validator]               # the options of Kafka's default (unsecured) OAUTHBEARER validator
    unsecuredValidatorPrincipalClaimName = "client_id"

    [topics.orders]
    partitions = 6
    replication_factor = 3
    config = { "retention.ms" = 600000 }

    [[faults]]                      # the keyword arguments of cluster.faults.add
    api = "Heartbeat"
    group = "billing"
    error = "REBALANCE_IN_PROGRESS"
    times = 3

Options given on the command line win over the file.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cluster.settings import (
    DEFAULT_EVENT_LOG_SIZE,
    TOPIC_NAME_RULE,
    check_fault_rule,
    start_setting_error,
    topic_name_error,
)

KEYS = {
    "brokers",
    "security_protocol",
    "users",
    "oauth_validator",
    "racks",
    "port",
    "host",
    "virtual_time",
    "coordinator_load_time_ms",
    "transaction_marker_delay_ms",
    "control_port",
    "control_token",
    "kafka_version",
    "data_dir",
    "event_log_size",
    "settings",
    "topics",
    "faults",
}


class ConfigError(ValueError):
    """The file is not valid; the message names the file and what is wrong."""


@dataclass
class ServeConfig:
    brokers: int = 1
    racks: list[str | None] | None = None
    port: int = 9092
    host: str = "127.0.0.1"
    virtual_time: bool = False
    coordinator_load_time_ms: int = 0
    transaction_marker_delay_ms: int = 0
    control_port: int | None = None
    control_token: str | None = None
    kafka_version: str | None = None
    data_dir: str | None = None
    security_protocol: str | None = None
    users: dict[str, str] = field(default_factory=dict)
    oauth_validator: dict[str, str] = field(default_factory=dict)
    event_log_size: int = DEFAULT_EVENT_LOG_SIZE
    settings: dict[str, str] = field(default_factory=dict)
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)


def _setting(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def setting_error(name: str, value: str) -> str | None:
    """Why a broker setting given at start is refused, or None: a name Kafka does not know (with the
    nearest known names; Kafka itself would start and only log it) or a value not of its type."""
    return start_setting_error(name, value)


def load(path: str | Path) -> ServeConfig:
    """Read and check a TOML file (unknown keys and wrong types are refused with their name)."""
    if sys.version_info >= (3, 11):  # imported here: `serve` without --config skips its ~9 ms
        import tomllib
    else:  # Python 3.10: the same parser, from PyPI
        import tomli as tomllib
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    unknown = set(data) - KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; valid keys: {', '.join(sorted(KEYS))}")
    config = ServeConfig()
    whole: tuple[str, ...] = ("brokers", "port", "coordinator_load_time_ms", "transaction_marker_delay_ms")
    whole += ("control_port", "event_log_size")
    for key in whole:
        if key in data:
            if not isinstance(data[key], int) or isinstance(data[key], bool):
                raise ConfigError(f"{path}: {key} must be a whole number, got {data[key]!r}")
            setattr(config, key, data[key])
    for key in ("host", "control_token", "kafka_version", "data_dir", "security_protocol"):
        if key in data:
            setattr(config, key, str(data[key]))
    if config.event_log_size < 1:
        raise ConfigError(f"{path}: event_log_size must be at least 1, got {config.event_log_size}")
    users = data.get("users") or {}
    if not isinstance(users, dict) or not all(isinstance(v, str) and v for v in users.values()):
        raise ConfigError(f'{path}: users must be a table of name = "password", got {users!r}')
    config.users = {str(k): v for k, v in users.items()}
    oauth = data.get("oauth_validator") or {}
    values = oauth.values() if isinstance(oauth, dict) else [None]
    if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
        raise ConfigError(
            f"{path}: oauth_validator must be a table of the unsecured OAUTHBEARER validator's options, "
            f'name = "value" (e.g. unsecuredValidatorPrincipalClaimName = "client_id"), got {oauth!r}'
        )
    config.oauth_validator = {str(k): str(v) for k, v in oauth.items()}
    if "racks" in data:
        racks = data["racks"]
        if not isinstance(racks, list) or not all(isinstance(r, str) and r.strip() for r in racks):
            raise ConfigError(f"{path}: racks must be an array of rack names, one per broker, got {racks!r}")
        config.racks = list(racks)
    if "virtual_time" in data:
        if not isinstance(data["virtual_time"], bool):
            raise ConfigError(f"{path}: virtual_time must be true or false, got {data['virtual_time']!r}")
        config.virtual_time = data["virtual_time"]
    config.settings = {str(k): _setting(v) for k, v in (data.get("settings") or {}).items()}
    for name, value in config.settings.items():
        if reason := setting_error(name, value):
            raise ConfigError(f"{path}: settings: {reason}")
    for name, spec in (data.get("topics") or {}).items():
        if isinstance(spec, int):
            spec = {"partitions": spec}
        if not isinstance(spec, dict):
            raise ConfigError(f"{path}: topics.{name} must be a partition count or a table")
        extra = set(spec) - {"partitions", "replication_factor", "config"}
        if extra:
            raise ConfigError(
                f"{path}: topics.{name}: unknown key(s) {', '.join(sorted(extra))}; "
                "valid keys: partitions, replication_factor, config"
            )
        if reason := topic_name_error(name):
            raise ConfigError(f"{path}: topics.{name}: not a topic name: {TOPIC_NAME_RULE} ({reason})")
        for key in ("partitions", "replication_factor"):
            value = spec.get(key, -1)
            if not isinstance(value, int) or isinstance(value, bool) or (value < 1 and value != -1):
                raise ConfigError(f"{path}: topics.{name}.{key} must be a whole number >= 1, got {value!r}")
        config.topics[name] = {
            "partitions": spec.get("partitions", -1),
            "replication_factor": spec.get("replication_factor", -1),
            "config": {str(k): _setting(v) for k, v in (spec.get("config") or {}).items()},
        }
        for key, value in config.topics[name]["config"].items():
            if reason := start_setting_error(key, value, topic=True):
                raise ConfigError(f"{path}: topics.{name}: {reason}")
    faults = data.get("faults") or []
    if not isinstance(faults, list) or not all(isinstance(f, dict) for f in faults):
        raise ConfigError(f"{path}: faults must be an array of tables ([[faults]])")
    config.faults = [dict(f) for f in faults]
    _check_faults(path, config.faults)
    return config


def _check_faults(path: Path, faults: list[dict[str, Any]]) -> None:
    """Refuse a misspelt rule now rather than once the cluster runs."""
    for index, rule in enumerate(faults, 1):
        try:
            check_fault_rule(rule)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: faults #{index}: {exc}") from None

"""Broker and topic settings under Kafka's names, with Kafka's defaults.

Test-friendly defaults differ from Kafka's only where that makes tests faster without
changing semantics; each such difference is listed in ``TEST_FRIENDLY``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# name -> (default as Kafka reports it in DescribeConfigs, type name for the response)
BROKER_DEFAULTS: dict[str, tuple[str, str]] = {
    "auto.create.topics.enable": ("true", "BOOLEAN"),
    "num.partitions": ("1", "INT"),
    "default.replication.factor": ("1", "SHORT"),
    "offsets.topic.num.partitions": ("50", "INT"),
    "offsets.topic.replication.factor": ("3", "SHORT"),
    "transaction.state.log.num.partitions": ("50", "INT"),
    "group.initial.rebalance.delay.ms": ("0", "INT"),
    "group.min.session.timeout.ms": ("6000", "INT"),
    "group.max.session.timeout.ms": ("1800000", "INT"),
    "group.max.size": ("2147483647", "INT"),
    "group.coordinator.rebalance.protocols": ("classic,consumer", "LIST"),
    "group.consumer.session.timeout.ms": ("45000", "INT"),
    "group.consumer.heartbeat.interval.ms": ("5000", "INT"),
    "group.consumer.max.size": ("2147483647", "INT"),
    "group.consumer.assignors": ("uniform,range", "LIST"),
    "group.consumer.migration.policy": ("bidirectional", "STRING"),
    "socket.request.max.bytes": ("104857600", "INT"),
    "message.max.bytes": ("1048588", "INT"),
    "log.retention.ms": ("604800000", "LONG"),
    "log.retention.bytes": ("-1", "LONG"),
    "log.retention.check.interval.ms": ("300000", "LONG"),
    "log.cleanup.policy": ("delete", "LIST"),
    "log.message.timestamp.type": ("CreateTime", "STRING"),
    "compression.type": ("producer", "STRING"),
    "min.insync.replicas": ("1", "INT"),
    "delete.topic.enable": ("true", "BOOLEAN"),
    "unclean.leader.election.enable": ("false", "BOOLEAN"),
    "offsets.retention.minutes": ("10080", "INT"),
    "offsets.retention.check.interval.ms": ("600000", "LONG"),
    "offset.metadata.max.bytes": ("4096", "INT"),
    "transactional.id.expiration.ms": ("604800000", "INT"),
    "transaction.max.timeout.ms": ("900000", "INT"),
    "transaction.state.log.replication.factor": ("3", "SHORT"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("10000", "INT"),
    "transaction.remove.expired.transaction.cleanup.interval.ms": ("3600000", "INT"),
    "transaction.partition.verification.enable": ("true", "BOOLEAN"),
    "producer.id.expiration.ms": ("86400000", "INT"),
}

TEST_FRIENDLY = {
    "group.initial.rebalance.delay.ms": "Kafka: 3000. 0 here so a new group's first join does not wait 3 s.",
}

# topic config -> (broker config it falls back to, or None; default; type)
TOPIC_DEFAULTS: dict[str, tuple[str | None, str, str]] = {
    "cleanup.policy": ("log.cleanup.policy", "delete", "LIST"),
    "compression.type": ("compression.type", "producer", "STRING"),
    "retention.ms": ("log.retention.ms", "604800000", "LONG"),
    "retention.bytes": ("log.retention.bytes", "-1", "LONG"),
    "max.message.bytes": ("message.max.bytes", "1048588", "INT"),
    "message.timestamp.type": ("log.message.timestamp.type", "CreateTime", "STRING"),
    "min.insync.replicas": ("min.insync.replicas", "1", "INT"),
    "unclean.leader.election.enable": ("unclean.leader.election.enable", "false", "BOOLEAN"),
    "segment.bytes": (None, "1073741824", "INT"),
    "segment.ms": (None, "604800000", "LONG"),
    "delete.retention.ms": (None, "86400000", "LONG"),
    "min.compaction.lag.ms": (None, "0", "LONG"),
    "max.compaction.lag.ms": (None, "9223372036854775807", "LONG"),
    "min.cleanable.dirty.ratio": (None, "0.5", "DOUBLE"),
    "file.delete.delay.ms": (None, "60000", "LONG"),
    "flush.messages": (None, "9223372036854775807", "LONG"),
    "flush.ms": (None, "9223372036854775807", "LONG"),
    "index.interval.bytes": (None, "4096", "INT"),
    "message.timestamp.before.max.ms": (None, "9223372036854775807", "LONG"),
    "message.timestamp.after.max.ms": (None, "3600000", "LONG"),
    "preallocate": (None, "false", "BOOLEAN"),
    "segment.index.bytes": (None, "10485760", "INT"),
    "segment.jitter.ms": (None, "0", "LONG"),
    "message.downconversion.enable": (None, "true", "BOOLEAN"),
}

# DescribeConfigs ConfigSource values
SOURCE_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5

# DescribeConfigs ConfigType values
CONFIG_TYPES = {
    "BOOLEAN": 1,
    "STRING": 2,
    "INT": 3,
    "SHORT": 4,
    "LONG": 5,
    "DOUBLE": 6,
    "LIST": 7,
    "CLASS": 8,
    "PASSWORD": 9,
}

_VALID_ENUMS = {
    "cleanup.policy": {"delete", "compact", "compact,delete", "delete,compact", ""},
    "compression.type": {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
    "message.timestamp.type": {"CreateTime", "LogAppendTime"},
}


def validate(name: str, value: str | None, *, topic: bool) -> str | None:
    """Why a config value is not acceptable (Kafka's INVALID_CONFIG text), or None if it is."""
    known = TOPIC_DEFAULTS if topic else BROKER_DEFAULTS
    if name not in known:
        return f"Unknown {'topic' if topic else 'broker'} config name: {name}"
    if value is None:
        return None
    kind = known[name][-1]
    try:
        if kind in ("INT", "SHORT", "LONG"):
            int(value)
        elif kind == "DOUBLE":
            float(value)
        elif kind == "BOOLEAN" and value.lower() not in ("true", "false"):
            raise ValueError(value)
    except ValueError:
        return f"Invalid value {value} for configuration {name}: Not a number of type {kind}"
    if name in _VALID_ENUMS and value not in _VALID_ENUMS[name]:
        return f"Invalid value {value} for configuration {name}"
    return None


@dataclass
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    is_sensitive: bool
    type: int
    synonyms: list[tuple[str, str | None, int]]


class BrokerConfig:
    """Cluster-wide broker settings: static defaults overridden by the test or by AlterConfigs."""

    def __init__(self, overrides: dict[str, Any] | None = None):
        self.static: dict[str, str] = {k: v for k, (v, _) in BROKER_DEFAULTS.items()}
        self.dynamic: dict[str, str] = {}
        for key, value in (overrides or {}).items():
            self.static[key] = _to_text(value)

    def get(self, name: str) -> str:
        return self.dynamic.get(name, self.static.get(name, BROKER_DEFAULTS.get(name, ("", ""))[0]))

    def get_int(self, name: str) -> int:
        return int(self.get(name))

    def get_bool(self, name: str) -> bool:
        return self.get(name).lower() == "true"

    def describe(self) -> list[ConfigEntry]:
        out = []
        for name, (default, kind) in sorted(BROKER_DEFAULTS.items()):
            synonyms = []
            if name in self.dynamic:
                source = SOURCE_DYNAMIC_DEFAULT_BROKER
                synonyms.append((name, self.dynamic[name], SOURCE_DYNAMIC_DEFAULT_BROKER))
            elif self.static[name] != default:
                source = SOURCE_STATIC_BROKER
            else:
                source = SOURCE_DEFAULT
            if self.static[name] != default:
                synonyms.append((name, self.static[name], SOURCE_STATIC_BROKER))
            synonyms.append((name, default, SOURCE_DEFAULT))
            out.append(ConfigEntry(name, self.get(name), source, False, False, CONFIG_TYPES[kind], synonyms))
        return out


class TopicConfig:
    """One topic's overrides, falling back to the broker's settings and then Kafka's defaults."""

    def __init__(self, broker: BrokerConfig, overrides: dict[str, str] | None = None):
        self.broker = broker
        self.overrides: dict[str, str] = dict(overrides or {})

    def get(self, name: str) -> str:
        if name in self.overrides:
            return self.overrides[name]
        synonym, default, _ = TOPIC_DEFAULTS[name]
        return self.broker.get(synonym) if synonym else default

    def get_int(self, name: str) -> int:
        return int(self.get(name))

    def describe(self) -> list[ConfigEntry]:
        out = []
        for name, (synonym, default, kind) in sorted(TOPIC_DEFAULTS.items()):
            synonyms: list[tuple[str, str | None, int]] = []
            if name in self.overrides:
                source = SOURCE_TOPIC
                synonyms.append((name, self.overrides[name], SOURCE_TOPIC))
            else:
                source = SOURCE_DEFAULT
            if synonym:
                if synonym in self.broker.dynamic:
                    synonyms.append((synonym, self.broker.dynamic[synonym], SOURCE_DYNAMIC_DEFAULT_BROKER))
                    source = source if name in self.overrides else SOURCE_DYNAMIC_DEFAULT_BROKER
                if self.broker.static.get(synonym) != BROKER_DEFAULTS[synonym][0]:
                    synonyms.append((synonym, self.broker.static[synonym], SOURCE_STATIC_BROKER))
                    source = source if source != SOURCE_DEFAULT else SOURCE_STATIC_BROKER
                synonyms.append((synonym, BROKER_DEFAULTS[synonym][0], SOURCE_DEFAULT))
            out.append(ConfigEntry(name, self.get(name), source, False, False, CONFIG_TYPES[kind], synonyms))
        return out


def _to_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

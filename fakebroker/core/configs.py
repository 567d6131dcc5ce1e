"""Broker and topic settings under Kafka's names, with Kafka's defaults, and DescribeConfigs'
view of them (values, sources, synonyms) as Kafka 4.4 gives it.

The keys, their defaults, types and read-only/sensitive flags are Kafka's, as data
(:mod:`.kafka_config_keys`, generated from a real broker's answer). A broker setting comes from,
first to last: a dynamic setting of one broker (AlterConfigs on broker ``"<id>"``), the dynamic
cluster default (broker ``""``), the setting given at start (``FakeCluster(config=...)``,
``serve --set``) and Kafka's default. A topic config comes from the topic's override, then its
broker synonym (``retention.bytes`` <- ``log.retention.bytes``) by the same order, then the topic
default. Test-friendly values differ from Kafka's only where that makes tests faster without
changing semantics; they are listed in ``TEST_FRIENDLY`` and shown as settings given at start
(STATIC_BROKER_CONFIG), with Kafka's default as the DEFAULT_CONFIG synonym.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..lazy_dataclasses import dataclass
from ..protocol.suggest import close_matches
from .kafka_config_keys import BROKER_KEYS, TOPIC_KEYS
from .kafka_config_ranges import BROKER_RANGES, TOPIC_RANGES

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")

__all__ = [
    "BROKER_KEYS",
    "TOPIC_KEYS",
    "BrokerConfig",
    "ConfigEntry",
    "TopicConfig",
    "start_setting_error",
    "validate",
]

# Kafka's ServerTopicConfigSynonyms: a topic config -> the broker setting it falls back to
# (the first, highest-priority synonym; the only one DescribeConfigs lists)
TOPIC_SYNONYMS: dict[str, str] = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "max.message.bytes": "message.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "cleanup.policy": "log.cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "min.insync.replicas": "min.insync.replicas",
    "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "max.decompressed.message.bytes": "max.decompressed.message.bytes",
    "preallocate": "log.preallocate",
    "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "local.retention.ms": "log.local.retention.ms",
    "local.retention.bytes": "log.local.retention.bytes",
    "remote.copy.lag.ms": "log.remote.copy.lag.ms",
    "remote.copy.lag.bytes": "log.remote.copy.lag.bytes",
}

# the further broker synonyms a topic config falls back to, in order, with their unit in ms
# (log.retention.hours=1 makes retention.ms 3600000; DescribeConfigs does not list them)
LOWER_SYNONYMS: dict[str, list[tuple[str, int]]] = {
    "segment.ms": [("log.roll.hours", 3_600_000)],
    "segment.jitter.ms": [("log.roll.jitter.hours", 3_600_000)],
    "flush.ms": [("log.flush.scheduler.interval.ms", 1)],
    "retention.ms": [("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)],
}

# settings whose value here is not Kafka's default: shown as given at start
TEST_FRIENDLY = {
    "group.initial.rebalance.delay.ms": "Kafka: 3000. 0 here so a new group's first join does not wait 3 s.",
    "group.streams.initial.rebalance.delay.ms": "Kafka: 3000. 0 here so a new streams group's first member gets "
    "its tasks at once.",
}
FAKEBROKER_STATIC = {
    "group.initial.rebalance.delay.ms": "0",
    "group.streams.initial.rebalance.delay.ms": "0",
}
# a new KRaft cluster's controller writes this cluster-wide dynamic default (eligible leader replicas)
BOOTSTRAP_DYNAMIC_DEFAULTS = {"min.insync.replicas": "1"}

# DescribeConfigs ConfigSource values
SOURCE_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
SOURCE_DYNAMIC_BROKER_LOGGER = 6

# DescribeConfigs ConfigType values
CONFIG_TYPES = {
    "UNKNOWN": 0,
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

_INT_LIMITS = {"INT": (-(2**31), 2**31 - 1), "SHORT": (-(2**15), 2**15 - 1), "LONG": (-(2**63), 2**63 - 1)}
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
# Kafka's validators of the numeric topic configs and broker settings (Kafka 4.4's ConfigDef ranges, as
# data in .kafka_config_ranges): (lowest, highest), None where open. A name both kinds have has one range.
RANGES: dict[str, tuple[float | None, float | None]] = {
    **TOPIC_RANGES,
    **BROKER_RANGES,
    "compression.gzip.level": (-1, 9),  # Kafka's lambda: -1 (the codec's default) or 1..9
}
CHOICES: dict[str, tuple[str, ...]] = {
    "cleanup.policy": ("compact", "delete"),
    "compression.type": _COMPRESSION,
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
    "group.coordinator.rebalance.protocols": ("consumer", "classic", "share", "streams"),
}
# Kafka's CaseInsensitiveValidString validators
CHOICES_ANY_CASE: dict[str, tuple[str, ...]] = {
    "group.consumer.migration.policy": ("DISABLED", "DOWNGRADE", "UPGRADE", "BIDIRECTIONAL"),
}
for _topic_key, _broker_key in TOPIC_SYNONYMS.items():
    if _topic_key in RANGES:
        RANGES.setdefault(_broker_key, RANGES[_topic_key])
    if _topic_key in CHOICES:
        CHOICES.setdefault(_broker_key, CHOICES[_topic_key])


def validate(name: str, value: str | None, *, topic: bool) -> str | None:
    """Why a config value is not acceptable (Kafka's INVALID_CONFIG text), or None if it is."""
    known = TOPIC_KEYS if topic else BROKER_KEYS
    if name not in known:
        return f"Unknown {'topic' if topic else 'broker'} config name: {name}"
    if value is None:
        return None
    kind = known[name][1]
    text = value.strip()
    if kind in _INT_LIMITS:
        low, high = _INT_LIMITS[kind]
        try:
            number: float = int(text)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type {kind}"
        if not low <= number <= high:
            return f"Invalid value {value} for configuration {name}: Not a number of type {kind}"
    elif kind == "DOUBLE":
        try:
            number = float(text)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type DOUBLE"
    elif kind == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            return f"Invalid value {value} for configuration {name}: Expected value to be either true or false"
        return None
    elif kind == "LIST":
        items = [x.strip() for x in text.split(",")] if text else []
        if name in CHOICES:
            bad = [x for x in items if x not in CHOICES[name]]
            if bad:
                return (
                    f"Invalid value {','.join(bad)} for configuration {name}: "
                    f"String must be one of: {', '.join(CHOICES[name])}"
                )
        if name.endswith("replication.throttled.replicas") and items != ["*"]:
            for x in items:
                p, _, b = x.partition(":")
                if not (p.strip().isdigit() and b.strip().isdigit()):
                    return (
                        f"Invalid value {value} for configuration {name}: {name} must be the literal '*' or a list "
                        "of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                    )
        return None
    else:
        if name in CHOICES_ANY_CASE and text.upper() not in CHOICES_ANY_CASE[name]:
            return (
                f"Invalid value {value} for configuration {name}: "
                f"String must be one of (case insensitive): {', '.join(CHOICES_ANY_CASE[name])}"
            )
        if name in CHOICES and text not in CHOICES[name]:
            return f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(CHOICES[name])}"
        return None
    if name in ("compression.gzip.level",) and number == 0:  # -1 (the codec's default) or 1..9
        return f"Invalid value {value} for configuration {name}: Value must be -1 or between 1 and 9"
    if name in RANGES:
        at_least, at_most = RANGES[name]
        if at_least is not None and number < at_least:
            return f"Invalid value {value} for configuration {name}: Value must be at least {at_least}"
        if at_most is not None and number > at_most:
            return f"Invalid value {value} for configuration {name}: Value must be no more than {at_most}"
    return None


# fakebroker's own broker settings (not Kafka's; given at start only): name -> (default, type)
FAKEBROKER_KEYS: dict[str, tuple[str, str]] = {
    # answer the first FindCoordinator that creates an internal topic COORDINATOR_NOT_AVAILABLE, as Kafka 4.4
    "fakebroker.coordinator.first.find.unavailable": ("false", "BOOLEAN"),
    # initialize a new share group's partitions after answering, as Kafka 4.4: its members get
    # them one heartbeat later (~5 s) instead of in their first answer
    "fakebroker.share.late.assignment": ("false", "BOOLEAN"),
}

# settings Kafka passes on to its authorizer (StandardAuthorizer reads them; the broker's own config
# does not define them, so DescribeConfigs does not list them): name -> (default, type)
AUTHORIZER_KEYS: dict[str, tuple[str, str]] = {
    "super.users": ("", "STRING"),  # principals separated by ';', allowed everything
    "allow.everyone.if.no.acl.found": ("false", "BOOLEAN"),
}
# the one authorizer Kafka 4.x has (kafka.security.authorizer.AclAuthorizer, ZooKeeper's, went with 4.0)
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

# Kafka's config types, as a user should write them
TYPE_HINTS = {
    "INT": "INT (a whole number in -2147483648..2147483647)",
    "SHORT": "SHORT (a whole number in -32768..32767)",
    "LONG": "LONG (a whole number)",
    "DOUBLE": "DOUBLE (a number such as 0.5)",
    "BOOLEAN": "BOOLEAN (true or false)",
}


LISTENER_PREFIXED = re.compile(r"listener\.name\.([A-Za-z0-9_]+)\.((?:ssl|sasl)\..+)")


def start_setting_error(name: str, value: Any, *, topic: bool = False) -> str | None:
    """Why a setting given at start (``FakeCluster(config=...)``, ``serve --set``, the TOML file; with
    ``topic``, a topic config) is refused, or None. Stricter than Kafka, which starts with an unknown
    name and only logs it: here a name Kafka does not know is refused with the nearest known names,
    a value not of the setting's type says the type, and a value out of Kafka's range for the setting
    (``socket.request.max.bytes=-5``) gets Kafka's own message, naming the range. (AlterConfigs answers
    with :func:`validate`, Kafka's own checks, unchanged.)"""
    known: dict[str, tuple[Any, ...]] = (
        dict(TOPIC_KEYS) if topic else {**BROKER_KEYS, **FAKEBROKER_KEYS, **AUTHORIZER_KEYS}
    )
    what = "topic config" if topic else "broker setting"
    listener = LISTENER_PREFIXED.fullmatch(name) if not topic and isinstance(name, str) else None
    if listener:  # listener.name.<listener>.<setting>: that listener's own value of the setting
        reason = start_setting_error(listener[2], value)
        return f"{name}: {reason}" if reason else None
    if not isinstance(name, str) or name not in known:
        close = close_matches(str(name), known, n=3, cutoff=0.75)
        listed = "topic-configs" if topic else "broker-settings"
        hint = (
            f"did you mean {' or '.join(map(repr, close))}?"
            if close
            else f"Kafka 4.4 has no such {what}; the docs list them all: reference/configs.md#{listed}"
        )
        return f"unknown {what} {name!r}: {hint}"
    text = _to_text(value)
    kind = known[name][1]
    if not _of_type(kind, text.strip()):
        return f"{what} {name} must be of type {TYPE_HINTS[kind]}, not {value!r}"
    if not topic and name == "authorizer.class.name" and text.strip() not in ("", STANDARD_AUTHORIZER):
        return (
            f"broker setting authorizer.class.name must be {STANDARD_AUTHORIZER} (Kafka 4.4's one "
            f"authorizer; empty: none), not {value!r}"
        )
    reason = None if name in FAKEBROKER_KEYS or name in AUTHORIZER_KEYS else validate(name, text, topic=topic)
    low, high = RANGES.get(name, (None, None))
    if reason and low is not None and high is not None and reason.endswith((f"at least {low}", f"than {high}")):
        reason += f" (valid: {low}..{high})"  # Kafka's text names only the bound that was crossed
    return reason


def _of_type(kind: str, text: str) -> bool:
    if kind in _INT_LIMITS:
        low, high = _INT_LIMITS[kind]
        try:
            return low <= int(text) <= high
        except ValueError:
            return False
    if kind == "DOUBLE":
        try:
            float(text)
        except ValueError:
            return False
    if kind == "BOOLEAN":
        return text.lower() in ("true", "false")
    return True


def validate_topic(overrides: dict[str, str], broker: BrokerConfig) -> str | None:
    """Kafka's checks of a topic's configs taken together (each value already valid), or None."""
    if overrides.get("remote.storage.enable", "").strip().lower() == "true":
        return (
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage."
        )
    topic = TopicConfig(broker, overrides)
    low, high = topic.get_int("min.compaction.lag.ms"), topic.get_int("max.compaction.lag.ms")
    if low > high:
        return f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
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


_generation = [0]  # bumped by every change of any settings store: cached lookups start over


class Store(dict[K, V]):
    """A settings dict that tells the lookup caches when it changes (every produce reads
    half a dozen settings; most tests change none)."""

    __slots__ = ()

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        _generation[0] += 1

    def __delitem__(self, key: K) -> None:
        super().__delitem__(key)
        _generation[0] += 1

    def __ior__(self, other: Any) -> Self:  # type: ignore[override, misc]  # as typeshed's own dict.__ior__
        _generation[0] += 1
        return super().__ior__(other)

    def update(self, *args: Any, **kwargs: V) -> None:
        super().update(*args, **kwargs)
        _generation[0] += 1

    def pop(self, *args: Any) -> Any:
        _generation[0] += 1
        return super().pop(*args)

    def popitem(self) -> tuple[K, V]:
        _generation[0] += 1
        return super().popitem()

    def clear(self) -> None:
        super().clear()
        _generation[0] += 1

    def setdefault(self, key: K, default: Any = None) -> Any:
        _generation[0] += 1
        return super().setdefault(key, default)


class BrokerConfig:
    """The brokers' settings: Kafka's defaults, those given at start, the dynamic cluster default
    and dynamic per-broker settings (AlterConfigs on broker ``""`` and on ``"<id>"``)."""

    def __init__(self, overrides: dict[str, Any] | None = None):
        self.static: dict[str, str] = Store(FAKEBROKER_STATIC)
        self.dynamic: dict[str, str] = Store(BOOTSTRAP_DYNAMIC_DEFAULTS)  # the cluster default, broker ""
        self.per_broker: dict[int, dict[str, str]] = Store()
        self._cache: dict[str, str] = {}
        self._cache_generation = -1
        self.loggers: dict[str, str] = {"root": "INFO"}  # BROKER_LOGGER: log levels by logger name
        for key, value in (overrides or {}).items():
            self.static[key] = _to_text(value)

    def broker_store(self, broker_id: int) -> dict[str, str]:
        return self.per_broker.setdefault(broker_id, Store())

    def value(self, name: str, broker_id: int | None = None) -> str | None:
        """The setting in effect (None if Kafka's default is null). Broker settings are applied
        cluster-wide here: without ``broker_id``, a per-broker setting of any broker counts."""
        stores = [self.per_broker[broker_id]] if broker_id in self.per_broker else []
        if broker_id is None:
            stores = [self.per_broker[b] for b in sorted(self.per_broker)]
        for store in (*stores, self.dynamic, self.static):
            if name in store:
                return store[name]
        return BROKER_KEYS[name][0] if name in BROKER_KEYS else None

    def get(self, name: str) -> str:
        if self._cache_generation != _generation[0]:
            self._cache, self._cache_generation = {}, _generation[0]
        value = self._cache.get(name)
        if value is None:
            value = self.value(name)
            value = self._cache[name] = "" if value is None else value
        return value

    def get_int(self, name: str) -> int:
        return int(self.get(name).strip())

    def get_bool(self, name: str) -> bool:
        return self.get(name).strip().lower() == "true"

    def synonyms(
        self, name: str, broker_id: int | None, identity: dict[str, str] | None = None
    ) -> list[tuple[str, str | None, int]]:
        """DescribeConfigs' synonyms of a broker setting, highest priority first."""
        out: list[tuple[str, str | None, int]] = []
        if broker_id is not None and name in self.per_broker.get(broker_id, {}):
            out.append((name, self.per_broker[broker_id][name], SOURCE_DYNAMIC_BROKER))
        if name in self.dynamic:
            out.append((name, self.dynamic[name], SOURCE_DYNAMIC_DEFAULT_BROKER))
        static = {**self.static, **(identity or {})}
        if name in static:
            out.append((name, static[name], SOURCE_STATIC_BROKER))
        default = BROKER_KEYS[name][0] if name in BROKER_KEYS else None
        if default is not None:
            out.append((name, default, SOURCE_DEFAULT))
        return out

    def describe(self, broker_id: int | None = None, identity: dict[str, str] | None = None) -> list[ConfigEntry]:
        """Broker ``broker_id``'s settings as Kafka lists them; with None, the cluster default
        (only the dynamic default settings, as Kafka answers for broker ``""``)."""
        out = []
        if broker_id is None:
            for name, value in sorted(self.dynamic.items()):
                # an unknown setting is kept and shown as Kafka shows it: sensitive, of unknown type
                _, kind, read_only, sensitive = BROKER_KEYS.get(name, (None, "UNKNOWN", True, True))
                shown = None if sensitive else value
                source = SOURCE_DYNAMIC_DEFAULT_BROKER
                synonyms = [(name, shown, source)]
                out.append(ConfigEntry(name, shown, source, read_only, sensitive, CONFIG_TYPES[kind], synonyms))
            return out
        for name, (default, kind, read_only, sensitive) in sorted(BROKER_KEYS.items()):
            synonyms = self.synonyms(name, broker_id, identity)
            current, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (default, SOURCE_DEFAULT)
            if sensitive:
                current, synonyms = None, []
            out.append(ConfigEntry(name, current, source, read_only, sensitive, CONFIG_TYPES[kind], synonyms))
        return out


class TopicConfig:
    """One topic's overrides, falling back to the broker's settings and then Kafka's defaults."""

    def __init__(self, broker: BrokerConfig, overrides: dict[str, str] | None = None):
        self.broker = broker
        self.overrides: dict[str, str] = Store(overrides or {})
        self._cache: dict[str, str] = {}
        self._ints: dict[str, int] = {}
        self._derived: dict[str, Any] = {}
        self._cache_generation = -1

    def _fresh(self) -> None:
        """Forget what was read: a setting somewhere changed since."""
        self._cache, self._ints, self._derived, self._cache_generation = {}, {}, {}, _generation[0]

    def get(self, name: str) -> str:
        if self._cache_generation != _generation[0]:
            self._fresh()
        value = self._cache.get(name)
        if value is None:
            value = self._cache[name] = self._lookup(name)
        return value

    def derived(self, key: str, compute: Callable[[TopicConfig], T]) -> T:
        """``compute(self)``, kept until any setting changes: what a hot path reads of several
        settings at once (every Produce reads eight) in one lookup."""
        if self._cache_generation != _generation[0]:
            self._fresh()
        try:
            found: T = self._derived[key]
            return found
        except KeyError:
            value = self._derived[key] = compute(self)
            return value

    def _lookup(self, name: str) -> str:
        if name in self.overrides:
            return self.overrides[name]
        synonym = TOPIC_SYNONYMS.get(name)
        value = self.broker.value(synonym) if synonym else None
        for lower, unit in LOWER_SYNONYMS.get(name, []) if value is None else []:
            given = self.broker.value(lower)
            if given is not None:
                value = str(int(given.strip()) * unit)
                break
        if value is None:
            value = TOPIC_KEYS[name][0] if name in TOPIC_KEYS else None
        return "" if value is None else value

    def get_int(self, name: str) -> int:
        if self._cache_generation == _generation[0]:  # every append reads two (segment.bytes, segment.ms)
            value = self._ints.get(name)
            if value is not None:
                return value
        value = self._ints[name] = int(self.get(name).strip())
        return value

    def entry(self, name: str, broker_id: int | None = None) -> ConfigEntry:
        default, kind = TOPIC_KEYS[name]
        synonyms: list[tuple[str, str | None, int]] = []
        if name in self.overrides:
            synonyms.append((name, self.overrides[name], SOURCE_TOPIC))
        if name in TOPIC_SYNONYMS:
            synonyms += self.broker.synonyms(TOPIC_SYNONYMS[name], broker_id)
        source = synonyms[0][2] if synonyms else SOURCE_DEFAULT
        return ConfigEntry(name, self.get(name), source, False, False, CONFIG_TYPES[kind], synonyms)

    def describe(self, broker_id: int | None = None) -> list[ConfigEntry]:
        return [self.entry(name, broker_id) for name in sorted(TOPIC_KEYS)]


def offsets_topic_configs(broker: BrokerConfig) -> dict[str, str]:
    """The overrides Kafka gives ``__consumer_offsets`` when it creates it."""
    return {
        "cleanup.policy": "compact",
        "compression.type": _codec(broker),
        "segment.bytes": broker.get("offsets.topic.segment.bytes"),
    }


def share_state_topic_configs(broker: BrokerConfig) -> dict[str, str]:
    """The overrides Kafka gives ``__share_group_state`` when it creates it (``ShareCoordinatorService``)."""
    return {
        "cleanup.policy": "delete",
        "compression.type": "producer",
        "min.insync.replicas": broker.get("share.coordinator.state.topic.min.isr"),
        "retention.ms": "-1",
        "segment.bytes": broker.get("share.coordinator.state.topic.segment.bytes"),
    }


def transaction_topic_configs(broker: BrokerConfig) -> dict[str, str]:
    """The overrides Kafka gives ``__transaction_state`` when it creates it."""
    return {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "min.insync.replicas": broker.get("transaction.state.log.min.isr"),
        "segment.bytes": broker.get("transaction.state.log.segment.bytes"),
        "unclean.leader.election.enable": "false",
    }


# offsets.topic.compression.codec is a CompressionType id
_CODECS = {"0": "producer", "1": "gzip", "2": "snappy", "3": "lz4", "4": "zstd"}


def _codec(broker: BrokerConfig) -> str:
    return _CODECS.get(broker.get("offsets.topic.compression.codec").strip(), "producer")


def _to_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

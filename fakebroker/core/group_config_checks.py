"""Kafka 4.4's checks of a group's configs (``GroupConfig.validate``), in Kafka's order and words.

``GroupConfig.validate`` gets every config the group would hold after the change (the stored
ones and the new ones: Kafka's controller checks the merged map, so a stored value is checked
again) and throws at the first problem:

1. a name no group config has: ``Unknown group config name: foo`` (names in Java ``HashMap``
   order, see :func:`java_hash_order`);
2. ``streams.rack.aware.assignment.tags`` holding a tag twice;
3. ``ConfigDef.parse`` of each key, in the order ``GroupConfig`` defines them: the type
   (``Not a number of type INT``, ``Expected value to be either true or false``) and the key's
   own validator (``Value must be at least 1000``, ``String must be one of: ...``, the
   ``share.auto.offset.reset`` strategy);
4. the broker's bounds of each bounded key (``<key> must be in the range <min> to <max>
   inclusive.``), in ``GroupConfig.validateValues``' order, then the streams assignor's name;
5. session timeout above heartbeat interval, per group type (a side not given is the broker's);
6. a dead-letter topic name starting with ``__``.

Every failure is ``INVALID_CONFIG`` with that text. Values are checked as Java reads them:
``String.trim`` (characters up to U+0020 only), ``Integer.parseInt``, ``Duration.parse``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from ..lazy_dataclasses import dataclass
from .groups.placement import java_string_hash

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
MAX_VALUE_SIZE = 32767  # Short.MAX_VALUE: a longer config value is refused by the controller


@dataclass(frozen=True)
class GroupKey:
    """One group config of Kafka's ``GroupConfig.CONFIG_DEF``."""

    name: str
    type: str  # INT, LONG, BOOLEAN, STRING or LIST
    default: str | None  # the group default (None: null)
    at_least: int | None = None  # ConfigDef.Range.atLeast
    synonym: str | None = None  # the broker setting it falls back to
    internal: bool = False  # defineInternal: described only when set on the group
    choices: tuple[str, ...] = ()  # ConfigDef.ValidString.in


# In GroupConfig.CONFIG_DEF's order (ConfigDef.parse checks the keys in this order)
KEYS: tuple[GroupKey, ...] = (
    GroupKey("consumer.session.timeout.ms", "INT", "45000", 1, "group.consumer.session.timeout.ms"),
    GroupKey("consumer.heartbeat.interval.ms", "INT", "5000", 1, "group.consumer.heartbeat.interval.ms"),
    GroupKey("consumer.assignment.interval.ms", "INT", "1000", 0, "group.consumer.assignment.interval.ms"),
    GroupKey(
        "consumer.assignor.offload.enable", "BOOLEAN", "true", None, "group.consumer.assignor.offload.enable", True
    ),
    GroupKey("share.session.timeout.ms", "INT", "45000", 1, "group.share.session.timeout.ms"),
    GroupKey("share.heartbeat.interval.ms", "INT", "5000", 1, "group.share.heartbeat.interval.ms"),
    GroupKey("share.record.lock.duration.ms", "INT", "30000", 1000, "group.share.record.lock.duration.ms"),
    GroupKey("share.delivery.count.limit", "INT", "5", 2, "group.share.delivery.count.limit"),
    GroupKey("share.partition.max.record.locks", "INT", "2000", 100, "group.share.partition.max.record.locks"),
    GroupKey("share.auto.offset.reset", "STRING", "latest"),
    GroupKey("share.isolation.level", "STRING", "read_uncommitted", choices=("read_committed", "read_uncommitted")),
    GroupKey("share.renew.acknowledge.enable", "BOOLEAN", "true"),
    GroupKey("share.assignment.interval.ms", "INT", "1000", 0, "group.share.assignment.interval.ms"),
    GroupKey("share.assignor.offload.enable", "BOOLEAN", "true", None, "group.share.assignor.offload.enable", True),
    GroupKey("streams.session.timeout.ms", "INT", "45000", 1, "group.streams.session.timeout.ms"),
    GroupKey("streams.heartbeat.interval.ms", "INT", "5000", 1, "group.streams.heartbeat.interval.ms"),
    GroupKey("streams.num.standby.replicas", "INT", "0", 0, "group.streams.num.standby.replicas"),
    GroupKey("streams.initial.rebalance.delay.ms", "INT", "3000", 0, "group.streams.initial.rebalance.delay.ms"),
    GroupKey("streams.assignment.interval.ms", "INT", "1000", 0, "group.streams.assignment.interval.ms"),
    GroupKey("streams.assignor.offload.enable", "BOOLEAN", "true", None, "group.streams.assignor.offload.enable", True),
    GroupKey("streams.task.offset.interval.ms", "INT", "60000", 1, "group.streams.task.offset.interval.ms", True),
    GroupKey("streams.num.warmup.replicas", "INT", "2", 0, "group.streams.num.warmup.replicas", True),
    GroupKey("streams.rack.aware.assignment.tags", "LIST", "", None, "group.streams.rack.aware.assignment.tags"),
    GroupKey("streams.acceptable.recovery.lag", "LONG", "10000", 0, "group.streams.acceptable.recovery.lag", True),
    GroupKey("streams.assignor.name", "STRING", None, None, "group.streams.assignors"),
    GroupKey("errors.deadletterqueue.topic.name", "STRING", ""),
    GroupKey("errors.deadletterqueue.copy.record.enable", "BOOLEAN", "false"),
)
BY_NAME: dict[str, GroupKey] = {k.name: k for k in KEYS}

# Kafka's internal broker settings behind internal group configs and bounds (GroupCoordinatorConfig's
# defaults; a real broker does not describe them, so they are not in kafka_config_keys)
INTERNAL_BROKER_DEFAULTS: dict[str, str] = {
    "group.consumer.assignor.offload.enable": "true",
    "group.share.assignor.offload.enable": "true",
    "group.streams.assignor.offload.enable": "true",
    "group.streams.task.offset.interval.ms": "60000",
    "group.streams.min.task.offset.interval.ms": "15000",
    "group.streams.num.warmup.replicas": "2",
    "group.streams.max.warmup.replicas": "20",
    "group.streams.acceptable.recovery.lag": "10000",
}


def _between(name: str) -> tuple[str, str | None, str | None]:
    """A key bounded by the broker's ``group.<type>.min.<rest>`` and ``group.<type>.max.<rest>``."""
    kind, _, rest = name.partition(".")
    return name, f"group.{kind}.min.{rest}", f"group.{kind}.max.{rest}"


# GroupConfig.validateValues' order: key -> (broker setting of the lowest value, of the highest)
BOUNDS: tuple[tuple[str, str | None, str | None], ...] = (
    _between("consumer.heartbeat.interval.ms"),
    _between("consumer.session.timeout.ms"),
    _between("consumer.assignment.interval.ms"),
    _between("share.heartbeat.interval.ms"),
    _between("share.session.timeout.ms"),
    _between("share.record.lock.duration.ms"),
    _between("share.delivery.count.limit"),
    _between("share.partition.max.record.locks"),
    _between("share.assignment.interval.ms"),
    _between("streams.heartbeat.interval.ms"),
    _between("streams.session.timeout.ms"),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas"),
    _between("streams.assignment.interval.ms"),
    ("streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", None),
    ("streams.num.warmup.replicas", None, "group.streams.max.warmup.replicas"),
)
# session timeout > heartbeat interval, per type; a side the group does not set is the broker's
SESSION_PAIRS = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)
RACK_TAGS = "streams.rack.aware.assignment.tags"
ASSIGNOR_NAME = "streams.assignor.name"
DLQ_TOPIC = "errors.deadletterqueue.topic.name"
RESET = "share.auto.offset.reset"
RESET_TEXT = (
    "Invalid value `{v}` for configuration share.auto.offset.reset. "
    "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
)


class Invalid(ValueError):
    """A group config Kafka refuses; the message is Kafka's text."""


# -- Java's way of reading values ---------------------------------------------------------------


def java_trim(text: str) -> str:
    """``String.trim``: drops the characters up to U+0020 at both ends (not Unicode spaces)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def java_hash_order(keys: Iterable[str], copied_from: int | None = None) -> list[str]:
    """``keys`` in the order a ``java.util.HashMap`` iterates them (by bucket, then in insertion
    order): Kafka walks its config maps so, which decides which of two bad names it names and
    the order DescribeConfigs lists a group's configs in. A map the keys were put in one by one
    starts at capacity 16, doubled past 3/4 full; one made as a copy of a map of
    ``copied_from`` entries (``putAll`` into an empty map, ``new HashMap<>(map)``) is sized for
    them at once: the power of two from ``copied_from / 0.75 + 1`` (JDK 17)."""
    found = list(dict.fromkeys(keys))
    capacity = 16
    if copied_from is not None:
        wanted, capacity = int(copied_from / 0.75 + 1.0), 1
        while capacity < wanted:
            capacity *= 2
    while len(found) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(found, key=bucket)  # stable: a bucket keeps insertion order


def java_list(text: str) -> list[str]:
    """A LIST value as ``ConfigDef.parseType`` splits it (trimmed, on commas with spaces around)."""
    trimmed = java_trim(text)
    return [] if not trimmed else re.split(r"\s*,\s*", trimmed)


@functools.cache  # compiled at the first duration setting checked, not at import
def _duration() -> re.Pattern[str]:
    return re.compile(
        r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
        re.IGNORECASE,
    )


def _in_long(n: int) -> int:
    if not LONG_RANGE[0] <= n <= LONG_RANGE[1]:
        raise OverflowError
    return n


def duration_ns(text: str) -> int | None:
    """``java.time.Duration.parse`` (``PnDTnHnMn.nS``): the duration in nanoseconds, or None
    where Java throws (not that form, a ``T`` with no time part, a long overflow)."""
    m = _duration().fullmatch(text)
    if m is None or (m.group(3) is not None and len(m.group(3)) == 1):
        return None
    days, hours, minutes, secs, fraction = m.group(2, 4, 5, 6, 7)
    if days is None and hours is None and minutes is None and secs is None:
        return None
    try:
        parts = [
            _in_long(_in_long(int(t)) * unit) if t else 0 for t, unit in ((days, 86400), (hours, 3600), (minutes, 60))
        ]
        seconds = _in_long(int(secs)) if secs else 0
        total = _in_long(parts[0] + _in_long(parts[1] + _in_long(parts[2] + seconds)))
        nanos = int((fraction or "").ljust(9, "0")) if fraction else 0
        if secs and secs.startswith("-"):
            nanos = -nanos
        whole = _in_long(total + nanos // 1_000_000_000)
        value = whole * 1_000_000_000 + nanos % 1_000_000_000
        if m.group(1) == "-":
            _in_long(-whole - (1 if nanos % 1_000_000_000 else 0))
            value = -value
        return value
    except OverflowError:
        return None


def valid_reset(value: str) -> bool:
    """``ShareGroupAutoOffsetResetStrategy.fromString``: earliest, latest or
    ``by_duration:<non-negative ISO-8601 duration>``, case-sensitive (``none`` is refused)."""
    if value in ("earliest", "latest"):
        return True
    if value.startswith("by_duration:"):
        ns = duration_ns(value[len("by_duration:") :])
        return ns is not None and ns >= 0
    return False


# -- one value: ConfigDef.parseValue ----------------------------------------------------------------


def _number(key: GroupKey, raw: str) -> int:
    trimmed = java_trim(raw)
    low, high = LONG_RANGE if key.type == "LONG" else INT_RANGE
    if re.fullmatch(r"[+-]?\d+", trimmed) is None or not low <= int(trimmed) <= high:
        raise Invalid(f"Invalid value {raw} for configuration {key.name}: Not a number of type {key.type}")
    number = int(trimmed)
    if key.at_least is not None and number < key.at_least:
        raise Invalid(f"Invalid value {number} for configuration {key.name}: Value must be at least {key.at_least}")
    return number


def parse(key: GroupKey, raw: str) -> str:
    """The value as Kafka holds it once parsed and validated (``ConfigDef.convertToString`` of it:
    ``" 30000 "`` is ``30000``, ``TRUE`` is ``true``); :class:`Invalid` with Kafka's text if not."""
    if key.type in ("INT", "LONG"):
        return str(_number(key, raw))
    if key.type == "BOOLEAN":
        trimmed = java_trim(raw).lower()
        if trimmed not in ("true", "false"):
            raise Invalid(
                f"Invalid value {raw} for configuration {key.name}: Expected value to be either true or false"
            )
        return trimmed
    if key.type == "LIST":
        items = list(dict.fromkeys(java_list(raw)))  # ValidList drops repeats before validating
        if "" in items:
            raise Invalid(f"Configuration '{key.name}' values must not be empty.")
        return ",".join(items)
    value = java_trim(raw)
    if key.choices and value not in key.choices:
        raise Invalid(
            f"Invalid value {value} for configuration {key.name}: String must be one of: {', '.join(key.choices)}"
        )
    if key.name == RESET and not valid_reset(value):
        raise Invalid(f"Invalid value {value} for configuration {key.name}: {RESET_TEXT.format(v=value)}")
    return value


# -- the whole map: GroupConfig.validate ------------------------------------------------------------


def validate(configs: dict[str, str], broker: Callable[[str], str], assignors: list[str]) -> None:
    """Raise :class:`Invalid` at the first problem Kafka finds in ``configs`` (every config the
    group would hold). ``broker`` reads a broker setting; ``assignors`` are the streams task
    assignors the broker registers."""
    for name in java_hash_order(configs):
        if name not in BY_NAME:
            raise Invalid(f"Unknown group config name: {name}")
    if RACK_TAGS in configs:
        trimmed = java_trim(configs[RACK_TAGS])
        tags = re.split(r"\s*,\s*", trimmed) if trimmed else []
        if len(set(tags)) != len(tags):
            raise Invalid(f"{RACK_TAGS} must not contain duplicate tag keys.")
    parsed = {key.name: parse(key, configs[key.name]) for key in KEYS if key.name in configs}
    for name, low_key, high_key in BOUNDS:
        if name not in parsed:
            continue
        value = int(parsed[name])
        low = int(broker(low_key)) if low_key else None
        high = int(broker(high_key)) if high_key else None
        if low is not None and high is not None:
            if not low <= value <= high:
                raise Invalid(f"{name} must be in the range {low} to {high} inclusive.")
        elif high is not None and value > high:
            raise Invalid(f"{name} must be less than or equal to {high}")
        elif low is not None and value < low:
            raise Invalid(f"{name} must be greater than or equal to {low}")
    if ASSIGNOR_NAME in parsed and parsed[ASSIGNOR_NAME] not in assignors:
        raise Invalid(
            f"{ASSIGNOR_NAME} '{parsed[ASSIGNOR_NAME]}' is not a registered task assignor. "
            f"Registered assignors are: [{', '.join(assignors)}]."
        )
    for session, heartbeat in SESSION_PAIRS:
        if session in parsed or heartbeat in parsed:
            s = int(parsed[session]) if session in parsed else int(broker(BY_NAME[session].synonym or ""))
            h = int(parsed[heartbeat]) if heartbeat in parsed else int(broker(BY_NAME[heartbeat].synonym or ""))
            if s <= h:
                raise Invalid(f"{session} must be greater than {heartbeat}")
    if parsed.get(DLQ_TOPIC, "").startswith("__"):
        raise Invalid(f"{DLQ_TOPIC}: DLQ topic name must not start with '__'")

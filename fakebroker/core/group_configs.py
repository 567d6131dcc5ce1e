"""Group configs (resource type GROUP, KIP-848/KIP-932/KIP-1071): per-group overrides of the
broker's ``group.consumer.*``, ``group.share.*`` and ``group.streams.*`` settings, and the
settings with no broker synonym (``share.auto.offset.reset``, ``share.isolation.level``, ...),
as Kafka 4.4 has them (``GroupConfig``; the keys, checks and messages: :mod:`.group_config_checks`).

An unset group value falls back to its broker synonym at each lookup, else to the group
default, as Kafka's ``GroupConfig``/``ShareGroupConfigProvider`` do; a stored value outside the
broker's bounds (changed since) is clamped into them (``GroupConfig.evaluate``). A group config
may be set for any id, also one that names no group; Kafka keeps them in its metadata log, here
the data directory keeps them (``storage``).

IncrementalAlterConfigs and AlterConfigs on a group go to Kafka's controller
(``ConfigurationControlManager``): APPEND and SUBTRACT are refused for every group config
(the controller's config schema has no GROUP entry, so no key counts as a list), a value longer
than 32767 characters is refused, the default group (``""``) is refused, then the configs the
group would hold are checked as a whole. DescribeConfigs lists every non-internal group config
(21) and the internal ones set on the group, in Kafka's (Java ``HashMap``) order.
"""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from .configs import BROKER_KEYS, CONFIG_TYPES, SOURCE_DEFAULT, BrokerConfig, ConfigEntry
from .group_config_checks import (
    BOUNDS,
    BY_NAME,
    INTERNAL_BROKER_DEFAULTS,
    KEYS,
    MAX_VALUE_SIZE,
    GroupKey,
    Invalid,
    java_hash_order,
    java_list,
    parse,
    validate,
)

__all__ = ["GROUP_CONFIGS", "KEYS", "SOURCE_GROUP", "GroupConfigs"]

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs' operations
SOURCE_GROUP = 8  # DescribeConfigs' GROUP_CONFIG source

# group config -> (broker synonym or None, group default); every key Kafka 4.4 accepts
GROUP_CONFIGS: dict[str, tuple[str | None, str]] = {k.name: (k.synonym, k.default or "") for k in KEYS}
_BOUNDS = {name: (low, high) for name, low, high in BOUNDS}

Refusal = tuple[ErrorCode, str]


def _java_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class GroupConfigs:
    """Every group's overrides, by group id (string values, as Kafka stores them)."""

    def __init__(self, broker: BrokerConfig):
        self.broker = broker
        self.overrides: dict[str, dict[str, str]] = {}

    # -- what the coordinators read ---------------------------------------------------------------
    def get(self, group_id: str, name: str) -> str:
        """The value in force for ``group_id``: its override (parsed, and clamped into the broker's
        bounds), else the broker's, else the default."""
        key = BY_NAME[name]
        value = self.overrides.get(group_id, {}).get(name)
        if value is not None:
            return self._clamped(key, self._normal(key, value))
        if key.synonym is not None:
            return self._normal(key, self._broker_value(key))
        return key.default or ""

    def get_int(self, group_id: str, name: str) -> int:
        return int(self.get(group_id, name))

    def get_bool(self, group_id: str, name: str) -> bool:
        return self.get(group_id, name).lower() == "true"

    def stored(self, group_id: str) -> dict[str, str]:
        """The group's own settings, as given (an empty dict for a group with none)."""
        return dict(self.overrides.get(group_id, {}))

    def replace(self, group_id: str, configs: dict[str, str]) -> None:
        if configs:
            self.overrides[group_id] = dict(configs)
        else:
            self.overrides.pop(group_id, None)

    def assignors(self) -> list[str]:
        """The streams task assignors the broker registers (``group.streams.assignors``)."""
        return java_list(self.broker.get("group.streams.assignors"))

    def _broker_setting(self, name: str, broker_id: int | None = None) -> str:
        if name in BROKER_KEYS:
            value = self.broker.value(name, broker_id) if broker_id is not None else self.broker.get(name)
            return value or ""
        return self.broker.value(name) or INTERNAL_BROKER_DEFAULTS.get(name, "")

    def _broker_value(self, key: GroupKey, broker_id: int | None = None) -> str:
        if key.name == "streams.assignor.name":  # the broker names a list: the first is the default
            return next(iter(self.assignors()), "")
        return self._broker_setting(key.synonym or "", broker_id)

    @staticmethod
    def _normal(key: GroupKey, value: str) -> str:
        try:
            return parse(key, value)
        except Invalid:
            return value

    def _clamped(self, key: GroupKey, value: str) -> str:
        if key.name not in _BOUNDS or not value.lstrip("-").isdigit():
            return value
        low, high = (int(self._broker_setting(b)) if b else None for b in _BOUNDS[key.name])
        number = int(value)
        if low is not None and number < low:
            number = low
        elif high is not None and number > high:
            number = high
        return str(number)

    # -- IncrementalAlterConfigs and AlterConfigs --------------------------------------------------
    def check_incremental(
        self, group_id: str, ops: list[tuple[str, int, str | None]]
    ) -> tuple[Refusal | None, dict[str, str]]:
        """Kafka's controller on IncrementalAlterConfigs of a group (each name once, no SET of
        null: the broker refused those before): (refusal, {}) or (None, the group's new configs)."""
        current = self.overrides.get(group_id, {})
        wanted = {name: (op, value) for name, op, value in ops}
        changes: list[tuple[str, str | None]] = []
        for name in java_hash_order(wanted):
            op, value = wanted[name]
            if op in (APPEND, SUBTRACT):
                what = "APPEND" if op == APPEND else "SUBTRACT"
                return (ErrorCode.INVALID_CONFIG, f"Can't {what} to key {name} because its type is not LIST."), {}
            new = value if op == SET else None
            if new != current.get(name):
                changes.append((name, new))
        return self._check(group_id, current, changes, [])

    def check_replace(self, group_id: str, configs: dict[str, str]) -> tuple[Refusal | None, dict[str, str]]:
        """Kafka's controller on AlterConfigs of a group: ``configs`` replace every setting."""
        current = self.overrides.get(group_id, {})
        changes: list[tuple[str, str | None]] = [
            (name, configs[name]) for name in java_hash_order(configs) if configs[name] != current.get(name)
        ]
        gone = [name for name in current if name not in configs]
        return self._check(group_id, current, changes, gone)

    def _check(
        self, group_id: str, current: dict[str, str], changes: list[tuple[str, str | None]], gone: list[str]
    ) -> tuple[Refusal | None, dict[str, str]]:
        merged = dict(current)
        for name, value in changes:
            if value is None:
                merged.pop(name, None)
            elif _java_length(value) > MAX_VALUE_SIZE:
                return (
                    ErrorCode.INVALID_CONFIG,
                    f"The configuration value cannot be added because it exceeds the maximum value size of "
                    f"{MAX_VALUE_SIZE} bytes.",
                ), {}
            else:
                merged[name] = value
        for name in gone:
            merged.pop(name, None)
        if not group_id:
            return (ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."), {}
        try:
            validate(merged, self._broker_setting, self.assignors())
        except Invalid as exc:
            return (ErrorCode.INVALID_CONFIG, str(exc)), {}
        return None, merged

    # -- DescribeConfigs ---------------------------------------------------------------------------
    def describe(self, group_id: str, broker_id: int | None = None) -> list[ConfigEntry]:
        """DescribeConfigs of a group on broker ``broker_id``: the internal configs set on the
        group, then every other config, each in Java ``HashMap`` order as Kafka walks them."""
        stored = self.overrides.get(group_id, {})
        every = java_hash_order(k.name for k in KEYS)  # AbstractConfig's parsed values
        public = java_hash_order(n for n in every if not BY_NAME[n].internal)  # nonInternalValues
        # the internal ones come from the group's originals: the broker values of the configs with
        # a broker synonym and the group's own settings, copied into a map sized for them all
        originals = {k.name for k in KEYS if k.synonym and not k.internal} | set(stored)
        internal = java_hash_order((n for n in stored if n in BY_NAME and BY_NAME[n].internal), len(originals))
        return [self._entry(BY_NAME[name], stored, broker_id) for name in (*internal, *public)]

    def _entry(self, key: GroupKey, stored: dict[str, str], broker_id: int | None) -> ConfigEntry:
        synonyms: list[tuple[str, str | None, int]] = []
        if key.synonym in BROKER_KEYS:
            synonyms = self.broker.synonyms(key.synonym, broker_id)
        elif key.synonym is not None:
            synonyms = [(key.synonym, INTERNAL_BROKER_DEFAULTS.get(key.synonym), SOURCE_DEFAULT)]
        elif key.default is not None:
            synonyms = [(key.name, key.default, SOURCE_DEFAULT)]
        if key.name in stored:
            # an internal config is shown from the group's originals: as given ("FALSE" stays so)
            value: str | None = stored[key.name] if key.internal else self._normal(key, stored[key.name])
            synonyms.insert(0, (key.name, value, SOURCE_GROUP))
        elif key.synonym is not None:
            value = self._normal(key, self._broker_value(key, broker_id))
        else:
            value = key.default
        source = synonyms[0][2] if synonyms else SOURCE_DEFAULT
        return ConfigEntry(key.name, value, source, False, False, CONFIG_TYPES[key.type], synonyms)

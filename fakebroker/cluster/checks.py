"""What ``FakeCluster(...)`` checks before anything starts: the broker count, the port range,
the broker settings and the topics to create, each refused with :class:`ClusterUsageError`
naming what is wrong and what is valid (the CLI shows the same message as a usage error)."""

from __future__ import annotations

from typing import Any

from ..core.configs import start_setting_error
from ..core.quotas import IP_KEYS, USER_CLIENT_KEYS
from ..core.topics import MAX_PARTITIONS_PER_REQUEST, MAX_TOPIC_NAME, topic_name_error
from ..protocol.suggest import close_matches
from .errors import ClusterUsageError

TOPIC_NAME_RULE = (
    f"a topic name is 1..{MAX_TOPIC_NAME} characters of ASCII letters, digits, '.', '_' and '-', and not '.' or '..'"
)
TOPIC_SPEC_KEYS = ("partitions", "replication_factor", "config")
# the most partitions one CreateTopics may create (Kafka's controller bounds one operation's records)
PARTITIONS_RULE = f"a whole number in 1..{MAX_PARTITIONS_PER_REQUEST}"


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_brokers_and_port(brokers: Any, port: Any) -> None:
    if not _whole(brokers) or brokers < 1:
        raise ClusterUsageError(f"brokers must be a whole number >= 1, not {brokers!r}")
    if not _whole(port) or not 0 <= port <= 65535:
        raise ClusterUsageError(f"port must be a whole number in 0..65535 (0 = free ports), not {port!r}")
    if port and port + brokers - 1 > 65535:
        raise ClusterUsageError(
            f"{brokers} brokers from port {port} would need ports up to {port + brokers - 1}; the highest is 65535"
        )


def check_settings(config: dict[str, Any]) -> None:
    """Every broker setting under a name Kafka knows, with a value of its type."""
    for name, value in config.items():
        if reason := start_setting_error(name, value):
            raise ClusterUsageError(reason)


def check_topic_name(name: Any) -> None:
    reason = topic_name_error(name) if isinstance(name, str) else f"{name!r} is not a string"
    if reason:
        raise ClusterUsageError(f"bad topic name {name!r}: {TOPIC_NAME_RULE} ({reason})")


def check_topic(name: Any, spec: Any, brokers: int, default_partitions: int = 1) -> None:
    """A topic to create at start: ``6`` or ``{"partitions": 6, "replication_factor": 3, "config": {...}}``
    (-1 or a missing count takes the broker default, ``default_partitions``, as CreateTopics does)."""
    check_topic_name(name)
    if _whole(spec):
        spec = {"partitions": spec}
    if not isinstance(spec, dict):
        raise ClusterUsageError(
            f"topic {name!r}: give a partition count or a dict with {', '.join(TOPIC_SPEC_KEYS)}, not {spec!r}"
        )
    extra = sorted(set(spec) - set(TOPIC_SPEC_KEYS))
    if extra:
        raise ClusterUsageError(
            f"topic {name!r}: unknown key(s) {', '.join(map(repr, extra))}; valid keys: {', '.join(TOPIC_SPEC_KEYS)}"
        )
    partitions = spec.get("partitions", -1)
    if not _whole(partitions) or (partitions < 1 and partitions != -1):
        raise ClusterUsageError(f"topic {name!r}: partitions must be a whole number >= 1, not {partitions!r}")
    if partitions > MAX_PARTITIONS_PER_REQUEST:
        raise ClusterUsageError(f"topic {name!r}: partitions must be {PARTITIONS_RULE}, not {partitions!r}")
    if partitions == -1 and default_partitions > MAX_PARTITIONS_PER_REQUEST:
        raise ClusterUsageError(
            f"topic {name!r}: its partition count would be num.partitions, {default_partitions}, and one topic may "
            f"have at most {MAX_PARTITIONS_PER_REQUEST} partitions; give partitions in 1..{MAX_PARTITIONS_PER_REQUEST}"
            " or a smaller num.partitions"
        )
    replication = spec.get("replication_factor", -1)
    if not _whole(replication) or (replication < 1 and replication != -1):
        raise ClusterUsageError(f"topic {name!r}: replication_factor must be a whole number >= 1, not {replication!r}")
    if replication > brokers:
        raise ClusterUsageError(
            f"topic {name!r}: replication_factor {replication} needs {replication} brokers and the cluster has "
            f"{brokers}; give a replication_factor in 1..{brokers}, or more brokers"
        )
    config = spec.get("config") or {}
    if not isinstance(config, dict):
        raise ClusterUsageError(f"topic {name!r}: config must be a dict of topic configs, not {config!r}")
    for key, value in config.items():
        if reason := start_setting_error(key, value, topic=True):
            raise ClusterUsageError(f"topic {name!r}: {reason}")


def check_racks(racks: Any, brokers: int) -> None:
    """One rack name (or None: no rack) per broker, in node id order."""
    if racks is None:
        return
    if isinstance(racks, (str, bytes)) or not isinstance(racks, (list, tuple)):
        raise ClusterUsageError(f"racks must be a list of one rack name (or None) per broker, not {racks!r}")
    if len(racks) != brokers:
        raise ClusterUsageError(
            f"racks names {len(racks)} rack(s) for {brokers} broker(s): give one per broker, in node id order "
            f"(None for a broker without a rack), e.g. {[f'rack-{i % 3}' for i in range(brokers)]!r}"
        )
    for i, rack in enumerate(racks):
        if rack is not None and (not isinstance(rack, str) or not rack.strip()):
            raise ClusterUsageError(f"racks[{i}] (broker {i}) must be a non-empty rack name or None, not {rack!r}")


def check_options(
    brokers: Any,
    port: Any,
    topics: dict[str, Any] | None,
    config: dict[str, Any] | None,
    racks: Any = None,
) -> None:
    """All of ``FakeCluster``'s checks of its arguments, in the order they are given."""
    check_brokers_and_port(brokers, port)
    check_racks(racks, brokers)
    if config is not None and not isinstance(config, dict):
        raise ClusterUsageError(f"config must be a dict of broker settings, not {config!r}")
    check_settings(config or {})
    if topics is not None and not isinstance(topics, dict):
        raise ClusterUsageError(f"topics must be a dict of name -> partitions or spec, not {topics!r}")
    default_partitions = int(str((config or {}).get("num.partitions", 1)).strip())  # checked above
    for name, spec in (topics or {}).items():
        check_topic(name, spec, brokers, default_partitions)


def quota_key_hint(key: str) -> str:
    """After Kafka's "Invalid configuration key" for a misspelt quota key: the nearest valid ones."""
    valid = [*USER_CLIENT_KEYS, *IP_KEYS]
    if key in valid:
        return ""
    close = close_matches(key, valid, n=2)
    return (f"; did you mean {' or '.join(map(repr, close))}?" if close else "") + f" (quota keys: {', '.join(valid)})"

"""Group configs (resource type GROUP, KIP-848/KIP-932): per-group overrides of the broker's
``group.consumer.*`` and ``group.share.*`` settings, and the share-only settings with no
broker synonym (``share.auto.offset.reset``, ``share.isolation.level``, ...).

An unset group value falls back to its broker synonym at each lookup, else to the group
default, as Kafka's ``GroupConfig``/``ShareGroupConfigProvider`` do; a group config may be set
for any id, also one that names no group.
"""

from __future__ import annotations

from .configs import BrokerConfig

# group config -> (broker synonym or None, group default)
GROUP_CONFIGS: dict[str, tuple[str | None, str]] = {
    "consumer.session.timeout.ms": ("group.consumer.session.timeout.ms", "45000"),
    "consumer.heartbeat.interval.ms": ("group.consumer.heartbeat.interval.ms", "5000"),
    "consumer.assignment.interval.ms": ("group.consumer.assignment.interval.ms", "1000"),
    "share.session.timeout.ms": ("group.share.session.timeout.ms", "45000"),
    "share.heartbeat.interval.ms": ("group.share.heartbeat.interval.ms", "5000"),
    "share.record.lock.duration.ms": ("group.share.record.lock.duration.ms", "30000"),
    "share.delivery.count.limit": ("group.share.delivery.count.limit", "5"),
    "share.partition.max.record.locks": ("group.share.partition.max.record.locks", "2000"),
    "share.auto.offset.reset": (None, "latest"),
    "share.isolation.level": (None, "read_uncommitted"),
    "share.renew.acknowledge.enable": (None, "true"),
    "share.assignment.interval.ms": ("group.share.assignment.interval.ms", "1000"),
    "errors.deadletterqueue.topic.name": (None, ""),
    "errors.deadletterqueue.copy.record.enable": (None, "false"),
}


class GroupConfigs:
    """Every group's overrides, by group id (string values, as Kafka stores them)."""

    def __init__(self, broker: BrokerConfig):
        self.broker = broker
        self.overrides: dict[str, dict[str, str]] = {}

    def get(self, group_id: str, name: str) -> str:
        """The value in force for ``group_id``: its override, else the broker's, else the default."""
        value = self.overrides.get(group_id, {}).get(name)
        if value is not None:
            return value
        synonym, default = GROUP_CONFIGS[name]
        if synonym is not None:
            broker_value = self.broker.value(synonym)
            if broker_value is not None:
                return broker_value
        return default

    def get_int(self, group_id: str, name: str) -> int:
        return int(self.get(group_id, name))

    def get_bool(self, group_id: str, name: str) -> bool:
        return self.get(group_id, name).lower() == "true"

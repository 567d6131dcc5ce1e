"""Brokers, topics and partitions as data, and Kafka's rule for topic names."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from .configs import TopicConfig
from .log import PartitionLog
from .producers import PartitionProducers

MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


def topic_name_error(name: str) -> str | None:
    """Kafka's ``Topic.validate``: why a topic name is illegal, or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters, topic name: {name}"
    if not _LEGAL_TOPIC.match(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, '
            "'.', '_' and '-'"
        )
    return None


def colliding_topic(name: str, existing: Iterable[str]) -> str | None:
    """An existing topic that differs from ``name`` only by '.' and '_', which collide in metric
    names, so Kafka refuses the new one; None if there is none."""
    if "." not in name and "_" not in name:
        return None
    unified = name.replace(".", "_")
    return next((t for t in existing if t != name and t.replace(".", "_") == unified), None)


@dataclass
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    alive: bool = True


@dataclass
class Partition:
    topic: str
    index: int
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    log: PartitionLog = field(default_factory=PartitionLog)
    producers: PartitionProducers = field(default_factory=PartitionProducers)

    @property
    def isr(self) -> list[int]:
        return list(self.replicas)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    config: TopicConfig
    internal: bool = False

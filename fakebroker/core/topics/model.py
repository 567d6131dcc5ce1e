"""Brokers, topics and partitions as data, and Kafka's rule for topic names."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import field

from ...lazy_dataclasses import dataclass
from ...protocol.error_codes import ErrorCode
from ..configs import TopicConfig
from ..log import PartitionLog, PartitionProducers

MAX_TOPIC_NAME = 249
MAX_PARTITIONS_PER_REQUEST = 10_000  # Kafka's controller: MAX_PARTITIONS_PER_BATCH / MAX_RECORDS_PER_USER_OP


class TopicError(Exception):
    """A topic operation Kafka would refuse: carries the error code and message to answer with
    (None where Kafka's answer has none)."""

    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(f"{code.name}: {message or code.description}")
        self.code = code
        self.message = message


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


def manual_assignment_error(replicas: list[int], registered: set[int], replication: int | None) -> str | None:
    """Kafka's ``validateManualPartitionAssignment``: why a partition's replica list is refused."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker in sorted(replicas):
        if broker not in registered:
            return f"The manual partition assignment includes broker {broker}, but no such broker is registered."
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    if replication is not None and len(replicas) != replication:
        return (
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is "
            f"not consistent with previous partitions, which have {replication} replica(s)."
        )
    return None


@dataclass
class BrokerInfo:
    node_id: int
    host: str  # the first listener's advertised address (the client-facing one)
    port: int
    rack: str | None = None
    alive: bool = True
    # every listener's advertised address by listener name; empty when the broker has one
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)

    def endpoint(self, listener: str = "") -> tuple[str, int]:
        """The address clients of ``listener`` are told (a connection on one listener sees that
        listener's addresses, as on Kafka); the first listener's for ``""`` or an unknown name."""
        return self.endpoints.get(listener) or (self.host, self.port)


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

"""The application under test: an orders consumer with confluent-kafka. Its one decision that
matters here is when it commits: after processing a record (at least once: a crash re-reads
it), or before (the planted bug: a crash between the commit and the processing loses it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException


def commit_after(consumer: Consumer, msg: Any, process: Callable[[Any], None]) -> None:
    """Right: process, then commit."""
    process(msg)
    try:
        consumer.commit(message=msg, asynchronous=False)
    except KafkaException:
        pass  # a commit racing a rebalance: the record is read again (at least once)


def commit_first(consumer: Consumer, msg: Any, process: Callable[[Any], None]) -> None:
    """The planted bug: commit, then process."""
    try:
        consumer.commit(message=msg, asynchronous=False)
    except KafkaException:
        pass
    process(msg)


def consumer_settings(bootstrap: str, group: str, name: str, protocol: str, **more: Any) -> dict[str, Any]:
    """The consumer's settings, for the classic protocol or KIP-848's (``group.protocol=consumer``,
    whose session and heartbeat times are the broker's)."""
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 500,
        "reconnect.backoff.max.ms": 200,
        "log_level": 0,
        **more,
    }
    if protocol == "consumer":
        settings["group.protocol"] = "consumer"
    else:
        settings.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "max.poll.interval.ms": 8000})
    return settings

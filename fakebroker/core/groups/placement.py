"""Which ``__consumer_offsets`` partition owns a group: ``Utils.abs(groupId.hashCode()) % N``.

Java's ``String.hashCode`` runs over UTF-16 code units with signed 32-bit wrap-around, and
Kafka's ``Utils.abs`` maps Integer.MIN_VALUE to 0, so this must not use Python's hash.

>>> [partition_for(g, 50) for g in ("my-group", "test", "console-consumer-12345", "groupé", "😀g")]
[12, 48, 6, 6, 22]
"""

from __future__ import annotations

import base64
import functools
import uuid

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"


@functools.lru_cache(maxsize=4096)  # every group request asks again for its group id
def java_string_hash(text: str) -> int:
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def kafka_abs(n: int) -> int:
    return 0 if n == -(2**31) else abs(n)


def partition_for(key: str, partitions: int) -> int:
    return kafka_abs(java_string_hash(key)) % partitions


def share_state_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """The share coordinator's key of a share partition (``SharePartitionKey.asCoordinatorKey``):
    ``group:topicId:partition``, the topic id as Kafka prints a Uuid (URL-safe base64)."""
    return f"{group_id}:{base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip('=')}:{partition}"

"""Share groups' dead-letter queue (KIP-1191, ``share.version`` 2): a record a member rejects,
or one archived after its last allowed delivery, is also written to the group's dead-letter
topic, one record per offset, with headers naming where it came from and why.

On only when ``share.version`` is 2 or more and the group config
``errors.deadletterqueue.topic.name`` names a topic; that topic must carry the topic config
``errors.deadletterqueue.group.enable=true``, match the broker's
``errors.deadletterqueue.topic.name.prefix`` and exist, unless
``errors.deadletterqueue.auto.create.topics.enable`` lets it be created. Otherwise (or if the
write fails) the record is archived all the same, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable

from ....lazy_dataclasses import dataclass
from ....protocol import records as rec
from ...configs import BrokerConfig
from ...group_configs import GroupConfigs
from ...topics import Partition, Topic

REJECTED = "Offset rejected by client."
EXHAUSTED = "Offset delivery count exceeded the threshold."


@dataclass(frozen=True)
class DeadLetter:
    """Offsets ``first``..``last`` of a source partition archived for ``reason``."""

    first: int
    last: int
    delivery_count: int
    rejected: bool


class DeadLetters:
    """Writes dead letters through ``append`` (the cluster's own append, as a producer would)."""

    def __init__(
        self,
        config: BrokerConfig,
        group_configs: GroupConfigs,
        share_version: Callable[[], int],
        topic: Callable[[str], Topic | None],
        create_topic: Callable[[str, int], Topic],
        append: Callable[[Partition, bytes, int], bool],
    ):
        self.config = config
        self.group_configs = group_configs
        self.share_version = share_version
        self.topic = topic
        self.create_topic = create_topic
        self.append = append

    def target(self, group_id: str) -> str | None:
        """The group's dead-letter topic, when dead letters are on for it."""
        if self.share_version() < 2:
            return None
        name = self.group_configs.get(group_id, "errors.deadletterqueue.topic.name")
        return name or None

    def write(self, group_id: str, source: Partition, letters: list[DeadLetter], now_ms: int) -> tuple[str, int] | None:
        """Write ``letters``; returns the (topic, partition) written, None when nothing was."""
        name = self.target(group_id)
        if name is None or not letters:
            return None
        prefix = self.config.get("errors.deadletterqueue.topic.name.prefix")
        if prefix and not name.startswith(prefix):
            return None
        topic = self.topic(name)
        if topic is None:
            if not self.config.get_bool("errors.deadletterqueue.auto.create.topics.enable"):
                return None
            topic = self.create_topic(name, 1)
        if topic.config.get("errors.deadletterqueue.group.enable").lower() != "true":
            return None
        copy = self.group_configs.get_bool(group_id, "errors.deadletterqueue.copy.record.enable")
        originals = _originals(source, letters) if copy else {}
        records = []
        for letter in letters:
            message = REJECTED if letter.rejected else EXHAUSTED
            for offset in range(letter.first, letter.last + 1):
                key, value = originals.get(offset, (None, None))
                headers = [
                    ("__dlq.errors.topic", source.topic.encode()),
                    ("__dlq.errors.partition", str(source.index).encode()),
                    ("__dlq.errors.offset", str(offset).encode()),
                    ("__dlq.errors.group", group_id.encode()),
                    ("__dlq.errors.delivery.count", str(letter.delivery_count).encode()),
                    ("__dlq.errors.message", message.encode()),
                ]
                records.append((key, value, headers, now_ms))
        target = topic.partitions[source.index % len(topic.partitions)]
        if not self.append(target, rec.build_batch(records), now_ms):
            return None
        return (target.topic, target.index)


def _originals(source: Partition, letters: list[DeadLetter]) -> dict[int, tuple[bytes | None, bytes | None]]:
    """The source records' keys and values, by offset."""
    wanted = {o for letter in letters for o in range(letter.first, letter.last + 1)}
    out: dict[int, tuple[bytes | None, bytes | None]] = {}
    for stored in source.log.iter_batches(min(wanted)):
        if stored.base_offset > max(wanted):
            break
        for batch in rec.read_batches(stored.data, check_crc=False):
            if not isinstance(batch, rec.RecordBatch) or batch.is_control:
                continue
            for record in batch.records:
                offset = batch.base_offset + record.offset_delta
                if offset in wanted:
                    out[offset] = (record.key, record.value)
    return out

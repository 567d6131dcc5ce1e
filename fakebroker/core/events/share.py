"""Event kinds of share groups' records (KIP-932): what was acquired, acknowledged, released,
timed out and archived, per share partition (group, topic, partition)."""

from __future__ import annotations

from .base import _kind
from .groups import GroupEvent, MemberEvent


@_kind
class ShareRecordsAcquired(MemberEvent):
    """Records ``first``..``last`` went to ``member`` (delivery ``delivery_count``)."""

    topic: str
    partition: int
    first: int
    last: int
    delivery_count: int
    client_id: str | None = None


@_kind
class ShareRecordsAcknowledged(MemberEvent):
    """``member`` answered for records ``first``..``last``: accept, release, reject, gap or renew."""

    topic: str
    partition: int
    first: int
    last: int
    outcome: str
    client_id: str | None = None


@_kind
class ShareRecordsReleased(MemberEvent):
    """Records ``member`` held came back: ``reason`` is ``lock expired`` or ``session closed``."""

    topic: str
    partition: int
    records: int
    reason: str
    client_id: str | None = None


@_kind
class ShareRecordsArchived(GroupEvent):
    """Records that will never be delivered again: ``reason`` is ``delivery limit``,
    ``rejected`` or ``gap``."""

    topic: str
    partition: int
    first: int
    last: int
    reason: str


@_kind
class ShareOffsetsReset(GroupEvent):
    """An admin set the start offsets of an empty share group's partitions (AlterShareGroupOffsets)."""

    topic: str
    offsets: dict[int, int]


@_kind
class ShareOffsetsDeleted(GroupEvent):
    """An admin deleted an empty share group's state of a topic (DeleteShareGroupOffsets)."""

    topic: str

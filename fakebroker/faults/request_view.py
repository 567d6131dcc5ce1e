"""What a decoded request touches: its groups, topic-partitions and transactional id.

Kafka's requests name these in a handful of shapes (``group_id``, ``groups``,
``coordinator_keys``; topic arrays called ``topics`` or ``topic_data`` whose elements carry
``name``, ``topic``, ``topic_id`` or ``topic_name`` (the share group offsets APIs), and
partitions as structs or plain ints). The share APIs name their group as ``group_id`` too
(ShareGroupHeartbeat, ShareFetch, ShareAcknowledge) or in ``group_ids`` and ``groups``. Fault rules
match against this view, and the response builder splits requests along it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import field

from ..lazy_dataclasses import dataclass
from ..protocol.messages import ApiKey, Message

TOPIC_KEYS = ("name", "topic", "topic_id", "topic_name")
PARTITION_KEYS = ("partition_index", "partition", "index")
PARTITION_LISTS = ("partition_indexes", "partitions")
GROUP_LISTS = ("groups", "groups_names", "group_ids")
IGNORED_ARRAYS = (
    "forgotten_topics_data",
    "protocols",
)  # named, but not asked for; JoinGroup protocols name assignors, not topics
KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION = 0, 1

TopicNames = Callable[[uuid.UUID], "str | None"]


@dataclass(frozen=True)
class Leaf:
    """One item a request names: a topic-partition (partition None for topic-level items,
    e.g. Metadata or CreateTopics), possibly within a group."""

    group: str | None
    topic: str | None
    partition: int | None


@dataclass
class RequestView:
    groups: set[str] = field(default_factory=set)
    transactional_ids: set[str] = field(default_factory=set)
    leaves: list[Leaf] = field(default_factory=list)

    @property
    def topics(self) -> set[str]:
        return {leaf.topic for leaf in self.leaves if leaf.topic is not None}


def topic_of(element: Message, topic_names: TopicNames) -> str | None:
    """The topic an array element stands for, by name or (Fetch v13+, ...) by topic id."""
    for key in TOPIC_KEYS:
        value = getattr(element, key, None)
        if key == "topic_id":
            if isinstance(value, uuid.UUID) and value.int:
                return topic_names(value)
        elif isinstance(value, str) and value:
            return value
    return None


def partition_of(element: Message) -> int | None:
    for key in PARTITION_KEYS:
        value = getattr(element, key, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def view_of(api_key: int, request: Message, topic_names: TopicNames) -> RequestView:
    view = RequestView()
    group = getattr(request, "group_id", None)
    if not isinstance(group, str) or not group:  # OffsetFetch v8+ leaves it "" and uses groups
        group = None
    else:
        view.groups.add(group)
    txn = getattr(request, "transactional_id", None)
    if isinstance(txn, str):
        view.transactional_ids.add(txn)
    if api_key == ApiKey.FIND_COORDINATOR:
        keys = list(request.coordinator_keys or []) or ([request.key] if request.key else [])
        target = view.groups if request.key_type == KEY_TYPE_GROUP else view.transactional_ids
        target.update(keys)
    _walk(request, group, None, view, topic_names)
    return view


def _walk(msg: Message, group: str | None, topic: str | None, view: RequestView, topic_names: TopicNames) -> None:
    for info in msg._fields:
        value = getattr(msg, info.attr)
        if not isinstance(value, list) or not value or info.attr in IGNORED_ARRAYS:
            continue
        if info.struct is None:  # a list of plain values: group names or partition numbers
            if info.attr in GROUP_LISTS and isinstance(value[0], str):
                view.groups.update(value)
            elif info.attr in PARTITION_LISTS and topic is not None:
                view.leaves.extend(Leaf(group, topic, p) for p in value)
            continue
        for element in value:
            element_group = getattr(element, "group_id", None) if info.attr in GROUP_LISTS else None
            if isinstance(element_group, str):
                view.groups.add(element_group)
                _walk(element, element_group, None, view, topic_names)
                continue
            element_topic = topic_of(element, topic_names) if topic is None else topic
            partition = partition_of(element) if topic is not None else None
            if topic is not None and partition is not None:
                view.leaves.append(Leaf(group, topic, partition))
            elif topic is None and element_topic is not None:
                before = len(view.leaves)
                _walk(element, group, element_topic, view, topic_names)
                if len(view.leaves) == before:
                    view.leaves.append(Leaf(group, element_topic, None))

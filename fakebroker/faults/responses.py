"""Answers a fault gives instead of (or on top of) the real handler's.

``error_response`` mirrors a request into its response type the way Kafka's
``getErrorResponse`` does: every topic, partition and group the request names comes back
with the error (and the top-level ``error_code`` is set where the response has one).
``split`` divides a request into the part a rule hits and the rest, so a rule on one
partition fails that partition only while the others are handled; ``merge`` joins the two
answers. ``replace_errors`` overwrites the error codes of a response the handler produced.
"""

from __future__ import annotations

from collections.abc import Callable

from ..protocol.messages import Message, response_type
from .request_view import PARTITION_KEYS, TOPIC_KEYS, Leaf, TopicNames, partition_of, topic_of

# response array -> the request arrays it answers, when the names differ
ARRAY_SOURCES: dict[str, tuple[str, ...]] = {
    "responses": ("topic_data", "topics", "topic_names"),
    "partition_responses": ("partition_data",),
    "partitions": ("partitions", "partition_indexes", "partition_data"),
    "topics": ("topics", "topic_data"),
    "groups": ("groups", "groups_names"),
    "results": ("groups_names", "topics", "topic_names"),
    "coordinators": ("coordinator_keys",),
}
KEY_SOURCES: dict[str, tuple[str, ...]] = {
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
    "topic_id": ("topic_id",),
    "partition_index": PARTITION_KEYS,
    "index": ("index", "partition_index", "partition"),
    "partition": ("partition", "partition_index", "index"),
    "group_id": ("group_id",),
    "key": ("key",),
    "member_id": ("member_id",),
    "group_instance_id": ("group_instance_id",),
}
SCALAR_KEYS = ("partition_index", "index", "group_id", "name", "key")
# what Kafka's error responses put in offset-like fields (INVALID_OFFSET, INVALID_HIGH_WATERMARK)
ERROR_SENTINELS = {
    "base_offset": -1,
    "high_watermark": -1,
    "last_stable_offset": -1,
    "committed_offset": -1,
    "offset": -1,
    "timestamp": -1,
}
LeafFilter = Callable[[Leaf], bool]


def _copy(msg: Message) -> Message:
    return type(msg).from_dict(msg.to_dict())


def _source_array(request: Message, response_attr: str) -> list | None:
    for name in ARRAY_SOURCES.get(response_attr, ()) + (response_attr,):
        value = getattr(request, name, None)
        if isinstance(value, list):
            return value
    return None


def _mirror_element(source: object, cls: type[Message], code: int) -> Message:
    out = cls()
    fields = {f.attr for f in cls._fields}
    if isinstance(source, Message):
        for attr, candidates in KEY_SOURCES.items():
            if attr in fields:
                for candidate in candidates:
                    value = getattr(source, candidate, None)
                    if value is not None:
                        setattr(out, attr, value)
                        break
        _mirror_arrays(source, out, code)
    else:  # a bare group name or partition number
        for attr in SCALAR_KEYS:
            if attr in fields:
                setattr(out, attr, source)
                break
    if "error_code" in fields:
        out.error_code = code
        for attr, sentinel in ERROR_SENTINELS.items():
            if attr in fields:
                setattr(out, attr, sentinel)
        if "acquired_records" in fields:
            out.records = b""  # ShareFetch's records are never null (Fetch's may be)
    return out


def _mirror_arrays(request: Message, response: Message, code: int) -> None:
    for info in response._fields:
        if info.struct is None or not info.is_array:
            continue
        source = _source_array(request, info.attr)
        if source:
            setattr(response, info.attr, [_mirror_element(item, info.struct, code) for item in source])


def error_response(api_key: int, request: Message, code: int, *, top_level: bool = True) -> Message:
    """The response Kafka would send if it failed the whole request with ``code``."""
    response = response_type(api_key).new()
    _mirror_arrays(request, response, code)
    if top_level and hasattr(response, "error_code"):
        response.error_code = code
    return response


def split(request: Message, hit: LeafFilter, topic_names: TopicNames) -> tuple[Message, Message]:
    """(the part of ``request`` whose topic-partitions ``hit`` selects, the rest)."""
    chosen, rest = _copy(request), _copy(request)
    _prune(chosen, lambda leaf: not hit(leaf), topic_names, None, None)
    _prune(rest, hit, topic_names, None, None)
    return chosen, rest


def _prune(msg: Message, drop: LeafFilter, topic_names: TopicNames, group: str | None, topic: str | None) -> bool:
    """Remove the leaves ``drop`` selects; returns whether anything of ``msg`` is left."""
    had_items = False
    for info in msg._fields:
        value = getattr(msg, info.attr)
        if not isinstance(value, list) or not value:
            continue
        if info.struct is None:
            if topic is not None and all(isinstance(v, int) for v in value):
                had_items = True
                setattr(msg, info.attr, [p for p in value if not drop(Leaf(group, topic, p))])
            continue
        kept = []
        for element in value:
            element_group = getattr(element, "group_id", None) if info.attr in ("groups",) else None
            if isinstance(element_group, str):
                if _prune(element, drop, topic_names, element_group, None):
                    kept.append(element)
                continue
            if topic is not None:
                partition = partition_of(element)
                if partition is None or not drop(Leaf(group, topic, partition)):
                    kept.append(element)
                continue
            element_topic = topic_of(element, topic_names)
            if element_topic is None:
                kept.append(element)
            elif _prune(element, drop, topic_names, group, element_topic):
                kept.append(element)
            elif not drop(Leaf(group, element_topic, None)) and not _has_items(element):
                kept.append(element)
        had_items = had_items or bool(value)
        setattr(msg, info.attr, kept)
    return _has_items(msg) if had_items else not drop(Leaf(group, topic, None))


def _has_items(msg: Message) -> bool:
    return any(isinstance(getattr(msg, f.attr), list) and getattr(msg, f.attr) for f in msg._fields)


def merge(response: Message, extra: Message) -> Message:
    """Add ``extra``'s topics/partitions/groups to ``response`` (same topics joined)."""
    for info in response._fields:
        if info.struct is None or not info.is_array:
            continue
        mine, theirs = getattr(response, info.attr), getattr(extra, info.attr)
        if not theirs:
            continue
        if mine is None:
            setattr(response, info.attr, list(theirs))
            continue
        for item in theirs:
            twin = next((m for m in mine if _same_key(m, item)), None)
            if twin is None:
                mine.append(item)
            else:
                merge(twin, item)
    return response


def _same_key(a: Message, b: Message) -> bool:
    keys = [k for k in TOPIC_KEYS + ("group_id",) if hasattr(a, k)]
    return bool(keys) and all(getattr(a, k) == getattr(b, k) for k in keys) and partition_of(a) is None


def replace_errors(response: Message, code: int, hit: LeafFilter | None, topic_names: TopicNames) -> int:
    """Overwrite error codes (top level when ``hit`` is None, and every item ``hit`` selects);
    returns how many were set."""
    count = 0
    if hit is None and hasattr(response, "error_code"):
        response.error_code = code
        count += 1
    return count + _replace(response, code, hit, topic_names, None, None)


def _replace(
    msg: Message, code: int, hit: LeafFilter | None, topic_names: TopicNames, group: str | None, topic: str | None
) -> int:
    count = 0
    for info in msg._fields:
        value = getattr(msg, info.attr)
        if info.struct is None or not isinstance(value, list):
            continue
        for element in value:
            element_group = getattr(element, "group_id", None)
            g = element_group if isinstance(element_group, str) and element_group else group
            t = topic if topic is not None else topic_of(element, topic_names)
            p = partition_of(element) if topic is not None else None
            leaf = Leaf(g, t, p)
            if hasattr(element, "error_code") and (hit is None or hit(leaf)):
                element.error_code = code
                count += 1
            count += _replace(element, code, hit, topic_names, g, t)
    return count


def set_throttle(response: Message, throttle_ms: int) -> None:
    if hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle_ms)

"""The ``data`` schemas: payloads that travel inside other messages, prefixed by an int16 version.

- ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``: what members of protocol
  type ``consumer`` put in JoinGroup ``metadata`` and SyncGroup ``assignment``. A newer
  version than we know is read with the newest known layout, as Kafka's ConsumerProtocol
  does (new versions only append fields).
- ``ControlRecordTypeSchema`` / ``EndTxnMarker``: key and value of transaction-marker
  control records (see ``records.py``).

>>> from fakebroker.protocol import data
>>> raw = data.encode_subscription(["orders"], version=1)
>>> data.decode_subscription(raw).topics
['orders']
"""

from __future__ import annotations

import struct
from typing import Any

from .errors import DecodeError, EncodeError
from .messages import message_type
from .schema import Message

_version = struct.Struct(">h")

SUBSCRIPTION = "ConsumerProtocolSubscription"
ASSIGNMENT = "ConsumerProtocolAssignment"
CONTROL_RECORD_KEY = "ControlRecordTypeSchema"
END_TXN_MARKER = "EndTxnMarker"


def encode_versioned(name: str, value: Message | dict[str, Any], version: int) -> bytes:
    """int16 version followed by the schema's fields at that version."""
    mt = message_type(name)
    if version not in mt.versions:
        raise EncodeError(f"{name} has no version {version} (known: {list(mt.versions)})")
    return _version.pack(version) + mt.encode(value, version)


def decode_versioned(
    name: str, raw: bytes | bytearray | memoryview, *, newer_as_latest: bool = True
) -> tuple[int, Message]:
    """(version as written, message). With ``newer_as_latest`` a version above the newest
    known one is read with the newest layout (Kafka's forward-compatibility rule)."""
    mt = message_type(name)
    if len(raw) < 2:
        raise DecodeError(name, None, None, 0, "no int16 version prefix")
    (version,) = _version.unpack_from(raw, 0)
    read_as = version
    if version > mt.versions[-1] and newer_as_latest:
        read_as = mt.versions[-1]
    if read_as not in mt.versions:
        raise DecodeError(name, None, version, 0, f"unsupported version {version}")
    try:
        return version, mt.decode(bytes(raw[2:]), read_as)
    except DecodeError as exc:  # report offsets in the caller's buffer, prefix included
        raise DecodeError(name, None, version, exc.offset + 2, exc.reason) from None


def encode_subscription(
    topics: list[str],
    user_data: bytes | None = None,
    *,
    owned_partitions: dict[str, list[int]] | None = None,
    generation_id: int = -1,
    rack_id: str | None = None,
    version: int = 3,
) -> bytes:
    owned = [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted((owned_partitions or {}).items())]
    return encode_versioned(
        SUBSCRIPTION,
        {
            "topics": list(topics),
            "user_data": user_data,
            "owned_partitions": owned,
            "generation_id": generation_id,
            "rack_id": rack_id,
        },
        version,
    )


def decode_subscription(raw: bytes | bytearray | memoryview) -> Message:
    """The subscription of a JoinGroup member of protocol type ``consumer``."""
    return decode_versioned(SUBSCRIPTION, raw)[1]


def encode_assignment(assignment: dict[str, list[int]], user_data: bytes | None = None, *, version: int = 3) -> bytes:
    parts = [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(assignment.items())]
    return encode_versioned(ASSIGNMENT, {"assigned_partitions": parts, "user_data": user_data}, version)


def decode_assignment(raw: bytes | bytearray | memoryview) -> Message:
    """The assignment a consumer-protocol leader sent in SyncGroup for one member."""
    return decode_versioned(ASSIGNMENT, raw)[1]


def assignment_dict(raw: bytes | bytearray | memoryview) -> dict[str, list[int]]:
    """An assignment as ``{topic: [partitions]}``; empty bytes (no assignment) give ``{}``."""
    if not raw:
        return {}
    return {tp.topic: list(tp.partitions) for tp in decode_assignment(raw).assigned_partitions}

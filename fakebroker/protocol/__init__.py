"""Kafka's wire protocol, byte-exact: typed messages built from Kafka's own JSON specs.

Layers (each importable on its own, none imports trio or the broker):

- ``messages``: every request/response/data schema at every version (3.9.2 and 4.3.1 union)
- ``headers``: request/response headers and whole payloads
- ``framing``: the int32 size prefix, sans-IO
- ``records``: RecordBatch v2 and legacy MessageSet v0/v1, CRCs, in-place rewrites
- ``compression``: gzip, snappy (xerial framing), lz4 frame, zstd
- ``data``: consumer-protocol subscriptions/assignments and control-record payloads
- ``error_codes``: Kafka's error codes by name
"""

from .errors import (
    DecodeError,
    EncodeError,
    FrameTooLargeError,
    InvalidFrameError,
    ProtocolError,
    UnsupportedVersionError,
)
from .messages import Message, MessageType, api_keys, api_versions, message_type, request_type, response_type

__all__ = [
    "DecodeError",
    "EncodeError",
    "FrameTooLargeError",
    "InvalidFrameError",
    "ProtocolError",
    "UnsupportedVersionError",
    "Message",
    "MessageType",
    "api_keys",
    "api_versions",
    "message_type",
    "request_type",
    "response_type",
]

"""Request and response headers, and whole request/response payloads (without the size prefix).

The header version follows Kafka's generator rule: for API key K at version V, a flexible V
means request header v2 / response header v1, otherwise v1 / v0. Exceptions: ApiVersions
responses always use header v0 (a client must read the correlation id before it knows
what the broker speaks), and ControlledShutdown v0 requests use request header v0.
The rule applies to versions the broker does not support too, so a server can always read
the header and answer.
"""

from __future__ import annotations

import io
import struct
from functools import cache
from typing import Any

from ..lazy_dataclasses import dataclass
from .errors import DecodeError, UnsupportedVersionError
from .messages import MessageType, message_type, request_type, response_type
from .schema import Message
from .specs import families

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7
_key_version = struct.Struct(">hhi")
_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")


@cache
def _flexible_from() -> dict[int, int | None]:
    """API key -> first flexible version (None = never); equal in every shipped spec set."""
    out: dict[int, int | None] = {}
    for fam in families().values():
        if fam.type == "request" and fam.api_key is not None:
            rng = fam.specs[0].flexible_versions
            out[fam.api_key] = None if rng.empty else rng.low
    return out


def is_flexible(api_key: int, api_version: int) -> bool:
    first = _flexible_from().get(api_key)
    return first is not None and api_version >= first


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def request_header_type() -> MessageType:
    return message_type("RequestHeader")


def response_header_type() -> MessageType:
    return message_type("ResponseHeader")


@dataclass
class Request:
    """A decoded request: its header and its typed body."""

    header: Message  # RequestHeader: request_api_key, request_api_version, correlation_id, client_id
    body: Message

    @property
    def api_key(self) -> int:
        key: int = self.header.request_api_key
        return key

    @property
    def api_version(self) -> int:
        version: int = self.header.request_api_version
        return version

    @property
    def correlation_id(self) -> int:
        correlation_id: int = self.header.correlation_id
        return correlation_id


def peek_request(payload: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request, read without decoding the rest."""
    if len(payload) < 8:
        raise DecodeError("RequestHeader", None, None, len(payload), "a request header needs at least 8 bytes")
    return _key_version.unpack_from(payload, 0)


def decode_request_header(payload: bytes | bytearray | memoryview) -> tuple[Message, io.BytesIO]:
    """Decode just the header; returns it and a stream positioned at the body.

    Works for any API key and version (even unknown ones) because the header version
    depends only on the flexible threshold, as on a real broker; an unknown API key gets
    header v1, which is what Kafka assumes too.
    """
    return decode_peeked_header(payload, *peek_request(payload))


def decode_peeked_header(
    payload: bytes | bytearray | memoryview, api_key: int, api_version: int, correlation_id: int
) -> tuple[Message, io.BytesIO]:
    """:func:`decode_request_header` for a caller that has just called :func:`peek_request`."""
    version = request_header_version(api_key, api_version)
    if version:
        found = _fast_request_header(payload, version, api_key, api_version, correlation_id)
        if found is not None:
            return found
    return _decode_request_header(payload, version)


def _decode_request_header(payload: bytes | bytearray | memoryview, version: int) -> tuple[Message, io.BytesIO]:
    """The generic schema's reading (and its errors), for what the fast path leaves."""
    stream = io.BytesIO(payload)
    header = request_header_type().decode_from(stream, version)
    return header, stream


def _fast_request_header(
    payload: bytes | bytearray | memoryview, version: int, api_key: int, api_version: int, correlation_id: int
) -> tuple[Message, io.BytesIO] | None:
    """Header v1/v2 read by hand, as every request has one: the same message the schema
    builds, or None for anything unusual (the schema then reads it, and raises)."""
    end = len(payload)
    if end < 10:
        return None
    size = _i16.unpack_from(payload, 8)[0]
    pos = 10
    if size == -1:
        client_id = None
    elif 0 <= size <= end - pos:
        try:
            raw = payload[pos : pos + size]
            client_id = (raw if type(raw) is bytes else bytes(raw)).decode("utf-8")
        except UnicodeDecodeError:
            return None
        pos += size
    else:
        return None
    if version == 2:  # an empty tagged-field section; any tag goes the generic way
        if pos >= end or payload[pos] != 0:
            return None
        pos += 1
    cls = request_header_type().cls
    header = cls.__new__(cls)
    header.request_api_key, header.request_api_version, header.correlation_id = api_key, api_version, correlation_id
    header.client_id = client_id
    header._unknown_tagged_fields = {}
    stream = io.BytesIO(payload)
    stream.seek(pos)
    return header, stream


def decode_request(payload: bytes | bytearray | memoryview) -> Request:
    """Decode a whole request payload (the frame without its size prefix).

    Raises UnsupportedVersionError for an API key or version no shipped spec defines and
    DecodeError for bytes that do not parse.
    """
    header, stream = decode_request_header(payload)
    mt = request_type(header.request_api_key)
    if header.request_api_version not in mt.family.by_version:
        raise UnsupportedVersionError(f"{mt.name} v{header.request_api_version} is not known")
    return Request(header, mt.decode_from(stream, header.request_api_version))


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    body: Message | dict[str, Any],
    client_id: str | None = "fakebroker",
) -> bytes:
    """A request payload (header + body), as a client would send it, without the size prefix."""
    stream = io.BytesIO()
    header = {
        "request_api_key": api_key,
        "request_api_version": api_version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    request_header_type().encode_into(stream, header, request_header_version(api_key, api_version))
    request_type(api_key).encode_into(stream, body, api_version)
    return stream.getvalue()


def prepare(api_key: int, api_version: int) -> None:
    """Build the codecs of this API and version's request and response (with their headers)
    now, so that :func:`encode_response` and a body's decode may then run on another thread
    (they only read built codecs; building one is not meant to race)."""
    request_header_type().codec(request_header_version(api_key, api_version))
    response_header_type().codec(response_header_version(api_key, api_version))
    request_type(api_key).codec(api_version)
    response_type(api_key).codec(api_version)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Message | dict[str, Any]) -> bytes:
    """A response payload (header + body) without the size prefix."""
    stream = io.BytesIO()
    version = response_header_version(api_key, api_version)
    try:  # the header by hand: an int32, and in v1 an empty tagged-field section
        stream.write(_i32.pack(correlation_id) + b"\x00" if version else _i32.pack(correlation_id))
    except struct.error:  # the schema's error for it
        stream = io.BytesIO()
        response_header_type().encode_into(stream, {"correlation_id": correlation_id}, version)
    response_type(api_key).encode_into(stream, body, api_version)
    return stream.getvalue()


def decode_response(api_key: int, api_version: int, payload: bytes | bytearray | memoryview) -> tuple[Message, Message]:
    """(header, body) of a response payload; the caller knows which request it answers."""
    stream = io.BytesIO(payload)
    header = response_header_type().decode_from(stream, response_header_version(api_key, api_version))
    return header, response_type(api_key).decode_from(stream, api_version)


__all__ = [
    "Request",
    "request_header_version",
    "response_header_version",
    "is_flexible",
    "peek_request",
    "decode_request_header",
    "decode_request",
    "encode_request",
    "encode_response",
    "decode_response",
    "UnsupportedVersionError",
]

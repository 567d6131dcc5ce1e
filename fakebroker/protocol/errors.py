"""The exceptions the protocol layer raises.

Decoding never lets an IndexError, struct.error or construct error escape: whatever is
wrong with the bytes becomes a :class:`DecodeError` that says which message, which
version and at which byte offset decoding stopped.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base class of everything the protocol layer raises on bad input or values."""


class DecodeError(ProtocolError):
    """Bytes that cannot be decoded as the named message.

    Attributes: ``message`` (e.g. ``"JoinGroupRequest"``), ``api_key`` (None for headers
    and data schemas), ``version``, ``offset`` (byte position in the decoded buffer where
    decoding failed) and ``reason``.
    """

    def __init__(self, message: str, api_key: int | None, version: int | None, offset: int, reason: str):
        self.message = message
        self.api_key = api_key
        self.version = version
        self.offset = offset
        self.reason = reason
        where = f"{message} v{version}" if version is not None else message
        key = f" (api key {api_key})" if api_key is not None else ""
        super().__init__(f"cannot decode {where}{key} at byte {offset}: {reason}")


class EncodeError(ProtocolError):
    """Values that cannot be encoded in the requested message version."""


class UnsupportedVersionError(ProtocolError):
    """A message version (or API key) that no shipped spec defines."""


class FrameTooLargeError(ProtocolError):
    """A size prefix larger than the configured maximum (Kafka's ``socket.request.max.bytes``)."""

    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(f"frame of {size} bytes is larger than the maximum of {limit} (socket.request.max.bytes)")


class InvalidFrameError(ProtocolError):
    """A size prefix that cannot be right (negative)."""

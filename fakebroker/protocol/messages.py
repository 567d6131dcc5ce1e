"""The registry of every Kafka message: typed classes and per-version codecs.

>>> from fakebroker.protocol import messages
>>> heartbeat = messages.request_type(12)           # HeartbeatRequest
>>> body = heartbeat.encode({"group_id": "g", "generation_id": 1, "member_id": "m"}, version=3)
>>> heartbeat.decode(body, version=3).group_id
'g'
"""

from __future__ import annotations

import io
from functools import cache
from typing import Any

import construct as c

from .errors import DecodeError, EncodeError, UnsupportedVersionError
from .schema import ClassBuilder, FieldInfo, Message, StructCodec, build_codec
from .specs import SpecFamily, families


class MessageType:
    """One message (e.g. ``JoinGroupRequest``) across all the versions fakebroker knows."""

    def __init__(self, family: SpecFamily):
        self.family = family
        self.name = family.name
        self.api_key = family.api_key
        self.kind = family.type  # request | response | header | data
        self.versions: tuple[int, ...] = tuple(family.versions)
        self._classes = ClassBuilder(family)
        self.cls: type[Message] = self._classes.message_class(family.name)
        self._codecs: dict[int, StructCodec] = {}

    def __repr__(self) -> str:
        return (
            f"<MessageType {self.name} v{self.versions[0]}-{self.versions[-1]}>"
            if self.versions
            else f"<MessageType {self.name}>"
        )

    @property
    def structs(self) -> dict[str, type[Message]]:
        """Every class of this message by struct name, the message's own included."""
        return dict(self._classes.classes)

    def is_flexible(self, version: int) -> bool:
        return version in self.family.spec(version).flexible_versions

    def new(self, **values: Any) -> Message:
        """A message with the given fields and spec defaults for the rest."""
        return self.cls(**values)

    def codec(self, version: int) -> StructCodec:
        """The construct that reads and writes this message at ``version`` (built once, cached)."""
        codec = self._codecs.get(version)
        if codec is None:
            if version not in self.family.by_version:
                raise UnsupportedVersionError(f"{self.name} has no version {version} (known: {list(self.versions)})")
            codec = self._codecs[version] = build_codec(self.family.spec(version), self._classes, version)
        return codec

    def fields(self, version: int) -> list[dict[str, Any]]:
        """The spec's field list (raw JSON dicts) for the file that defines ``version``."""
        return self.family.spec(version).fields

    def decode(self, data: bytes | bytearray | memoryview, version: int, *, strict: bool = False) -> Message:
        """Decode a message body. Like Kafka, bytes left over at the end are ignored unless ``strict``."""
        stream = io.BytesIO(data)
        try:
            msg = self.codec(version)._parsereport(stream, c.Container(), self.name)
            if strict and stream.tell() != len(data):
                raise ValueError(f"{len(data) - stream.tell()} bytes left over after the message")
            return msg
        except UnsupportedVersionError:
            raise
        except (c.ConstructError, ValueError, OverflowError, UnicodeDecodeError, IndexError, TypeError) as exc:
            raise DecodeError(self.name, self.api_key, version, stream.tell(), _reason(exc)) from None

    def decode_from(self, stream: io.BytesIO, version: int) -> Message:
        """Decode from a stream positioned at the body (the headers module uses this)."""
        try:
            return self.codec(version)._parsereport(stream, c.Container(), self.name)
        except UnsupportedVersionError:
            raise
        except (c.ConstructError, ValueError, OverflowError, UnicodeDecodeError, IndexError, TypeError) as exc:
            raise DecodeError(self.name, self.api_key, version, stream.tell(), _reason(exc)) from None

    def encode(self, value: Message | dict[str, Any], version: int) -> bytes:
        """Encode a message (or a dict of its fields) at ``version``.

        Fields the version does not carry are left out, as Kafka does for ``ignorable`` ones.
        """
        stream = io.BytesIO()
        self.encode_into(stream, value, version)
        return stream.getvalue()

    def encode_into(self, stream: io.BytesIO, value: Message | dict[str, Any], version: int) -> None:
        if isinstance(value, dict):
            value = self.cls.from_dict(value)
        elif not isinstance(value, self.cls):
            raise EncodeError(f"{self.name} cannot encode a {type(value).__name__}")
        try:
            self.codec(version)._build(value, stream, c.Container(), self.name)
        except UnsupportedVersionError:
            raise
        except (
            c.ConstructError,
            ValueError,
            OverflowError,
            TypeError,
            AttributeError,
            UnicodeEncodeError,
            KeyError,
        ) as exc:
            raise EncodeError(f"cannot encode {self.name} v{version}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    trail = getattr(exc, "kafka_path", None)
    where = f" in {' <- '.join(trail)}" if trail else ""
    return f"{type(exc).__name__}{where}: {text}"


@cache
def message_type(name: str) -> MessageType:
    """Any message by its spec name: ``"FetchResponse"``, ``"ConsumerProtocolAssignment"``, ..."""
    try:
        return MessageType(families()[name])
    except KeyError:
        raise UnsupportedVersionError(f"no message named {name!r}") from None


@cache
def _by_key() -> dict[tuple[int, str], str]:
    return {(f.api_key, f.type): f.name for f in families().values() if f.api_key is not None}


def request_type(api_key: int) -> MessageType:
    """The request message of an API key."""
    try:
        return message_type(_by_key()[(api_key, "request")])
    except KeyError:
        raise UnsupportedVersionError(f"unknown API key {api_key}") from None


def response_type(api_key: int) -> MessageType:
    """The response message of an API key."""
    try:
        return message_type(_by_key()[(api_key, "response")])
    except KeyError:
        raise UnsupportedVersionError(f"unknown API key {api_key}") from None


def api_keys() -> dict[int, str]:
    """API key -> API name (``0: "Produce"``) for every key some shipped spec defines."""
    return {key: name[: -len("Request")] for (key, kind), name in sorted(_by_key().items()) if kind == "request"}


def api_versions(api_key: int) -> tuple[int, ...]:
    """Every version of an API that fakebroker can read and write (the 3.9 and 4.3.1 union)."""
    return request_type(api_key).versions


def all_message_names() -> list[str]:
    return sorted(families())


__all__ = [
    "MessageType",
    "Message",
    "FieldInfo",
    "message_type",
    "request_type",
    "response_type",
    "api_keys",
    "api_versions",
    "all_message_names",
]

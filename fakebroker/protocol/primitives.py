"""construct primitives for Kafka's request/response encoding.

Fixed-width integers come straight from construct. What construct lacks is here: Kafka's
strings, bytes and arrays in both their classic (int16/int32 length, -1 = null) and
compact (unsigned varint length + 1, 0 = null) forms, the UUID, and nullable structs.
Each class parses from and builds to a stream like any construct, so they compose with
construct's own types and work with ``.parse()`` / ``.build()`` on their own.
"""

from __future__ import annotations

import io
import struct
import uuid
from typing import Any

import construct as c


class KNumber(c.Construct):
    """A fixed-width big-endian number. Same bytes as construct's ``Int32sb`` and friends,
    with a precompiled ``struct.Struct`` because these sit on the hottest path."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.packer = struct.Struct(fmt)
        self.size = self.packer.size

    def _parse(self, stream: io.BytesIO, context: Any, path: str) -> Any:
        data = stream.read(self.size)
        if len(data) != self.size:
            raise c.StreamError(f"needed {self.size} bytes, only {len(data)} left")
        return self.packer.unpack(data)[0]

    def _build(self, obj: Any, stream: io.BytesIO, context: Any, path: str) -> Any:
        try:
            stream.write(self.packer.pack(obj))
        except struct.error as exc:
            raise c.FormatFieldError(f"{obj!r} does not fit {self.packer.format}: {exc}") from None
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        return self.size


Int8 = KNumber(">b")
Int16 = KNumber(">h")
Int32 = KNumber(">i")
Int64 = KNumber(">q")
UInt16 = KNumber(">H")
UInt32 = KNumber(">I")
Float64 = KNumber(">d")
ZERO_UUID = uuid.UUID(int=0)

_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")


class KafkaFormatError(c.ConstructError):
    """Input bytes that no Kafka encoder could have produced (bad length, null where forbidden)."""


def read(stream: io.BytesIO, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise c.StreamError(f"needed {n} bytes, only {len(data)} left")
    return data


def remaining(stream: io.BytesIO) -> int:
    pos = stream.tell()
    end = stream.seek(0, io.SEEK_END)
    stream.seek(pos)
    return end - pos


def read_uvarint(stream: io.BytesIO) -> int:
    result = shift = 0
    while True:
        byte = stream.read(1)
        if not byte:
            raise c.StreamError("unsigned varint truncated")
        b = byte[0]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result
        shift += 7
        if shift > 63:
            raise KafkaFormatError("unsigned varint longer than 10 bytes")


ONE_BYTE = [bytes((i,)) for i in range(0x80)]  # unsigned varints of one byte, made once


def write_uvarint(stream: io.BytesIO, value: int) -> None:
    if 0 <= value < 0x80:  # lengths and counts are nearly always this small
        stream.write(ONE_BYTE[value])
        return
    if value < 0:
        raise c.IntegerError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    stream.write(out)


def uvarint_bytes(value: int) -> bytes:
    buf = io.BytesIO()
    write_uvarint(buf, value)
    return buf.getvalue()


class _Length(c.Construct):
    """Shared length-prefix logic: returns None for null, else a non-negative length."""

    def __init__(self, compact: bool, wide: bool, nullable: bool, what: str) -> None:
        super().__init__()
        self.compact, self.wide, self.nullable, self.what = compact, wide, nullable, what

    def read_length(self, stream: io.BytesIO) -> int | None:
        if self.compact:
            n = read_uvarint(stream) - 1
        elif self.wide:
            n = _i32.unpack(read(stream, 4))[0]
        else:
            n = _i16.unpack(read(stream, 2))[0]
        if n < 0:
            if n == -1 and self.nullable:
                return None
            if n == -1:
                raise KafkaFormatError(f"non-nullable {self.what} was serialized as null")
            raise KafkaFormatError(f"negative {self.what} length {n}")
        return n

    def write_length(self, stream: io.BytesIO, n: int | None) -> None:
        if n is None:
            if not self.nullable:
                raise KafkaFormatError(f"null given for a non-nullable {self.what}")
            n = -1
        if self.compact:
            write_uvarint(stream, n + 1)
        elif self.wide:
            stream.write(_i32.pack(n))
        else:
            if n > 0x7FFF:
                raise KafkaFormatError(f"{self.what} of {n} bytes is longer than an int16 length allows")
            stream.write(_i16.pack(n))


class KString(_Length):
    """Kafka ``string``: UTF-8 with an int16 length, or a compact length in flexible versions."""

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__(compact, wide=False, nullable=nullable, what="string")

    def _parse(self, stream: io.BytesIO, context: Any, path: str) -> Any:
        n = self.read_length(stream)
        if n is None:
            return None
        return read(stream, n).decode("utf-8")

    def _build(self, obj: Any, stream: io.BytesIO, context: Any, path: str) -> Any:
        data = None if obj is None else obj.encode("utf-8")
        self.write_length(stream, None if data is None else len(data))
        if data:
            stream.write(data)
        return obj


class KBytes(_Length):
    """Kafka ``bytes`` and ``records``: an int32 length, or a compact length when flexible."""

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__(compact, wide=True, nullable=nullable, what="bytes")

    def _parse(self, stream: io.BytesIO, context: Any, path: str) -> Any:
        n = self.read_length(stream)
        if n is None:
            return None
        return read(stream, n)

    def _build(self, obj: Any, stream: io.BytesIO, context: Any, path: str) -> Any:
        self.write_length(stream, None if obj is None else len(obj))
        if obj:
            stream.write(obj)
        return obj


class KArray(_Length):
    """Kafka ``[]T``: an int32 count, or a compact count when flexible, then the elements."""

    def __init__(self, element: c.Construct, compact: bool, nullable: bool) -> None:
        super().__init__(compact, wide=True, nullable=nullable, what="array")
        self.element = element

    def _parse(self, stream: io.BytesIO, context: Any, path: str) -> Any:
        n = self.read_length(stream)
        if n is None:
            return None
        # As Kafka does: a count larger than the bytes left cannot be honest, and must not
        # make us loop or allocate for billions of (possibly zero-width) elements.
        if n > 64 and n > remaining(stream):
            raise KafkaFormatError(f"array of {n} elements but only {remaining(stream)} bytes left")
        element = self.element
        if isinstance(element, KNumber):  # []int32 and friends: one unpack for the lot
            data = read(stream, n * element.size)
            return list(struct.unpack(f">{n}{element.packer.format[1:]}", data))
        parse = element._parse
        return [parse(stream, context, path) for _ in range(n)]

    def _build(self, obj: Any, stream: io.BytesIO, context: Any, path: str) -> Any:
        self.write_length(stream, None if obj is None else len(obj))
        if obj:
            element = self.element
            if isinstance(element, KNumber):
                try:
                    stream.write(struct.pack(f">{len(obj)}{element.packer.format[1:]}", *obj))
                except struct.error as exc:
                    raise c.FormatFieldError(f"array element does not fit {element.packer.format}: {exc}") from None
                return obj
            build = element._build
            for item in obj:
                build(item, stream, context, path)
        return obj


class EncodedOnce(tuple[Any, ...]):
    """An array of structs that never changes (ApiVersions' entries of a release, sent on
    every new connection): the compiled codec encodes its elements once per element codec and
    writes those bytes afterwards. Anything else reads it as the tuple it is."""

    def __new__(cls, items: Any) -> EncodedOnce:
        return super().__new__(cls, items)

    def __init__(self, items: Any) -> None:
        self.encodings: dict[Any, bytes] = {}  # element build function -> the elements' bytes

    def encoded(self, build: Any, context: Any, path: str) -> bytes:
        found = self.encodings.get(build)
        if found is None:
            stream = io.BytesIO()
            for item in self:
                build(item, stream, context, path)
            found = self.encodings[build] = stream.getvalue()
        return found


class KUuid(c.Construct):
    """Kafka ``uuid``: 16 bytes, most significant half first; no null (all-zero = none)."""

    def _parse(self, stream: io.BytesIO, context: Any, path: str) -> Any:
        return uuid.UUID(bytes=read(stream, 16))

    def _build(self, obj: Any, stream: io.BytesIO, context: Any, path: str) -> Any:
        if obj is None:
            obj = ZERO_UUID
        stream.write(obj.bytes)
        return obj


class KBool(c.Construct):
    """Kafka ``bool``: one byte; any non-zero byte reads as true, as Java's reader does."""

    def _parse(self, stream: io.BytesIO, context: Any, path: str) -> Any:
        return read(stream, 1) != b"\x00"

    def _build(self, obj: Any, stream: io.BytesIO, context: Any, path: str) -> Any:
        stream.write(b"\x01" if obj else b"\x00")
        return obj


class NullableStruct(c.Construct):
    """A struct field that may be null in this version: int8 -1 = null, 1 = present."""

    def __init__(self, subcon: c.Construct) -> None:
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream: io.BytesIO, context: Any, path: str) -> Any:
        if read(stream, 1)[0] >= 0x80:  # Java reads any negative byte as null
            return None
        return self.subcon._parse(stream, context, path)

    def _build(self, obj: Any, stream: io.BytesIO, context: Any, path: str) -> Any:
        if obj is None:
            stream.write(b"\xff")
            return None
        stream.write(b"\x01")
        self.subcon._build(obj, stream, context, path)
        return obj

"""Zig-zag varints (record level), read and written the way Java's ``ByteUtils`` does."""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------------
# Zig-zag varints (record level)
# --------------------------------------------------------------------------------------------


class _Underflow(Exception):
    """Internal: ran past the end of a buffer while decoding records."""


class _BadVarint(Exception):
    """Internal: a varint longer than Java's ``ByteUtils`` accepts."""


def _varint32(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint (int32) at ``pos`` -> (value, new pos), as ``ByteUtils.readVarint``.

    At most 5 bytes; bits beyond 32 are dropped like Java's ``int`` arithmetic does.
    """
    raw = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            raise _BadVarint("Varint is too long, the most significant bit in the 5th byte is set")
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def _varint64(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varlong (int64), at most 10 bytes (``ByteUtils.readVarlong``)."""
    raw = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise _BadVarint("Varlong is too long, most significant bit in the 10th byte is set")
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


_ONE_BYTE_VARINTS: Final = [bytes([i]) for i in range(0x80)]


def _zigzag_varint(value: int) -> bytes:
    """Zig-zag encode a signed int64 as a protobuf-style varint."""
    z = (value << 1) ^ (value >> 63)
    if z < 0x80:
        return _ONE_BYTE_VARINTS[z]
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)

"""Zig-zag varints (record level), read and written the way Java's ``ByteUtils`` does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

# --------------------------------------------------------------------------------------------
# Zig-zag varints (record level)
# --------------------------------------------------------------------------------------------


class _Underflow(Exception):
    """Internal: ran past the end of a buffer while decoding records."""


class _BadVarint(Exception):
    """Internal: a varint longer than Java's ``ByteUtils`` accepts."""


def _zigzag_reader(bits: int, too_long: str) -> Callable[[bytes, int], tuple[int, int]]:
    """A reader of one zig-zag varint of ``bits`` bits: ``(buf, pos) -> (value, new pos)``.

    At most ``ceil(bits / 7)`` bytes (a longer one raises :class:`_BadVarint` with ``too_long``,
    Java's message); bits beyond ``bits`` are dropped like Java's ``int``/``long`` arithmetic does.
    """
    max_shift = (bits - 1) // 7 * 7  # the shift of the last byte allowed: 28 (int32), 63 (int64)
    mask = (1 << bits) - 1

    def read(buf: bytes, pos: int) -> tuple[int, int]:
        raw = 0
        shift = 0
        while True:
            b = buf[pos]
            pos += 1
            raw |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > max_shift:
                raise _BadVarint(too_long)
        raw &= mask
        return (raw >> 1) ^ -(raw & 1), pos

    return read


#: Zig-zag varint (int32), at most 5 bytes (``ByteUtils.readVarint``).
_varint32: Final = _zigzag_reader(32, "Varint is too long, the most significant bit in the 5th byte is set")
#: Zig-zag varlong (int64), at most 10 bytes (``ByteUtils.readVarlong``).
_varint64: Final = _zigzag_reader(64, "Varlong is too long, most significant bit in the 10th byte is set")

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

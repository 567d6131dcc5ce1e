"""Compression codecs of Kafka record batches, as Kafka's Java client writes and reads them.

Codec ids are the low three bits of a batch's (or legacy message's) attributes:
0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5-7 are unassigned.

All the actual compression is done by ``cramjam``; this module only deals with the
framing Kafka puts around it:

* gzip -- an ordinary gzip stream (several concatenated members are read too, like
  ``java.util.zip.GZIPInputStream``).
* snappy -- the snappy-java ("xerial") stream format that ``SnappyOutputStream`` writes:
  ``b"\\x82SNAPPY\\x00"``, int32 version 1, int32 minimum compatible version 1, then blocks of
  (int32 big-endian length, raw snappy block), each block holding at most 32 KiB of input.
  On read, raw snappy (no framing: some non-Java clients send it) and the official snappy
  framing format are accepted as well; the xerial magic tells them apart.
* lz4 -- the LZ4 *frame* format with independent blocks (Kafka's ``Lz4BlockInputStream``
  refuses linked blocks, so we never write them; we do read them). Legacy magic-0 messages
  carry the historic wrong frame-descriptor checksum (computed over the header *including*
  the 4 magic bytes): pass ``broken_lz4_checksum=True`` to write or to accept it.
* zstd -- a standard zstd frame (level 3, Kafka's default).

This module imports nothing from trio or the server.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import ModuleType
from typing import Final


def _cramjam() -> ModuleType:
    """cramjam, imported at its first use (the import lock makes that safe from any thread): a
    start that meets no compressed batch does not pay for it (2 ms)."""
    import cramjam

    return cramjam


__all__ = [
    "CODEC_NAMES",
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "CompressionError",
    "DecompressedTooLarge",
    "UnsupportedCodec",
    "codec_name",
    "compress",
    "decompress",
    "xxh32",
]

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4

#: Codec id -> the name Kafka uses in ``compression.type``.
CODEC_NAMES: Final[dict[int, str]] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE: Final = len(_XERIAL_HEADER)  # 16
_XERIAL_BLOCK_SIZE: Final = 32 * 1024  # snappy-java SnappyOutputStream.DEFAULT_BLOCK_SIZE
_SNAPPY_FRAMING_MAGIC: Final = b"\xff\x06\x00\x00sNaPpY"  # the official framing format's stream id

_LZ4_FRAME_MAGIC: Final = b"\x04\x22\x4d\x18"
_ZSTD_LEVEL: Final = 3  # Kafka's default zstd level (cramjam's own default is 11: slow)


class CompressionError(ValueError):
    """Data could not be compressed or decompressed with the given codec."""

    def __init__(self, codec: int, message: str) -> None:
        super().__init__(message)
        self.codec = codec


class UnsupportedCodec(CompressionError):
    """The codec id is not one of 0-4 (Kafka has no codec 5, 6 or 7)."""


class DecompressedTooLarge(CompressionError):
    """The stream decompresses to more than the ``max_size`` it was read with.

    ``prefix`` holds the first ``max_size`` decompressed bytes, so a caller can still tell a
    malformed stream (which Kafka, reading records one by one, would refuse on the way) from a
    well-formed one that is merely too large. Nothing beyond ``max_size`` + 1 bytes is ever
    produced: a decompression bomb costs at most that much memory.
    """

    def __init__(self, codec: int, max_size: int, prefix: bytes) -> None:
        super().__init__(codec, f"{CODEC_NAMES[codec]} stream decompresses to more than {max_size} bytes")
        self.max_size = max_size
        self.prefix = prefix


def codec_name(codec: int) -> str:
    """The Kafka name of a codec id, e.g. ``"lz4"``; raises :class:`UnsupportedCodec`."""
    try:
        return CODEC_NAMES[codec]
    except (KeyError, TypeError):
        raise UnsupportedCodec(codec, f"unknown compression codec id {codec!r}") from None


def compress(codec: int, data: bytes, *, broken_lz4_checksum: bool = False) -> bytes:
    """Compress ``data`` into the stream format Kafka's Java client writes for ``codec``.

    ``broken_lz4_checksum`` writes the wrong LZ4 frame-descriptor checksum that Kafka uses
    for magic-0 messages (ignored for other codecs).
    """
    codec_name(codec)
    data = bytes(data)
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return bytes(_cramjam().gzip.compress(data))
        if codec == SNAPPY:
            return _xerial_compress(data)
        if codec == LZ4:
            return _lz4_compress(data, broken_lz4_checksum)
        return bytes(_cramjam().zstd.compress(data, level=_ZSTD_LEVEL))
    except CompressionError:
        raise
    except Exception as exc:  # cramjam raises its own error types
        raise CompressionError(codec, f"{CODEC_NAMES[codec]} compression failed: {exc}") from exc


def decompress(codec: int, data: bytes, *, broken_lz4_checksum: bool = False, max_size: int | None = None) -> bytes:
    """Decompress a Kafka ``codec`` stream; raises :class:`CompressionError` on bad data.

    ``broken_lz4_checksum`` accepts (ignores) the LZ4 frame-descriptor checksum, as Kafka does
    for magic-0 messages, whose writers computed it wrongly.

    ``max_size`` bounds the output: a stream that decompresses to more raises
    :class:`DecompressedTooLarge` (carrying the first ``max_size`` bytes) without ever
    holding more than ``max_size`` + 1 bytes -- cramjam decompresses *into* a buffer of that
    size and stops when it is full, so a 32 KB zstd frame of zeros costs no more than the cap.
    """
    codec_name(codec)
    data = bytes(data)
    if max_size is not None and max_size < 0:
        raise ValueError(f"max_size must be >= 0, not {max_size}")
    try:
        if codec == NONE:
            if max_size is not None and len(data) > max_size:
                raise DecompressedTooLarge(codec, max_size, data[:max_size])
            return data
        if codec == SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec == LZ4 and broken_lz4_checksum:
            data = _lz4_fix_checksum(data)
        module = getattr(_cramjam(), {GZIP: "gzip", LZ4: "lz4", ZSTD: "zstd"}[codec])
        if max_size is None:
            return bytes(module.decompress(data))
        return _decompress_bounded(codec, module.decompress_into, data, max_size)
    except CompressionError:
        raise
    except Exception as exc:  # cramjam.DecompressionError and friends
        raise CompressionError(codec, f"{CODEC_NAMES[codec]} decompression failed: {exc}") from exc


_FIRST_BUFFER: Final = 64 * 1024
_FULL_BUFFER_ERROR: Final = "failed to write whole buffer"  # what cramjam says when the output buffer is full


def _decompress_bounded(
    codec: int, decompress_into: Callable[[bytes, bytearray], int], data: bytes, max_size: int
) -> bytes:
    """Decompress into a buffer that grows fourfold up to ``max_size`` + 1 bytes.

    Starting small keeps an ordinary batch cheap; a stream that fills the final buffer is
    larger than ``max_size``. Each retry starts over, so the work is at most ~4/3 of the last.
    """
    size = min(max_size + 1, max(_FIRST_BUFFER, 8 * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = decompress_into(data, out)
        except Exception as exc:
            if _FULL_BUFFER_ERROR not in str(exc):
                raise
            if size > max_size:
                raise DecompressedTooLarge(codec, max_size, bytes(out[:max_size])) from None
            size = min(max_size + 1, size * 4)
            continue
        if n > max_size:  # only when the stream is exactly max_size + 1 bytes long
            raise DecompressedTooLarge(codec, max_size, bytes(out[:max_size]))
        del out[n:]
        return bytes(out)


# --- snappy -------------------------------------------------------------------------------


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = bytes(_cramjam().snappy.compress_raw(data[start : start + _XERIAL_BLOCK_SIZE]))
        out += struct.pack(">i", len(block))
        out += block
    return bytes(out)


def _snappy_decompress(data: bytes, max_size: int | None = None) -> bytes:
    if data.startswith(XERIAL_MAGIC):
        return _xerial_decompress(data, max_size)
    if data.startswith(_SNAPPY_FRAMING_MAGIC):
        if max_size is None:
            return bytes(_cramjam().snappy.decompress(data))
        return _decompress_bounded(SNAPPY, _cramjam().snappy.decompress_into, data, max_size)
    if max_size is not None and _cramjam().snappy.decompress_raw_len(data) > max_size:
        # a raw snappy block declares its length up front: refuse before allocating
        raise DecompressedTooLarge(SNAPPY, max_size, _raw_snappy_prefix(data, max_size))
    return bytes(_cramjam().snappy.decompress_raw(data))


def _raw_snappy_prefix(data: bytes, max_size: int) -> bytes:
    # snappy writes a raw block whole or not at all: with too small a buffer there is no prefix
    return b""


def _xerial_decompress(data: bytes, max_size: int | None = None) -> bytes:
    n = len(data)
    if n < _XERIAL_HEADER_SIZE:
        raise CompressionError(SNAPPY, "snappy: truncated xerial stream header")
    pos = _XERIAL_HEADER_SIZE
    out = bytearray()
    while pos < n:
        # snappy-java accepts several concatenated streams, each with its own header.
        if data.startswith(XERIAL_MAGIC, pos) and n - pos >= _XERIAL_HEADER_SIZE:
            pos += _XERIAL_HEADER_SIZE
            continue
        if n - pos < 4:
            raise CompressionError(SNAPPY, "snappy: truncated xerial block length")
        (length,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if length < 0 or pos + length > n:
            raise CompressionError(SNAPPY, f"snappy: xerial block of {length} bytes at {pos - 4} exceeds the stream")
        block = data[pos : pos + length]
        if max_size is not None and len(out) + _cramjam().snappy.decompress_raw_len(block) > max_size:
            out += _raw_snappy_prefix(block, max_size - len(out))
            raise DecompressedTooLarge(SNAPPY, max_size, bytes(out))
        out += _cramjam().snappy.decompress_raw(block)
        pos += length
    return bytes(out)


# --- lz4 ----------------------------------------------------------------------------------


def xxh32(data: bytes) -> int:
    """XXH32 (seed 0) of ``data``, taken from cramjam's LZ4 frame content checksum.

    cramjam exposes no hash function, but an LZ4 frame with the content-checksum flag ends
    with XXH32(content) little-endian: this avoids a hand-written hash.
    """
    compressor = _cramjam().lz4.Compressor(content_checksum=True)
    compressor.compress(bytes(data))
    frame = bytes(compressor.finish())
    return int.from_bytes(frame[-4:], "little")


def _lz4_descriptor_end(frame: bytes | bytearray) -> int:
    """Index of the HC (header checksum) byte of an LZ4 frame."""
    if len(frame) < 7 or frame[:4] != _LZ4_FRAME_MAGIC:
        raise CompressionError(LZ4, "lz4: not an LZ4 frame (bad magic or too short)")
    flg = frame[4]
    end = 6
    if flg & 0x08:  # content size present
        end += 8
    if flg & 0x01:  # dictionary id present
        end += 4
    if len(frame) <= end:
        raise CompressionError(LZ4, "lz4: truncated frame descriptor")
    return end


def _lz4_compress(data: bytes, broken_checksum: bool) -> bytes:
    compressor = _cramjam().lz4.Compressor(block_linked=False, content_checksum=False)
    compressor.compress(data)
    frame = bytearray(compressor.finish())
    if broken_checksum:
        hc = _lz4_descriptor_end(frame)
        frame[hc] = (xxh32(bytes(frame[:hc])) >> 8) & 0xFF
    return bytes(frame)


def _lz4_fix_checksum(data: bytes) -> bytes:
    """The frame with the correct header checksum in place of the one magic-0 writers put."""
    frame = bytearray(data)
    hc = _lz4_descriptor_end(frame)
    frame[hc] = (xxh32(bytes(frame[4:hc])) >> 8) & 0xFF  # the correct value
    return bytes(frame)

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
from typing import Final

import cramjam

__all__ = [
    "CODEC_NAMES",
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "CompressionError",
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
            return bytes(cramjam.gzip.compress(data))
        if codec == SNAPPY:
            return _xerial_compress(data)
        if codec == LZ4:
            return _lz4_compress(data, broken_lz4_checksum)
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    except CompressionError:
        raise
    except Exception as exc:  # cramjam raises its own error types
        raise CompressionError(codec, f"{CODEC_NAMES[codec]} compression failed: {exc}") from exc


def decompress(codec: int, data: bytes, *, broken_lz4_checksum: bool = False) -> bytes:
    """Decompress a Kafka ``codec`` stream; raises :class:`CompressionError` on bad data.

    ``broken_lz4_checksum`` accepts (ignores) the LZ4 frame-descriptor checksum, as Kafka does
    for magic-0 messages, whose writers computed it wrongly.
    """
    codec_name(codec)
    data = bytes(data)
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            return _lz4_decompress(data, broken_lz4_checksum)
        return bytes(cramjam.zstd.decompress(data))
    except CompressionError:
        raise
    except Exception as exc:  # cramjam.DecompressionError and friends
        raise CompressionError(codec, f"{CODEC_NAMES[codec]} decompression failed: {exc}") from exc


# --- snappy -------------------------------------------------------------------------------


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK_SIZE]))
        out += struct.pack(">i", len(block))
        out += block
    return bytes(out)


def _snappy_decompress(data: bytes) -> bytes:
    if data.startswith(XERIAL_MAGIC):
        return _xerial_decompress(data)
    if data.startswith(_SNAPPY_FRAMING_MAGIC):
        return bytes(cramjam.snappy.decompress(data))
    return bytes(cramjam.snappy.decompress_raw(data))


def _xerial_decompress(data: bytes) -> bytes:
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
        out += cramjam.snappy.decompress_raw(data[pos : pos + length])
        pos += length
    return bytes(out)


# --- lz4 ----------------------------------------------------------------------------------


def xxh32(data: bytes) -> int:
    """XXH32 (seed 0) of ``data``, taken from cramjam's LZ4 frame content checksum.

    cramjam exposes no hash function, but an LZ4 frame with the content-checksum flag ends
    with XXH32(content) little-endian: this avoids a hand-written hash.
    """
    compressor = cramjam.lz4.Compressor(content_checksum=True)
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
    compressor = cramjam.lz4.Compressor(block_linked=False, content_checksum=False)
    compressor.compress(data)
    frame = bytearray(compressor.finish())
    if broken_checksum:
        hc = _lz4_descriptor_end(frame)
        frame[hc] = (xxh32(bytes(frame[:hc])) >> 8) & 0xFF
    return bytes(frame)


def _lz4_decompress(data: bytes, broken_checksum: bool) -> bytes:
    if broken_checksum:
        frame = bytearray(data)
        hc = _lz4_descriptor_end(frame)
        frame[hc] = (xxh32(bytes(frame[4:hc])) >> 8) & 0xFF  # the correct value
        data = bytes(frame)
    return bytes(cramjam.lz4.decompress(data))

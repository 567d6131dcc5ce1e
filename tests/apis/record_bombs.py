"""Batches that are costly to check yet within every limit: many tiny, well-formed records of
two layouts (so no one-layout fast path takes them), compressed so a small request carries
millions of them. Issue 33's CPU bomb: an 8.5 KB zstd batch of 7.7M records (benchmarks/large_requests.py)."""

from __future__ import annotations

import struct

import crc32c

from fakebroker.protocol import compression as c
from fakebroker.protocol import records
from fakebroker.protocol.records.varints import _zigzag_varint

_TAILS = (b"\x01\x01\x00", b"\x01\x00\x00")  # a null key; a null or an empty value; no headers


def mixed_records(count: int, *, last: bytes | None = None) -> bytes:
    """A records section of ``count`` records alternating between two layouts; ``last``
    replaces the last record's bytes (a malformed one)."""
    parts = []
    for i in range(count):
        body = b"\x00\x00" + _zigzag_varint(i) + _TAILS[i & 1]
        parts.append(_zigzag_varint(len(body)) + body)
    if last is not None:
        parts[-1] = last
    return b"".join(parts)


def batch_of(section: bytes, count: int, codec: int = c.ZSTD) -> bytes:
    """A v2 batch declaring ``count`` records whose records section is ``section``, compressed
    with ``codec``, with a correct length and CRC."""
    payload = c.compress(codec, section) if codec else section
    header = bytearray(records.build_batch([(None, b"x", [], 1_000)])[: records.RECORD_BATCH_OVERHEAD])
    header[8:12] = struct.pack(">i", records.RECORD_BATCH_OVERHEAD - 12 + len(payload))
    header[21:23] = struct.pack(">h", codec)
    header[23:27] = struct.pack(">i", count - 1)  # last offset delta
    header[57:61] = struct.pack(">i", count)
    header[17:21] = struct.pack(">I", crc32c.crc32c(payload, crc32c.crc32c(bytes(header[21:]))))
    return bytes(header) + payload


def record_bomb(count: int, codec: int = c.ZSTD) -> bytes:
    """A valid compressed batch of ``count`` tiny records of mixed layouts."""
    return batch_of(mixed_records(count), count, codec)

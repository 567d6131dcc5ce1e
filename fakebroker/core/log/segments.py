"""Where a partition log's bytes live, and what the log keeps of each segment in memory.

A :class:`SegmentStore` holds the bytes of one partition's segments (memory by default, files
when the cluster keeps a data directory: that store lives outside the core, which does no IO);
a :class:`LogStorage` hands each partition its store. A :class:`Segment` is the log's in-memory
view of one segment (``LogSegment``'s): offsets, size, timestamps and a sparse offset index.
"""

from __future__ import annotations

import bisect
import uuid
from array import array
from dataclasses import field
from typing import Protocol

from ...lazy_dataclasses import dataclass

MAX_INDEX_ENTRIES = 4096  # per segment; past it the index is halved and its interval doubled
KEEP_FROM = 64 * 1024  # a batch this large is kept as it came, not copied (MemorySegmentStore)
Piece = bytes | bytearray | memoryview  # what a store is given to append


class SegmentStore(Protocol):
    """Where the bytes of one partition's segments live. A segment is named by its base offset;
    bytes are only ever appended to it, read back by position, or the whole segment deleted."""

    def bases(self) -> list[int]:
        """Base offsets of the segments already stored (a reopened store), in offset order."""
        ...

    def create(self, base_offset: int) -> None: ...

    def append(self, base_offset: int, data: Piece) -> None:
        """Append ``data`` to a segment. The store may keep the object itself: the caller does
        not change it afterwards."""
        ...

    def read(self, base_offset: int, position: int, size: int) -> bytes:
        """Up to ``size`` bytes of a segment from ``position`` (fewer at its end)."""
        ...

    def size(self, base_offset: int) -> int: ...

    def truncate(self, base_offset: int, size: int) -> None:
        """Cut a segment to ``size`` bytes (a partial batch left by a crash)."""
        ...

    def modified_ms(self, base_offset: int) -> int | None:
        """When the segment was last written (a reopened store), or None if unknown."""
        ...

    def delete(self, base_offset: int) -> None: ...

    #: whether :meth:`flush` means anything (a store on disk): only then does the log count
    #: what ``flush.messages`` and ``flush.ms`` ask for
    durable: bool

    def flush(self, base_offset: int) -> None:
        """Force what was appended to a segment onto stable storage (fsync)."""
        ...


class _Parts:
    """An in-memory segment's bytes as parts, in order (see :class:`MemorySegmentStore`)."""

    __slots__ = ("parts", "starts", "size", "open")

    def __init__(self, first: bytearray) -> None:
        self.parts: list[Piece] = [first] if first else []
        self.starts: list[int] = [0] if first else []  # each part's position in the segment
        self.size = len(first)
        self.open = bool(first)  # whether the last part is the store's own, which small appends extend

    def append(self, data: Piece, keep_from: int, part_bytes: int) -> None:
        size = len(data)
        if size >= keep_from:
            self.starts.append(self.size)
            self.parts.append(data)
            self.open = False
        elif self.open and len(self.parts[-1]) + size <= part_bytes:
            self.parts[-1] += data  # type: ignore[operator]  # an open part is a bytearray
        else:
            self.starts.append(self.size)
            self.parts.append(bytearray(data))
            self.open = True
        self.size += size

    def read(self, position: int, size: int) -> bytes:
        index = bisect.bisect_right(self.starts, position) - 1
        if index < 0:
            return b""
        start = position - self.starts[index]
        part = self.parts[index]
        if start + size <= len(part) or index == len(self.parts) - 1:
            with memoryview(part) as view:  # one copy, and the view let go at once
                return bytes(view[start : start + size])
        pieces = []
        while size > 0 and index < len(self.parts):
            piece = self.parts[index][start : start + size]
            pieces.append(piece)
            size -= len(piece)
            index, start = index + 1, 0
        return b"".join(pieces)

    def truncate(self, size: int) -> None:
        if size >= self.size:
            return
        index = bisect.bisect_right(self.starts, size) - 1
        keep = size - self.starts[index] if index >= 0 else 0
        del self.parts[index + 1 :], self.starts[index + 1 :]
        if keep == 0:
            if index >= 0:
                del self.parts[index], self.starts[index]
            self.open = False
        else:
            self.parts[index] = bytearray(self.parts[index][:keep])
            self.open = True
        self.size = size


class MemorySegmentStore:
    """Segments in memory: the default store, for tests and in-memory clusters.

    A segment is one bytearray that appends extend, until a batch of ``KEEP_FROM`` bytes or
    more comes: from then on its bytes are a list of parts (:class:`_Parts`). Such a batch is
    kept as the very object appended, with no copy (copying a bulk producer's batches into one
    growing buffer cost a quarter of the broker's time); smaller ones after it are copied into
    parts of the store's own, of up to ``PART_BYTES`` each."""

    durable = False
    KEEP_FROM = KEEP_FROM
    PART_BYTES = 1024 * 1024

    def __init__(self) -> None:
        self._segments: dict[int, bytearray | _Parts] = {}

    def bases(self) -> list[int]:
        return sorted(self._segments)

    def create(self, base_offset: int) -> None:
        self._segments[base_offset] = bytearray()

    def append(self, base_offset: int, data: Piece) -> None:
        """Append ``data``, which the store may keep as it is: the caller must not change it."""
        segment = self._segments[base_offset]
        if isinstance(segment, _Parts):
            segment.append(data, self.KEEP_FROM, self.PART_BYTES)
        elif len(data) < self.KEEP_FROM:
            segment += data
        else:
            parts = self._segments[base_offset] = _Parts(segment)
            parts.append(data, self.KEEP_FROM, self.PART_BYTES)

    def read(self, base_offset: int, position: int, size: int) -> bytes:
        segment = self._segments[base_offset]
        if isinstance(segment, _Parts):
            return segment.read(position, size)
        with memoryview(segment) as view:  # one copy, and the view let go at once
            return bytes(view[position : position + size])

    def size(self, base_offset: int) -> int:
        segment = self._segments[base_offset]
        return segment.size if isinstance(segment, _Parts) else len(segment)

    def truncate(self, base_offset: int, size: int) -> None:
        segment = self._segments[base_offset]
        if isinstance(segment, _Parts):
            segment.truncate(size)
        else:
            del segment[size:]

    def modified_ms(self, base_offset: int) -> int | None:
        return None

    def delete(self, base_offset: int) -> None:
        self._segments.pop(base_offset, None)

    def flush(self, base_offset: int) -> None:
        pass


class LogStorage(Protocol):
    """Gives each partition its :class:`SegmentStore` (the cluster injects one; files under a
    data directory, or memory)."""

    def open(self, topic: str, topic_id: uuid.UUID, partition: int) -> SegmentStore: ...

    def remove(self, topic: str, topic_id: uuid.UUID, partition: int) -> None:
        """The topic was deleted: drop its segments."""
        ...


class MemoryStorage:
    """Every partition in memory (the default)."""

    def open(self, topic: str, topic_id: uuid.UUID, partition: int) -> SegmentStore:
        return MemorySegmentStore()

    def remove(self, topic: str, topic_id: uuid.UUID, partition: int) -> None:
        pass


@dataclass(slots=True)
class Segment:
    """What the log knows of one segment without reading it (``LogSegment``'s in-memory part)."""

    base_offset: int
    created_ms: int
    next_offset: int = -1  # one past its last offset (= base offset while empty)
    size: int = 0
    batches: int = 0
    max_timestamp: int = -1  # largest record timestamp (-1: none carried one)
    first_batch_timestamp: int = -1  # max timestamp of its first batch, for segment.ms (rollingBasedTimestamp)
    last_modified_ms: int = -1  # broker time of its last append (the file's mtime in Kafka)
    index_offsets: array[int] = field(default_factory=lambda: array("q"))  # sparse: base offset of an indexed batch
    index_positions: array[int] = field(default_factory=lambda: array("q"))  # ... and its position
    index_interval: int = 4096
    bytes_since_index: int = 0

    def __post_init__(self) -> None:
        if self.next_offset < 0:
            self.next_offset = self.base_offset

    def largest_timestamp(self) -> int:
        """``LogSegment.largestTimestamp``: the newest record timestamp, else the last write."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    def index(self, offset: int, position: int, size: int) -> None:
        """Note a batch appended at ``position``; an index entry every ``index_interval`` bytes."""
        if self.bytes_since_index >= self.index_interval or not self.index_offsets:
            self.index_offsets.append(offset)
            self.index_positions.append(position)
            self.bytes_since_index = 0
            if len(self.index_offsets) > MAX_INDEX_ENTRIES:
                self.index_offsets = self.index_offsets[::2]
                self.index_positions = self.index_positions[::2]
                self.index_interval *= 2
        self.bytes_since_index += size

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch at or before ``offset`` (a scan starts there)."""
        i = bisect.bisect_right(self.index_offsets, offset) - 1
        return self.index_positions[i] if i >= 0 else 0

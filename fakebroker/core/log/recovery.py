"""Checking a stored log batch by batch when it is reopened, as Kafka's ``LogSegment.recover``
does after an unclean shutdown: the log is kept up to its first bad batch and cut there.

A batch is good when (in this order):

- its size is sane: at least the smallest entry of its magic, and wholly inside the segment
  (a batch running past the end is what a write cut short by a crash leaves);
- its magic is 0, 1 or 2;
- its CRC matches (CRC-32C over a v2 batch from its attributes on; CRC-32 for a legacy
  message), so a flipped byte in a record, a key, a header or the batch header after the CRC
  field is caught;
- its offsets follow the batch before: the base offset is above the previous batch's last
  offset (the first batch's at or above the segment's base offset), and a v2 batch starts
  exactly one past the previous last offset (at the segment's base offset when first). Kafka
  checks only the order; this broker never compacts, so its logs have no gaps and a base
  offset changed on disk (a field the CRC does not cover) is caught wherever it points.

What is pure here: the scan reads through the :class:`~.segments.SegmentStore` it is given and
reports what it found; the log (``PartitionLog.recover``) truncates and deletes, and the
storage layer says it on stderr.
"""

from __future__ import annotations

from collections.abc import Callable

from ...lazy_dataclasses import dataclass
from ...protocol import records as rec
from ...protocol.records import crc
from ...protocol.records.layout import ATTRIBUTES_OFFSET
from .segments import SegmentStore

RECOVERY_CHUNK = 1 << 20  # bytes read at a time while checking a segment


@dataclass(frozen=True, slots=True)
class LogCut:
    """Where recovery cut a partition's log, and why."""

    segment: int  # base offset of the segment cut (its file: ``<segment, 20 digits>.log``)
    position: int  # byte position in that segment of the first bad batch (its new size)
    offset: int  # the first offset no longer in the log (the new log end offset)
    reason: str  # what is wrong with the batch at ``position``
    bytes_dropped: int  # from that segment and every later one
    segments_deleted: int  # later segments deleted whole

    def describe(self, partition: str) -> str:
        """One line naming the partition, where the log was cut and what was dropped."""
        later = f", {self.segments_deleted} later segment(s) deleted" if self.segments_deleted else ""
        return (
            f"{partition}: log recovery cut the log at offset {self.offset} (segment {self.segment:020d}.log, "
            f"byte {self.position}): {self.reason}; {self.bytes_dropped} bytes dropped{later}"
        )


def scan_segment(
    store: SegmentStore,
    base_offset: int,
    size: int,
    expected: int | None,
    note: Callable[[rec.BatchHeader, bytes, int], None],
) -> tuple[int, str | None]:
    """Check one segment's batches from its start; ``note(header, chunk, start)`` is called
    for each good one (the batch is ``chunk[start:start + header.size]``), with
    ``header.position`` its position in the segment. ``expected`` is where the previous
    segment ended (None for the first segment).

    Returns (bytes of good batches, the first bad batch's fault or None if all are good)."""
    if expected is not None and base_offset < expected:
        return 0, f"the segment starts at offset {base_offset}, below the end of the one before ({expected})"
    position = 0
    want = RECOVERY_CHUNK
    last: int | None = None  # last offset of the previous good batch of this segment
    while position < size:
        asked = min(want, size - position)
        chunk = store.read(base_offset, position, asked)
        if not chunk:
            return position, f"the segment ends at byte {position}, {size - position} bytes short"
        at_end = len(chunk) < asked or position + len(chunk) >= size
        want = RECOVERY_CHUNK
        step = 0
        view = memoryview(chunk)
        try:
            for header in rec.iter_batch_headers(chunk):
                if header.truncated:
                    if at_end:
                        return position + header.position, _torn(header, size - position - header.position)
                    step = header.position  # read again from its start, all of it
                    want = max(RECOVERY_CHUNK, header.size)
                    break
                fault = _fault(view, header, base_offset, last)
                if fault is not None:
                    return position + header.position, fault
                start = header.position
                header.position += position
                note(header, chunk, start)
                last = header.last_offset
                step = start + header.size
        except rec.RecordsError as exc:  # a size below the minimum or a magic above 2
            return position + exc.offset, str(exc)
        position += step
    return position, None


def _torn(header: rec.BatchHeader, left: int) -> str:
    if header.batch_length < 0:
        return f"{left} bytes at the end are too few for a batch header (a write cut short)"
    return f"a batch of {header.size} bytes runs past the end of the segment ({left} bytes left: a write cut short)"


def _fault(view: memoryview, header: rec.BatchHeader, segment_base: int, last: int | None) -> str | None:
    """What is wrong with a whole batch of the chunk, or None."""
    start = header.position
    if header.magic >= 2:  # verify_crc's check, with the header already read
        good = crc.crc32c(view[start + ATTRIBUTES_OFFSET : start + header.size]) == header.crc
    else:
        good = rec.verify_crc(view, start)
    if not good:
        return f"CRC mismatch (stored {header.crc & 0xFFFFFFFF:#010x})"
    base = header.base_offset
    if header.magic >= 2:
        if header.last_offset_delta < 0:
            return f"negative last offset delta {header.last_offset_delta}"
        want = segment_base if last is None else last + 1
        if base != want:
            where = "the segment's base offset" if last is None else f"one past the previous batch's last offset {last}"
            return f"base offset {base} is not {want} ({where})"
    elif last is None and base < segment_base:
        return f"offset {base} is below the segment's base offset {segment_base}"
    elif last is not None and base <= last:
        return f"offset {base} is not above the previous batch's last offset {last}"
    return None

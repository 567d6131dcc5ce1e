"""Unit tests of fakebroker.core.log.partition.PartitionLog (pure: no sockets, no trio, no cluster).

Batches are built with the project's own encoder (``records.build_batch``) the way a client
sends them: base offset 0, partition leader epoch -1. Expected values follow Kafka's
``UnifiedLog`` / ``LogSegment`` / ``LogValidator`` (one replica: high watermark = log end offset).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.core.log.partition import LOG_DEFAULTS, PartitionLog, StoredBatch
from fakebroker.core.log.segments import KEEP_FROM
from fakebroker.protocol import records as R

from ..conftest import examples

BIG = 1 << 30


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def make_batch(
    n: int = 1,
    *,
    timestamps: list[int] | None = None,
    tag: str = "v",
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """A client-side v2 batch of ``n`` records (values ``tag0``, ``tag1``...)."""
    ts = timestamps if timestamps is not None else [1000 + i for i in range(n)]
    assert len(ts) == n
    items = [(None, f"{tag}{i}".encode(), [], ts[i]) for i in range(n)]
    return R.build_batch(
        items,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def append(
    log: PartitionLog, data: bytes | bytearray, *, epoch: int = 0, now: int = 50_000, lat: bool = False
) -> tuple[int, int]:
    [header] = [h for h in R.iter_batch_headers(data) if not h.truncated]
    return log.append(data, header, leader_epoch=epoch, now_ms=now, log_append_time=lat)


def decoded(blob: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record of a fetched blob, CRCs checked; a partial batch at the
    end (a read cut at its byte budget) is dropped, as clients drop it."""
    out = []
    for batch in R.read_batches(blob, allow_truncated=True, check_crc=True):
        out.extend((batch.offset_of(r), r.value) for r in batch.records)
    return out


def headers(blob: bytes) -> list[R.BatchHeader]:
    """The whole batches' headers (a partial one at the end left out)."""
    return [h for h in R.iter_batch_headers(blob, allow_truncated=True) if not h.truncated]


class Config:
    """Topic settings for a log; ``segment.bytes`` 1 rolls a segment per batch."""

    def __init__(self, **settings: int):
        self.settings = dict(LOG_DEFAULTS, **{"segment.bytes": 1 << 30})
        self.settings.update({k.replace("_", "."): v for k, v in settings.items()})

    def get_int(self, name: str) -> int:
        return self.settings[name]


def batch_per_segment() -> PartitionLog:
    """A log whose every batch is a segment of its own (so retention can drop any batch)."""
    return PartitionLog(config=Config(segment_bytes=1))


def three_batches(log: PartitionLog | None = None, **kw) -> tuple[PartitionLog, list[bytes]]:
    """A log holding A = offsets 0-1, B = 2-4, C = 5; returns it and the stored bytes."""
    log = log if log is not None else PartitionLog()
    for n, tag in ((2, "a"), (3, "b"), (1, "c")):
        append(log, make_batch(n, tag=tag), **kw)
    return log, [b.data for b in log.batches]


# ------------------------------------------------------------------------------------------
# append
# ------------------------------------------------------------------------------------------


def test_empty_log_offsets():
    log = PartitionLog()
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark, log.last_stable_offset) == (0, 0, 0, 0)
    assert log.size_bytes == 0
    assert log.read(0, BIG) == b""
    assert log.offset_for_timestamp(0) == (-1, -1)
    assert log.max_timestamp_offset() == (-1, -1)


def test_append_assigns_consecutive_base_offsets():
    log = PartitionLog()
    results = [append(log, make_batch(n)) for n in (2, 3, 1, 4)]
    assert [base for base, _ in results] == [0, 2, 5, 6]
    assert [t for _, t in results] == [-1, -1, -1, -1]  # CreateTime: no log append time
    assert log.log_end_offset == log.high_watermark == log.last_stable_offset == 10
    assert log.log_start_offset == 0
    assert [(b.base_offset, b.last_offset) for b in log.batches] == [(0, 1), (2, 4), (5, 5), (6, 9)]
    assert [h.base_offset for h in headers(log.read(0, BIG))] == [0, 2, 5, 6]
    assert [o for o, _ in decoded(log.read(0, BIG))] == list(range(10))


@pytest.mark.parametrize("large", [False, True], ids=["small", "kept as it came"])
def test_append_rewrites_only_base_offset_and_leader_epoch(large):
    log = PartitionLog()
    append(log, make_batch(2))
    if large:  # past KEEP_FROM: its head is rewritten apart and the rest stored without a copy
        sent = R.build_batch([(None, b"x" * 1000, [], 1000 + i) for i in range(80)])
        assert len(sent) >= KEEP_FROM and type(sent) is bytes
    else:
        sent = make_batch(3, tag="x", compression=1)  # gzip: the payload must be kept as sent, not re-encoded
    original = bytes(sent)
    base, _ = append(log, sent, epoch=7)
    append(log, make_batch(1, tag="after"))  # a small batch after it reads back too
    stored = log.batches[-2].data
    assert sent == original  # the caller's bytes are not touched
    assert len(stored) == len(sent)
    [h] = headers(stored)
    count = 80 if large else 3
    assert (h.base_offset, h.partition_leader_epoch, h.last_offset_delta) == (2, 7, count - 1)
    assert base == 2
    # everything but bytes 0-7 (base offset) and 12-15 (partition leader epoch) is byte-identical
    assert stored[8:12] == sent[8:12]
    assert stored[16:] == sent[16:]
    assert R.verify_crc(stored)  # neither field is covered by the CRC
    values = [v for _, v in decoded(log.read(2, BIG))]
    assert values == ([b"x" * 1000] * 80 if large else [b"x0", b"x1", b"x2"]) + [b"after0"]
    assert decoded(log.read(2 + count, BIG)) == [(2 + count, b"after0")]


def test_leader_epoch_is_per_append():
    log = PartitionLog()
    append(log, make_batch(), epoch=0)
    append(log, make_batch(), epoch=3)
    assert [h.partition_leader_epoch for h in headers(log.read(0, BIG))] == [0, 3]


def test_stored_batch_metadata():
    log = PartitionLog()
    data = make_batch(3, timestamps=[10, 30, 20], producer_id=42, producer_epoch=1, base_sequence=0)
    append(log, data, now=777)
    [b] = log.batches
    assert isinstance(b, StoredBatch)
    assert (b.base_offset, b.last_offset, b.max_timestamp) == (0, 2, 30)
    assert (b.producer_id, b.is_transactional, b.is_control) == (42, False, False)
    assert log.segments[0].last_modified_ms == 777  # the segment's last write, for time retention
    assert b.size == len(data) == log.size_bytes


def test_size_bytes_is_the_sum_of_stored_batches():
    log = PartitionLog()
    datas = [make_batch(n) for n in (1, 4, 2)]
    for d in datas:
        append(log, d)
    assert log.size_bytes == sum(map(len, datas)) == sum(b.size for b in log.batches)


def test_log_append_time_stamps_header_and_returns_append_time():
    log = PartitionLog()
    append(log, make_batch(1))
    sent = make_batch(3, timestamps=[100, 300, 200])
    base, append_time = append(log, sent, now=9_999, lat=True)
    assert (base, append_time) == (1, 9_999)
    stored = log.batches[-1].data
    [h] = headers(stored)
    assert h.timestamp_type == R.LOG_APPEND_TIME
    assert h.max_timestamp == 9_999
    assert h.base_timestamp == 100  # record timestamps are left alone
    assert R.verify_crc(stored)  # attributes and max timestamp are covered: the CRC was redone
    assert log.batches[-1].max_timestamp == 9_999
    [batch] = R.read_batches(stored)
    assert [batch.timestamp_of(r) for r in batch.records] == [9_999] * 3
    assert [r.value for r in batch.records] == [b"v0", b"v1", b"v2"]


def test_log_append_time_on_a_compressed_batch():
    log = PartitionLog()
    sent = make_batch(4, compression=1)
    assert append(log, sent, now=1234, lat=True) == (0, 1234)
    stored = log.batches[0].data
    assert stored[R.RECORD_BATCH_OVERHEAD :] == sent[R.RECORD_BATCH_OVERHEAD :]  # payload not re-compressed
    assert R.verify_crc(stored)
    assert decoded(stored) == [(i, f"v{i}".encode()) for i in range(4)]


def test_create_time_keeps_the_client_timestamps():
    log = PartitionLog()
    sent = make_batch(2, timestamps=[500, 400])
    assert append(log, sent, now=9_999, lat=False) == (0, -1)
    [h] = headers(log.batches[0].data)
    assert (h.timestamp_type, h.max_timestamp) == (R.CREATE_TIME, 500)
    assert log.batches[0].max_timestamp == 500
    assert log.batches[0].data[16:] == sent[16:]


# ------------------------------------------------------------------------------------------
# read
# ------------------------------------------------------------------------------------------


def test_read_from_each_offset_returns_the_batch_holding_it_and_after():
    log, (a, b, c) = three_batches()
    assert log.read(0, BIG) == a + b + c
    assert log.read(1, BIG) == a + b + c  # middle of A: the whole batch, as Kafka (client skips)
    assert log.read(2, BIG) == b + c
    assert log.read(3, BIG) == b + c
    assert log.read(4, BIG) == b + c
    assert log.read(5, BIG) == c
    assert log.read(6, BIG) == b""  # at the log end offset
    assert log.read(100, BIG) == b""


def test_read_max_bytes_cuts_the_log_at_the_budget():
    """LogSegment.read: a slice of exactly the budget from the first batch, ending with a partial batch."""
    log, (a, b, c) = three_batches()
    assert log.read(0, len(a)) == a
    assert log.read(0, len(a) + len(b) - 1) == a + b[:-1]
    assert log.read(0, len(a) + len(b)) == a + b
    assert log.read(0, len(a) + len(b) + len(c)) == a + b + c
    assert log.read(0, len(a) + len(b) + len(c) + 100) == a + b + c
    assert log.read(2, len(b) + len(c) - 1) == b + c[:-1]
    assert log.read(0, len(a) + 7) == a + b[:7]


def test_read_min_one_returns_an_oversized_first_batch():
    log, (a, b, c) = three_batches()
    assert log.read(0, 1) == a  # KIP-74: the first batch even if larger than max_bytes
    assert log.read(0, 0) == a
    assert log.read(3, 1) == b
    # without min_one an incomplete first batch is dropped (ReplicaManager's firstEntryIncomplete)
    assert log.read(0, 1, min_one=False) == b""
    assert log.read(0, 0, min_one=False) == b""
    assert log.read(0, len(a), min_one=False) == a
    assert log.read(0, len(a) + 1, min_one=False) == a + b[:1]


def test_read_never_crosses_the_upper_bound_even_with_budget_left():
    log, (a, b, c) = three_batches()
    assert log.read(0, len(a) + 5, upper_bound=2) == a
    assert log.read(0, len(a) + len(b) + 5, upper_bound=5) == a + b
    assert log.read(5, 1, upper_bound=5) == b""


def test_read_upper_bound():
    log, (a, b, c) = three_batches()
    assert log.read(0, BIG, upper_bound=0) == b""
    assert log.read(0, BIG, upper_bound=2) == a
    assert log.read(0, BIG, upper_bound=5) == a + b
    assert log.read(2, BIG, upper_bound=2) == b""
    assert log.read(0, BIG, upper_bound=6) == a + b + c
    assert log.read(0, BIG, upper_bound=None) == a + b + c  # default: the high watermark
    assert log.read(0, 1, upper_bound=0) == b""  # min_one never crosses the bound


def test_read_after_the_log_start_moved():
    log, (a, b, c) = three_batches()
    log.delete_records_before(3)
    assert log.read(log.log_start_offset, BIG) == b + c
    assert log.read(0, BIG) == b + c  # below the log start: the first retained batch (callers refuse this)


def test_last_stable_offset_equals_high_watermark_for_non_transactional_data():
    log, _ = three_batches()
    assert log.last_stable_offset == log.high_watermark == 6


# ------------------------------------------------------------------------------------------
# ListOffsets lookups
# ------------------------------------------------------------------------------------------


def timestamp_log() -> PartitionLog:
    """A = 0:100 1:200, B = 2:300 3:300 4:400, C = 5:500."""
    log = PartitionLog()
    append(log, make_batch(2, timestamps=[100, 200]))
    append(log, make_batch(3, timestamps=[300, 300, 400]))
    append(log, make_batch(1, timestamps=[500]))
    return log


def test_offset_for_timestamp():
    log = timestamp_log()
    assert log.offset_for_timestamp(0) == (0, 100)
    assert log.offset_for_timestamp(100) == (0, 100)
    assert log.offset_for_timestamp(101) == (1, 200)
    assert log.offset_for_timestamp(201) == (2, 300)
    assert log.offset_for_timestamp(300) == (2, 300)  # first of equal timestamps
    assert log.offset_for_timestamp(301) == (4, 400)
    assert log.offset_for_timestamp(500) == (5, 500)
    assert log.offset_for_timestamp(501) == (-1, -1)


def test_offset_for_timestamp_is_by_offset_order_not_timestamp_order():
    log = PartitionLog()
    append(log, make_batch(3, timestamps=[100, 50, 300]))
    append(log, make_batch(1, timestamps=[60]))
    assert log.offset_for_timestamp(40) == (0, 100)
    assert log.offset_for_timestamp(55) == (0, 100)
    assert log.offset_for_timestamp(101) == (2, 300)


def test_offset_for_timestamp_skips_records_below_log_start():
    log = timestamp_log()
    log.delete_records_before(3)  # B is kept, offset 2 is gone
    assert log.offset_for_timestamp(0) == (3, 300)
    assert log.offset_for_timestamp(300) == (3, 300)
    assert log.offset_for_timestamp(301) == (4, 400)


def test_offset_for_timestamp_under_log_append_time():
    log = PartitionLog()
    append(log, make_batch(2, timestamps=[100, 200]), now=1_000, lat=True)
    append(log, make_batch(2, timestamps=[100, 200]), now=2_000, lat=True)
    assert log.offset_for_timestamp(0) == (0, 1_000)
    assert log.offset_for_timestamp(1_001) == (2, 2_000)
    assert log.offset_for_timestamp(2_001) == (-1, -1)


def test_max_timestamp_offset():
    log = PartitionLog()
    append(log, make_batch(2, timestamps=[100, 200]))
    append(log, make_batch(3, timestamps=[300, 700, 400]))
    append(log, make_batch(1, timestamps=[700]))
    assert log.max_timestamp_offset() == (3, 700)  # the first record holding the largest timestamp
    log.delete_records_before(4)
    assert log.max_timestamp_offset() == (5, 700)
    log.delete_records_before(6)
    assert log.max_timestamp_offset() == (-1, -1)


def test_max_timestamp_offset_under_log_append_time():
    log = PartitionLog()
    append(log, make_batch(2, timestamps=[100, 90_000]), now=5_000, lat=True)
    append(log, make_batch(2), now=4_000, lat=True)
    assert log.max_timestamp_offset() == (0, 5_000)


# ------------------------------------------------------------------------------------------
# DeleteRecords
# ------------------------------------------------------------------------------------------


def test_delete_records_moves_log_start_and_drops_whole_segments_below_it():
    log, (a, b, c) = three_batches(batch_per_segment())
    log.delete_records_before(1)
    assert log.log_start_offset == 1
    assert len(log.batches) == 3  # A still holds offset 1
    log.delete_records_before(2)
    assert log.log_start_offset == 2
    assert [x.base_offset for x in log.batches] == [2, 5]
    assert log.size_bytes == len(b) + len(c)
    log.delete_records_before(4)
    assert log.log_start_offset == 4
    assert [x.base_offset for x in log.batches] == [2, 5]
    assert (log.log_end_offset, log.high_watermark) == (6, 6)


def test_delete_records_never_moves_log_start_backwards():
    log, _ = three_batches()
    log.delete_records_before(4)
    log.delete_records_before(2)
    log.delete_records_before(0)
    assert log.log_start_offset == 4
    assert [x.base_offset for x in log.batches] == [2, 5]


def test_delete_records_to_the_end_empties_the_log_but_keeps_offsets():
    log, _ = three_batches(batch_per_segment())
    log.delete_records_before(6)
    # the active segment (C) stays, as in Kafka, whose log-start rule deletes a segment only
    # once the next one starts at or below the log start offset; nothing in it is readable
    assert log.batches == [] and [s.base_offset for s in log.segments] == [5]
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (6, 6, 6)
    assert log.read(6, BIG) == b""
    assert append(log, make_batch(2)) == (6, -1)  # offsets continue, never reused
    assert [o for o, _ in decoded(log.read(6, BIG))] == [6, 7]
    assert log.log_start_offset == 6 and log.log_end_offset == 8


# ------------------------------------------------------------------------------------------
# retention
# ------------------------------------------------------------------------------------------


def retention_log() -> PartitionLog:
    """Batches whose newest record timestamps are 1000 (offsets 0-1), 2000 (2-4), 3000 (5),
    each in a segment of its own."""
    log = batch_per_segment()
    append(log, make_batch(2, timestamps=[900, 1000]))
    append(log, make_batch(3, timestamps=[2000, 1500, 1800]))
    append(log, make_batch(1, timestamps=[3000]))
    return log


def test_time_retention_drops_batches_older_than_retention_ms():
    log = retention_log()
    assert log.apply_retention(now_ms=3_600, retention_ms=1_500, retention_bytes=-1) == 2
    assert [b.base_offset for b in log.batches] == [5]
    assert log.log_start_offset == 5
    assert log.size_bytes == log.batches[0].size
    assert (log.log_end_offset, log.high_watermark) == (6, 6)


def test_time_retention_boundary_is_strictly_older():
    # Kafka deletes a segment when now - largestTimestamp > retention.ms
    log = retention_log()
    assert log.apply_retention(now_ms=2_500, retention_ms=1_500, retention_bytes=-1) == 0
    assert log.apply_retention(now_ms=2_501, retention_ms=1_500, retention_bytes=-1) == 1
    assert log.log_start_offset == 2


def test_time_retention_minus_one_is_infinite():
    log = retention_log()
    assert log.apply_retention(now_ms=10**12, retention_ms=-1, retention_bytes=-1) == 0
    assert len(log.batches) == 3 and log.log_start_offset == 0


def test_time_retention_drops_a_prefix_only():
    log = batch_per_segment()
    append(log, make_batch(1, timestamps=[1_000]))
    append(log, make_batch(1, timestamps=[5_000]))  # a newer batch in between stops the deletion
    append(log, make_batch(1, timestamps=[1_000]))
    assert log.apply_retention(now_ms=6_000, retention_ms=2_000, retention_bytes=-1) == 1
    assert [b.base_offset for b in log.batches] == [1, 2]
    assert log.log_start_offset == 1


def test_time_retention_of_everything_sets_log_start_to_log_end():
    log = retention_log()
    assert log.apply_retention(now_ms=100_000, retention_ms=0, retention_bytes=-1) == 3
    assert log.batches == [] and log.size_bytes == 0
    assert (log.log_start_offset, log.log_end_offset) == (6, 6)
    assert append(log, make_batch(1)) == (6, -1)


def test_time_retention_without_record_timestamps_uses_the_append_time():
    log = batch_per_segment()
    no_ts = R.build_batch([(None, b"x"), (None, b"y")])  # no timestamps: max timestamp -1
    assert headers(no_ts)[0].max_timestamp == R.NO_TIMESTAMP
    append(log, no_ts, now=10_000)
    append(log, no_ts, now=20_000)
    assert log.apply_retention(now_ms=25_000, retention_ms=10_000, retention_bytes=-1) == 1
    assert [b.base_offset for b in log.batches] == [2]
    assert log.log_start_offset == 2


def test_time_retention_under_log_append_time_uses_the_append_time():
    log = batch_per_segment()
    append(log, make_batch(1, timestamps=[1]), now=10_000, lat=True)  # record created long ago
    assert log.apply_retention(now_ms=15_000, retention_ms=10_000, retention_bytes=-1) == 0
    assert log.apply_retention(now_ms=20_001, retention_ms=10_000, retention_bytes=-1) == 1


def test_size_retention_keeps_at_least_retention_bytes():
    # UnifiedLog.deleteRetentionSizeBreachedSegments: drop the oldest while size - segment >= retention.bytes
    log = retention_log()
    s1, s2, s3 = (b.size for b in log.batches)
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=s1 + s2 + s3) == 0
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=s2 + s3 + 1) == 0
    assert len(log.batches) == 3 and log.log_start_offset == 0
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=s2 + s3) == 1
    assert [b.base_offset for b in log.batches] == [2, 5]
    assert log.log_start_offset == 2 and log.size_bytes == s2 + s3
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=1) == 1
    assert [b.base_offset for b in log.batches] == [5]
    assert log.log_start_offset == 5 and log.size_bytes == s3


def test_size_retention_zero_drops_everything():
    log = retention_log()
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=0) == 3
    assert log.batches == [] and log.size_bytes == 0
    assert log.log_start_offset == log.log_end_offset == 6


def test_size_retention_minus_one_is_unlimited():
    log = retention_log()
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=-1) == 0
    assert len(log.batches) == 3


def test_time_and_size_retention_together():
    log = retention_log()
    s3 = log.batches[2].size
    # time drops the first batch (1000 < 3000 - 1500 = 1500); size then drops the second
    assert log.apply_retention(now_ms=3_000, retention_ms=1_500, retention_bytes=s3) == 2
    assert [b.base_offset for b in log.batches] == [5]
    assert log.log_start_offset == 5


def test_retention_never_moves_log_start_backwards():
    log = retention_log()
    log.delete_records_before(4)  # inside the second batch
    assert log.apply_retention(now_ms=1_000, retention_ms=-1, retention_bytes=0) == 2
    assert log.log_start_offset == 6
    log2 = retention_log()
    log2.delete_records_before(1)
    assert log2.apply_retention(now_ms=2_100, retention_ms=1_000, retention_bytes=-1) == 1  # drops offsets 0-1
    assert log2.log_start_offset == 2
    log3 = retention_log()
    log3.delete_records_before(4)
    assert log3.apply_retention(now_ms=2_100, retention_ms=1_000, retention_bytes=-1) == 0  # nothing dropped
    assert log3.log_start_offset == 4


def test_truncate_all():
    log, _ = three_batches()
    log.truncate_all()
    assert log.batches == [] and log.size_bytes == 0
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (6, 6, 6)
    assert log.read(0, BIG) == b""
    assert append(log, make_batch(1)) == (6, -1)


# ------------------------------------------------------------------------------------------
# properties
# ------------------------------------------------------------------------------------------


@settings(max_examples=examples(60), deadline=None)
@given(
    counts=st.lists(st.integers(1, 6), min_size=1, max_size=10),
    epoch=st.integers(0, 50),
    compression=st.sampled_from([0, 1]),
    max_bytes=st.lists(st.integers(0, 400), min_size=1, max_size=8),
)
def test_appends_stay_consecutive_and_a_consumer_reads_each_record_once(counts, epoch, compression, max_bytes):
    log = PartitionLog()
    expected = []
    next_offset = 0
    for i, n in enumerate(counts):
        base, append_time = append(log, make_batch(n, tag=f"b{i}-", compression=compression), epoch=epoch)
        assert (base, append_time) == (next_offset, -1)
        expected += [(next_offset + j, f"b{i}-{j}".encode()) for j in range(n)]
        next_offset += n
    assert log.log_end_offset == log.high_watermark == next_offset
    assert decoded(log.read(0, BIG)) == expected
    assert all(h.partition_leader_epoch == epoch for h in headers(log.read(0, BIG)))

    # any offset: the first batch returned holds it
    for offset in range(next_offset):
        [first, *_] = headers(log.read(offset, 1))
        assert first.base_offset <= offset <= first.last_offset

    # a consumer loop with varying max_bytes always progresses and sees every record once
    seen = []
    position, k = 0, 0
    while position < log.log_end_offset:
        blob = log.read(position, max_bytes[k % len(max_bytes)])
        k += 1
        records = [(o, v) for o, v in decoded(blob) if o >= position]
        assert records, "min_one must guarantee progress"
        seen += records
        position = records[-1][0] + 1
    assert seen == expected

"""Unit tests of fakebroker.core.log.producers (pure: no sockets, no trio, no cluster).

Expected answers follow Kafka's ``ProducerAppendInfo.checkSequence`` / ``checkProducerEpoch``,
``ProducerStateEntry`` (the last 5 batches per producer and partition, duplicates matched on
the exact sequence range of the same epoch) and ``TransactionCoordinator.handleInitProducerId``
with ``TransactionMetadata.prepareIncrementProducerEpoch`` (InitProducerId, in
``test_init_producer_id.py``).

The calls mirror ``core/log/appends.py``: ``check(pid, epoch, base_sequence, last_offset_delta)``
before an append, ``record(..., base_offset, log_append_time)`` after it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.core.log.producers import (
    INT32_MAX,
    MAX_CACHED_BATCHES,
    CachedBatch,
    PartitionProducers,
    SequenceCheck,
    next_seq,
)
from fakebroker.protocol.error_codes import ErrorCode

from ..conftest import examples

PID = 1000


def ok(check: SequenceCheck) -> bool:
    return check.error == ErrorCode.NONE and check.duplicate_of is None


def produce(
    producers: PartitionProducers,
    pid: int,
    epoch: int,
    base_seq: int,
    delta: int,
    base_offset: int,
    *,
    append_time: int = -1,
) -> SequenceCheck:
    """What produce.py does for one batch: check, then record it if it is appended."""
    result = producers.check(pid, epoch, base_seq, delta)
    if ok(result):
        producers.record(pid, epoch, base_seq, delta, base_offset, append_time)
    return result


def producer_with(batches: list[tuple[int, int]], *, epoch: int = 0, pid: int = PID) -> PartitionProducers:
    """A partition whose producer ``pid`` appended ``(base_seq, record count)`` batches at offsets 0, n1, ..."""
    producers = PartitionProducers()
    offset = 0
    for base_seq, count in batches:
        producers.record(pid, epoch, base_seq, count - 1, offset, -1)
        offset += count
    return producers


# ------------------------------------------------------------------------------------------
# sequence arithmetic
# ------------------------------------------------------------------------------------------


def test_next_seq_wraps_at_int32_max():
    assert INT32_MAX == 2**31 - 1
    assert next_seq(0) == 1
    assert next_seq(5, 3) == 8
    assert next_seq(INT32_MAX) == 0
    assert next_seq(INT32_MAX - 1, 3) == 1
    assert next_seq(INT32_MAX, 0) == INT32_MAX


# ------------------------------------------------------------------------------------------
# PartitionProducers.check / record
# ------------------------------------------------------------------------------------------


def test_new_producer_starting_at_sequence_zero_is_accepted():
    producers = PartitionProducers()
    result = producers.check(PID, 0, 0, 4)
    assert result == SequenceCheck(ErrorCode.NONE, None)
    assert producers.entries == {}  # check() remembers nothing


def test_new_producer_with_a_non_zero_sequence_is_accepted():
    # Kafka's ProducerAppendInfo.checkSequence: with no state for the producer (epoch NO_PRODUCER_EPOCH)
    # "accept writes with any sequence number"; neither OUT_OF_ORDER_SEQUENCE_NUMBER nor
    # UNKNOWN_PRODUCER_ID is answered to a plain idempotent producer.
    producers = PartitionProducers()
    result = producers.check(PID, 0, 5, 0)
    assert result.error == ErrorCode.NONE
    assert result.duplicate_of is None
    assert ok(produce(producers, PID, 0, 5, 0, 0))
    assert ok(producers.check(PID, 0, 6, 0))  # from then on the sequence is checked
    assert producers.check(PID, 0, 7, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_in_order_batches_are_accepted():
    producers = PartitionProducers()
    assert ok(produce(producers, PID, 0, 0, 4, 0))  # seq 0-4
    assert ok(produce(producers, PID, 0, 5, 0, 5))  # seq 5
    assert ok(produce(producers, PID, 0, 6, 9, 6))  # seq 6-15
    assert producers.entries[PID].last_seq == 15
    assert producers.entries[PID].epoch == 0


def test_record_then_check_next_sequence():
    producers = producer_with([(0, 5)])
    assert ok(producers.check(PID, 0, 5, 0))
    assert producers.check(PID, 0, 6, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producers.check(PID, 0, 4, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


@pytest.mark.parametrize("base_seq", [6, 7, 100, 3, 1, INT32_MAX])
def test_gap_or_overlap_is_out_of_order(base_seq):
    producers = producer_with([(0, 5)])  # last sequence 4: only 5 is next
    result = producers.check(PID, 0, base_seq, 0)
    assert result.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert result.duplicate_of is None


def test_duplicate_of_each_of_the_last_five_batches():
    producers = PartitionProducers()
    offsets = {}
    offset = 0
    for i in range(7):  # batches of two records: seq 0-1, 2-3, ..., 12-13
        assert ok(produce(producers, PID, 0, 2 * i, 1, offset, append_time=100 + i))
        offsets[i] = offset
        offset += 2
    assert len(producers.entries[PID].batches) == MAX_CACHED_BATCHES == 5
    for i in range(2, 7):
        result = producers.check(PID, 0, 2 * i, 1)
        assert result.error == ErrorCode.NONE
        assert result.duplicate_of == CachedBatch(2 * i, 2 * i + 1, offsets[i], 100 + i)
        assert result.duplicate_of.base_offset == offsets[i]
    for i in (0, 1):  # older than the last five: no longer known, and not in sequence
        result = producers.check(PID, 0, 2 * i, 1)
        assert result == SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None)


def test_duplicate_needs_the_exact_sequence_range():
    producers = producer_with([(0, 5), (5, 3)])  # seq 0-4 at offset 0, 5-7 at offset 5
    assert producers.check(PID, 0, 0, 4).duplicate_of.base_offset == 0
    assert producers.check(PID, 0, 5, 2).duplicate_of.base_offset == 5
    for base_seq, delta in [(0, 3), (0, 5), (1, 3), (5, 1), (5, 3)]:
        result = producers.check(PID, 0, base_seq, delta)
        assert result == SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None), (base_seq, delta)


def test_duplicate_carries_the_original_log_append_time():
    producers = PartitionProducers()
    produce(producers, PID, 0, 0, 0, 0, append_time=12_345)
    assert producers.check(PID, 0, 0, 0).duplicate_of.log_append_time == 12_345


def test_check_does_not_change_state():
    producers = producer_with([(0, 2)])
    before = repr(producers.entries)
    for _ in range(3):
        assert ok(producers.check(PID, 0, 2, 0))
        assert producers.check(PID, 0, 0, 1).duplicate_of is not None
        producers.check(PID, 0, 9, 0)
        producers.check(PID, 1, 0, 0)
    assert repr(producers.entries) == before


@pytest.mark.parametrize("base_seq", [0, 2, 7])
def test_older_epoch_is_fenced(base_seq):
    producers = producer_with([(0, 2)], epoch=3)
    result = producers.check(PID, 2, base_seq, 1)
    assert result == SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH, None)


def test_older_epoch_is_fenced_even_when_its_batch_was_written():
    producers = producer_with([(0, 2)], epoch=0)
    assert ok(produce(producers, PID, 1, 0, 0, 2))  # bumped epoch
    assert producers.check(PID, 0, 0, 1).error == ErrorCode.INVALID_PRODUCER_EPOCH


def test_new_epoch_must_start_at_sequence_zero():
    producers = producer_with([(0, 5)], epoch=0)
    assert producers.check(PID, 1, 5, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producers.check(PID, 1, 1, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert ok(producers.check(PID, 1, 0, 0))
    assert ok(producers.check(PID, 5, 0, 3))  # any newer epoch


def test_new_epoch_resets_sequences_and_the_duplicate_cache():
    producers = PartitionProducers()
    for i in range(3):
        produce(producers, PID, 0, i, 0, i)  # epoch 0: seq 0, 1, 2 at offsets 0-2
    assert ok(produce(producers, PID, 1, 0, 0, 3))  # epoch 1 starts over
    entry = producers.entries[PID]
    assert entry.epoch == 1
    assert [(b.first_seq, b.last_seq, b.base_offset) for b in entry.batches] == [(0, 0, 3)]
    assert producers.check(PID, 1, 0, 0).duplicate_of.base_offset == 3
    assert ok(producers.check(PID, 1, 1, 0))
    assert producers.check(PID, 1, 3, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producers.check(PID, 0, 2, 0).error == ErrorCode.INVALID_PRODUCER_EPOCH


def test_same_batch_with_a_newer_epoch_is_not_a_duplicate():
    producers = producer_with([(0, 3)], epoch=0)
    result = producers.check(PID, 1, 0, 2)
    assert result == SequenceCheck(ErrorCode.NONE, None)  # a new epoch's first batch, to be appended


def test_sequence_wraps_around_after_int32_max():
    producers = PartitionProducers()
    producers.record(PID, 0, INT32_MAX - 2, 2, 0, -1)  # seq MAX-2 .. MAX
    assert producers.entries[PID].last_seq == INT32_MAX
    assert ok(producers.check(PID, 0, 0, 0))
    assert producers.check(PID, 0, 1, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producers.check(PID, 0, INT32_MAX - 2, 2).duplicate_of.base_offset == 0


def test_batch_spanning_the_wrap():
    producers = PartitionProducers()
    producers.record(PID, 0, INT32_MAX - 1, 3, 10, -1)  # seq MAX-1, MAX, 0, 1
    entry = producers.entries[PID]
    assert (entry.batches[-1].first_seq, entry.last_seq) == (INT32_MAX - 1, 1)
    assert ok(producers.check(PID, 0, 2, 0))
    assert producers.check(PID, 0, 0, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producers.check(PID, 0, INT32_MAX - 1, 3).duplicate_of.base_offset == 10
    producers.record(PID, 0, 2, 0, 14, -1)
    assert producers.check(PID, 0, INT32_MAX - 1, 3).duplicate_of.base_offset == 10
    assert producers.check(PID, 0, 2, 0).duplicate_of.base_offset == 14


def test_known_producer_at_a_later_epoch():
    producers = producer_with([(0, 2), (2, 2)], epoch=2)
    assert ok(producers.check(PID, 2, 4, 0))
    assert producers.check(PID, 2, 2, 1).duplicate_of.base_offset == 2
    assert producers.check(PID, 2, 9, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producers.check(PID, 3, 3, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert ok(producers.check(PID, 3, 0, 0))
    assert producers.check(PID, 1, 4, 0).error == ErrorCode.INVALID_PRODUCER_EPOCH


def test_producers_are_tracked_independently():
    producers = PartitionProducers()
    assert ok(produce(producers, 1, 0, 0, 1, 0))
    assert ok(produce(producers, 2, 5, 0, 0, 2))
    assert ok(produce(producers, 1, 0, 2, 0, 3))
    assert producers.check(2, 5, 2, 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert ok(producers.check(2, 5, 1, 0))
    assert producers.check(2, 4, 1, 0).error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert producers.check(1, 0, 2, 0).duplicate_of.base_offset == 3
    assert {pid: e.epoch for pid, e in producers.entries.items()} == {1: 0, 2: 5}


def test_partitions_are_tracked_independently():
    p0, p1 = PartitionProducers(), PartitionProducers()
    assert ok(produce(p0, PID, 0, 0, 9, 0))
    assert ok(produce(p1, PID, 0, 0, 0, 0))  # each partition has its own sequence
    assert ok(p1.check(PID, 0, 1, 0))
    assert ok(p0.check(PID, 0, 10, 0))


# ------------------------------------------------------------------------------------------
# properties
# ------------------------------------------------------------------------------------------


@settings(max_examples=examples(100), deadline=None)
@given(
    first_seq=st.one_of(st.just(0), st.integers(INT32_MAX - 40, INT32_MAX)),
    counts=st.lists(st.integers(1, 8), min_size=1, max_size=15),
    epoch=st.integers(0, 2**15 - 2),
)
def test_in_order_batches_are_never_flagged_and_replays_of_the_last_five_are_duplicates(first_seq, counts, epoch):
    producers = PartitionProducers()
    seq, offset = first_seq, 0
    if first_seq:  # a producer already far along (sequence near the wrap): its previous batch ends at first_seq - 1
        producers.record(PID, epoch, first_seq - 1, 0, 0, -1)
        offset = 1
    written = []  # (base_seq, delta, base_offset)
    for n in counts:
        result = produce(producers, PID, epoch, seq, n - 1, offset, append_time=offset)
        assert ok(result), (seq, n)
        written.append((seq, n - 1, offset))
        seq, offset = next_seq(seq, n), offset + n
    for i, (base_seq, delta, base_offset) in enumerate(written):
        result = producers.check(PID, epoch, base_seq, delta)
        if i >= len(written) - MAX_CACHED_BATCHES:
            assert result.error == ErrorCode.NONE
            assert result.duplicate_of == CachedBatch(base_seq, next_seq(base_seq, delta), base_offset, base_offset)
        else:
            assert result == SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None)
        if epoch > 0:
            fenced = producers.check(PID, epoch - 1, base_seq, delta)
            assert fenced.error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert ok(producers.check(PID, epoch, seq, 0))

"""Segments of a partition log and retention as Kafka applies it (``LogSegment.shouldRoll``,
``UnifiedLog.deleteOldSegments``), on virtual time: the core's retention timer fires at
``log.retention.check.interval.ms`` and the tests move ``now_ms`` by hand.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.core.cluster_state import RETENTION_CHECK
from fakebroker.core.log import PartitionLog
from fakebroker.core.log.segments import MAX_INDEX_ENTRIES, MemorySegmentStore
from fakebroker.protocol import records as R
from fakebroker.protocol.error_codes import ErrorCode as E

from ..apis.support import batch, call, cluster
from ..apis.test_produce_fetch import fetch, only_partition
from .test_log import BIG, Config, append, decoded, make_batch

LIST_OFFSETS = 2
EARLIEST, LATEST = -2, -1


def sizes(log: PartitionLog) -> list[tuple[int, int]]:
    """(base offset, batches) of every segment."""
    return [(s.base_offset, s.batches) for s in log.segments]


# -- rolling -----------------------------------------------------------------------------------
def test_a_new_segment_is_rolled_when_the_active_one_would_pass_segment_bytes():
    one = len(make_batch(1))
    log = PartitionLog(config=Config(segment_bytes=3 * one))
    for _ in range(7):
        append(log, make_batch(1))
    assert sizes(log) == [(0, 3), (3, 3), (6, 1)]
    assert [s.size for s in log.segments] == [3 * one, 3 * one, one]
    assert log.size_bytes == 7 * one
    assert [o for o, _ in decoded(log.read(0, BIG))] == list(range(7))  # reads cross segments


def test_a_batch_larger_than_segment_bytes_gets_a_segment_of_its_own():
    log = PartitionLog(config=Config(segment_bytes=10))
    for n in (3, 1):
        append(log, make_batch(n))
    assert sizes(log) == [(0, 1), (3, 1)]


def test_segment_ms_rolls_by_the_first_batch_timestamp():
    # LogSegment.timeWaitedForRoll: the new batch's max timestamp - the first batch's
    log = PartitionLog(config=Config(segment_ms=1_000))
    append(log, make_batch(1, timestamps=[10_000]))
    append(log, make_batch(1, timestamps=[11_000]))  # waited exactly segment.ms: not more
    append(log, make_batch(1, timestamps=[11_001]))
    assert sizes(log) == [(0, 2), (2, 1)]


def test_segment_ms_without_timestamps_uses_the_segment_creation_time():
    log = PartitionLog(config=Config(segment_ms=1_000))
    no_ts = R.build_batch([(None, b"x")])
    append(log, no_ts, now=5_000)
    append(log, no_ts, now=6_000)
    append(log, no_ts, now=6_001)
    assert sizes(log) == [(0, 2), (2, 1)]


def test_the_segment_settings_are_read_at_each_append():
    config = Config()
    log = PartitionLog(config=config)
    append(log, make_batch(1))
    config.settings["segment.bytes"] = 1  # AlterConfigs
    append(log, make_batch(1))
    assert sizes(log) == [(0, 1), (1, 1)]


# -- retention of segments ---------------------------------------------------------------------
def ten_segments() -> PartitionLog:
    """Ten segments of one batch each (offsets 0..9), record timestamp 1000 * (offset + 1)."""
    log = PartitionLog(config=Config(segment_bytes=1))
    for i in range(10):
        append(log, make_batch(1, timestamps=[1_000 * (i + 1)]), now=1_000 * (i + 1))
    return log


def test_time_retention_deletes_whole_segments_and_moves_the_log_start():
    log = ten_segments()
    assert log.retention_breaches(now_ms=5_500, retention_ms=2_000, retention_bytes=-1) == [("retention.ms", 3)]
    assert log.log_start_offset == 3 and sizes(log)[0] == (3, 1)
    assert [o for o, _ in decoded(log.read(0, BIG))][0] == 3  # below the start reads from it


def test_a_segment_holding_both_old_and_new_records_is_kept_by_time_retention():
    log = PartitionLog(config=Config(segment_bytes=2 * len(make_batch(1))))
    for ts in (1_000, 9_000, 1_000, 1_000):
        append(log, make_batch(1, timestamps=[ts]))
    # segment 0 holds 1000 and 9000: its largest timestamp is new, so it and all after it stay
    assert log.apply_retention(now_ms=10_000, retention_ms=5_000, retention_bytes=-1) == 0
    assert log.log_start_offset == 0


def test_the_active_segment_goes_too_when_all_of_it_is_old_and_a_new_empty_one_takes_its_place():
    log = ten_segments()
    assert log.apply_retention(now_ms=100_000, retention_ms=1_000, retention_bytes=-1) == 10
    assert sizes(log) == [(10, 0)]  # deleteSegments rolls first: a log always has a segment
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (10, 10, 0)
    assert log.apply_retention(now_ms=200_000, retention_ms=0, retention_bytes=0) == 0  # an empty last one stays
    assert append(log, make_batch(2)) == (10, -1)


def test_size_retention_deletes_oldest_segments_while_at_least_retention_bytes_remain():
    log = ten_segments()
    one = log.segments[0].size
    assert log.retention_breaches(now_ms=0, retention_ms=-1, retention_bytes=4 * one + 1) == [("retention.bytes", 5)]
    assert log.log_start_offset == 5 and log.size_bytes == 5 * one
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=5 * one) == 0


def test_size_retention_counts_whole_segments():
    one = len(make_batch(1))
    log = PartitionLog(config=Config(segment_bytes=4 * one))
    for _ in range(10):
        append(log, make_batch(1))
    assert sizes(log) == [(0, 4), (4, 4), (8, 2)]
    # 10 batches, retention 5: deleting the first segment leaves 6 >= 5; the second would leave 2
    assert log.apply_retention(now_ms=0, retention_ms=-1, retention_bytes=5 * one) == 4
    assert log.log_start_offset == 4 and sizes(log) == [(4, 4), (8, 2)]


def test_segments_below_delete_records_go_and_the_store_forgets_them():
    store = MemorySegmentStore()
    log = PartitionLog(store, Config(segment_bytes=1))
    for _ in range(4):
        append(log, make_batch(1))
    log.delete_records_before(2)
    assert store.bases() == [2, 3] and log.log_start_offset == 2


def test_the_sparse_index_stays_bounded_and_finds_every_offset():
    log = PartitionLog(config=Config(index_interval_bytes=1))  # an entry per batch until halved
    n = 3 * MAX_INDEX_ENTRIES
    for i in range(n):
        append(log, make_batch(1, tag=f"r{i}-"))
    [segment] = log.segments
    assert len(segment.index_offsets) <= MAX_INDEX_ENTRIES
    assert segment.index_interval > 1
    for offset in (0, 1, 777, n // 2, n - 1):
        [(first, value), *_] = decoded(log.read(offset, 1))
        assert (first, value) == (offset, f"r{offset}-0".encode())


def test_recover_rebuilds_a_log_from_its_store_byte_for_byte():
    store = MemorySegmentStore()
    log = PartitionLog(store, Config(segment_bytes=3 * len(make_batch(1))))
    for i in range(8):
        append(log, make_batch(1, timestamps=[100 * i]))
    log.delete_records_before(4)
    reopened = PartitionLog(store, Config())
    reopened.recover(now_ms=0, log_start_offset=log.log_start_offset)
    assert sizes(reopened) == sizes(log)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (4, 8)
    assert reopened.read(4, BIG) == log.read(4, BIG)
    assert reopened.offset_for_timestamp(650) == (7, 700)


def test_recover_cuts_a_partial_batch_left_at_the_end():
    store = MemorySegmentStore()
    log = PartitionLog(store)
    append(log, make_batch(2))
    whole = store.size(0)
    store.append(0, make_batch(3)[:20])  # a crash in the middle of a write
    reopened = PartitionLog(store)
    reopened.recover(now_ms=0)
    assert (reopened.log_end_offset, store.size(0)) == (2, whole)


# -- the cluster: the retention check is a timer of the core ---------------------------------
def produce_at(state, ts: int) -> None:
    partition = state.partition("t", 0)
    result = state.append(
        partition, batch(b"x", key=b"k", timestamp=ts), produce_version=9, transactional_id=None, now_ms=ts
    )
    assert result.error == E.NONE


def list_offset(state, timestamp: int) -> int:
    result, _ = call(
        state,
        LIST_OFFSETS,
        7,
        replica_id=-1,
        isolation_level=0,
        topics=[{"name": "t", "partitions": [{"partition_index": 0, "timestamp": timestamp}]}],
    )
    return result.topics[0].partitions[0].offset


def fetch_error(state, offset: int) -> E:
    return E(only_partition(fetch(state, "t", offset)[0]).error_code)


def test_retention_runs_every_check_interval_on_virtual_time_and_clients_see_the_new_start():
    state = cluster(1, {"log.retention.check.interval.ms": 60_000})
    state.create_topic("t", 1, configs={"retention.ms": "100000", "segment.ms": "9999"})
    for ts in range(0, 50_000, 10_000):  # a segment every 10 s: the second batch of each rolls
        produce_at(state, ts)
        produce_at(state, ts + 5_000)
    log = state.partition("t", 0).log
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6, 8]
    state.start_periodic_checks(0)
    assert state.timers.deadline(RETENTION_CHECK) == 60_000
    state.tick(60_000)
    assert log.log_start_offset == 0  # nothing older than 100 s yet
    state.tick(120_000)  # 120 s: segments whose newest record is before 20 s are gone
    assert log.log_start_offset == 4 and state.timers.deadline(RETENTION_CHECK) == 180_000
    deleted = [e for e in state.events if e.kind == "segments_deleted"]
    assert [(e.topic, e.partition, e.reason, e.batches, e.log_start_offset) for e in deleted] == [
        ("t", 0, "retention.ms", 4, 4)
    ]
    assert list_offset(state, EARLIEST) == 4 and list_offset(state, LATEST) == 10
    assert fetch_error(state, 3) == E.OFFSET_OUT_OF_RANGE
    assert fetch_error(state, 4) == E.NONE


def test_compacted_topics_keep_their_segments_past_retention():
    state = cluster(1)
    state.create_topic("t", 1, configs={"cleanup.policy": "compact", "retention.ms": "1", "segment.bytes": "1"})
    produce_at(state, 0)
    produce_at(state, 1)
    assert state.apply_retention(10**9) == 0
    assert state.partition("t", 0).log.log_start_offset == 0


def test_memory_held_by_a_partition_is_bounded_by_retention():
    state = cluster(1)
    one = len(batch(b"x" * 100))
    state.create_topic("t", 1, configs={"retention.bytes": str(20 * one), "segment.bytes": str(5 * one)})
    partition = state.partition("t", 0)
    for i in range(2_000):
        state.append(partition, batch(b"x" * 100), produce_version=9, transactional_id=None, now_ms=i)
        if i % 50 == 0:
            state.apply_retention(i)
    state.apply_retention(2_000)
    log = partition.log
    assert log.size_bytes <= 25 * one and len(log.segments) <= 5
    assert sum(len(s.index_offsets) for s in log.segments) <= 25
    assert log.log_end_offset == 2_000


def test_producer_state_of_silent_producers_expires_at_the_retention_check():
    state = cluster(1, {"producer.id.expiration.ms": 1_000})
    state.create_topic("t", 1)
    partition = state.partition("t", 0)
    idempotent = batch(b"x", timestamp=0, producer_id=7, producer_epoch=0, base_sequence=0)
    state.append(partition, idempotent, produce_version=9, transactional_id=None, now_ms=0)
    assert list(partition.producers.entries) == [7]
    state.apply_retention(999)
    assert list(partition.producers.entries) == [7]
    state.apply_retention(1_000)
    assert partition.producers.entries == {}


def test_read_stops_at_the_upper_bound_by_batch_base_offset_as_before():
    log = PartitionLog()
    append(log, make_batch(2))
    append(log, make_batch(3))  # offsets 2-4
    assert [o for o, _ in decoded(log.read(3, BIG, upper_bound=3))] == [2, 3, 4]  # the batch starts below it
    assert log.read(2, BIG, upper_bound=2) == b""


def test_a_transaction_left_open_in_a_stored_log_is_aborted_when_its_topic_is_restored():
    stores: dict = {}

    class Kept:
        """Storage that outlives the cluster state, as files do."""

        def open(self, topic, topic_id, partition):
            return stores.setdefault((topic, partition), MemorySegmentStore())

        def remove(self, topic, topic_id, partition):
            stores.pop((topic, partition), None)

    state = cluster(1, storage=Kept())
    topic = state.create_topic("t", 1)
    txn = R.build_batch([(None, b"x", [], 5)], producer_id=5, producer_epoch=2, base_sequence=0, transactional=True)
    append(topic.partitions[0].log, txn)
    assert topic.partitions[0].log.last_stable_offset == 0

    again = cluster(1, storage=Kept())
    restored = again.restore_topic(
        "t", topic.topic_id, [[0]], {}, leader_epochs=[0], log_start_offsets=[0], internal=False, now_ms=10
    )
    log = restored.partitions[0].log
    assert log.open_txns == {} and [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_txns] == [
        (5, 0, 1)
    ]
    assert log.last_stable_offset == log.log_end_offset == 2
    assert [e.kind for e in again.events][-1] == "topic_restored"


# -- the in-memory store -----------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 40), st.sampled_from([bytes, bytearray, memoryview])),
            st.tuples(st.just("truncate"), st.integers(0, 200), st.just(bytes)),
        ),
        max_size=25,
    ),
    st.lists(st.tuples(st.integers(0, 220), st.integers(0, 120)), min_size=1, max_size=10),
)
def test_the_memory_store_reads_back_what_any_appends_and_truncates_left(steps, reads):
    # small thresholds, so that parts kept as appended, parts of the store's own and reads
    # across parts all occur; a plain bytearray is the model
    store = MemorySegmentStore()
    store.KEEP_FROM, store.PART_BYTES = 16, 48
    store.create(0)
    model = bytearray()
    for number, (step, size, kind) in enumerate(steps):
        if step == "append":
            data = bytes([number]) * size
            store.append(0, kind(data))
            model += data
        else:
            store.truncate(0, size)
            del model[size:]
        assert store.size(0) == len(model)
    for position, size in reads:
        assert store.read(0, position, size) == bytes(model[position : position + size])


def test_a_large_batch_is_kept_as_appended_and_small_ones_share_a_part():
    store = MemorySegmentStore()
    store.create(5)
    big = bytearray(b"b" * store.KEEP_FROM)
    store.append(5, b"s1")
    store.append(5, big)
    store.append(5, b"s2")
    store.append(5, b"s3")
    segment = store._segments[5]  # one bytearray until the large batch came: parts from then on
    assert segment.parts[1] is big and segment.parts[2] == b"s2s3" and segment.starts == [0, 2, 2 + len(big)]
    small = MemorySegmentStore()
    small.create(0)
    small.append(0, b"a")
    small.append(0, b"b")
    assert small._segments[0] == bytearray(b"ab") and small.read(0, 1, 5) == b"b"
    assert store.read(5, 0, 4) == b"s1bb" and store.read(5, len(big), 10) == b"bbs2s3"

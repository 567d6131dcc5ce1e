"""Recovery of a stored log, as Kafka's: every batch checked (size, magic, CRC, offsets in
order), the log cut at the first bad one (that segment truncated, every later one deleted),
one line saying so, and a real client (librdkafka, CRCs checked) reads the good prefix whole."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from fakebroker.cluster import FakeCluster
from fakebroker.core.log import PartitionLog
from fakebroker.protocol import records as R
from fakebroker.storage import FileSegmentStore

from ..core.test_log import BIG, Config, append, decoded, make_batch

QUIET = {"log_level": 3}


def stored(data: bytes) -> list[R.BatchHeader]:
    return [h for h in R.iter_batch_headers(data) if not h.truncated]


def zero_tail(path: Path, n: int = 4096) -> None:
    """What power loss leaves: the last ``n`` bytes of the file zeroes."""
    data = bytearray(path.read_bytes())
    data[-n:] = bytes(min(n, len(data)))
    path.write_bytes(bytes(data))


def flip(path: Path, position: int, mask: int = 0xFF) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= mask
    path.write_bytes(bytes(data))


def written_log(tmp_path: Path, batches: int = 30, **config: int) -> tuple[PartitionLog, bytes]:
    log = PartitionLog(FileSegmentStore(tmp_path / "t-0"), Config(**config))
    for i in range(batches):
        append(log, make_batch(2, tag=f"b{i}-" + "x" * 100))
    everything = log.read(0, BIG)
    log.store.close()
    return log, everything


def reopen(tmp_path: Path, **config: int) -> PartitionLog:
    log = PartitionLog(FileSegmentStore(tmp_path / "t-0"), Config(**config))
    log.recover(now_ms=0)
    return log


def test_a_good_log_is_reopened_whole_and_nothing_is_cut(tmp_path):
    _, everything = written_log(tmp_path, segment_bytes=2000)
    log = reopen(tmp_path)
    assert log.cut is None and log.read(0, BIG) == everything and log.log_end_offset == 60


def test_a_torn_tail_is_cut_at_the_first_batch_it_touches(tmp_path):
    _, everything = written_log(tmp_path)
    path = tmp_path / "t-0" / f"{0:020d}.log"
    size = path.stat().st_size
    zero_tail(path, 1000)
    kept = [h for h in stored(everything) if h.end <= size - 1000 + 1]  # the last byte of a batch is a 0 already
    log = reopen(tmp_path)
    assert log.cut is not None and log.cut.position == kept[-1].end
    assert log.log_end_offset == kept[-1].last_offset + 1 == log.cut.offset
    assert log.cut.bytes_dropped == size - kept[-1].end and path.stat().st_size == kept[-1].end
    assert log.read(0, BIG) == everything[: kept[-1].end]
    assert append(log, make_batch(1)) == (log.cut.offset, -1)  # appends go on right after the cut


@pytest.mark.parametrize(
    ("where", "mask", "why"),
    [
        (70, 0x01, "CRC mismatch"),  # a byte of a record
        (7, 0xFF, "base offset 235 is not 20"),  # the base offset's low byte (outside the CRC)
        (0, 0x80, "base offset -9223372036854775788 is not 20"),  # its sign bit
        (8, 0x7F, "runs past the end of the segment"),  # its length, now larger than the file
        (16, 0x07, "Invalid magic"),  # the magic byte
    ],
)
def test_a_damaged_batch_cuts_the_log_there_and_every_later_segment_goes(tmp_path, where, mask, why):
    log, everything = written_log(tmp_path, segment_bytes=2000)
    segments = [(s.base_offset, s.size) for s in log.segments]
    assert len(segments) >= 4
    path = tmp_path / "t-0"
    files = {base: path / f"{base:020d}.log" for base, _ in segments}
    in_segment = max(base for base, _ in segments if base <= 20)  # the segment holding offset 20
    batch = next(h for h in stored(files[in_segment].read_bytes()) if h.base_offset == 20)
    flip(files[in_segment], batch.position + where, mask)
    log = reopen(tmp_path)
    cut = log.cut
    assert cut is not None and why in cut.reason
    assert (cut.segment, cut.position, cut.offset, log.log_end_offset) == (in_segment, batch.position, 20, 20)
    later = [base for base, _ in segments if base > in_segment]
    assert cut.segments_deleted == len(later) and later
    dropped = sum(size for base, size in segments if base > in_segment) + dict(segments)[in_segment] - batch.position
    assert cut.bytes_dropped == dropped
    assert sorted(p.name for p in path.iterdir()) == [files[b].name for b, _ in segments if b <= in_segment]
    assert [o for o, _ in decoded(log.read(0, BIG))] == list(range(20))
    assert log.read(0, BIG) == everything[: len(log.read(0, BIG))]
    assert "t-0: log recovery cut the log at offset 20" in cut.describe("t-0")


def test_a_bad_first_batch_of_a_later_segment_drops_that_segment_and_the_one_before_goes_on(tmp_path):
    log, _ = written_log(tmp_path, segment_bytes=2000)
    second = log.segments[1].base_offset
    flip(tmp_path / "t-0" / f"{second:020d}.log", 70)
    log = reopen(tmp_path)
    assert log.cut is not None and (log.cut.segment, log.cut.position, log.cut.offset) == (second, 0, second)
    assert [s.base_offset for s in log.segments] == [0] and log.log_end_offset == second
    assert not (tmp_path / "t-0" / f"{second:020d}.log").exists()


def test_a_bad_first_batch_of_the_only_segment_leaves_an_empty_log(tmp_path):
    written_log(tmp_path, batches=3)
    flip(tmp_path / "t-0" / f"{0:020d}.log", 70)
    log = reopen(tmp_path)
    assert log.cut is not None and log.cut.offset == 0 and (log.log_start_offset, log.log_end_offset) == (0, 0)
    assert append(log, make_batch(1)) == (0, -1)


# -- a real client reads what recovery kept -----------------------------------------------------
N = 60


def produce_one_batch_each(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **QUIET})
    for i in range(N):
        producer.produce("orders", key=b"k", value=f"value-{i:03d}-".encode() + b"v" * 200, partition=0)
        assert producer.flush(10) == 0  # one batch a record


def read_partition(bootstrap: str) -> tuple[list[tuple[int, bytes]], tuple[int, int]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "check",
            "check.crcs": True,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    consumer.assign([TopicPartition("orders", 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                break
            got.append((message.offset(), message.value()))
        else:
            raise AssertionError("no end of partition")
        return got, consumer.get_watermark_offsets(TopicPartition("orders", 0), timeout=10)
    finally:
        consumer.close()


def corrupt_torn(path: Path) -> None:
    zero_tail(path)


def corrupt_record(path: Path) -> None:
    flip(path, next(h for h in stored(path.read_bytes()) if h.base_offset == 20).position + 80)


def corrupt_base_offset(path: Path) -> None:
    flip(path, next(h for h in stored(path.read_bytes()) if h.base_offset == 20).position + 7, 0x01)


@pytest.mark.clients
@pytest.mark.parametrize("corrupt", [corrupt_torn, corrupt_record, corrupt_base_offset])
def test_a_real_client_reads_the_good_prefix_whole_after_recovery(tmp_path, caplog, corrupt):
    data = tmp_path / "data"
    with FakeCluster(data_dir=data, topics={"orders": 1}).run_in_thread() as c:
        produce_one_batch_each(c.bootstrap_servers)
        values = [v for *_, v in c.records("orders")]
    path = data / "orders-0" / f"{0:020d}.log"
    original = path.read_bytes()
    corrupt(path)
    damaged = path.read_bytes()
    first_bad = next(h for h in stored(original) if original[h.position : h.end] != damaged[h.position : h.end])
    good = first_bad.base_offset
    assert 0 < good < N
    with caplog.at_level(logging.WARNING, logger="fakebroker"):
        with FakeCluster(data_dir=data).run_in_thread() as c:
            got, watermarks = read_partition(c.bootstrap_servers)
    assert got == list(enumerate(values[:good]))
    assert watermarks == (0, good)
    [line] = [r.getMessage() for r in caplog.records if "log recovery" in r.getMessage()]
    assert line.startswith(f"fakebroker: orders-0: log recovery cut the log at offset {good} ")
    assert f"byte {first_bad.position}" in line and f"{len(original) - first_bad.position} bytes dropped" in line
    assert "\n" not in line

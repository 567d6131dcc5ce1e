"""Record batches and requests captured from real clients parse, validate and re-encode.

The fixtures under ``tests/fixtures/`` were written by confluent-kafka (librdkafka) and
kafka-python producers against ``tests/fixtures/capture_batches.py`` (which re-creates them);
``tests/fixtures/batches/index.json`` says who wrote each one and which records it holds.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from fakebroker.protocol import compression, headers, records
from fakebroker.protocol.framing import FrameDecoder, frame

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BATCHES = FIXTURES / "batches"
INDEX = json.loads((BATCHES / "index.json").read_text())
CASES = sorted(INDEX["fixtures"])
CODEC_IDS = {name: cid for cid, name in compression.CODEC_NAMES.items()}
COMPRESSED = [name for name in CASES if INDEX["fixtures"][name]["codec"] != "none"]
UNCOMPRESSED = [name for name in CASES if INDEX["fixtures"][name]["codec"] == "none"]

RECORDS_OFFSET = 61  # v2 batch header size: where the (possibly compressed) records start
CRC_OFFSET = 17  # baseOffset(8) batchLength(4) partitionLeaderEpoch(4) magic(1)

# Compressed batches whose bytes our compression module reproduces exactly, and why the
# others differ (all of them decode to the very same records; any writer's framing is valid):
BYTE_IDENTICAL = {"kafka-python-snappy", "kafka-python-zstd"}
WHY_NOT_IDENTICAL = {
    "gzip": "different deflate implementation (cramjam/flate2 vs zlib) and gzip header (OS byte, mtime)",
    "snappy": "librdkafka writes raw snappy blocks; we write snappy-java (xerial) framing as Java does",
    "lz4": "different LZ4 compressor and frame flags (we set block checksums; librdkafka and Java do not; "
    "kafka-python writes the content size)",
    "zstd": "librdkafka streams without the frame content size; we (and kafka-python) write it",
}


def fixture(name: str) -> tuple[dict, bytes]:
    meta = INDEX["fixtures"][name]
    return meta, (BATCHES / meta["file"]).read_bytes()


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def expected(meta: dict) -> list[dict]:
    return [
        {"key": _bytes(k), "value": _bytes(v), "headers": [(hk, _bytes(hv)) for hk, hv in hs], "timestamp": ts}
        for k, v, hs, ts in meta["records"]
    ]


def split_batches(data: bytes) -> list[bytes]:
    """Each batch's bytes, cut by the length fields alone (independent of records.py)."""
    out, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        out.append(data[pos : pos + 12 + length])
        pos += 12 + length
    assert pos == len(data)
    return out


def decoded_records(batches) -> list[dict]:
    out = []
    for batch in batches:
        for r in batch.records:
            out.append(
                {
                    "key": r.key,
                    "value": r.value,
                    "headers": list(r.headers),
                    "timestamp": batch.base_timestamp + r.timestamp_delta,
                    "offset": batch.base_offset + r.offset_delta,
                }
            )
    return out


def rebuild(batch, compression_id: int) -> bytes:
    return records.build_batch(
        batch.records,
        base_offset=batch.base_offset,
        compression=compression_id,
        timestamp_type=batch.timestamp_type,
        base_timestamp=batch.base_timestamp,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        transactional=batch.is_transactional,
        control=batch.is_control,
        partition_leader_epoch=batch.partition_leader_epoch,
    )


def test_index_lists_every_fixture_file():
    files = {p.name for p in BATCHES.glob("*.bin")}
    assert files == {INDEX["fixtures"][n]["file"] for n in CASES}
    clients = {INDEX["fixtures"][n]["client"] for n in CASES}
    codecs = {INDEX["fixtures"][n]["codec"] for n in CASES}
    assert clients == {"confluent", "kafka-python"}
    assert codecs == {"none", "gzip", "snappy", "lz4", "zstd"}
    for name in CASES:
        meta, data = fixture(name)
        assert len(data) == meta["size"] < 4096


@pytest.mark.parametrize("name", CASES)
def test_batches_parse_and_validate(name):
    meta, data = fixture(name)
    batches = records.read_batches(data)
    raw = split_batches(data)
    assert len(batches) == len(raw) >= 1
    assert sum(len(b.records) for b in batches) == meta["num_records"]
    codec = CODEC_IDS[meta["codec"]]
    sequence = 0
    for batch, blob in zip(batches, raw):
        assert isinstance(batch, records.RecordBatch)
        assert batch.magic == 2
        assert records.verify_crc(blob)
        assert batch.crc == struct.unpack_from(">I", blob, CRC_OFFSET)[0]
        assert batch.compression == codec
        assert batch.attributes & 0x07 == codec
        assert batch.timestamp_type == 0  # CreateTime: the clients set the timestamps
        assert not batch.is_control  # producers never write control batches (the coordinator does)
        assert batch.is_transactional is meta["transactional"]
        assert batch.last_offset_delta == len(batch.records) - 1
        assert [r.offset_delta for r in batch.records] == list(range(len(batch.records)))
        assert batch.max_timestamp == batch.base_timestamp + max(r.timestamp_delta for r in batch.records)
        if meta["idempotent"]:
            assert (batch.producer_id, batch.producer_epoch) == (meta["producer_id"], meta["producer_epoch"])
            assert batch.base_sequence == sequence
            sequence += len(batch.records)
        else:
            assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)


@pytest.mark.parametrize("name", CASES)
def test_records_are_the_ones_the_client_sent(name):
    meta, data = fixture(name)
    got = decoded_records(records.read_batches(data))
    want = expected(meta)
    assert [(g["key"], g["value"], g["headers"], g["timestamp"]) for g in got] == [
        (w["key"], w["value"], w["headers"], w["timestamp"]) for w in want
    ]
    assert [g["offset"] for g in got] == list(range(len(want)))  # clients write base offset 0
    assert sum(g["value"] is None for g in got) == 1


@pytest.mark.parametrize("name", CASES)
def test_header_walk_agrees_with_full_decode(name):
    _, data = fixture(name)
    walked = list(records.iter_batch_headers(data))
    decoded = records.read_batches(data)
    assert len(walked) == len(decoded)
    position = 0
    for h, batch, blob in zip(walked, decoded, split_batches(data)):
        assert not h.truncated and h.position == position and h.size == len(blob)
        position += len(blob)
        for attr in (
            "base_offset",
            "partition_leader_epoch",
            "magic",
            "crc",
            "attributes",
            "last_offset_delta",
            "base_timestamp",
            "max_timestamp",
            "producer_id",
            "producer_epoch",
            "base_sequence",
        ):
            assert getattr(h, attr) == getattr(batch, attr), attr
        assert h.records_count == len(batch.records)
        assert (h.compression, h.is_transactional, h.is_control) == (
            batch.compression,
            batch.is_transactional,
            batch.is_control,
        )


@pytest.mark.parametrize("name", CASES)
def test_captured_batches_pass_produce_validation(name):
    meta, data = fixture(name)
    for blob in split_batches(data):  # one batch per partition per Produce request, as the clients sent them
        for version in meta["produce_api_versions"]:
            (batch,) = records.validate_produce_records(blob, produce_version=version, now=meta["records"][0][3])
            assert len(batch.records) == meta["num_records"]


@pytest.mark.parametrize("name", UNCOMPRESSED)
def test_uncompressed_batches_rebuild_byte_for_byte(name):
    _, data = fixture(name)
    for batch, blob in zip(records.read_batches(data), split_batches(data)):
        assert rebuild(batch, compression.NONE) == blob
        assert batch.to_bytes() == blob


@pytest.mark.parametrize("name", COMPRESSED)
def test_compressed_batches_rebuild_to_the_same_records(name):
    meta, data = fixture(name)
    codec = CODEC_IDS[meta["codec"]]
    for batch, blob in zip(records.read_batches(data), split_batches(data)):
        # Uncompressed rebuild: its records section is exactly what the client compressed.
        plain = rebuild(batch, compression.NONE)
        assert plain[RECORDS_OFFSET:] == compression.decompress(codec, blob[RECORDS_OFFSET:])
        # The header apart from length, CRC and codec bits is the client's too.
        assert (
            plain[:8] == blob[:8]
            and plain[12:17] == blob[12:17]
            and plain[23:RECORDS_OFFSET] == blob[23:RECORDS_OFFSET]
        )
        # Compressed rebuild: a valid batch holding the same records.
        again = rebuild(batch, codec)
        assert records.verify_crc(again)
        (reread,) = records.read_batches(again)
        assert reread.compression == codec
        assert decoded_records([reread]) == decoded_records([batch])
        if name in BYTE_IDENTICAL:
            assert again == blob


@pytest.mark.parametrize("name", CASES)
def test_set_base_offset_in_place_keeps_crc(name):
    meta, data = fixture(name)
    for blob in split_batches(data):
        buf = bytearray(blob)
        records.set_base_offset(buf, 0, 12345)
        assert buf[8:] == blob[8:]  # the base offset is outside the CRC'd part: nothing else moves
        assert records.verify_crc(bytes(buf))
        (batch,) = records.read_batches(bytes(buf))
        assert batch.base_offset == 12345
        assert decoded_records([batch])[0]["offset"] == 12345


@pytest.mark.parametrize("name", [n for n in CASES if INDEX["fixtures"][n]["transactional"]])
def test_transaction_marker_after_a_captured_transaction_is_recognized(name):
    """Clients never write control batches, so none are captured; this appends the marker the
    coordinator would write after the captured transaction and reads the pair back."""
    meta, data = fixture(name)
    (blob,) = split_batches(data)
    kind = "commit" if meta["committed"] else "abort"
    marker = records.build_control_batch(
        kind,
        meta["producer_id"],
        meta["producer_epoch"],
        coordinator_epoch=3,
        base_offset=meta["num_records"],
        timestamp=meta["records"][-1][3] + 1,
    )
    assert records.verify_crc(marker)
    data_batch, control_batch = records.read_batches(blob + marker)
    assert data_batch.is_transactional and not data_batch.is_control
    assert control_batch.is_transactional and control_batch.is_control
    assert (control_batch.producer_id, control_batch.producer_epoch) == (
        data_batch.producer_id,
        data_batch.producer_epoch,
    )
    assert control_batch.base_offset == data_batch.last_offset + 1
    (ctl,) = control_batch.control_records()
    assert (ctl.is_commit, ctl.is_abort, ctl.coordinator_epoch) == (meta["committed"], not meta["committed"], 3)
    assert data_batch.control_records() == []


def test_a_log_of_every_fixture_parses_in_order():
    """All fixtures concatenated, with increasing base offsets, as a partition log would hold them."""
    log = bytearray()
    offset = 0
    counts = []
    for name in CASES:
        meta, data = fixture(name)
        for blob in split_batches(data):
            buf = bytearray(blob)
            records.set_base_offset(buf, 0, offset)
            n = struct.unpack_from(">i", buf, 23)[0] + 1
            offset += n
            counts.append(n)
            log += buf
    batches = records.read_batches(bytes(log))
    assert [len(b.records) for b in batches] == counts
    assert [b.base_offset for b in batches] == [sum(counts[:i]) for i in range(len(counts))]


# ------------------------------------------------------------------- captured requests


def request_fixture(label: str) -> tuple[dict, bytes]:
    meta = INDEX["requests"][label]
    return meta, (BATCHES / meta["file"]).resolve().read_bytes()


@pytest.mark.parametrize("label", sorted(INDEX["requests"]))
def test_captured_request_decodes_and_reencodes(label):
    meta, payload = request_fixture(label)
    assert headers.peek_request(payload)[:2] == (meta["api_key"], meta["api_version"])
    request = headers.decode_request(payload)
    assert (request.api_key, request.api_version) == (meta["api_key"], meta["api_version"])
    assert request.header.client_id == meta["client_id"]
    again = headers.encode_request(
        request.api_key, request.api_version, request.correlation_id, request.body, client_id=request.header.client_id
    )
    assert again == payload


def test_captured_produce_request_carries_the_captured_batch():
    meta, payload = request_fixture("produce")
    decoder = FrameDecoder()
    for i in range(0, len(payload) + 4, 7):  # a frame arriving in pieces
        decoder.feed(frame(payload)[i : i + 7])
    (got,) = list(decoder.frames())
    request = headers.decode_request(got)
    body = request.body
    assert body.acks in (-1, 1) and body.transactional_id is None
    (topic,) = body.topic_data
    (part,) = topic.partition_data
    assert topic.name == "confluent-none" and part.index == 0
    _, batch_bytes = fixture("confluent-none")
    assert part.records == batch_bytes
    (batch,) = records.read_batches(part.records)
    assert batch.producer_id == -1 and len(batch.records) == 10


def test_captured_metadata_request_names_the_topic():
    _, payload = request_fixture("metadata")
    body = headers.decode_request(payload).body
    assert [t.name for t in body.topics] == ["confluent-none"]

"""Differential test: :func:`check_produce_records` (walks records, builds none) must give the
verdict :func:`validate_produce_records` (decodes every record, the reference) gives -- the same
error class, message, offset, record index and record errors, or both accept -- on valid
batches built with the project's builders and then mutated (lengths, varints, counts,
attributes, compression, timestamps, headers, truncation; CRC recomputed or not).

    FAKEBROKER_WALK_INPUTS=30000 python -m pytest tests/protocol/test_produce_walk.py -k seeded

runs the long comparison (the default compares 2,000 seeded inputs plus the hypothesis ones).
"""

from __future__ import annotations

import dataclasses
import os
import random
import struct

import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.protocol import compression as C
from fakebroker.protocol import records as R
from fakebroker.protocol.records import Record
from tests.conftest import examples

V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61 bytes of a v2 batch header
SEEDED_INPUTS = int(os.environ.get("FAKEBROKER_WALK_INPUTS", "2000"))
NOW = 1_700_000_000_000


def _records(rnd: random.Random) -> list[Record]:
    out = []
    for i in range(rnd.choice([1, 1, 2, 3, 5, 20, 70, 200])):
        headers = [
            (rnd.choice(["", "h", "é", "k" * 70]), rnd.choice([None, b"", b"v", b"x" * 130]))
            for _ in range(rnd.choice([0, 0, 0, 1, 2]))
        ]
        out.append(
            Record(
                offset_delta=i if rnd.random() < 0.95 else rnd.choice([-1, 0, 64, 8191, 2**20, 2**31 - 1]),
                timestamp_delta=rnd.choice([0, 0, 1, -1, 63, 64, 10_000, -(2**40), 2**40, 3_600_001]),
                key=rnd.choice([None, b"", b"k", b"key" * 50]),
                value=rnd.choice([None, b"", b"v", b"x" * 100, b"y" * 9000]),
                headers=headers,
                attributes=rnd.choice([0, 0, 0, 1, 255]),
            )
        )
    return out


def _mutate_section(rnd: random.Random, section: bytearray) -> None:
    for _ in range(rnd.choice([0, 0, 1, 1, 2, 3])):
        if not section:
            return
        i = rnd.randrange(len(section))
        kind = rnd.randrange(7)
        if kind == 0:
            section[i] = rnd.randrange(256)
        elif kind == 1:
            section[i] = rnd.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, 0x81])  # varint edge bytes
        elif kind == 2:
            section[i:i] = bytes(rnd.choice([[0x80], [0xFF] * 5, [0x80] * 10, [0x01], [0x00]]))
        elif kind == 3:
            del section[i : i + rnd.choice([1, 2, 5])]
        elif kind == 4:
            del section[i:]  # truncated records section
        elif kind == 5:
            section += bytes(rnd.choice([[0], [0] * 40, [0x80], [1, 2, 3]]))  # trailing bytes
        else:
            section[i : i + 2] = bytes([0xFE, 0x7F])  # a two-byte varint


def _v2_case(rnd: random.Random) -> bytes:
    codec = rnd.choice([0, 0, 0, 1, 2, 3, 4])
    records = _records(rnd)
    plain = R.build_batch(
        records,
        base_timestamp=NOW + rnd.choice([0, 0, -10_000_000, 10_000_000, -NOW - 1]),
        timestamp_type=rnd.choice([0, 0, 0, 1]),
        producer_id=rnd.choice([-1, -1, 7]),
        producer_epoch=rnd.choice([-1, 0]),
        base_sequence=rnd.choice([-1, 0, 0, 5]),
    )
    fields = list(V2_HEADER.unpack_from(plain))
    section = bytearray(plain[V2_HEADER.size :])
    _mutate_section(rnd, section)
    payload = bytes(C.compress(codec, bytes(section))) if codec else bytes(section)
    if codec and rnd.random() < 0.1:
        payload = payload[: rnd.randrange(len(payload) + 1)]  # a cut compressed stream
    fields[5] = (fields[5] & ~0x07) | codec
    if rnd.random() < 0.3:  # header fields
        index = rnd.choice([0, 5, 6, 7, 8, 9, 11, 12])
        fields[index] = {
            0: rnd.choice([0, 1, -1]),
            5: rnd.choice([0, 1, 3, 4, 5, 8, 9, 16, 32, 0x20 | codec, 0x40, codec | 8]),
            6: rnd.choice([-1, 0, fields[6] + 1, fields[6] - 1, 2**31 - 1]),
            7: NOW + rnd.choice([0, 4_000_000, -(10**12)]),
            8: rnd.choice([-1, NOW, NOW + 4_000_000, 0]),
            9: rnd.choice([-1, 3]),
            11: rnd.choice([-1, 0, -5]),
            12: rnd.choice([-1, 0, fields[12] + 1, fields[12] - 1, 2**31 - 1]),
        }[index]
        if index in (6, 12):
            fields[index] = max(-(2**31), min(2**31 - 1, fields[index]))  # int32 fields
    fields[1] = 49 + len(payload)
    if rnd.random() < 0.05:
        fields[1] += rnd.choice([-3, -1, 1, 5, -49])
    fields[4] = 0
    buf = bytearray(V2_HEADER.pack(*fields) + payload)
    if rnd.random() < 0.95:
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def make_case(rnd: random.Random) -> tuple[bytes, dict]:
    """One produced records blob (mostly one v2 batch, mutated) and the validation options."""
    roll = rnd.random()
    if roll < 0.08:
        blob = R.build_message_set(
            [(rnd.choice([None, b"k"]), b"v" * rnd.randrange(3), NOW) for _ in range(rnd.randrange(1, 4))],
            magic=rnd.choice([0, 1]),
            compression=rnd.choice([0, 1, 2, 3]),
        )
    else:
        blob = _v2_case(rnd)
        if roll > 0.97:
            blob += _v2_case(rnd)
    if rnd.random() < 0.05:
        blob = blob[: rnd.randrange(len(blob) + 1)]
    options = {
        "produce_version": rnd.choice([None, 2, 3, 6, 7, 9, 9, 11]),
        "compacted": rnd.random() < 0.3,
        "max_message_size": rnd.choice([None, None, 1 << 20, 200]),
        "now": rnd.choice([None, NOW, NOW]),
        "message_timestamp_type": rnd.choice([R.CREATE_TIME, R.CREATE_TIME, R.LOG_APPEND_TIME]),
        "timestamp_before_max_ms": rnd.choice([2**63 - 1, 3_600_000, 0]),
        "timestamp_after_max_ms": rnd.choice([2**63 - 1, 3_600_000, 0]),
        "topic_partition": rnd.choice(["", "t-0"]),
        "max_record_size": rnd.choice([None, 1 << 20, 50]),
        "max_decompressed_batch": rnd.choice([R.MAX_DECOMPRESSED_BATCH_BYTES, 64, 700, 5000]),
    }
    return blob, options


#: the options that are the topic's settings, given to the validators as one ProduceLimits
LIMITS = {field.name for field in dataclasses.fields(R.ProduceLimits)}


def with_options(call, blob: bytes, options: dict):
    """``call`` (a validator) on ``blob`` with ``options``: the topic's settings among them as
    one :class:`ProduceLimits`, the rest as keywords."""
    limits = R.ProduceLimits(**{name: value for name, value in options.items() if name in LIMITS})
    return call(blob, limits, **{name: value for name, value in options.items() if name not in LIMITS})


def verdict(call, blob: bytes, options: dict) -> tuple:
    try:
        with_options(call, blob, options)
    except Exception as exc:  # anything: both must fail the same way
        return (
            type(exc).__name__,
            str(exc),
            getattr(exc, "offset", None),
            getattr(exc, "record_index", None),
            getattr(exc, "record_errors", None),
        )
    return ("ok",)


def check_same(rnd: random.Random) -> tuple:
    blob, options = make_case(rnd)
    expected = verdict(R.validate_produce_records, blob, options)
    assert verdict(R.check_produce_records, blob, options) == expected, (blob.hex(), options)
    return expected


def test_walk_matches_decode_on_seeded_inputs():
    seen = {check_same(random.Random(seed))[:1] for seed in range(SEEDED_INPUTS)}
    # the generator reaches acceptance and several different refusals
    assert ("ok",) in seen and len(seen) >= 4, seen


@settings(max_examples=examples(2000), deadline=None)
@given(st.randoms(use_true_random=False))
def test_walk_matches_decode_property(rnd):
    check_same(rnd)


def test_walk_matches_decode_on_known_cases():
    batch = R.build_batch([(b"k", b"v", None, NOW + i) for i in range(1000)])
    assert R.check_produce_records(batch, produce_version=9, now=NOW) is None
    too_old = R.build_batch([(None, b"v", None, NOW - 10**9)] * 3)
    kwargs = {"produce_version": 9, "now": NOW, "timestamp_before_max_ms": 1000, "compacted": True}
    assert verdict(R.check_produce_records, too_old, kwargs) == verdict(R.validate_produce_records, too_old, kwargs)
    assert verdict(R.check_produce_records, too_old, kwargs)[0] == "InvalidRecordError"


def test_checked_headers_are_the_walked_headers_on_seeded_inputs():
    """What the append reuses: the headers of an accepted blob, whether the one-batch fast path
    (``_one_clean_v2_batch``) or the general walk passed it."""
    from fakebroker.protocol.records.validation import _one_clean_v2_batch

    fast_taken = 0
    for seed in range(SEEDED_INPUTS):
        blob, options = make_case(random.Random(seed))
        if verdict(R.check_produce_records, blob, options) != ("ok",):
            continue
        walked = [h for h in R.iter_batch_headers(blob) if not h.truncated]
        assert with_options(R.checked_produce_headers, blob, options) == walked
        fast = _one_clean_v2_batch(blob, options["produce_version"], options["max_message_size"])
        if fast is not None:
            fast_taken += 1
            assert [fast] == walked
    assert fast_taken > 0


def test_one_clean_batch_fast_path_refuses_what_the_general_path_must_judge():
    from fakebroker.protocol.records.validation import _one_clean_v2_batch

    batch = R.build_batch([(None, b"v", None, NOW)] * 3)
    assert _one_clean_v2_batch(batch, 9, None) is not None
    cases = {
        "two batches": batch + batch,
        "trailing bytes": batch + b"\x00",
        "base offset": struct.pack(">q", 5) + batch[8:],
        "bad crc": batch[:-1] + bytes([batch[-1] ^ 1]),
        "cut": batch[:-1],
    }
    for name, blob in cases.items():
        assert _one_clean_v2_batch(blob, 9, None) is None, name
    assert _one_clean_v2_batch(batch, 9, len(batch) - 1) is None  # above max.message.bytes

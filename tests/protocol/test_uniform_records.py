"""The one-pass check of records that share one layout (``records/uniform.py``) must give
the verdict the reference decoder gives (:func:`validate_produce_records`): same error class,
message, offset, record index and record errors, or both accept. The inputs are batches of
32-300 records of one key and value size, with timestamp and offset deltas of every width,
then mutated (bytes, varint edges, insertions, cuts, trailing bytes) and given a good CRC,
so that the records are what is judged.

    FAKEBROKER_WALK_INPUTS=30000 python -m pytest tests/protocol/test_uniform_records.py -k seeded

runs the long comparison."""

from __future__ import annotations

import random
import struct

import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.protocol import compression as C
from fakebroker.protocol import records as R
from fakebroker.protocol.records import Record, uniform
from fakebroker.protocol.records.uniform import uniform_and_clean
from tests.conftest import examples
from tests.protocol.test_produce_walk import NOW, SEEDED_INPUTS, V2_HEADER, _mutate_section, verdict


def _uniform_batch(rnd: random.Random, mutate: bool, codec: int | None = None) -> bytes:
    key = rnd.choice([None, None, b"", b"k", b"key" * 50])
    value = rnd.choice([None, b"", b"v", b"x" * 100, b"y" * 9000])
    wide = rnd.random() < 0.2  # deltas past the pattern's three bytes here and there
    count = rnd.choice([32, 33, 40, 100, 300])
    with_header = rnd.randrange(count) if rnd.random() < 0.1 else -1  # one record with a header
    untimed = rnd.random() < 0.2  # every timestamp delta 0 (with a base of -1: no timestamps at all)
    # as a producer writes them: every timestamp delta one byte (the strided check's case)
    stamps = [0, 1, 5, 63] if rnd.random() < 0.4 else [0, 1, 63, 64, 10_000]
    records = [
        Record(
            offset_delta=i if not wide or rnd.random() < 0.9 else rnd.choice([2**14, 2**20, 2**21, 2**31 - 1]),
            timestamp_delta=0
            if untimed
            else rnd.choice(stamps)
            if not wide or rnd.random() < 0.9
            else rnd.choice([2**20, -(2**20), 2**20 + 1, 2**40]),
            key=key,
            value=value,
            headers=[("h", b"v")] if i == with_header else [],
        )
        for i in range(count)
    ]
    base = NOW + rnd.choice([0, 0, 0, -10_000_000, 10_000_000, 3_000_000, -NOW + 5])
    batch = R.build_batch(
        records,
        base_timestamp=-1 if untimed and rnd.random() < 0.7 else base,
        timestamp_type=rnd.choice([0, 0, 0, 1]),
    )
    if codec is None:  # the walk also reads a compressed batch's records
        codec = rnd.choice([0, 0, 0, 1, 3, 4])
    if not mutate and not codec:
        return batch
    fields = list(V2_HEADER.unpack_from(batch))
    section = bytearray(batch[V2_HEADER.size :])
    if mutate:
        _mutate_section(rnd, section)
    if mutate and rnd.random() < 0.1:  # a record count that does not match
        fields[12] += rnd.choice([-1, 1])
        fields[6] = fields[12] - 1
    payload = bytes(C.compress(codec, bytes(section))) if codec else bytes(section)
    fields[5] = (fields[5] & ~0x07) | codec
    fields[1] = 49 + len(payload)
    buf = bytearray(V2_HEADER.pack(*fields) + payload)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def _options(rnd: random.Random) -> dict:
    return {
        "produce_version": 9,
        "compacted": rnd.random() < 0.3,
        "now": rnd.choice([None, NOW, NOW]),
        "message_timestamp_type": rnd.choice([R.CREATE_TIME, R.CREATE_TIME, R.LOG_APPEND_TIME]),
        "timestamp_before_max_ms": rnd.choice([2**63 - 1, 2**63 - 1, 3_600_000, 1_000_000]),
        "timestamp_after_max_ms": rnd.choice([3_600_000, 3_600_000, 2**63 - 1, 1_000_000]),
        "topic_partition": "t-0",
        "max_record_size": rnd.choice([None, None, 1 << 20, 150]),  # a compressed batch's bound per record
    }


def check_same(rnd: random.Random) -> tuple:
    blob = _uniform_batch(rnd, mutate=rnd.random() < 0.7)
    options = _options(rnd)
    expected = verdict(R.validate_produce_records, blob, options)
    assert verdict(R.check_produce_records, blob, options) == expected, (blob.hex(), options)
    return expected


def test_uniform_check_matches_decode_on_seeded_inputs():
    seen = {check_same(random.Random(seed))[:2] for seed in range(SEEDED_INPUTS)}
    kinds = {kind for kind, *_ in seen}
    assert "ok" in kinds and {"InvalidRecordError", "InvalidTimestampError"} <= kinds, kinds


@settings(max_examples=examples(1000), deadline=None)
@given(st.randoms(use_true_random=False))
def test_uniform_check_matches_decode_property(rnd):
    check_same(rnd)


def test_the_one_pass_check_is_taken_for_records_of_one_layout():
    taken = 0
    for seed in range(300):
        rnd = random.Random(seed)
        batch = _uniform_batch(rnd, mutate=False, codec=0)
        header = next(R.iter_batch_headers(batch))
        if uniform_and_clean(batch[V2_HEADER.size :], header.records_count, None, None):
            taken += 1
    assert taken > 150  # the rest: a header, a delta too wide, a key or value of 9,000 bytes' size


def test_what_the_one_pass_check_leaves_to_the_walk():
    records = [(None, b"v" * 10, None, NOW + i) for i in range(40)]
    section = R.build_batch(records)[V2_HEADER.size :]
    assert uniform_and_clean(section, 40, None, None)
    assert not uniform_and_clean(section, 41, None, None)  # a count that does not match
    assert not uniform_and_clean(section[:-1], 40, None, None)  # cut
    assert not uniform_and_clean(section + b"\x00", 40, None, None)  # trailing byte
    mixed = R.build_batch([*records[:39], (None, b"v" * 11, None, NOW)])[V2_HEADER.size :]
    assert not uniform_and_clean(mixed, 40, None, None)  # another layout at the end
    assert not uniform_and_clean(section[:100], 3, None, None)  # too few records to bother


@settings(max_examples=examples(500), deadline=None)
@given(st.randoms(use_true_random=False))
def test_what_the_strided_check_takes_the_pattern_takes_too(rnd):
    # records the strided check passes are records of the layout, as the pattern reads them
    batch = _uniform_batch(rnd, mutate=rnd.random() < 0.7, codec=0)
    header = next(R.iter_batch_headers(batch))
    section = batch[V2_HEADER.size :]
    layout = uniform._first_layout(section)
    if layout is not None and strided(section, header.records_count, *layout, False):
        assert uniform_and_clean(section, header.records_count, None, None, strided=False)


def strided(section: bytes, count: int, key_size: int | None, value_size: int | None, zero: bool) -> bool:
    """The strided check of a whole section, and of the same bytes inside a larger buffer."""
    verdict = uniform._fixed_width_runs(section, 0, len(section), count, key_size, value_size, zero)
    inside = b"\x01" * 7 + section + b"\x02" * 5
    assert uniform._fixed_width_runs(inside, 7, 7 + len(section), count, key_size, value_size, zero) == verdict
    return verdict


def test_the_strided_check_takes_offset_deltas_of_three_widths():
    count = 9000  # offset deltas of one, two and three bytes
    records = [(b"k", b"v" * 20, None, NOW + i % 60) for i in range(count)]
    section = R.build_batch(records)[V2_HEADER.size :]
    assert strided(section, count, 1, 20, False)
    assert not strided(section, count, 1, 20, True)  # deltas not all 0
    assert not strided(section, count + 1, 1, 20, False)
    assert not strided(section + b"\x00", count, 1, 20, False)
    # a fixed byte changed in each run (a length, a length, a header count): the pattern decides then
    for at in (0, 64 * 28, len(section) - 1):
        broken = bytearray(section)
        broken[at] ^= 0x40
        assert not strided(bytes(broken), count, 1, 20, False)
    untimed = R.build_batch([(b"k", b"v" * 20, None, NOW)] * 100)[V2_HEADER.size :]
    assert strided(untimed, 100, 1, 20, True)


def test_a_batch_is_checked_in_place_where_it_lies(monkeypatch):
    # the walk takes the strided check on the request's bytes, not on a copy of the section
    records = [(None, b"v" * 50, None, NOW + i % 3) for i in range(200)]
    blob = R.build_batch(records)
    seen = []
    check = uniform._fixed_width_runs

    def spy(buf, start, stop, *rest):  # type: ignore[no-untyped-def]
        seen.append((buf is blob, start, stop))
        return check(buf, start, stop, *rest)

    monkeypatch.setattr(uniform, "_fixed_width_runs", spy)
    assert verdict(R.check_produce_records, blob, {"produce_version": 9}) == ("ok",)
    assert seen == [(True, V2_HEADER.size, len(blob))]

"""partition_entries counts a Produce request's partition entries without decoding it: the
same count as the decoder's, up to its bound, for every version; never an exception."""

from __future__ import annotations

import io
import uuid

from hypothesis import given
from hypothesis import strategies as st

from fakebroker.protocol import headers
from fakebroker.protocol.messages import request_type
from fakebroker.protocol.primitives import write_uvarint
from fakebroker.protocol.produce_peek import MAX_TAGS, partition_entries

VERSIONS = range(0, 14)


def produce_body(version: int, topics: list[list[bytes | None]], txn: str | None) -> io.BytesIO:
    """A Produce request encoded at ``version``, its stream at the body."""
    topic_data = []
    for t, partitions in enumerate(topics):
        entry: dict = {"partition_data": [{"index": p, "records": r} for p, r in enumerate(partitions)]}
        entry["topic_id" if version >= 13 else "name"] = uuid.UUID(int=t + 1) if version >= 13 else f"t{t}"
        topic_data.append(entry)
    body = {"transactional_id": txn, "acks": -1, "timeout_ms": 1000, "topic_data": topic_data}
    payload = headers.encode_request(0, version, 1, body, client_id="c")
    return headers.decode_request_header(payload)[1]


def expected(topics: list[list[bytes | None]], limit: int) -> int:
    walked = len(topics) + sum(len(p) for p in topics)
    return sum(len(p) for p in topics) if walked <= limit else limit + 1


records = st.one_of(st.none(), st.binary(max_size=40))
shapes = st.lists(st.lists(records, max_size=6), max_size=5)


@given(st.sampled_from(VERSIONS), shapes, st.one_of(st.none(), st.text(max_size=8)), st.integers(0, 40))
def test_the_count_is_the_decoders_up_to_the_bound(version, topics, txn, limit):
    stream = produce_body(version, topics, txn)
    start = stream.tell()
    assert partition_entries(stream, version, limit) == expected(topics, limit)
    assert stream.tell() == start  # left where it was, for the decoder
    decoded = request_type(0).decode_from(stream, version)
    assert sum(len(t.partition_data) for t in decoded.topic_data) == sum(len(p) for p in topics)


@given(st.sampled_from(VERSIONS), shapes, st.data())
def test_a_cut_body_counts_as_many_or_as_what_it_holds(version, topics, data):
    whole = produce_body(version, topics, None).read()
    cut = data.draw(st.integers(0, max(len(whole) - 1, 0)))
    got = partition_entries(io.BytesIO(whole[:cut]), version, 100)
    assert got in (101, sum(len(p) for p in topics))  # only the body's last tag byte may go unread


@given(st.sampled_from(VERSIONS), st.binary(max_size=300), st.integers(0, 50))
def test_garbage_never_raises_and_stays_within_the_bound(version, garbage, limit):
    assert 0 <= partition_entries(io.BytesIO(garbage), version, limit) <= limit + 1


def test_a_body_claiming_millions_of_entries_stops_at_the_bound():
    stream = io.BytesIO(b"\xff\xff" + b"\x00" * 6 + b"\x7f\xff\xff\xff" + b"\x00\x00" * 10_000)  # v8: 2^31 topics
    assert partition_entries(stream, 8, 1000) == 1001


def test_an_entry_with_more_tagged_fields_than_a_client_sends_is_left_to_the_decoder():
    stream = produce_body(9, [[b"r"]], None)
    body = bytearray(stream.read())
    assert body[-2:] == b"\x00\x00"  # the topic entry's and the body's tag counts
    flooded = io.BytesIO()
    flooded.write(bytes(body[:-2]))
    write_uvarint(flooded, MAX_TAGS + 1)
    assert partition_entries(io.BytesIO(flooded.getvalue()), 9, 1000) == 1001

"""Header versions, whole request/response payloads, and framing."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.protocol import headers
from fakebroker.protocol.errors import DecodeError, FrameTooLargeError, InvalidFrameError, UnsupportedVersionError
from fakebroker.protocol.framing import FrameDecoder, frame


@pytest.mark.parametrize(
    ("key", "version", "request_v", "response_v"),
    [
        (0, 8, 1, 0),
        (0, 9, 2, 1),  # Produce flexible from 9
        (1, 11, 1, 0),
        (1, 12, 2, 1),  # Fetch from 12
        (3, 9, 2, 1),
        (11, 5, 1, 0),
        (11, 6, 2, 1),
        (18, 2, 1, 0),
        (18, 3, 2, 0),  # ApiVersions responses: always header v0
        (17, 1, 1, 0),  # SaslHandshake: never flexible
        (7, 0, 0, 0),
        (7, 1, 1, 0),  # ControlledShutdown v0: request header v0
    ],
)
def test_header_versions(key, version, request_v, response_v):
    assert headers.request_header_version(key, version) == request_v
    assert headers.response_header_version(key, version) == response_v


def test_known_bytes_of_a_flexible_request():
    # Heartbeat v4: header v2 (client id keeps its int16 length), then compact strings.
    payload = headers.encode_request(
        12, 4, 0x01020304, {"group_id": "g", "generation_id": 5, "member_id": "m"}, client_id="c"
    )
    expected = (
        struct.pack(">hhi", 12, 4, 0x01020304)
        + b"\x00\x01c"
        + b"\x00"  # header v2 + empty tagged section
        + b"\x02g"
        + struct.pack(">i", 5)
        + b"\x02m"
        + b"\x00"
        + b"\x00"  # group, gen, member, null instance, tags
    )
    assert payload == expected
    request = headers.decode_request(payload)
    assert (request.api_key, request.api_version, request.correlation_id) == (12, 4, 0x01020304)
    assert request.header.client_id == "c" and request.body.group_instance_id is None


def test_api_versions_response_header_is_v0_even_when_flexible():
    payload = headers.encode_response(18, 3, 9, {"api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]})
    assert payload[:4] == struct.pack(">i", 9) and payload[4:6] == b"\x00\x00"  # no tagged byte after the id
    header, body = headers.decode_response(18, 3, payload)
    assert header.correlation_id == 9 and body.api_keys[0].max_version == 4


def test_a_server_reads_the_header_of_an_unknown_version():
    # A client may send ApiVersions v99: the header still parses (KIP-511).
    payload = struct.pack(">hhi", 18, 99, 5) + b"\x00\x02id" + b"\x00" + b"garbage"
    header, _ = headers.decode_request_header(payload)
    assert header.correlation_id == 5 and header.client_id == "id"
    with pytest.raises(UnsupportedVersionError):
        headers.decode_request(payload)


def test_truncated_header_is_a_decode_error():
    with pytest.raises(DecodeError) as info:
        headers.decode_request(b"\x00\x12\x00")
    assert info.value.message == "RequestHeader"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_random_request_bytes_never_escape_as_other_errors(blob):
    try:
        headers.decode_request(blob)
    except (DecodeError, UnsupportedVersionError):
        pass


def test_framing_reassembles_split_and_joined_frames():
    stream = frame(b"abc") + frame(b"") + frame(b"x" * 1000)
    dec = FrameDecoder()
    out = []
    for i in range(0, len(stream), 7):  # arrives in 7-byte pieces
        dec.feed(stream[i : i + 7])
        out.extend(dec.frames())
    assert out == [b"abc", b"", b"x" * 1000] and dec.buffered == 0


@given(st.lists(st.binary(max_size=50), max_size=8), st.lists(st.integers(1, 30), min_size=1))
def test_framing_any_split(payloads, cuts):
    stream = b"".join(frame(p) for p in payloads)
    dec, out, pos, i = FrameDecoder(), [], 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        dec.feed(stream[pos : pos + step])
        out.extend(dec.frames())
        pos, i = pos + step, i + 1
    assert out == payloads


@given(
    st.lists(st.binary(max_size=50), max_size=8),
    st.lists(st.integers(1, 30), min_size=1),
    st.integers(0, 40),
)
def test_framing_any_split_gathering_large_frames_in_pieces(payloads, cuts, pieces_from):
    # frames of pieces_from bytes or more are gathered as fed and joined when whole
    stream = b"".join(frame(p) for p in payloads)
    dec, out, pos, i = FrameDecoder(), [], 0, 0
    dec.pieces_from = pieces_from
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        dec.feed(bytearray(stream[pos : pos + step]))  # not bytes: the decoder keeps its own copy
        out.extend(dec.frames())
        pos, i = pos + step, i + 1
    assert out == payloads and dec.buffered == 0


def test_a_large_frame_is_gathered_and_what_follows_it_kept():
    big = bytes(range(256)) * 400  # 102,400 bytes: over the 64 KiB from which frames are gathered
    stream = frame(big) + frame(b"next") + frame(b"x" * 10)[:6]
    dec = FrameDecoder()
    out = []
    for i in range(0, len(stream), 65536):  # as a socket's 64 KiB reads bring it
        dec.feed(stream[i : i + 65536])
        out.extend(dec.frames())
        if len(out) == 0:
            assert dec.pending_size() == len(big) and dec.buffered == min(i + 65536, len(stream)) - 4
    assert out == [big, b"next"] and dec.buffered == 2 and dec.pending_size() == 10  # its prefix taken


def test_frame_size_limit():
    dec = FrameDecoder(max_frame_size=100)
    dec.feed(struct.pack(">i", 101))
    with pytest.raises(FrameTooLargeError) as info:
        dec.next_frame()
    assert info.value.size == 101 and "socket.request.max.bytes" in str(info.value)
    dec = FrameDecoder()
    dec.feed(struct.pack(">i", -5))
    with pytest.raises(InvalidFrameError):
        dec.next_frame()
    assert FrameDecoder().max_frame_size == 104857600

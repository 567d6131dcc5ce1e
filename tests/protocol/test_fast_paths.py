"""The hand-written fast paths give what the generic schema gives, byte for byte."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakebroker.protocol import headers, messages
from fakebroker.protocol.errors import DecodeError
from fakebroker.protocol.messages import api_keys, message_type, response_type
from fakebroker.protocol.schema import StructCodec

from .strategies import message_strategy

KEYS = sorted(api_keys())
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)


def generic_response(api_key: int, api_version: int, correlation_id: int, body) -> bytes:
    import io

    stream = io.BytesIO()
    message_type("ResponseHeader").encode_into(
        stream, {"correlation_id": correlation_id}, headers.response_header_version(api_key, api_version)
    )
    response_type(api_key).encode_into(stream, body, api_version)
    return stream.getvalue()


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(KEYS), st.integers(0, 20), int32, st.one_of(st.none(), st.text(max_size=40)), st.binary(max_size=8)
)
def test_request_header_reads_as_the_schema_reads_it(api_key, api_version, correlation_id, client_id, rest):
    version = headers.request_header_version(api_key, api_version)
    payload = struct.pack(">hhi", api_key, api_version, correlation_id)
    if version:
        raw = None if client_id is None else client_id.encode()
        payload += struct.pack(">h", -1 if raw is None else len(raw)) + (raw or b"")
        if version == 2:
            payload += b"\x00"
    payload += rest
    fast, stream = headers.decode_request_header(payload)
    slow, slow_stream = headers._decode_request_header(payload, version)
    assert fast == slow and type(fast) is type(slow)
    assert stream.tell() == slow_stream.tell() and stream.read() == slow_stream.read()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(KEYS), st.binary(min_size=8, max_size=24))
def test_odd_request_headers_fail_or_read_as_the_schema_says(api_key, tail):
    payload = struct.pack(">hh", api_key, 3) + tail  # any bytes after the key and version
    version = headers.request_header_version(api_key, 3)
    try:
        slow, slow_stream = headers._decode_request_header(payload, version)
    except DecodeError as exc:
        with pytest.raises(DecodeError) as caught:
            headers.decode_request_header(payload)
        assert str(caught.value) == str(exc)
        return
    fast, stream = headers.decode_request_header(payload)
    assert fast == slow and stream.tell() == slow_stream.tell()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(KEYS), st.integers(0, 20), st.one_of(int32, st.integers(2**31, 2**40)))
def test_response_header_writes_as_the_schema_writes_it(api_key, api_version, correlation_id):
    versions = response_type(api_key).versions
    api_version = versions[api_version % len(versions)]
    body = response_type(api_key).new()
    try:
        slow = generic_response(api_key, api_version, correlation_id, body)
    except Exception as exc:  # out of int32: the same error either way
        with pytest.raises(type(exc)):
            headers.encode_response(api_key, api_version, correlation_id, body)
        return
    assert headers.encode_response(api_key, api_version, correlation_id, body) == slow


@settings(max_examples=200, deadline=None)
@given(int16, int32, st.integers(0, 2**40), st.one_of(st.none(), st.text(max_size=20)))
def test_generated_init_matches_the_spec_defaults_and_values(index, error, offset, message):
    cls = response_type(0).cls
    part = {"index": index, "error_code": error, "base_offset": offset, "error_message": message}
    msg = cls(responses=[{"name": "t", "partition_responses": [part]}])
    got = msg.responses[0].partition_responses[0]
    assert (got.index, got.error_code, got.base_offset, got.error_message) == (index, error, offset, message)
    assert got.log_append_time_ms == -1 and got.current_leader is not None and got.record_errors == []
    assert msg.throttle_time_ms == 0 and msg._unknown_tagged_fields == {}
    with pytest.raises(TypeError, match="has no field"):
        cls(nonsense=1)


CASES = [(n, v) for n in messages.all_message_names() for v in messages.message_type(n).versions]


def generic_only(monkeypatch):
    """Every struct through the generic field walk (what the compiled functions fall back to)."""
    monkeypatch.setattr(StructCodec, "_parse", StructCodec._parse_generic)
    monkeypatch.setattr(StructCodec, "_build", StructCodec._build_generic)


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # the same error, with the same text (field path, offset)
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_compiled_codecs_read_and_write_as_the_generic_walk(name, version, data):
    mt = messages.message_type(name)
    msg = data.draw(message_strategy(mt, version))
    encoded = mt.encode(msg, version)
    garbage = data.draw(st.binary(max_size=64))
    cut = data.draw(st.integers(0, max(0, len(encoded) - 1)))
    flip = bytearray(encoded)
    if flip:
        flip[cut] ^= data.draw(st.integers(1, 255))
    inputs = [encoded, encoded[:cut], bytes(flip), garbage]
    fast = [mt.encode(msg, version)] + [outcome(lambda b=b: mt.decode(b, version, strict=True)) for b in inputs]
    with pytest.MonkeyPatch.context() as mp:
        generic_only(mp)
        slow = [mt.encode(msg, version)] + [outcome(lambda b=b: mt.decode(b, version, strict=True)) for b in inputs]
    # a flipped byte can make a float64 field NaN, which equals nothing, not even itself: then
    # the two decodes are compared by how they print
    assert fast == slow or repr(fast) == repr(slow)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_an_array_encoded_once_writes_what_a_list_of_its_items_writes(version):
    from fakebroker.protocol.primitives import EncodedOnce

    entries = response_type(18).new(api_keys=[{"api_key": k, "min_version": 0, "max_version": 3} for k in range(60)])
    once = EncodedOnce(entries.api_keys)
    body = {"error_code": 0, "throttle_time_ms": 0, "finalized_features_epoch": 7}
    as_list = response_type(18).new(api_keys=list(entries.api_keys), **body)
    shared = response_type(18).new(**body)
    shared.api_keys = once  # a typed field would be copied into a list
    expected = response_type(18).encode(as_list, version)
    assert response_type(18).encode(shared, version) == expected  # the first encoding fills the memo
    assert response_type(18).encode(shared, version) == expected  # the second writes it
    assert len(once.encodings) == 1
    assert response_type(18).decode(expected, version).api_keys == list(entries.api_keys)


def test_the_crc32c_extension_loads_without_its_package_init():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from fakebroker.protocol.records import crc\n"
        "assert crc.crc32c(b'123456789') == 0xE3069283\n"
        "assert 'crc32c' not in sys.modules, 'the package __init__ ran'\n"
        "import crc32c\n"
        "assert crc32c.crc32c is crc.crc32c\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_each_direction_of_a_struct_is_compiled_at_its_first_use():
    import io

    from construct import Container

    from fakebroker.protocol.schema import build_codec

    heartbeat = response_type(12)
    codec = build_codec(heartbeat.family.spec(4), heartbeat._classes, 4)  # a fresh one, nothing compiled
    assert codec.compiled._made == {}
    stream = io.BytesIO()
    codec._build(heartbeat.new(error_code=27), stream, Container(), "")
    assert set(codec.compiled._made) == {"build"}  # a broker writes answers and never reads them
    assert stream.getvalue() == heartbeat.encode({"error_code": 27}, 4)
    stream.seek(0)
    assert codec._parse(stream, Container(), "").error_code == 27
    assert set(codec.compiled._made) == {"build", "parse"}

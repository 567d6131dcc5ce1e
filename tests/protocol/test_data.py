"""Consumer-protocol and control-record payloads (the spec's ``data`` schemas)."""

from __future__ import annotations

import struct

import pytest

from fakebroker.protocol import data
from fakebroker.protocol.errors import DecodeError


def test_subscription_v0_known_bytes():
    raw = data.encode_subscription(["a", "bc"], b"u", version=0)
    assert raw == struct.pack(">hi", 0, 2) + b"\x00\x01a\x00\x02bc" + struct.pack(">i", 1) + b"u"
    sub = data.decode_subscription(raw)
    assert sub.topics == ["a", "bc"] and sub.user_data == b"u"


def test_subscription_v3_round_trip():
    raw = data.encode_subscription(["t"], None, owned_partitions={"t": [2, 0]}, generation_id=7, rack_id="r1")
    sub = data.decode_subscription(raw)
    assert sub.owned_partitions[0].partitions == [0, 2]
    assert (sub.generation_id, sub.rack_id, sub.user_data) == (7, "r1", None)


def test_newer_subscription_version_is_read_with_the_newest_layout():
    raw = data.encode_subscription(["t"], version=3)
    newer = struct.pack(">h", 9) + raw[2:] + b"future-field"
    version, sub = data.decode_versioned(data.SUBSCRIPTION, newer)
    assert version == 9 and sub.topics == ["t"]


def test_assignment_round_trip_and_dict():
    raw = data.encode_assignment({"orders": [3, 1], "x": []}, b"ud", version=1)
    assert data.assignment_dict(raw) == {"orders": [1, 3], "x": []}
    assert data.decode_assignment(raw).user_data == b"ud"
    assert data.assignment_dict(b"") == {}


def test_control_record_key_and_marker():
    key = data.encode_versioned(data.CONTROL_RECORD_KEY, {"type": 1}, 0)
    assert key == b"\x00\x00\x00\x01"  # version 0, COMMIT
    value = data.encode_versioned(data.END_TXN_MARKER, {"coordinator_epoch": 5}, 0)
    assert value == b"\x00\x00\x00\x00\x00\x05"
    assert data.decode_versioned(data.END_TXN_MARKER, value)[1].coordinator_epoch == 5


def test_truncated_assignment_reports_offset_in_caller_buffer():
    raw = data.encode_assignment({"orders": [1]})
    with pytest.raises(DecodeError) as info:
        data.decode_assignment(raw[:-2])
    assert info.value.message == data.ASSIGNMENT and info.value.offset >= 2

"""Round trips for every message, every version: decode(encode(m)) == m, encode(decode(b)) == b."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakebroker.protocol import messages
from fakebroker.protocol.errors import DecodeError

from .strategies import message_strategy

CASES = [(name, v) for name in messages.all_message_names() for v in messages.message_type(name).versions]


def test_every_api_key_and_version_is_covered():
    keys = messages.api_keys()
    assert set(keys) == set(range(94)), "API keys 0-92 (4.3.1), 93 (4.4) and the 3.9-only 4-7"
    assert messages.api_versions(0) == tuple(range(14))  # Produce 0-2 from 3.9, 3-13 from 4.3.1
    assert messages.api_versions(1) == tuple(range(19))
    assert len(CASES) > 700


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_round_trip(name, version, data):
    mt = messages.message_type(name)
    msg = data.draw(message_strategy(mt, version))
    encoded = mt.encode(msg, version)
    decoded = mt.decode(encoded, version, strict=True)
    assert decoded == msg
    assert mt.encode(decoded, version) == encoded
    # Any strict prefix is truncated input: one documented error, never an IndexError.
    if encoded:
        cut = data.draw(st.integers(0, len(encoded) - 1))
        with pytest.raises(DecodeError) as info:
            mt.decode(encoded[:cut], version, strict=True)
        assert info.value.message == name and info.value.version == version
        assert 0 <= info.value.offset <= cut

"""The error codes the pipeline finds in an answer (a ``request_error`` event each): the
generated collector against a plain recursive walk, for every API's answer."""

from __future__ import annotations

import itertools

import pytest

from fakebroker.protocol.messages import Message, api_keys, response_type
from fakebroker.server.exchange import error_codes


def walked(msg: Message, found: set[int]) -> set[int]:
    for info in msg._fields:
        value = getattr(msg, info.attr)
        if info.struct is None:
            if info.attr.endswith("error_code") and isinstance(value, int) and value:
                found.add(value)
        elif isinstance(value, list):
            for item in value:
                walked(item, found)
        elif value is not None:
            walked(value, found)
    return found


def filled(cls: type[Message], codes: itertools.count) -> Message:
    """A message with two elements in every struct array, a struct in every struct field and
    a different code in every error code field."""
    values = {}
    for info in cls._fields:
        if info.struct is not None:
            if info.is_array:
                values[info.attr] = [filled(info.struct, codes), filled(info.struct, codes)]
            else:
                values[info.attr] = filled(info.struct, codes)
        elif info.attr.endswith("error_code"):
            values[info.attr] = next(codes)
    return cls(**values)


@pytest.mark.parametrize("api_key", sorted(api_keys()))
def test_every_error_code_of_every_answer_is_found(api_key):
    cls = response_type(api_key).cls
    answer = filled(cls, itertools.count(1))
    assert error_codes(answer) == walked(answer, set())
    assert error_codes(cls()) == set()  # defaults: no error, and null or empty arrays walked


def test_null_arrays_and_structs_are_passed_over():
    cls = response_type(0).cls  # Produce: responses -> partition_responses -> error_code
    answer = cls(responses=[{"name": "t", "partition_responses": [{"index": 0, "error_code": 6}]}])
    assert error_codes(answer) == {6}
    answer.responses[0].partition_responses = None
    assert error_codes(answer) == set()

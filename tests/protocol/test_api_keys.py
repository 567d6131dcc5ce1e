"""``ApiKey`` names every API key the shipped specs define, with the specs' numbers."""

from __future__ import annotations

import re

from fakebroker.protocol.messages import ApiKey, api_keys


def test_api_key_names_every_key_of_the_specs():
    from_specs = {key: re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper() for key, name in api_keys().items()}
    assert {int(key): key.name for key in ApiKey} == from_specs


def test_an_api_key_is_the_number_on_the_wire():
    assert ApiKey.PRODUCE == 0 and ApiKey.API_VERSIONS == 18 and ApiKey(68) is ApiKey.CONSUMER_GROUP_HEARTBEAT

"""The client quota store and its throttle (core/quotas.py): Kafka's validation, filters and
lookup order, and the sampled rate that turns bytes into throttle time."""

from __future__ import annotations

import pytest

from fakebroker.core.quotas import (
    ANONYMOUS,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    Alteration,
    ClientQuotas,
    SampledRate,
    entity_of,
    entity_text,
    java_map_order,
)
from fakebroker.protocol.error_codes import ErrorCode as E


def alter(quotas, entity, *ops, validate_only=False):
    result = quotas.alter([Alteration(entity_of(entity), list(ops))], validate_only)
    return result[entity_of(entity)]


def test_set_describe_and_remove():
    q = ClientQuotas()
    assert alter(q, [("client-id", "c1")], (PRODUCER_BYTE_RATE, 1024.0, False)) == (E.NONE, None)
    assert q.describe([("client-id", 0, "c1")], strict=False) == (
        E.NONE,
        None,
        [((("client-id", "c1"),), {PRODUCER_BYTE_RATE: 1024.0})],
    )
    assert alter(q, [("client-id", "c1")], (PRODUCER_BYTE_RATE, 0.0, True)) == (E.NONE, None)
    assert q.entries == {}


def test_validate_only_stores_nothing():
    q = ClientQuotas()
    assert alter(q, [("user", "u")], (CONSUMER_BYTE_RATE, 5.0, False), validate_only=True) == (E.NONE, None)
    assert q.entries == {}


@pytest.mark.parametrize(
    ("entity", "op", "message"),
    [
        ([("client-id", "c")], ("foo", 1.0, False), "Invalid configuration key foo"),
        ([("client-id", "c")], (PRODUCER_BYTE_RATE, -1.0, False), "Quota producer_byte_rate must be greater than 0"),
        ([("client-id", "c")], (PRODUCER_BYTE_RATE, 1.5, False), "producer_byte_rate cannot be a fractional value."),
        (
            [("ip", "1.2.3.4"), ("client-id", "c")],
            ("connection_creation_rate", 5.0, False),
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
        ),
        ([("ip", "nope")], ("connection_creation_rate", 5.0, False), "nope is not a valid IP or resolvable host."),
        ([("ip", "1.2.3.4")], (PRODUCER_BYTE_RATE, 5.0, False), "Invalid configuration key producer_byte_rate"),
        ([("group", "g")], (PRODUCER_BYTE_RATE, 5.0, False), "Unhandled client quota entity type: group"),
        ([], (PRODUCER_BYTE_RATE, 5.0, False), "Invalid empty client quota entity"),
        ([("client-id", "")], (PRODUCER_BYTE_RATE, 5.0, False), "Empty client-id not supported"),
    ],
)
def test_refusals_are_kafkas(entity, op, message):
    q = ClientQuotas()
    assert alter(q, entity, op) == (E.INVALID_REQUEST, message)
    assert q.entries == {}


def test_a_repeated_key_or_entity_is_ignored_with_kafkas_message():
    q = ClientQuotas()
    ent = entity_of([("user", "a"), ("client-id", "c")])
    twice = Alteration(ent, [(PRODUCER_BYTE_RATE, 5.0, False), (PRODUCER_BYTE_RATE, 6.0, False)])
    assert q.alter([twice], False)[ent] == (
        E.INVALID_REQUEST,
        "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c, user=a})",
    )
    assert q.entries == {}
    first = Alteration(ent, [(PRODUCER_BYTE_RATE, 5.0, False)])
    again = Alteration(ent, [(CONSUMER_BYTE_RATE, 5.0, False)])
    assert q.alter([first, again], False)[ent][0] == E.INVALID_REQUEST
    assert q.entries == {ent: {PRODUCER_BYTE_RATE: 5.0}}  # the first was written, as Kafka's records are


def test_entity_text_and_order_follow_javas_hash_map():
    assert java_map_order(["ip", "user", "client-id"]) == ["client-id", "user", "ip"]
    assert entity_text(entity_of([("client-id", None)])) == "ClientQuotaEntity(entries={client-id=null})"


def test_filters():
    q = ClientQuotas()
    alter(q, [("client-id", "c1")], (PRODUCER_BYTE_RATE, 1.0, False))
    alter(q, [("user", "u"), ("client-id", "c2")], (PRODUCER_BYTE_RATE, 2.0, False))
    alter(q, [("user", None)], (PRODUCER_BYTE_RATE, 3.0, False))
    alter(q, [("ip", None)], ("connection_creation_rate", 4.0, False))

    def names(components, strict=False):
        code, _, found = q.describe(components, strict)
        assert code == E.NONE
        return sorted(tuple(e) for e, _ in found)

    assert len(names([])) == 4
    assert names([], strict=True) == []
    assert names([("client-id", 2, None)]) == [(("client-id", "c1"),), (("client-id", "c2"), ("user", "u"))]
    assert names([("client-id", 2, None)], strict=True) == [(("client-id", "c1"),)]
    assert names([("user", 1, None)]) == [(("user", None),)]
    assert names([("user", 0, "u"), ("client-id", 2, None)], strict=True) == [(("client-id", "c2"), ("user", "u"))]
    assert names([("ip", 1, None)]) == [(("ip", None),)]


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([("group", 2, None)], E.UNSUPPORTED_VERSION, "Unsupported entity type group"),
        ([("user", 2, None), ("user", 1, None)], E.INVALID_REQUEST, "Entity type user cannot appear more than once"),
        ([("user", 7, None)], E.INVALID_REQUEST, "Unknown match type 7"),
        ([("user", 0, None)], E.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT"),
        ([("ip", 2, None), ("client-id", 2, None)], E.INVALID_REQUEST, "Invalid entity filter component"),
    ],
)
def test_filter_errors(components, code, message):
    got_code, got_message, found = ClientQuotas().describe(components, False)
    assert (got_code, found) == (code, None)
    assert got_message.startswith(message)


def test_lookup_order_is_kafkas():
    q = ClientQuotas()
    assert q.bound(PRODUCER_BYTE_RATE, ANONYMOUS, "c") is None
    alter(q, [("client-id", None)], (PRODUCER_BYTE_RATE, 8.0, False))
    assert q.bound(PRODUCER_BYTE_RATE, ANONYMOUS, "c") == (8.0, ("", "c"))
    alter(q, [("client-id", "c")], (PRODUCER_BYTE_RATE, 7.0, False))
    assert q.bound(PRODUCER_BYTE_RATE, ANONYMOUS, "c") == (7.0, ("", "c"))
    alter(q, [("user", None)], (PRODUCER_BYTE_RATE, 6.0, False))
    assert q.bound(PRODUCER_BYTE_RATE, ANONYMOUS, "c") == (6.0, (ANONYMOUS, ""))
    alter(q, [("user", ANONYMOUS), ("client-id", "c")], (PRODUCER_BYTE_RATE, 5.0, False))
    assert q.bound(PRODUCER_BYTE_RATE, ANONYMOUS, "c") == (5.0, (ANONYMOUS, "c"))
    assert q.bound(CONSUMER_BYTE_RATE, ANONYMOUS, "c") is None


def test_rate_is_measured_over_at_least_ten_windows():
    rate = SampledRate()
    rate.record(10_000, 0)
    assert rate.window_ms(0) == 10_000
    assert rate.rate(0) == 1_000
    rate.record(10_000, 500)
    assert rate.window_ms(500) == 10_500
    # after 11 s without records, the old samples expire
    assert rate.rate(12_000) == 0


def test_throttle_is_the_time_to_get_back_under_the_bound():
    q = ClientQuotas()
    alter(q, [("client-id", "c")], (PRODUCER_BYTE_RATE, 1000.0, False))
    assert q.record(PRODUCER_BYTE_RATE, ANONYMOUS, "c", 9_000, 0) == 0  # 900 B/s over 10 s
    # 18 000 B over 10 s: 1800 B/s, 80 % over the bound: 8 s
    assert q.record(PRODUCER_BYTE_RATE, ANONYMOUS, "c", 9_000, 0) == 8_000
    assert q.record(PRODUCER_BYTE_RATE, ANONYMOUS, "other", 50_000, 0) == 0  # no quota for it
    q.unrecord(PRODUCER_BYTE_RATE, ANONYMOUS, "c", 9_000, 0)
    assert q.record(PRODUCER_BYTE_RATE, ANONYMOUS, "c", 0, 0) == 0
    # a client id sharing the default quota has a rate of its own (Kafka's metric tags)
    alter(q, [("client-id", None)], (PRODUCER_BYTE_RATE, 1000.0, False))
    assert q.record(PRODUCER_BYTE_RATE, ANONYMOUS, "d1", 9_000, 0) == 0
    assert q.record(PRODUCER_BYTE_RATE, ANONYMOUS, "d2", 9_000, 0) == 0

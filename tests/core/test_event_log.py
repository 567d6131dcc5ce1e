"""EventLog.append stamps a copy of the event it is given; the group emitter adds what only it knows."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from fakebroker.core.events import (
    KINDS,
    ClientConnected,
    Event,
    EventLog,
    FaultAdded,
    GroupEvents,
    MemberJoined,
    RequestError,
)

MEMBER = "svc-0e9080ea-1111-4222-8333-444455556666"


def test_append_stamps_a_copy_and_leaves_the_given_event_alone():
    log = EventLog(now_ms=lambda: 7, wall=lambda: 1.5)
    given = RequestError(broker=2, api="Heartbeat", client_id="c", error="UNKNOWN_MEMBER_ID", fault=None)
    first = log.append(given)
    second = log.append(given, now_ms=9)
    assert given.seq == 0 and given.time_ms == 0 and given.wall == 0.0
    assert (first.seq, first.time_ms, first.wall) == (1, 7, 1.5)
    assert (second.seq, second.time_ms) == (2, 9)
    assert first is not given and second is not first
    assert (first.broker, first.api, first.client_id, first.error) == (2, "Heartbeat", "c", "UNKNOWN_MEMBER_ID")
    assert list(log) == [first, second]


def test_the_group_emitter_names_the_client_of_a_member_and_the_coordinator_of_a_group():
    log = EventLog()
    joined = GroupEvents(log, coordinator_of=lambda group: 1).append(MemberJoined(group="g", member=MEMBER))
    assert (joined.broker, joined.client_id) == (1, "svc") and list(log) == [joined]
    assert GroupEvents(log).append(MemberJoined(group="g", member="m")).broker is None  # no coordinator yet


@dataclass(frozen=True, kw_only=True, eq=False, repr=False, slots=True)
class _SlottedEvent(Event):
    note: str = ""


del KINDS[_SlottedEvent.kind]  # a kind of this test only


def test_a_kind_with_slots_is_stamped_too():
    log = EventLog(now_ms=lambda: 3)
    stamped = log.append(_SlottedEvent(note="n"))
    assert (stamped.seq, stamped.time_ms, stamped.note, stamped.kind) == (1, 3, "n", "slotted_event")


def test_a_kind_is_a_frozen_dataclass_with_keyword_fields():
    joined = MemberJoined(group="g", member=MEMBER)
    assert (joined.group, joined.member, joined.instance, joined.broker, joined.seq) == ("g", MEMBER, None, None, 0)
    assert dataclasses.is_dataclass(joined) and type(joined).__dataclass_params__.frozen
    with pytest.raises(dataclasses.FrozenInstanceError, match="'group'"):
        joined.group = "h"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del joined.member  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing keyword argument 'member'"):
        MemberJoined(group="g")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        MemberJoined(group="g", member=MEMBER, nope=1)  # type: ignore[call-arg]
    moved = dataclasses.replace(joined, group="h")
    assert (moved.group, moved.member) == ("h", MEMBER) and moved == MemberJoined(group="h", member=MEMBER)
    assert hash(moved) == hash(MemberJoined(group="h", member=MEMBER)) and moved != joined


@dataclass(frozen=True, kw_only=True)
class _PlainFrozenEvent(Event):
    note: str
    tags: list[str] = dataclasses.field(default_factory=list)


del KINDS[_PlainFrozenEvent.kind]  # a kind of this test only


def test_a_frozen_dataclass_made_the_usual_way_is_a_kind_too():
    event = _PlainFrozenEvent(note="n", broker=1)
    assert (event.note, event.tags, event.broker, event.kind) == ("n", [], 1, "plain_frozen_event")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.note = "m"  # type: ignore[misc]
    stamped = EventLog(now_ms=lambda: 4).append(event)
    assert (stamped.seq, stamped.time_ms, stamped.note) == (1, 4, "n")


def test_the_clients_of_members_that_left_are_kept_only_as_long_as_the_log_keeps_events():
    """Issue 33: the member id -> client id map kept every member that ever joined."""
    groups = GroupEvents(EventLog(capacity=100))
    for i in range(1_000):
        groups.append(MemberJoined(group="g", member=f"m{i}", instance=None, client_id=f"client-{i}"))
    assert len(groups._member_clients) == 100
    assert groups.client_of("g", "m999") == "client-999"


def _connected(log: EventLog, n: int, client_id: str = "c") -> None:
    for i in range(n):
        log.append(ClientConnected(peer=f"127.0.0.1:{i}", client_id="-".join([client_id, "app"])))  # a string each


def test_renew_makes_the_newest_events_again_equal_in_their_places():
    """What ``serve`` does when quiet after a burst (issue 33): the events kept since the last
    renewal are dropped, ``between`` runs (a collection and malloc_trim), and they are made
    again from a pickle, equal, with equal strings one object."""
    log = EventLog(capacity=5)
    _connected(log, 8)
    before = list(log)
    assert len({id(e.client_id) for e in before}) == 5
    seen_between: list[list[Event]] = []
    assert log.renew(lambda: seen_between.append([e for e in log if e in before])) == 5
    assert seen_between == [[]]  # none of them kept while between ran
    after = list(log)
    assert after == before and all(a is not b for a, b in zip(after, before))
    assert len({id(e.client_id) for e in after}) == 1  # "c-app" once
    assert (len(log), log.dropped, [e.seq for e in log]) == (8, 3, [4, 5, 6, 7, 8])
    assert log.renew() == 0  # nothing new since
    _connected(log, 2)
    newest = list(log)[-2:]
    assert log.renew() == 2 and list(log)[-2:] == newest and list(log)[:3] == after[2:]


def test_renew_keeps_the_order_of_events_appended_meanwhile_and_the_kinds_pickle_cannot_copy():
    log = EventLog(capacity=4)
    _connected(log, 2)
    slotted = log.append(_SlottedEvent(note="n"))  # a kind with __slots__: left as it is
    before = list(log)

    def between() -> None:
        _connected(log, 2, client_id="d")

    assert log.renew(between) == 2
    assert [e.seq for e in log] == [2, 3, 4, 5] and list(log)[:2] == before[1:]
    assert list(log)[1] is slotted
    assert log.renew() == 2  # the two appended while it ran


def test_renew_leaves_an_event_holding_what_pickle_cannot_copy_and_renews_the_others():
    log = EventLog()
    _connected(log, 1)
    fault = log.append(FaultAdded(rule=1, spec={"match": lambda request: True}))  # a callable
    _connected(log, 1)
    before = list(log)
    assert log.renew() == 2
    assert list(log)[1] is fault and list(log)[0] == before[0] and list(log)[0] is not before[0]


def test_renew_answers_listeners_as_before():
    log = EventLog()
    _connected(log, 3)
    assert [e.seq for e in log.take_new()] == [1, 2, 3]
    log.renew()
    assert log.take_new() == []
    _connected(log, 1)
    assert [e.seq for e in log.take_new()] == [4]


def test_the_group_emitter_renews_its_member_clients_around_the_log():
    log = EventLog()
    groups = GroupEvents(log)
    groups.append(MemberJoined(group="g", member=MEMBER, client_id="svc-x"))
    order: list[str] = []
    assert groups.renew(lambda: order.append("between") or 7) == 7
    assert order == ["between"]
    assert groups.client_of("g", MEMBER) == "svc-x"
    assert groups.renew(lambda: 8) == 8  # nothing joined since: between alone

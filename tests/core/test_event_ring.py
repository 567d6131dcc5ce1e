"""The event log is a bounded ring: it keeps the newest events, counts the ones it dropped,
and keeps numbering (``seq``) and reading by place as if nothing were dropped."""

import pytest

from fakebroker.core import events as ev
from fakebroker.core.events import EventLog
from fakebroker.core.events.ring import EventRing


def _fill(log: EventLog, n: int) -> None:
    for i in range(n):
        log.append(ev.TopicCreated(topic=f"t{i}", partitions=1))


def test_the_ring_drops_the_oldest_and_counts_them():
    log = EventLog(capacity=3)
    _fill(log, 5)
    assert log.dropped == 2
    assert len(log) == 5  # places are absolute: the next event is the 6th
    assert [e.seq for e in log] == [3, 4, 5]
    assert [e.topic for e in log.since(0)] == ["t2", "t3", "t4"]  # dropped places read as the oldest kept
    assert [e.seq for e in log.since(3)] == [4, 5]
    assert log[4].seq == 5 and log[-1].seq == 5
    assert [e.seq for e in log[3:]] == [4, 5]
    with pytest.raises(IndexError):
        log[0]


def test_listeners_are_told_every_event_even_past_the_capacity():
    log = EventLog(capacity=2)
    _fill(log, 2)
    assert [e.seq for e in log.take_new()] == [1, 2]
    _fill(log, 1)
    assert [e.seq for e in log.take_new()] == [3]
    assert log.take_new() == []


def test_an_unbounded_log_keeps_everything():
    log = EventLog(capacity=None)
    _fill(log, 10)
    assert log.dropped == 0 and len(list(log)) == 10


def test_reading_the_newest_events_reads_only_those():
    ring: EventRing[int] = EventRing(1000)
    for i in range(5000):
        ring.append(i)
    assert ring.since(4998) == [4998, 4999]
    assert ring.since(10) == list(range(4000, 5000))
    assert ring.slice(slice(4990, 4992)) == [4990, 4991]


def test_a_ring_keeps_at_least_one_event():
    with pytest.raises(ValueError):
        EventRing(0)


def test_replace_puts_items_in_their_places_and_skips_the_places_dropped():
    ring: EventRing[object] = EventRing(4)
    for i in range(6):
        ring.append(i)
    ring.replace(3, ["a", "b", "c"])
    assert list(ring) == [2, "a", "b", "c"] and ring.dropped == 2 and ring.total == 6
    ring.replace(1, ["x", "y", "z"])  # place 1 was dropped
    assert list(ring) == ["y", "z", "b", "c"]

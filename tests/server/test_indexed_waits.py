"""Pending waits are filed by the events that can answer them (``core.events.index``): an event
is offered only to the waits it could match, so many pending waits cost nothing per unrelated
event, and each wait still answers exactly as a scan of the log would."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from fakebroker.cluster import FakeCluster, WaitTimeout, conditions
from fakebroker.core import events as ev
from fakebroker.core.events.index import EventIndex, key_for


class CountingEventSeen(conditions.EventSeen):
    checks = 0

    def check(self, cluster, delivered):
        type(self).checks += 1
        return super().check(cluster, delivered)


def test_the_index_files_a_wait_under_its_most_selective_key():
    assert key_for("member_expired", {"client_id": "c", "topic": "t", "group": "g"}) == ("member_expired", "group", "g")
    assert key_for("topic_created", {"topic": "t"}) == ("topic_created", "topic", "t")
    assert key_for("fault_fired", {"topics": ["t"]}) == ("fault_fired", None, None)  # a list: kind only
    index: EventIndex[str] = EventIndex()
    index.add(("member_expired", "group", "g"), "w")
    index.add((None, "group", "g"), "w")  # one wait under two keys an event answers to: offered once
    assert index.watchers_of(ev.MemberExpired(group="g", member="m")) == {"w"}
    assert index.watchers_of(ev.TopicCreated(topic="g", partitions=1)) == set()  # a topic named g is no group g
    index.discard(("member_expired", "group", "g"), "w")
    index.discard((None, "group", "g"), "w")
    assert not index and len(index) == 0


@pytest.mark.trio
async def test_unrelated_events_wake_no_pending_wait():
    async with FakeCluster() as cluster:
        emit = cluster.runtime.emit
        found: list[ev.Event] = []

        async def wait(condition) -> None:
            found.append(await cluster.wait_for(condition, timeout=30))

        async with trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(wait, CountingEventSeen("member_expired", {"group": "g"}))
            await trio.testing.wait_all_tasks_blocked()
            for _ in range(1000):
                emit(ev.FaultsCleared())
            emit(ev.MemberExpired(group="h", member="m"))  # the right kind, another group
            emit(ev.TopicCreated(topic="g", partitions=1))
            await trio.testing.wait_all_tasks_blocked()
            assert CountingEventSeen.checks == 0
            emit(ev.MemberExpired(group="g", member="m", client_id="c"))
        assert CountingEventSeen.checks == 50
        assert len(found) == 50 and all(e.kind == "member_expired" and e.group == "g" for e in found)


@pytest.mark.trio
async def test_an_indexed_wait_answers_as_a_scan_of_the_log_would():
    async with FakeCluster() as cluster:
        emit = cluster.runtime.emit
        emit(ev.MemberExpired(group="g", member="early", client_id="a"))
        since = cluster.event_count
        # already in the log: found by the first look, before any wait
        assert (await cluster.wait_for(conditions.member_expired("g", "a"), timeout=1)).member == "early"
        # after ``since`` only, and the details beyond the index key still count
        async with trio.open_nursery() as nursery:
            results: list[ev.Event] = []

            async def wait() -> None:
                results.append(await cluster.wait_for(conditions.member_expired("g", "b", since=since), timeout=10))

            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            emit(ev.MemberExpired(group="g", member="wrong-client", client_id="a"))
            emit(ev.MemberExpired(group="g", member="right", client_id="b"))
        assert [e.member for e in results] == ["right"]
        later = conditions.event("member_expired", group="g", client_id="b", since=cluster.event_count)
        with pytest.raises(WaitTimeout):
            await cluster.wait_for(later, timeout=0.2)

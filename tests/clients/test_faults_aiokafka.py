"""aiokafka meets fakebroker's fault rules, cluster actions and virtual clock.

The cluster is served from the test's own asyncio loop (``async with FakeCluster``); every
consumer runs its own poll loop as a task (``getmany``, record, commit exactly that), so a
record is delivered twice only if the commit covering it had failed, which ``Ledger.check``
asserts. The topic ``orders`` has 6 partitions on 3 replicas, so a stopped broker's partitions
move to another replica. aiokafka keeps its member id and generation in ``consumer._coordinator``.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import anyio
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import errors as aiokafka_errors
from aiokafka.structs import OffsetAndMetadata

from fakebroker.cluster import FakeCluster
from fakebroker.cluster import conditions as cond
from tests.clients.group_client import wait_until

pytestmark = [pytest.mark.clients, pytest.mark.anyio]

TOPIC = "orders"
PARTITIONS = 6
COMMON = {"request_timeout_ms": 10_000, "retry_backoff_ms": 50, "metadata_max_age_ms": 5_000}
GROUP = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 200, "rebalance_timeout_ms": 6000}
BROKER_CONFIG = {"group.min.session.timeout.ms": 1000}
COMMIT_REBALANCE_ERRORS = (
    aiokafka_errors.CommitFailedError,
    aiokafka_errors.IllegalStateError,
    aiokafka_errors.KafkaError,
)


@pytest.fixture
def anyio_backend():
    return "asyncio"


def new_cluster(**kwargs) -> FakeCluster:
    topics = {TOPIC: {"partitions": PARTITIONS, "replication_factor": 3}}
    return FakeCluster(brokers=3, topics=topics, config={**BROKER_CONFIG, **kwargs.pop("config", {})}, **kwargs)


def pick_group(cluster: FakeCluster, prefix: str) -> str:
    """A group id whose coordinator is not broker 0 (the first bootstrap server)."""
    return next(f"aio-{prefix}-{i}" for i in range(100) if cluster.coordinator(f"aio-{prefix}-{i}") != 0)


def stored(cluster: FakeCluster) -> set[tuple[int, int]]:
    return {(p, o) for p, o, _, _ in cluster.records(TOPIC)}


def keys_of(cluster: FakeCluster) -> Counter:
    return Counter(k.decode() for _, _, k, _ in cluster.records(TOPIC))


def no_handler_errors(cluster: FakeCluster) -> None:
    assert not [e.describe() for e in cluster.events if e.kind == "handler_error"]


class Ledger:
    """Deliveries and successful commits of all members, in the order the tasks saw them."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[str, int, int]] = []
        self.frontier: dict[int, int] = {}  # partition -> highest offset committed so far
        self.forbidden: list[tuple[str, int, int]] = []  # redelivered although a commit covered it
        self.commit_failures: list[tuple[str, str]] = []

    @property
    def seen(self) -> set[tuple[int, int]]:
        return {(p, o) for _, p, o in self.deliveries}

    def delivered(self, member: str, partition: int, offset: int) -> None:
        if (partition, offset) in self.seen and self.frontier.get(partition, 0) > offset:
            self.forbidden.append((member, partition, offset))
        self.deliveries.append((member, partition, offset))

    def check(self, expected: set[tuple[int, int]]) -> int:
        """No record lost, none redelivered after a successful commit; returns the duplicates."""
        assert self.seen == expected, (
            f"lost {sorted(expected - self.seen)[:5]} extra {sorted(self.seen - expected)[:5]}"
        )
        assert not self.forbidden, self.forbidden[:5]
        return len(self.deliveries) - len(self.seen)


class Member:
    def __init__(self, cluster: FakeCluster, gid: str, name: str, ledger: Ledger, **config):
        settings = {
            **COMMON,
            **GROUP,
            "bootstrap_servers": cluster.bootstrap_servers,
            "group_id": gid,
            "client_id": name,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "max_poll_records": 20,
            "fetch_max_wait_ms": 50,
            **config,
        }
        self.label = name
        self.ledger = ledger
        self.consumer = AIOKafkaConsumer(TOPIC, **settings)
        self._task: asyncio.Task | None = None
        self._stopping = False

    async def start(self) -> Member:
        await asyncio.wait_for(self.consumer.start(), 15)
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while not self._stopping:
            batches = await self.consumer.getmany(timeout_ms=100)
            offsets = {}
            for tp, records in batches.items():
                for r in records:
                    self.ledger.delivered(self.label, r.partition, r.offset)
                offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "")
            if offsets:
                try:
                    await self.consumer.commit(offsets)
                except COMMIT_REBALANCE_ERRORS as exc:
                    self.ledger.commit_failures.append((self.label, type(exc).__name__))
                else:
                    for tp, o in offsets.items():
                        self.ledger.frontier[tp.partition] = max(self.ledger.frontier.get(tp.partition, 0), o.offset)

    @property
    def partitions(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment())

    @property
    def member_id(self) -> str:
        return self.consumer._coordinator.member_id

    @property
    def generation(self) -> int:
        return self.consumer._coordinator.generation

    def check_alive(self) -> None:
        if self._task is not None and self._task.done() and not self._stopping:
            self._task.result()
            raise AssertionError(f"{self.label}'s poll loop ended")

    async def close(self) -> None:
        self._stopping = True
        try:
            if self._task is not None:
                await asyncio.wait_for(self._task, 15)
        finally:
            await asyncio.wait_for(self.consumer.stop(), 15)


async def close_all(members: list[Member]) -> None:
    for m in members:
        await m.close()


def settled(cluster: FakeCluster, gid: str, members: list[Member], partitions: int = PARTITIONS):
    """Stable with exactly these members, each holding what the coordinator assigned it, in its
    current generation, all partitions covered once."""

    def check() -> bool:
        view = cluster.group(gid)
        if view is None or view.state != "Stable" or len(view.members) != len(members):
            return False
        assigned = {m.member_id: sorted((m.assignment or {}).get(TOPIC, [])) for m in view.members}
        return sorted(p for m in members for p in m.partitions) == list(range(partitions)) and all(
            assigned.get(m.member_id) == m.partitions and m.generation == view.generation for m in members
        )

    return check


async def produce(cluster: FakeCluster, n: int, start: int = 0, **config) -> AIOKafkaProducer:
    producer = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2, **COMMON, **config
    )
    await asyncio.wait_for(producer.start(), 15)
    try:
        futures = [
            await producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS)
            for i in range(start, start + n)
        ]
        await asyncio.wait_for(asyncio.gather(*futures), 20)
    finally:
        await producer.stop()


async def produce_paced(cluster: FakeCluster, n: int, per_burst: int = 30, interval_s: float = 0.05) -> None:
    """Records 0..n-1 (record i into partition i % 6) in bursts; run it as a task."""
    producer = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2, enable_idempotence=True, **COMMON
    )
    await asyncio.wait_for(producer.start(), 15)
    try:
        for start in range(0, n, per_burst):
            futures = [
                await producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS)
                for i in range(start, min(n, start + per_burst))
            ]
            await asyncio.wait_for(asyncio.gather(*futures), 20)
            await asyncio.sleep(interval_s)
    finally:
        await producer.stop()


# == fault kinds ===================================================================================


async def test_error_heartbeat_rebalance_in_progress_three_times_rejoins_one_generation():
    """Heartbeat answers REBALANCE_IN_PROGRESS three times: the members rejoin under their
    member ids, the generation moves on by exactly one, and the records streaming meanwhile
    all arrive (again only where a commit failed in the rebalance)."""
    with anyio.fail_after(60):
        async with new_cluster() as cluster:
            gid = pick_group(cluster, "hb")
            ledger = Ledger()
            members = [await Member(cluster, gid, f"hb-{i}", ledger).start() for i in range(3)]
            stream = None
            try:
                await wait_until(settled(cluster, gid, members), "a 2/2/2 split", members)
                before = cluster.group(gid)
                stream = asyncio.create_task(produce_paced(cluster, 600))
                await wait_until(lambda: len(ledger.deliveries) >= 100, "100 deliveries", members)
                mark = len(cluster.events)
                rule = cluster.faults.add(api="Heartbeat", group=gid, error="REBALANCE_IN_PROGRESS", times=3)
                await cluster.wait_for(cond.generation_above(gid, before.generation), timeout=15)
                await wait_until(settled(cluster, gid, members), "the rejoin", members)
                await asyncio.wait_for(stream, 30)
                expected = stored(cluster)
                await wait_until(lambda: ledger.seen >= expected, "all 600 records", members)
                after = cluster.group(gid)
            finally:
                if stream is not None and not stream.done():
                    stream.cancel()
                await close_all(members)
            assert rule.fired == 3 and not rule.active
            assert after.generation == before.generation + 1, "three errors, one rebalance"
            assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
            started = [e.details for e in cluster.events[mark:] if e.kind == "generation_started" and e.group == gid]
            assert (started[0]["generation"], started[0]["members"]) == (before.generation + 1, 3)
            assert len(expected) == 600
            duplicates = ledger.check(expected)
            print(
                f"generation {before.generation} -> {after.generation}; {duplicates} redelivered; "
                f"commit failures {ledger.commit_failures}"
            )
            no_handler_errors(cluster)


async def test_drop_sync_group_of_one_member_it_reconnects_and_the_group_settles():
    """drop-1's first SyncGroup closes its connection before being handled: aiokafka marks the
    coordinator dead, finds it again and rejoins; the group ends Stable with all three members
    and every partition assigned once."""
    with anyio.fail_after(60):
        async with new_cluster() as cluster:
            gid = pick_group(cluster, "drop")
            rule = cluster.faults.add(api="SyncGroup", group=gid, client_id="drop-1", action="drop", times=1)
            ledger = Ledger()
            members = [await Member(cluster, gid, f"drop-{i}", ledger).start() for i in range(3)]
            try:
                took = await wait_until(
                    lambda: rule.fired == 1 and settled(cluster, gid, members)(), "a 2/2/2 split", members
                )
                view = cluster.group(gid)
            finally:
                await close_all(members)
            print(f"settled in {took:.1f}s at generation {view.generation}")
            assert sorted(len(a[TOPIC]) for a in view.assignment.values()) == [2, 2, 2]
            assert view.assignment["drop-1"][TOPIC]
            closed = [
                e.details
                for e in cluster.events
                if e.kind == "connection_closed" and e.details.get("client_id") == "drop-1"
            ]
            assert len(closed) == 1 and "drop before handling SyncGroup" in closed[0]["reason"]
            no_handler_errors(cluster)


async def test_blackhole_sync_group_member_times_out_and_rejoins():
    """bh-1's first SyncGroup is swallowed and its connection not read for 10 s: the coordinator
    expires bh-1 after its 1.5 s session and gives bh-0 every partition; bh-1's SyncGroup times
    out after request_timeout_ms (2.5 s), it rejoins as a new member, and the group ends Stable
    with both, three partitions each."""
    timings = {"session_timeout_ms": 1500, "heartbeat_interval_ms": 100, "request_timeout_ms": 2500}
    with anyio.fail_after(60):
        async with new_cluster() as cluster:
            gid = pick_group(cluster, "bh")
            ledger = Ledger()
            first = await Member(cluster, gid, "bh-0", ledger, **timings).start()
            members = [first]
            starting = None
            try:
                await wait_until(settled(cluster, gid, members), "bh-0 alone", members)
                rule = cluster.faults.add(
                    api="SyncGroup", group=gid, client_id="bh-1", action="blackhole", duration=10, times=1
                )
                mark = len(cluster.events)
                second = Member(cluster, gid, "bh-1", ledger, **timings)
                # aiokafka's start() returns once the member has its first assignment: run it aside.
                starting = asyncio.create_task(second.start())
                await cluster.wait_for(lambda c: rule.fired == 1, timeout=10)
                alone = await cluster.wait_for(cond.member_expired(gid, "bh-1", since=mark), timeout=10)
                await wait_until(lambda: first.partitions == list(range(PARTITIONS)), "bh-0 to hold all six", [first])
                await asyncio.wait_for(starting, 15)
                members.append(second)
                await wait_until(settled(cluster, gid, members), "a 3/3 split", members)
                view = cluster.group(gid)
            finally:
                if starting is not None and not starting.done():
                    starting.cancel()
                await close_all(members)
            joined = [e for e in cluster.events[mark:] if e.kind == "member_joined" and e.client_id == "bh-1"]
            print(
                f"bh-1 rejoined {joined[-1].wall - joined[0].wall:.1f}s after its first join; "
                f"generation {view.generation}"
            )
            assert alone.details["member"] == joined[0].details["member"]
            assert len(joined) == 2 and joined[1].details["member"] != joined[0].details["member"], "a new member"
            assert joined[1].wall - joined[0].wall >= 2.0, "rejoined after its request timed out"
            assert sorted(len(a[TOPIC]) for a in view.assignment.values()) == [3, 3]
            no_handler_errors(cluster)


# == cluster actions ===============================================================================


async def test_stop_broker_while_producing_every_record_lands_and_leaders_come_back():
    """Broker 1 stops mid-stream (replication factor 3): its partitions move, the idempotent
    producer follows and every record is stored once, in order. After a restart and a preferred
    leader election the leaders are back where they started."""
    with anyio.fail_after(60):
        async with new_cluster() as cluster:
            preferred = {p: cluster.leader(TOPIC, p) for p in range(PARTITIONS)}
            led = [p for p, b in preferred.items() if b == 1]
            stream = asyncio.create_task(produce_paced(cluster, 600, per_burst=30, interval_s=0.02))
            try:
                await cluster.wait_for(lambda c: len(c.records(TOPIC)) >= 150, timeout=15)
                cluster.stop_broker(1)
                assert not stream.done(), "the stop should happen mid-stream"
                moved = {p: cluster.leader(TOPIC, p) for p in led}
                await asyncio.wait_for(stream, 30)
            finally:
                if not stream.done():
                    stream.cancel()
            assert led and all(b not in (1, -1) for b in moved.values()), moved
            assert keys_of(cluster) == Counter(f"k{i}" for i in range(600)), "each record exactly once"
            for p in range(PARTITIONS):
                assert [k for _, _, k, _ in cluster.records(TOPIC, p)] == [
                    b"k%d" % i for i in range(p, 600, PARTITIONS)
                ]

            cluster.start_broker(1)  # on the loop: scheduled, listening a moment later
            await cluster.wait_for(cond.event("broker_started", restarted=True), timeout=5)
            assert cluster.elect_preferred_leaders() >= len(led)
            assert {p: cluster.leader(TOPIC, p) for p in range(PARTITIONS)} == preferred
            await produce(cluster, 60, start=600, enable_idempotence=True)
            assert keys_of(cluster) == Counter(f"k{i}" for i in range(660))
            no_handler_errors(cluster)


async def test_move_coordinator_with_load_time_mid_stream_loses_nothing():
    """The coordinator moves mid-stream and the new one "loads" for 500 ms: the members ride
    out COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR, stay in their generation, and every
    record is consumed with the final offsets committed on the new coordinator."""
    with anyio.fail_after(60):
        async with new_cluster() as cluster:
            gid = pick_group(cluster, "move")
            ledger = Ledger()
            members = [await Member(cluster, gid, f"mv-{i}", ledger).start() for i in range(2)]
            stream = None
            try:
                await wait_until(settled(cluster, gid, members), "a 3/3 split", members)
                generation = cluster.group(gid).generation
                stream = asyncio.create_task(produce_paced(cluster, 600))
                await wait_until(lambda: len(ledger.deliveries) >= 150, "150 deliveries", members)
                old = cluster.coordinator(gid)
                mark = len(cluster.events)
                new = cluster.move_coordinator(gid, load_time_ms=500)
                assert not stream.done()
                await asyncio.wait_for(stream, 30)
                expected = stored(cluster)
                await wait_until(lambda: ledger.seen >= expected, "all 600 records", members)
                await wait_until(
                    lambda: cluster.committed(gid) == {(TOPIC, p): 100 for p in range(PARTITIONS)},
                    "the final commits",
                    members,
                )
                view = cluster.group(gid)
            finally:
                if stream is not None and not stream.done():
                    stream.cancel()
                await close_all(members)
            assert new != old and view.coordinator == new and view.generation == generation
            assert len(expected) == 600
            duplicates = ledger.check(expected)
            after = cluster.events[mark:]
            unloaded = next(e for e in after if e.kind == "group_unloaded" and e.group == gid)
            loaded = next(e for e in after if e.kind == "group_loaded" and e.group == gid)
            loading = [
                e for e in after if e.kind == "request_error" and e.details["error"] == "COORDINATOR_LOAD_IN_PROGRESS"
            ]
            print(
                f"coordinator {old} -> {new}, load {loaded.time_ms - unloaded.time_ms} ms, "
                f"{len(loading)} COORDINATOR_LOAD_IN_PROGRESS answers, {duplicates} redelivered, "
                f"commit failures {ledger.commit_failures}"
            )
            assert loaded.time_ms - unloaded.time_ms >= 500
            assert loading and {e.broker for e in loading} == {new}
            no_handler_errors(cluster)


# == virtual time ==================================================================================
VT_GROUP = {"session_timeout_ms": 45000, "heartbeat_interval_ms": 100, "rebalance_timeout_ms": 60000}


async def test_virtual_time_stalled_member_expires_after_46s_in_a_second_and_survivors_rebalance():
    """Three members with 45 s sessions; vt-2's heartbeats are black-holed. ``advance_async(46,
    step=10, settle=0.15)`` moves virtual time with real pauses in which vt-0 and vt-1 heartbeat:
    vt-2 alone expires, at exactly +45 s and within a second of wall time, and the survivors
    rebalance into the next generation with all six partitions."""
    with anyio.fail_after(60):
        async with new_cluster(virtual_time=True) as cluster:
            gid = pick_group(cluster, "vt")
            ledger = Ledger()
            members = [await Member(cluster, gid, f"vt-{i}", ledger, **VT_GROUP).start() for i in range(3)]
            survivors = members[:2]
            survivor_ids: set[str] = set()
            try:
                await wait_until(settled(cluster, gid, members), "a 2/2/2 split", members)
                before = cluster.group(gid)
                stalled_id = members[2].member_id
                survivor_ids = {m.member_id for m in survivors}
                rule = cluster.faults.add(api="Heartbeat", group=gid, client_id="vt-2", action="blackhole")
                await cluster.wait_for(lambda c: rule.fired == 1, timeout=5)
                mark = len(cluster.events)
                start_ms = cluster.clock.now_ms()

                began, began_wall = time.monotonic(), time.time()
                await cluster.clock.advance_async(46, step=10, settle=0.15)
                wall = time.monotonic() - began

                expired = await cluster.wait_for(cond.member_expired(gid, "vt-2", since=mark), timeout=1)
                took = await wait_until(settled(cluster, gid, survivors), "the survivors' 3/3 split", survivors)
                after = cluster.group(gid)
                await produce(cluster, 12)
                await wait_until(
                    lambda: {p for who, p, _ in ledger.deliveries if who != "vt-2"} == set(range(PARTITIONS)),
                    "records from all six partitions",
                    survivors,
                )
            finally:
                cluster.faults.clear()  # ends the black hole so vt-2 can leave
                await close_all(members)
            print(
                f"advance_async(46, step=10, settle=0.15) took {wall:.2f}s, vt-2 expired "
                f"{expired.wall - began_wall:.2f}s into it; survivors settled {took:.2f}s later; "
                f"generation {before.generation} -> {after.generation}"
            )
            assert wall < 2.0 and expired.wall - began_wall < 1.0
            assert expired.details["member"] == stalled_id
            assert expired.time_ms == start_ms + 45000, "at its own deadline"
            assert after.generation == before.generation + 1
            assert {m.client_id for m in after.members} == {"vt-0", "vt-1"}
            assert {m.member_id for m in after.members} == survivor_ids, "the survivors kept their member ids"
            assert [e.client_id for e in cluster.events[mark:] if e.kind == "member_expired" and e.group == gid] == [
                "vt-2"
            ]
            no_handler_errors(cluster)


async def test_virtual_time_plain_jump_expires_every_silent_member_and_they_rejoin():
    """``advance_async(46)`` without steps: nobody heartbeats inside the jump, so both members
    expire and the group empties; they learn it at their next heartbeat and rejoin as new members."""
    with anyio.fail_after(60):
        async with new_cluster(virtual_time=True) as cluster:
            gid = pick_group(cluster, "jump")
            ledger = Ledger()
            members = [await Member(cluster, gid, f"jump-{i}", ledger, **VT_GROUP).start() for i in range(2)]
            try:
                await wait_until(settled(cluster, gid, members), "a 3/3 split", members)
                before = cluster.group(gid)
                mark = len(cluster.events)
                await cluster.clock.advance_async(46)
                emptied = await cluster.wait_for(cond.GroupState(gid, "Empty"), timeout=1)
                await wait_until(settled(cluster, gid, members), "the rejoin", members)
                after = cluster.group(gid)
            finally:
                await close_all(members)
            expired = [e.client_id for e in cluster.events[mark:] if e.kind == "member_expired" and e.group == gid]
            print(f"generations {before.generation} -> {emptied.generation} (Empty) -> {after.generation}")
            assert sorted(expired) == ["jump-0", "jump-1"]
            assert emptied.generation == before.generation + 1 and not emptied.members
            assert before.generation + 2 <= after.generation <= before.generation + 3
            assert not {m.member_id for m in after.members} & {m.member_id for m in before.members}
            no_handler_errors(cluster)

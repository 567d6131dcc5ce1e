"""aiokafka consumer groups (subscribe + group_id) against a 3-broker FakeCluster served from
the test's own asyncio loop (``async with FakeCluster``, anyio's pytest plugin).

Every group id is chosen so that its coordinator is *not* broker 0, the first bootstrap
server. Every member runs its own poll loop as an asyncio task, as an application does:
``getmany()``, record what arrived, commit exactly that, repeat. So a record may only be
delivered twice if, when the duplicate arrives, no successful commit had covered it yet;
``Ledger.check`` asserts exactly that.

aiokafka has no public accessor for its member id and generation; they are read from
``consumer._coordinator`` to compare them with the broker's view.
"""

from __future__ import annotations

import asyncio
import time

import anyio
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka import errors as aiokafka_errors  # noqa: E402
from aiokafka.structs import OffsetAndMetadata  # noqa: E402

from fakebroker.cluster import FakeCluster  # noqa: E402
from fakebroker.protocol import data as consumer_protocol  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.anyio]

TOPIC = "orders"
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_INTERVAL_MS = 500
REBALANCE_TIMEOUT_MS = 10_000
MAX_POLL_RECORDS = 20
POLL_MS = 200
DEADLINE_S = 20.0
COMMON = {"request_timeout_ms": 10_000, "retry_backoff_ms": 50, "metadata_max_age_ms": 5_000}
# What a commit may fail with when a rebalance overtakes it: the broker's REBALANCE_IN_PROGRESS
# / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID become CommitFailedError; a partition revoked
# between getmany() and commit() is IllegalStateError.
COMMIT_REBALANCE_ERRORS = (aiokafka_errors.CommitFailedError, aiokafka_errors.IllegalStateError)


@pytest.fixture
def anyio_backend():
    return "asyncio"


def group_id_off_bootstrap(cluster, tag: str) -> str:
    """A group id whose coordinator is not broker 0 (the first bootstrap server)."""
    assert cluster.bootstrap_servers.split(",")[0].endswith(f":{cluster.servers[0].port}")
    for i in range(200):
        gid = f"aio-{tag}-{i}"
        if cluster.coordinator(gid) not in (0, -1):
            return gid
    raise AssertionError("no group id maps to a coordinator other than broker 0")


async def produce(cluster, n: int, start: int = 0) -> None:
    """Records ``start..start+n-1``, record i into partition i % 6, acknowledged by all."""
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2, **COMMON)
    await asyncio.wait_for(producer.start(), 15)
    try:
        futures = [
            await producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS)
            for i in range(start, start + n)
        ]
        await asyncio.wait_for(asyncio.gather(*futures), 15)
    finally:
        await producer.stop()


async def produce_paced(cluster, n: int, per_burst: int = 30, interval_s: float = 0.05) -> None:
    """Records ``0..n-1`` (record i into partition i % 6) in bursts; run it as a task."""
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2, **COMMON)
    await asyncio.wait_for(producer.start(), 15)
    try:
        for start in range(0, n, per_burst):
            futures = [
                await producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS)
                for i in range(start, min(n, start + per_burst))
            ]
            await asyncio.wait_for(asyncio.gather(*futures), 15)
            await asyncio.sleep(interval_s)
    finally:
        await producer.stop()


def stored(cluster) -> set[tuple[int, int]]:
    return {(p, o) for p, o, _, _ in cluster.records(TOPIC)}


def committed_on_broker(cluster, gid: str) -> dict[int, int]:
    return {p: o.offset for t, p, o in cluster.state.offsets.fetch(gid, None) if t == TOPIC}


def group_events(cluster, gid: str, since: int = 0) -> list:
    return [e for e in cluster.events[since:] if e.details.get("group") == gid]


def until_members_leave(events: list) -> list:
    """The events before the first LeaveGroup (the test's own shutdown)."""
    return events[: next((i for i, e in enumerate(events) if e.details.get("reason") == "left the group"), len(events))]


def no_broker_errors(cluster) -> None:
    assert not [e for e in cluster.events if e.kind in ("handler_error", "produce_rejected")]


class Ledger:
    """Every delivery and every commit outcome, in the order the member tasks recorded them."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[str, int, int]] = []  # (member, partition, offset)
        self.frontier: dict[int, int] = {}  # partition -> highest offset committed successfully so far
        self.allowed_duplicates: list[tuple[int, int]] = []
        self.forbidden_duplicates: list[tuple[str, int, int, int]] = []
        self.commit_failures: list[tuple[str, str]] = []
        self.seen: set[tuple[int, int]] = set()

    def delivered(self, member: str, partition: int, offset: int) -> None:
        if (partition, offset) in self.seen:
            # A redelivery is allowed only while no successful commit has covered the record.
            if self.frontier.get(partition, 0) > offset:
                self.forbidden_duplicates.append((member, partition, offset, self.frontier[partition]))
            else:
                self.allowed_duplicates.append((partition, offset))
        self.seen.add((partition, offset))
        self.deliveries.append((member, partition, offset))

    def committed(self, offsets: dict[int, int]) -> None:
        for p, o in offsets.items():
            self.frontier[p] = max(self.frontier.get(p, 0), o)

    def check(self, expected: set[tuple[int, int]], max_duplicates: int) -> int:
        got = [(p, o) for _, p, o in self.deliveries]
        assert set(got) == expected, (
            f"lost: {sorted(expected - set(got))[:10]} extra: {sorted(set(got) - expected)[:10]}"
        )
        assert not self.forbidden_duplicates, f"redelivered after a successful commit: {self.forbidden_duplicates[:10]}"
        duplicates = len(got) - len(set(got))
        assert duplicates == len(self.allowed_duplicates)
        assert duplicates <= max_duplicates, f"{duplicates} duplicates (bound {max_duplicates})"
        return duplicates


class Member:
    """One group consumer with its own poll loop (an asyncio task); ``paused`` stops the loop."""

    def __init__(self, cluster, gid: str, name: str, ledger: Ledger, **config):
        settings = dict(
            COMMON,
            bootstrap_servers=cluster.bootstrap_servers,
            group_id=gid,
            client_id=name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            max_poll_records=MAX_POLL_RECORDS,
            fetch_max_wait_ms=50,
        )
        settings.update(config)
        self.label = name
        self.ledger = ledger
        self.consumer = AIOKafkaConsumer(TOPIC, **settings)
        self.paused = False
        self.polls = 0
        self._stopping = False
        self._task: asyncio.Task | None = None
        self.started = False

    async def start(self, loop: bool = True) -> Member:
        await asyncio.wait_for(self.consumer.start(), 15)
        self.started = True
        if loop:
            self._task = asyncio.create_task(self._run(), name=f"member-{self.label}")
        return self

    async def _run(self) -> None:
        while not self._stopping:
            if self.paused:
                await asyncio.sleep(0.02)
                continue
            batches = await self.consumer.getmany(timeout_ms=POLL_MS)
            self.polls += 1
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
                    self.ledger.committed({tp.partition: o.offset for tp, o in offsets.items()})

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
            self._task.result()  # raises what killed the loop
            raise AssertionError(f"{self.label}'s poll loop ended")

    async def close(self) -> None:
        """Stop the loop, then the consumer (a dynamic member sends LeaveGroup, a static one not)."""
        self._stopping = True
        try:
            if self._task is not None:
                await asyncio.wait_for(self._task, 15)
        finally:
            if self.started:
                self.started = False
                await asyncio.wait_for(self.consumer.stop(), 15)


async def wait_until(condition, what: str, members=(), deadline_s: float = DEADLINE_S) -> float:
    """Wait (bounded) until ``condition()`` holds while the members poll; returns the seconds."""
    start = time.monotonic()
    while not condition():
        for m in members:
            m.check_alive()
        assert time.monotonic() - start < deadline_s, f"timed out waiting for {what}: " + ", ".join(
            f"{m.label}={m.partitions}@{m.generation}" for m in members
        )
        await asyncio.sleep(0.02)
    return time.monotonic() - start


def split_evenly(members: list[Member], cluster, gid: str) -> bool:
    """Every member holds its share of the 6 partitions, all in the group's current generation."""
    group = cluster.state.groups.groups.get(gid)
    if group is None or group.state.value != "Stable" or len(group.members) != len(members):
        return False
    parts = [m.partitions for m in members]
    return (
        all(len(p) == PARTITIONS // len(members) for p in parts)
        and sorted(sum(parts, [])) == list(range(PARTITIONS))
        and all(m.generation == group.generation_id and m.member_id in group.members for m in members)
    )


async def start_members(cluster, gid: str, ledger: Ledger, n: int = 3, **config) -> list[Member]:
    members = [
        Member(cluster, gid, f"c{i}", ledger, **{k: (v(i) if callable(v) else v) for k, v in config.items()})
        for i in range(n)
    ]
    for m in members:
        await m.start()
    return members


async def close_all(members: list[Member]) -> None:
    errors = []
    for m in members:
        try:
            await m.close()
        except BaseException as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


# -- 1. three consumers split six partitions -------------------------------------------------------


async def test_three_consumers_split_six_partitions():
    with anyio.fail_after(60):
        async with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}) as cluster:
            gid = group_id_off_bootstrap(cluster, "split")
            ledger = Ledger()
            members = await start_members(cluster, gid, ledger)
            try:
                await wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
                assert [len(m.partitions) for m in members] == [2, 2, 2]
                generation = cluster.state.groups.groups[gid].generation_id
                await produce(cluster, 600)
                expected = stored(cluster)
                assert len(expected) == 600
                await wait_until(lambda: ledger.seen >= expected, "all 600 records", members)
                await wait_until(
                    lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)},
                    "the last commits",
                    members,
                )
                polls = [m.polls for m in members]
                await wait_until(
                    lambda: all(m.polls >= n + 2 for m, n in zip(members, polls)), "two more polls each", members
                )
                # Nothing was delivered twice: no rebalance while consuming.
                assert ledger.check(expected, max_duplicates=0) == 0
                for m in members:
                    assert {p for who, p, _ in ledger.deliveries if who == m.label} == set(m.partitions)
                assert cluster.state.groups.groups[gid].generation_id == generation
            finally:
                await close_all(members)
            events = group_events(cluster, gid)
            assert max(e.details["members"] for e in events if e.kind == "generation_started") == 3
            assert len({e.details["member"] for e in events if e.kind == "member_joined"}) == 3
            assert cluster.coordinator(gid) != 0
            # The members found the coordinator: no group request went to another broker.
            assert not [
                e for e in cluster.events if e.kind == "request_error" and e.details["error"] == "NOT_COORDINATOR"
            ]
            no_broker_errors(cluster)


# -- 2. a member leaves; the survivors continue from the committed offsets ---------------------------


async def test_member_leaves_survivors_take_over():
    with anyio.fail_after(60):
        async with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}) as cluster:
            gid = group_id_off_bootstrap(cluster, "leave")
            ledger = Ledger()
            members = await start_members(cluster, gid, ledger)
            try:
                await wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
                await produce(cluster, 300)
                await wait_until(lambda: len(ledger.deliveries) >= 120, "120 deliveries", members)
                leaver, survivors = members[1], [members[0], members[2]]
                leaver_id, leaver_parts = leaver.member_id, leaver.partitions
                since = len(cluster.events)
                await leaver.close()  # it committed what it read; stop() sends LeaveGroup
                await produce(cluster, 300, start=300)
                expected = stored(cluster)
                await wait_until(lambda: split_evenly(survivors, cluster, gid), "a 3/3 split", survivors)
                assert set(leaver_parts) <= set(survivors[0].partitions) | set(survivors[1].partitions)
                await wait_until(lambda: ledger.seen >= expected, "all 600 records", survivors)
                await wait_until(
                    lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)},
                    "the last commits",
                    survivors,
                )
                # Duplicates only where a commit had not yet covered the record: at most one
                # poll's worth per partition that changed hands.
                duplicates = ledger.check(expected, max_duplicates=PARTITIONS * MAX_POLL_RECORDS)
            finally:
                await close_all(members)
            after = group_events(cluster, gid, since)
            assert [
                e.details["reason"] for e in after if e.kind == "member_removed" and e.details["member"] == leaver_id
            ] == ["left the group"]
            assert any(e.kind == "rebalance_started" for e in after)
            assert [e.details["members"] for e in after if e.kind == "generation_started"][0] == 2
            print(f"duplicates after the leave: {duplicates}; commit failures: {ledger.commit_failures}")
            no_broker_errors(cluster)


# -- 3. a new member resumes exactly after the last commit -------------------------------------------


async def test_new_member_resumes_after_last_commit():
    with anyio.fail_after(60):
        async with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}) as cluster:
            gid = group_id_off_bootstrap(cluster, "resume")
            await produce(cluster, 120)  # 20 per partition
            ledger = Ledger()
            first = Member(cluster, gid, "first", ledger)
            await first.start()
            chosen = {p: 3 + 2 * p for p in range(PARTITIONS)}
            try:
                await wait_until(
                    lambda: (
                        len(ledger.deliveries) >= 120
                        and committed_on_broker(cluster, gid) == {p: 20 for p in range(PARTITIONS)}
                    ),
                    "120 deliveries, committed",
                    [first],
                )
                first.paused = True
                await asyncio.sleep(POLL_MS / 1000 * 2)  # let a getmany() in progress return
                # The last commit sets a chosen position on every partition (behind what was read).
                await first.consumer.commit(
                    {TopicPartition(TOPIC, p): OffsetAndMetadata(o, f"m{p}") for p, o in chosen.items()}
                )
                assert committed_on_broker(cluster, gid) == chosen
            finally:
                await first.close()
            assert cluster.state.groups.groups[gid].state.value == "Empty"

            resumed = Ledger()
            second = Member(cluster, gid, "second", resumed)
            try:
                await second.start(loop=False)
                assert {
                    p: await second.consumer.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)
                } == chosen
                second._task = asyncio.create_task(second._run())
                await wait_until(
                    lambda: (
                        len(resumed.deliveries) >= 120 - sum(chosen.values())
                        and committed_on_broker(cluster, gid) == {p: 20 for p in range(PARTITIONS)}
                    ),
                    "the rest of every partition, committed",
                    [second],
                )
                polls = second.polls
                await wait_until(lambda: second.polls >= polls + 2, "two more polls", [second])
                by_partition: dict[int, list[int]] = {}
                for _, p, o in resumed.deliveries:
                    by_partition.setdefault(p, []).append(o)
                # Exactly the records from each committed offset on, in order, nothing before it.
                assert by_partition == {p: list(range(o, 20)) for p, o in chosen.items()}
            finally:
                await second.close()
            no_broker_errors(cluster)


# -- 4. static membership ------------------------------------------------------------------------------


async def test_static_member_restart_keeps_partitions_without_rebalance():
    # aiokafka supports group_instance_id (KIP-345: JoinGroup v5, SyncGroup v3); a static
    # member sends no LeaveGroup when it stops.
    with anyio.fail_after(60):
        async with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}) as cluster:
            gid = group_id_off_bootstrap(cluster, "static")
            ledger = Ledger()
            members = await start_members(cluster, gid, ledger, group_instance_id=lambda i: f"instance-{i}")
            try:
                await wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
                await produce(cluster, 300)
                await wait_until(lambda: len(ledger.deliveries) >= 100, "100 deliveries", members)
                group = cluster.state.groups.groups[gid]
                generation = group.generation_id
                # Restart a follower (not the leader) well within the session timeout.
                index = next(i for i, m in enumerate(members) if m.member_id != group.leader_id)
                old = members[index]
                old_id, old_parts = old.member_id, old.partitions
                since = len(cluster.events)
                restart_start = time.monotonic()
                await old.close()
                resumed_from = len(ledger.deliveries)
                restarted = Member(cluster, gid, f"c{index}", ledger, group_instance_id=f"instance-{index}")
                members[index] = restarted
                await restarted.start()
                await wait_until(
                    lambda: restarted.partitions == old_parts and restarted.generation == generation,
                    "the restarted static member's assignment",
                    members,
                )
                assert time.monotonic() - restart_start < SESSION_TIMEOUT_MS / 1000
                restarted_id = restarted.member_id
                assert restarted_id not in ("", old_id)
                # It reads on from the committed offsets of its own partitions, including what arrives now.
                await produce(cluster, 300, start=300)
                expected = stored(cluster)
                await wait_until(lambda: ledger.seen >= expected, "all 600 records", members)
                await wait_until(
                    lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)},
                    "the last commits",
                    members,
                )
                assert {p for who, p, _ in ledger.deliveries[resumed_from:] if who == restarted.label} == set(old_parts)
                ledger.check(expected, max_duplicates=2 * MAX_POLL_RECORDS)
                group = cluster.state.groups.groups[gid]
                assert (group.generation_id, group.state.value) == (generation, "Stable")
                assert group.static_members == {f"instance-{i}": m.member_id for i, m in enumerate(members)}
            finally:
                await close_all(members)
            after = group_events(cluster, gid, since)
            # Static members send no LeaveGroup: everything up to the end of the test counts.
            assert not [e for e in after if e.kind in ("generation_started", "rebalance_started", "member_removed")]
            assert [
                (e.kind, e.details["instance"]) for e in after if e.kind in ("member_fenced", "static_member_rejoined")
            ] == [("member_fenced", f"instance-{index}"), ("static_member_rejoined", f"instance-{index}")]
            assert [e.details["member"] for e in after if e.kind == "static_member_rejoined"] == [restarted_id]
            assert [e.details["member"] for e in after if e.kind == "member_fenced"] == [old_id]
            no_broker_errors(cluster)


# -- 5. a member stalls past max_poll_interval_ms ---------------------------------------------------------


async def test_stalled_member_is_removed_and_others_take_over():
    max_poll_ms = 3000
    with anyio.fail_after(60):
        async with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}) as cluster:
            gid = group_id_off_bootstrap(cluster, "stall")
            ledger = Ledger()
            members = await start_members(
                cluster, gid, ledger, max_poll_interval_ms=max_poll_ms, rebalance_timeout_ms=max_poll_ms
            )
            try:
                await wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
                await produce(cluster, 300)
                await wait_until(lambda: len(ledger.deliveries) >= 60, "60 deliveries", members)
                stalled, active = members[2], members[:2]
                stalled_id, stalled_parts = stalled.member_id, stalled.partitions
                generation = cluster.state.groups.groups[gid].generation_id
                since = len(cluster.events)
                # The stalled member stops calling getmany() (its heartbeat task goes on); the
                # others keep going and take its partitions once it is out of the group.
                stalled.paused = True
                took = await wait_until(lambda: split_evenly(active, cluster, gid), "the survivors' 3/3 split", active)
                assert took >= max_poll_ms / 1000 * 0.8
                assert set(stalled_parts) <= set(active[0].partitions) | set(active[1].partitions)
                # They read on from its committed offsets, including what arrives now.
                await produce(cluster, 300, start=300)
                expected = stored(cluster)
                await wait_until(lambda: ledger.seen >= expected, "all 600 records", active)
                await wait_until(
                    lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)},
                    "the last commits",
                    active,
                )
                ledger.check(expected, max_duplicates=2 * MAX_POLL_RECORDS)
                group = cluster.state.groups.groups[gid]
                assert stalled_id not in group.members and group.generation_id > generation
                assert set(group.members) == {m.member_id for m in active}
            finally:
                await close_all(members)
            after = group_events(cluster, gid, since)
            removed = [e for e in after if e.kind == "member_removed" and e.details["member"] == stalled_id]
            # aiokafka leaves the group itself once the consumer was idle for max_poll_interval_ms.
            assert [e.details["reason"] for e in removed] == ["left the group"]
            started = [e for e in after if e.kind == "generation_started"]
            assert started and started[0].details["members"] == 2
            assert stalled_id not in {e.details["member"] for e in after if e.kind == "assignment_delivered"}
            no_broker_errors(cluster)


# -- 6. the coordinator moves mid-stream -----------------------------------------------------------------


async def test_coordinator_moves_mid_stream():
    with anyio.fail_after(60):
        async with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, coordinator_load_time_ms=300) as cluster:
            gid = group_id_off_bootstrap(cluster, "move")
            ledger = Ledger()
            members = await start_members(cluster, gid, ledger)
            producer: asyncio.Task | None = None
            try:
                await wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
                # Records keep arriving (30 every 50 ms) before, during and after the move.
                producer = asyncio.create_task(produce_paced(cluster, 600))
                await wait_until(lambda: len(ledger.deliveries) >= 150, "150 deliveries", members)
                old = cluster.coordinator(gid)
                generation = cluster.state.groups.groups[gid].generation_id
                since = len(cluster.events)
                new = cluster.move_coordinator(gid)
                assert new not in (old, -1) and cluster.coordinator(gid) == new
                assert not producer.done(), "the move should happen mid-stream"
                await asyncio.wait_for(producer, 30)
                expected = stored(cluster)
                assert len(expected) == 600
                await wait_until(lambda: ledger.seen >= expected, "all 600 records", members)
                # The commits after the move reached the new coordinator.
                await wait_until(
                    lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)},
                    "the last commits",
                    members,
                )
                duplicates = ledger.check(expected, max_duplicates=PARTITIONS * MAX_POLL_RECORDS)
                assert cluster.state.groups.groups[gid].state.value == "Stable"
            finally:
                if producer is not None and not producer.done():
                    producer.cancel()
                await close_all(members)
            after = group_events(cluster, gid, since)
            kinds = [e.kind for e in after]
            assert "group_unloaded" in kinds and "group_loaded" in kinds
            assert [e.details["generation"] for e in after if e.kind == "group_loaded"] == [generation]
            assert "offset_committed" in kinds[kinds.index("group_loaded") :]
            moved = cluster.events[since:]
            not_coordinator = [
                e for e in moved if e.kind == "request_error" and e.details["error"] == "NOT_COORDINATOR"
            ]
            assert not_coordinator and {e.broker for e in not_coordinator} == {old}
            # The new coordinator loaded the group at its generation and the members went on with
            # it: no rebalance, so no commit failed and nothing was delivered twice.
            assert not [
                e
                for e in until_members_leave(after)
                if e.kind in ("rebalance_started", "generation_started", "member_removed")
            ]
            assert (duplicates, ledger.commit_failures) == (0, [])
            # While the new coordinator "read the offsets topic" it answered COORDINATOR_LOAD_IN_PROGRESS.
            loading = [
                e for e in moved if e.kind == "request_error" and e.details["error"] == "COORDINATOR_LOAD_IN_PROGRESS"
            ]
            assert loading and {e.broker for e in loading} == {new}
            no_broker_errors(cluster)


# -- 7. admin -------------------------------------------------------------------------------------------------


async def test_admin_groups():
    # aiokafka's admin client has list_consumer_groups, describe_consumer_groups and
    # list_consumer_group_offsets but no delete_consumer_groups: deleting goes through
    # kafka-python's KafkaAdminClient (delete_groups in kafka-python 3), run in a worker
    # thread because the cluster is served from this very event loop.
    import kafka.admin as kafka_admin
    from aiokafka.admin import AIOKafkaAdminClient

    with anyio.fail_after(60):
        async with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}) as cluster:
            gid = group_id_off_bootstrap(cluster, "admin")
            ledger = Ledger()
            members = await start_members(cluster, gid, ledger)
            admin = AIOKafkaAdminClient(
                bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000, retry_backoff_ms=50
            )
            await asyncio.wait_for(admin.start(), 15)
            deleter = await asyncio.to_thread(
                lambda: kafka_admin.KafkaAdminClient(
                    bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000, retry_backoff_ms=50
                )
            )
            try:
                await wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
                await produce(cluster, 60)
                await wait_until(
                    lambda: committed_on_broker(cluster, gid) == {p: 10 for p in range(PARTITIONS)},
                    "all 60 records, committed",
                    members,
                )

                assert (gid, "consumer") in await admin.list_consumer_groups()

                [response] = await admin.describe_consumer_groups([gid])
                [described] = response.to_object()["groups"]
                assert (
                    described["error_code"],
                    described["group"],
                    described["state"],
                    described["protocol_type"],
                    described["protocol"],
                ) == (0, gid, "Stable", "consumer", "roundrobin")  # aiokafka's default assignor
                by_member = {m["member_id"]: m for m in described["members"]}
                assert set(by_member) == {m.member_id for m in members}
                for m in members:
                    entry = by_member[m.member_id]
                    assert (entry["client_id"], entry["client_host"]) == (m.label, "/127.0.0.1")
                    assert consumer_protocol.assignment_dict(entry["member_assignment"]) == {TOPIC: m.partitions}
                    assert list(consumer_protocol.decode_subscription(entry["member_metadata"]).topics) == [TOPIC]

                offsets = await admin.list_consumer_group_offsets(gid)
                assert {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC} == {
                    p: 10 for p in range(PARTITIONS)
                }

                assert await asyncio.to_thread(deleter.delete_groups, [gid]) == {gid: "NonEmptyGroupError"}
                assert gid in cluster.state.groups.groups
            finally:
                await close_all(members)
            try:
                assert cluster.state.groups.groups[gid].state.value == "Empty"
                assert (gid, "consumer") in await admin.list_consumer_groups()
                [response] = await admin.describe_consumer_groups([gid])
                [described] = response.to_object()["groups"]
                assert (described["state"], described["members"]) == ("Empty", [])
                assert await asyncio.to_thread(deleter.delete_groups, [gid]) == {gid: "OK"}
                assert gid not in {g for g, _ in await admin.list_consumer_groups()}
                assert await admin.list_consumer_group_offsets(gid) == {}
                [response] = await admin.describe_consumer_groups([gid])
                [described] = response.to_object()["groups"]
                assert described["state"] == "Dead"
                assert await asyncio.to_thread(deleter.delete_groups, [gid]) == {gid: "GroupIdNotFoundError"}
            finally:
                await admin.close()
                await asyncio.to_thread(deleter.close)
            assert any(e.kind == "group_deleted" for e in group_events(cluster, gid))
            no_broker_errors(cluster)

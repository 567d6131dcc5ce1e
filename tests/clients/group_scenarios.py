"""Consumer-group scenarios written once for every Python client (aiokafka, kafka-python).

Each scenario runs a 3-broker FakeCluster with a 6-partition topic and drives it through a
:class:`Client`, a small per-client adapter (``tests/clients/test_aiokafka_groups.py``,
``tests/clients/test_kafka_python_groups.py``): members, producers and an admin client.

Every group id is chosen so that its coordinator is *not* broker 0, the first bootstrap
server: the client has to find the coordinator (FindCoordinator) and talk to it. Every member
runs its own poll loop, as an application does: poll, record what arrived in the
:class:`Ledger`, commit exactly that, repeat. So a record may only be delivered twice if,
when the duplicate arrives, no successful commit had covered it yet; ``Ledger.check``
asserts exactly that.

The scenarios are coroutines on the test's asyncio loop (anyio's pytest plugin); an adapter
whose client blocks runs it in worker threads.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio

from .group_client import (
    MAX_POLL_RECORDS,
    PARTITIONS,
    SESSION_TIMEOUT_MS,
    TOPIC,
    Client,
    Ledger,
    all_committed,
    broker_errors,
    committed_on_broker,
    group_events,
    group_id_off_bootstrap,
    group_of,
    no_broker_errors,
    split_evenly,
    stored,
    three_members,
    until_members_leave,
    wait_until,
)

SCENARIO_S = 60.0  # the most one scenario may take


# -- 1. three consumers split six partitions -------------------------------------------------------


async def three_consumers_split_six_partitions(client: Client) -> None:
    async with client.open_cluster() as cluster:
        async with three_members(client, cluster, "split") as (gid, ledger, members):
            assert [len(m.partitions) for m in members] == [2, 2, 2]
            generation = group_of(cluster, gid).generation_id
            await client.produce(cluster, 600)
            expected = stored(cluster)
            assert len(expected) == 600
            await wait_until(lambda: ledger.seen() >= expected, "all 600 records", members)
            await wait_until(lambda: all_committed(cluster, gid, 100), "the last commits", members)
            # Nothing more arrives, and nothing was delivered twice: no rebalance while consuming.
            polls = [m.polls for m in members]
            await wait_until(
                lambda: all(m.polls >= n + 2 for m, n in zip(members, polls)), "two more polls each", members
            )
            assert ledger.check(expected, max_duplicates=0) == 0
            # Each member read exactly its own two partitions.
            for m in members:
                assert {p for who, p, _ in ledger.deliveries if who == m.label} == set(m.partitions)
            assert group_of(cluster, gid).generation_id == generation
        events = group_events(cluster, gid)
        assert max(e.details["members"] for e in events if e.kind == "generation_started") == 3
        assert len({e.details["member"] for e in events if e.kind == "member_joined"}) == 3
        assert [e for e in events if e.kind == "offset_committed"]
        # The members found the coordinator: no group request went to another broker.
        assert cluster.coordinator(gid) != 0
        assert not broker_errors(cluster, "NOT_COORDINATOR")
        no_broker_errors(cluster)


# -- 2. a member leaves; the survivors continue from the committed offsets ---------------------------


async def member_leaves_survivors_take_over(client: Client) -> None:
    async with client.open_cluster() as cluster:
        async with three_members(client, cluster, "leave") as (gid, ledger, members):
            await client.produce(cluster, 300)
            await wait_until(lambda: ledger.count() >= 120, "120 deliveries", members)
            leaver, survivors = members[1], [members[0], members[2]]
            leaver_id, leaver_parts = leaver.member_id, leaver.partitions
            since = len(cluster.events)
            await leaver.close()  # it committed what it read; closing sends LeaveGroup
            await client.produce(cluster, 300, start=300)
            expected = stored(cluster)
            await wait_until(lambda: split_evenly(survivors, cluster, gid), "a 3/3 split", survivors)
            assert set(leaver_parts) <= set(survivors[0].partitions) | set(survivors[1].partitions)
            await wait_until(lambda: ledger.seen() >= expected, "all 600 records", survivors)
            await wait_until(lambda: all_committed(cluster, gid, 100), "the last commits", survivors)
            # Duplicates only where a commit had not yet covered the record: at most one poll's
            # worth per partition that changed hands.
            duplicates = ledger.check(expected, max_duplicates=PARTITIONS * MAX_POLL_RECORDS)
        after = group_events(cluster, gid, since)
        left = [e for e in after if e.kind in ("member_removed", "member_left") and e.details["member"] == leaver_id]
        assert [e.details["reason"] for e in left if e.kind == "member_removed"] == ["left the group"]
        assert [e.details["instance"] for e in left if e.kind == "member_left"] == [None]
        assert any(e.kind == "rebalance_started" for e in after)
        assert [e.details["members"] for e in after if e.kind == "generation_started"][0] == 2
        print(f"duplicates after the leave: {duplicates}; commit failures: {ledger.commit_failures}")
        no_broker_errors(cluster)


# -- 3. a new member resumes exactly after the last commit -------------------------------------------


async def new_member_resumes_after_last_commit(client: Client) -> None:
    async with client.open_cluster() as cluster:
        gid = group_id_off_bootstrap(cluster, client, "resume")
        await client.produce(cluster, 120)  # 20 per partition
        ledger = Ledger()
        first = client.member(cluster, gid, "first", ledger)
        chosen = {p: 3 + 2 * p for p in range(PARTITIONS)}
        try:
            await first.start()
            await wait_until(
                lambda: ledger.count() >= 120 and all_committed(cluster, gid, 20), "120 deliveries, committed", [first]
            )
            # The last commit sets a chosen position on every partition (behind what was read).
            await first.commit({p: (o, f"m{p}") for p, o in chosen.items()})
            assert committed_on_broker(cluster, gid) == chosen
        finally:
            await first.close()
        assert group_of(cluster, gid).state.value == "Empty"

        resumed = Ledger()
        second = client.member(cluster, gid, "second", resumed)
        try:
            await second.start(loop=False)
            assert {p: await second.committed(p) for p in range(PARTITIONS)} == chosen
            second.run()
            await wait_until(
                lambda: resumed.count() >= 120 - sum(chosen.values()) and all_committed(cluster, gid, 20),
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


async def static_member_restart_keeps_partitions_without_rebalance(client: Client) -> None:
    # group_instance_id (KIP-345, JoinGroup v5+): a static member sends no LeaveGroup when it stops.
    async with client.open_cluster() as cluster:
        async with three_members(client, cluster, "static", group_instance_id=lambda i: f"instance-{i}") as (
            gid,
            ledger,
            members,
        ):
            await client.produce(cluster, 300)
            await wait_until(lambda: ledger.count() >= 100, "100 deliveries", members)
            group = group_of(cluster, gid)
            generation = group.generation_id
            # Restart a follower (not the leader) well within the session timeout.
            index = next(i for i, m in enumerate(members) if m.member_id != group.leader_id)
            old = members[index]
            old_id, old_parts = old.member_id, old.partitions
            since = len(cluster.events)
            restart_start = time.monotonic()
            await old.close()
            resumed_from = ledger.count()
            restarted = client.member(cluster, gid, f"c{index}", ledger, group_instance_id=f"instance-{index}")
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
            await client.produce(cluster, 300, start=300)
            expected = stored(cluster)
            await wait_until(lambda: ledger.seen() >= expected, "all 600 records", members)
            await wait_until(lambda: all_committed(cluster, gid, 100), "the last commits", members)
            assert {p for who, p, _ in ledger.deliveries[resumed_from:] if who == restarted.label} == set(old_parts)
            ledger.check(expected, max_duplicates=2 * MAX_POLL_RECORDS)
            group = group_of(cluster, gid)
            assert (group.generation_id, group.state.value) == (generation, "Stable")
            assert group.static_members == {f"instance-{i}": m.member_id for i, m in enumerate(members)}
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


async def stalled_member_is_removed_and_others_take_over(client: Client) -> None:
    max_poll_ms = 3000
    async with client.open_cluster() as cluster:
        async with three_members(client, cluster, "stall", **client.stall_config(max_poll_ms)) as (
            gid,
            ledger,
            members,
        ):
            await client.produce(cluster, 300)
            await wait_until(lambda: ledger.count() >= 60, "60 deliveries", members)
            stalled, active = members[2], members[:2]
            stalled_id, stalled_parts = stalled.member_id, stalled.partitions
            generation = group_of(cluster, gid).generation_id
            since = len(cluster.events)
            # The stalled member stops polling (its heartbeats go on); the others keep going and
            # take its partitions once it is out of the group.
            stalled.pause()
            took = await wait_until(lambda: split_evenly(active, cluster, gid), "the survivors' 3/3 split", active)
            assert took >= max_poll_ms / 1000 * 0.8
            assert set(stalled_parts) <= set(active[0].partitions) | set(active[1].partitions)
            # They read on from its committed offsets, including what arrives now.
            await client.produce(cluster, 300, start=300)
            expected = stored(cluster)
            await wait_until(lambda: ledger.seen() >= expected, "all 600 records", active)
            await wait_until(lambda: all_committed(cluster, gid, 100), "the last commits", active)
            ledger.check(expected, max_duplicates=2 * MAX_POLL_RECORDS)
            group = group_of(cluster, gid)
            assert stalled_id not in group.members and group.generation_id > generation
            assert set(group.members) == {m.member_id for m in active}
        after = group_events(cluster, gid, since)
        removed = [e for e in after if e.kind == "member_removed" and e.details["member"] == stalled_id]
        # The client, like the Java one, leaves the group itself once max_poll_interval_ms passes.
        assert [e.details["reason"] for e in removed] == ["left the group"]
        started = [e for e in after if e.kind == "generation_started"]
        assert started and started[0].details["members"] == 2
        assert stalled_id not in {e.details["member"] for e in after if e.kind == "assignment_delivered"}
        no_broker_errors(cluster)


# -- 6. the coordinator moves mid-stream -----------------------------------------------------------------


async def coordinator_moves_mid_stream(client: Client) -> None:
    async with client.open_cluster(coordinator_load_time_ms=300) as cluster:
        async with three_members(client, cluster, "move") as (gid, ledger, members):
            # Records keep arriving (30 every 50 ms) before, during and after the move.
            producer = client.produce_paced(cluster, 600)
            try:
                await wait_until(lambda: ledger.count() >= 150, "150 deliveries", members)
                old = cluster.coordinator(gid)
                generation = group_of(cluster, gid).generation_id
                since = len(cluster.events)
                new = cluster.move_coordinator(gid)
                assert new not in (old, -1) and cluster.coordinator(gid) == new
                assert producer.running, "the move should happen mid-stream"
                await producer.finish()
                expected = stored(cluster)
                assert len(expected) == 600
                await wait_until(lambda: ledger.seen() >= expected, "all 600 records", members)
                # The commits after the move reached the new coordinator.
                await wait_until(lambda: all_committed(cluster, gid, 100), "the last commits", members)
                duplicates = ledger.check(expected, max_duplicates=PARTITIONS * MAX_POLL_RECORDS)
                assert group_of(cluster, gid).state.value == "Stable"
            finally:
                if producer.running:
                    producer.cancel()
        after = group_events(cluster, gid, since)
        kinds = [e.kind for e in after]
        assert "group_unloaded" in kinds and "group_loaded" in kinds
        assert [e.details["generation"] for e in after if e.kind == "group_loaded"] == [generation]
        assert "offset_committed" in kinds[kinds.index("group_loaded") :]
        not_coordinator = broker_errors(cluster, "NOT_COORDINATOR", since)
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
        loading = broker_errors(cluster, "COORDINATOR_LOAD_IN_PROGRESS", since)
        assert loading and {e.broker for e in loading} == {new}
        no_broker_errors(cluster)


# -- 7. admin -------------------------------------------------------------------------------------------------


async def admin_groups(client: Client) -> None:
    async with client.open_cluster() as cluster:
        admin = await client.admin(cluster)
        try:
            async with three_members(client, cluster, "admin") as (gid, ledger, members):
                await client.produce(cluster, 60)
                await wait_until(lambda: all_committed(cluster, gid, 10), "all 60 records, committed", members)

                listed = await admin.list_groups()
                assert listed[gid][0] == "consumer" and listed[gid][1] in (None, "Stable")
                if admin.filters_by_state:
                    assert gid in await admin.list_groups(states=["Stable"])
                    assert gid not in await admin.list_groups(states=["Empty"])

                described = await admin.describe(gid)
                assert (
                    described.error,
                    described.group,
                    described.state,
                    described.protocol_type,
                    described.protocol,
                ) == (0, gid, "Stable", "consumer", client.assignor)
                assert set(described.members) == {m.member_id for m in members}
                for m in members:
                    entry = described.members[m.member_id]
                    assert (entry["client_id"], entry["client_host"]) == (m.label, "/127.0.0.1")
                    assert entry["assignment"] == {TOPIC: m.partitions}
                    assert entry["topics"] == [TOPIC]

                assert await admin.offsets(gid) == {p: 10 for p in range(PARTITIONS)}
                assert await admin.delete(gid) == "NonEmptyGroupError"
                assert gid in cluster.state.groups.classic.groups
            assert group_of(cluster, gid).state.value == "Empty"
            listed = await admin.list_groups()
            assert listed[gid][0] == "consumer" and listed[gid][1] in (None, "Empty")
            described = await admin.describe(gid)
            assert (described.state, described.members) == ("Empty", {})
            assert await admin.delete(gid) == "OK"
            assert gid not in await admin.list_groups()
            assert await admin.offsets(gid) == {}
            gone = await admin.describe(gid)
            assert (gone.state, gone.error) == ("Dead", admin.missing_group_error)
            assert await admin.delete(gid) == "GroupIdNotFoundError"
        finally:
            await admin.close()
        assert any(e.kind == "group_deleted" for e in group_events(cluster, gid))
        no_broker_errors(cluster)


#: Every scenario, for ``pytest.mark.parametrize`` in each client's test file.
SCENARIOS: list[Callable[[Client], Awaitable[None]]] = [
    three_consumers_split_six_partitions,
    member_leaves_survivors_take_over,
    new_member_resumes_after_last_commit,
    static_member_restart_keeps_partitions_without_rebalance,
    stalled_member_is_removed_and_others_take_over,
    coordinator_moves_mid_stream,
    admin_groups,
]


async def run_scenario(scenario: Callable[[Client], Awaitable[None]], client: Client) -> None:
    """One scenario with ``client``, bounded by :data:`SCENARIO_S`."""
    with anyio.fail_after(SCENARIO_S):
        await scenario(client)

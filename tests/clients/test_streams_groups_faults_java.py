"""Issue 39's remaining "Show" scenarios, each with a real Kafka Streams 4.4.0 application on a
streams group (KIP-1071): exactly-once v2 through a scale-out, a leave and a join; a standby
promoted when its active's instance stops; an instance stalled past its session timeout; a
coordinator move; a source topic that does not exist yet.

The word count, the JVM driver (``fakebroker.StreamsGroupScenarios``) and the helpers are
test_streams_groups_java.py's (4 input partitions: 8 active tasks, 0_0..0_3 stateless and
1_0..1_3 stateful, and one standby of each stateful task). Each test has its own cluster (three
brokers, streams groups on, ``group.streams.num.standby.replicas=1``) and its own JVM. The
streams heartbeat interval is 1 s rather than Kafka's 5 s (``group.streams.min.heartbeat.interval.ms``
lowered to allow it), so that each reconciliation step takes about a second. Records go in
between the steps (often while the group is still moving), and the counts are read back with
``read_committed``: every word's latest count must be the true one, and no count may ever have
gone past it (nothing processed twice).
"""

from __future__ import annotations

import collections
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")

from fakebroker.cluster import FakeCluster  # noqa: E402
from fakebroker.cluster import conditions as cond  # noqa: E402
from fakebroker.core.groups.streams.model import GroupState  # noqa: E402
from fakebroker.core.groups.streams.topology import Status  # noqa: E402

from .test_java_client import java_client_jar  # noqa: E402,F401 (fixture)
from .test_streams_groups_java import (  # noqa: E402
    ACTIVE,
    CONFIG,
    PARTITIONS,
    STANDBY,
    StreamsApp,
    produce,
    read_counts,
    sentences,
    wait_tasks,
)

pytestmark = [pytest.mark.clients, pytest.mark.java]

FAST = {
    **CONFIG,
    "group.streams.heartbeat.interval.ms": "1000",
    "group.streams.min.heartbeat.interval.ms": "1000",
}
PORTS = {"a": 7101, "b": 7102, "c": 7103, "d": 7104}
EOS = {"guarantee": "exactly_once_v2"}


class WordCount:
    """One application's topics, its JVM and the counts it must come to."""

    def __init__(self, cluster: FakeCluster, app: StreamsApp, app_id: str, tmp_path: Path):
        self.cluster, self.app, self.app_id, self.tmp_path = cluster, app, app_id, tmp_path
        self.source, self.sink = f"{app_id}-lines", f"{app_id}-counts-out"
        self.repartition, self.changelog = f"{app_id}-words-repartition", f"{app_id}-counts-changelog"
        self.expected: collections.Counter[str] = collections.Counter()
        self.rounds = 0

    def start(self, name: str, *, endpoint: bool = True, **options: str) -> None:
        if endpoint:
            options["port"] = str(PORTS[name])
        self.app.call(
            "start",
            name=name,
            app=self.app_id,
            input=self.source,
            output=self.sink,
            dir=self.tmp_path / name,
            **options,
        )

    def produce(self, lines: int = 60) -> None:
        """The next round of sentences into the input topic (the counts expected follow)."""
        self.rounds += 1
        batch = sentences(self.rounds, lines)
        produce(self.cluster, self.source, batch)
        self.expected.update(w for line in batch for w in line.split())

    def counted(self, timeout: float = 60) -> None:
        """Every count read back exact, none ever past the true one (``read_counts``)."""
        read_counts(self.cluster, self.sink, dict(self.expected), self.app, timeout)

    def committed_to_end(self, timeout: float = 30) -> dict[tuple[str, int], int]:
        """The group's committed offsets once they reach the input's end offsets."""
        ends = {(self.source, p): self.cluster.offsets(self.source, p)[1] for p in range(PARTITIONS)}

        def done() -> bool:
            committed = self.cluster.committed(self.app_id)
            return all(committed.get(tp, -1) == end for tp, end in ends.items())

        eventually(done, f"committed offsets {ends}", timeout, self.app)
        return self.cluster.committed(self.app_id)


def eventually(check: Callable[[], Any], what: str, timeout: float, app: StreamsApp) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not reached in {timeout} s{app.diagnostics()}")
        time.sleep(0.25)


def split_among(instances: dict[str, Any], names: list[str]) -> bool:
    """``names`` RUNNING and sharing the active tasks (none twice, none missing, each holding
    some), the standbys all placed among them when there are two or more, none beside its
    active; instances not named are not looked at."""
    if not set(names) <= set(instances) or any(instances[n]["state"] != "RUNNING" for n in names):
        return False
    actives = [set(instances[n]["active"]) for n in names]
    standbys = [set(instances[n]["standby"]) for n in names]
    if sum(map(len, actives)) != len(ACTIVE) or set().union(*actives) != ACTIVE or not all(actives):
        return False
    if any(a & s for a, s in zip(actives, standbys)):
        return False
    if len(names) == 1:
        return not standbys[0]
    return sum(map(len, standbys)) == len(STANDBY) and set().union(*standbys) == STANDBY


def split_between(instances: dict[str, Any], names: list[str]) -> bool:
    """``split_among`` with no other instance in the JVM."""
    return set(instances) == set(names) and split_among(instances, names)


def group_view(cluster: FakeCluster, app_id: str) -> dict[str, Any]:
    """The streams group as the coordinator holds it: state, epochs, and per member, by the
    instance its client id names (``<app>-<instance>-StreamThread-<n>-consumer``), its member
    id, client id, endpoint, process, epoch and assigned tasks as ``"<sub>_<partition>"``."""

    def read() -> dict[str, Any]:
        group = cluster.state.groups.streams.groups[app_id]
        members = {}
        for m in group.members.values():
            instance = m.client_id.removeprefix(f"{app_id}-").split("-StreamThread-")[0]
            while instance in members:  # a second member of one instance (a thread replaced, say)
                instance += "+"
            members[instance] = {
                "id": m.member_id,
                "client": m.client_id,
                "endpoint": m.user_endpoint,
                "process": m.process_id,
                "epoch": m.member_epoch,
                "active": {f"{s}_{p}" for s, p in m.assigned.active},
                "standby": {f"{s}_{p}" for s, p in m.assigned.standby},
                "warmup": {f"{s}_{p}" for s, p in m.assigned.warmup},
            }
        return {
            "state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "members": members,
        }

    return cluster.call(read)


def group_settled(cluster: FakeCluster, app_id: str, instances: dict[str, Any], names: list[str]) -> dict | None:
    """The coordinator's group once Stable with exactly ``names``' members, each at the
    assignment epoch holding what its instance says it holds; else None."""
    group = group_view(cluster, app_id)
    if group["state"] != GroupState.STABLE or group["group_epoch"] != group["assignment_epoch"]:
        return None
    if set(group["members"]) != set(names):
        return None
    for n in names:
        member = group["members"][n]
        if member["epoch"] != group["assignment_epoch"] or member["warmup"]:
            return None
        if (member["active"], member["standby"]) != (set(instances[n]["active"]), set(instances[n]["standby"])):
            return None
    return group


def settle(wc: WordCount, names: list[str], what: str, *, among: bool = False, timeout: float = 45) -> tuple:
    """Both sides agree: the instances ``names`` share the tasks (``split_between``, or
    ``split_among`` when other instances are still in the JVM) and the coordinator's group is
    Stable with those members holding exactly that. Returns (instances, group)."""
    done = split_among if among else split_between
    deadline = time.monotonic() + timeout
    instances = wait_tasks(wc.app, lambda i: done(i, names), what, timeout)
    while True:
        group = group_settled(wc.cluster, wc.app_id, instances, names)
        if group is not None:
            return instances, group
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: the group is {group_view(wc.cluster, wc.app_id)}, the instances {instances}")
        time.sleep(0.25)
        instances = wait_tasks(wc.app, lambda i: done(i, names), what, max(1.0, deadline - time.monotonic()))


def stateful(tasks: list[str] | set[str]) -> set[str]:
    return set(tasks) & STANDBY


def test_exactly_once_v2_counts_exactly_through_a_scale_out_a_leave_and_a_join(
    java_client_jar,  # noqa: F811
    tmp_path: Path,
):
    """processing.guarantee=exactly_once_v2: two instances, then three, then one leaves and
    another joins, each change made while a round of records is being processed."""
    app_id = f"eos-{uuid.uuid4().hex[:6]}"
    with FakeCluster(brokers=3, config=FAST).run_in_thread() as cluster:
        with StreamsApp(java_client_jar, cluster) as app:
            wc = WordCount(cluster, app, app_id, tmp_path)
            cluster.create_topic(wc.source, PARTITIONS)
            cluster.create_topic(wc.sink, PARTITIONS)
            wc.start("a", **EOS)
            wc.start("b", **EOS)
            wc.produce()  # round 1 goes in while a and b join
            settle(wc, ["a", "b"], "a and b sharing the tasks")
            wc.counted()

            wc.produce()  # round 2 ...
            wc.start("c", **EOS)  # ... while c joins: a and b revoke tasks for it mid-stream
            instances, _ = settle(wc, ["a", "b", "c"], "a, b and c sharing the tasks")
            assert sorted(len(instances[n]["active"]) for n in "abc") == [2, 3, 3], instances
            wc.counted()

            wc.produce()  # round 3 ...
            assert app.call("close", name="b", timeout=60)["closed"] is True  # ... while b leaves
            settle(wc, ["a", "c"], "a and c sharing b's tasks")
            wc.counted()

            wc.produce()  # round 4 ...
            wc.start("d", **EOS)  # ... while d, a new instance with an empty state dir, joins
            instances, group = settle(wc, ["a", "c", "d"], "a, c and d sharing the tasks")
            assert sorted(len(instances[n]["active"]) for n in "acd") == [2, 3, 3], instances
            wc.counted()
            assert wc.committed_to_end()

            # Exactly-once v2: one transactional producer per stream thread, <app>-<process>-<thread>,
            # four processes so four of them, and every transaction of theirs ended committed or aborted.
            txns = [t for t in cluster.transactions() if t.startswith(app_id)]
            processes = {m["process"] for m in group["members"].values()}
            assert len(txns) == 4, txns
            assert {t.removeprefix(f"{app_id}-").rsplit("-", 1)[0] for t in txns} >= processes, (txns, processes)
            committed = [
                e for e in cluster.events if e.kind == "txn_committed" and e.details["transactional_id"] in txns
            ]
            assert committed, "no transaction committed"
            views = {t: cluster.transaction(t) for t in txns}
            assert all(v is not None and v.state != "Ongoing" for v in views.values()), views
            assert not app.of_type("uncaught"), app.of_type("uncaught")


def test_stopping_an_instance_hands_its_stateful_tasks_to_the_processes_holding_their_standbys(
    java_client_jar,  # noqa: F811
    tmp_path: Path,
):
    """One standby replica, three instances: when one stops, each stateful task it ran goes to
    the process that held its standby (Kafka's sticky assignor: its second pass, which gives a
    task to its standby while that one is under the quota, here ceil(8 / 2) = 4), the others
    keep their own tasks, and the counts go on from the state the standbys kept."""
    app_id = f"standby-{uuid.uuid4().hex[:6]}"
    with FakeCluster(brokers=3, config=FAST).run_in_thread() as cluster:
        with StreamsApp(java_client_jar, cluster) as app:
            wc = WordCount(cluster, app, app_id, tmp_path)
            cluster.create_topic(wc.source, PARTITIONS)
            cluster.create_topic(wc.sink, PARTITIONS)
            for name in "abc":
                wc.start(name)
            before, group = settle(wc, ["a", "b", "c"], "a, b and c sharing the tasks")
            assert sorted(len(before[n]["active"]) for n in "abc") == [2, 3, 3], before
            wc.produce()
            wc.counted()

            # The instance to stop: one running stateful tasks whose standbys' processes can all
            # take them within the quota (the placement follows the random process ids).
            def holder(task: str, victim: str) -> str:
                return next(n for n in "abc" if n != victim and task in before[n]["standby"])

            def fits(victim: str) -> bool:
                moving = stateful(before[victim]["active"])
                gets = collections.Counter(holder(t, victim) for t in moving)
                return bool(moving) and all(len(before[n]["active"]) + k <= 4 for n, k in gets.items())

            candidates = [n for n in "abc" if fits(n)]
            assert candidates, before
            victim = max(candidates, key=lambda n: len(stateful(before[n]["active"])))
            rest = [n for n in "abc" if n != victim]
            holders = {t: holder(t, victim) for t in stateful(before[victim]["active"])}
            assert app.call("close", name=victim, timeout=60)["closed"] is True
            after, group = settle(wc, rest, f"{' and '.join(rest)} sharing {victim}'s tasks")
            for task, standby in holders.items():  # the standby became the active
                assert task in after[standby]["active"], (victim, task, standby, before, after)
            for name in rest:  # nothing taken from the others
                assert set(before[name]["active"]) <= set(after[name]["active"]), (before, after)
            assert sorted(len(after[n]["active"]) for n in rest) == [4, 4], after

            wc.produce()  # counted on from round 1's counts by the promoted tasks
            wc.counted()
            assert not app.of_type("uncaught"), app.of_type("uncaught")


def test_an_instance_stalled_past_its_session_timeout_is_removed_and_rejoins_when_it_comes_back(
    java_client_jar,  # noqa: F811
    tmp_path: Path,
):
    """c's connections are cut (a stall: it can neither heartbeat, fetch, produce nor commit).
    With ``streams.session.timeout.ms=6000`` set on the group (IncrementalAlterConfigs on its
    GROUP resource), the coordinator removes it 6 s after its last heartbeat (a MemberExpired
    event), a and b take its tasks and count the records that arrive meanwhile. Healed, c learns
    from the coordinator that it is no member any more and rejoins. Exactly-once v2, so that
    whatever c does with its stale tasks before it learns is never seen by a read_committed
    reader.

    c runs with ``on_error=replace_thread`` because of a Kafka Streams 4.4 client race: when c's
    producer learns of the fencing first (its TxnOffsetCommit refused), the thread unsubscribes
    and resubscribes; the leave heartbeat is refused at once (UNKNOWN_MEMBER_ID, as Kafka answers
    a member it removed), and the leave's late revocation then clears the new subscription, so
    the thread's next poll throws IllegalStateException ("Consumer is not subscribed to any
    topics or assigned any partitions"). That exception, and only it, is accepted: a new
    thread then joins in c's place. In another timing of the same race a heartbeat goes out with
    the member's leave epoch (-1) and the rejoin's topology, which Kafka refuses as INVALID_REQUEST
    ("Topology can only be provided when (re-)joining."): accepted with the race, and only then."""
    app_id = f"stall-{uuid.uuid4().hex[:6]}"
    config = {**FAST, "group.streams.min.session.timeout.ms": "3000"}  # Kafka's is 45000
    with FakeCluster(brokers=3, config=config).run_in_thread() as cluster:
        configs = cluster.set_group_configs(app_id, streams_session_timeout_ms=6000)  # before the group exists
        assert configs["streams.session.timeout.ms"] == "6000", configs
        with StreamsApp(java_client_jar, cluster) as app:
            wc = WordCount(cluster, app, app_id, tmp_path)
            cluster.create_topic(wc.source, PARTITIONS)
            cluster.create_topic(wc.sink, PARTITIONS)
            wc.start("a", **EOS)
            wc.start("b", **EOS)
            wc.start("c", **EOS, on_error="replace_thread")
            before, group = settle(wc, ["a", "b", "c"], "a, b and c sharing the tasks")
            wc.produce()
            wc.counted()  # (exactly-once: the offsets were committed with the counts)
            stalled = group["members"]["c"]
            assert stalled["client"] == f"{app_id}-c-StreamThread-1-consumer", stalled

            mark = cluster.event_count
            cut_at = time.monotonic()
            cluster.cut(f"{app_id}-c*")  # every client of c: its consumers, producer and admin
            expired = cluster.wait_for_sync(cond.member_expired(app_id, stalled["client"], since=mark), timeout=20)
            took = time.monotonic() - cut_at
            assert expired.details["member"] == stalled["id"], expired
            assert expired.details["session_timeout_ms"] == 6000, expired
            assert 5 <= took < 10, took  # 6 s after c's last heartbeat (at most one interval before the cut)

            # a and b take c's tasks (c, cut off, still believes it holds its own).
            during, group = settle(wc, ["a", "b"], "a and b sharing c's tasks", among=True)
            assert set(before["c"]["active"]) <= set(during["c"]["active"]), (before, during)  # c's stale view
            wc.produce()  # round 2 arrives while c is stalled: a and b count it
            wc.counted()

            healed = cluster.event_count
            cluster.heal(f"{app_id}-c*")
            after, group = settle(wc, ["a", "b", "c"], "c back, a, b and c sharing the tasks")
            # c learnt from the coordinator that it was no member any more: UNKNOWN_MEMBER_ID to
            # its heartbeat, or first to its producer's TxnOffsetCommit if it processed records of
            # its old tasks (that transaction is aborted: nothing of it is ever read).
            refused = [
                (e.details["api"], e.details["error"])
                for e in cluster.events_since(healed)
                if e.kind == "request_error" and (e.client_id or "").startswith(f"{app_id}-c-")
            ]
            raced = app.of_type("uncaught", instance="c")
            allowed = {("StreamsGroupHeartbeat", "UNKNOWN_MEMBER_ID"), ("TxnOffsetCommit", "UNKNOWN_MEMBER_ID")}
            if raced:  # the race's other face: epoch -1 sent with the rejoin's topology
                allowed.add(("StreamsGroupHeartbeat", "INVALID_REQUEST"))
            assert refused and set(refused) <= allowed, f"{refused}{app.diagnostics()}"
            if ("StreamsGroupHeartbeat", "INVALID_REQUEST") in refused:  # Kafka 4.4's own check, word for word
                told = "StreamsGroupHeartbeatRequest failed due to INVALID_REQUEST: "
                answers = {line.split(told, 1)[1] for line in app.stderr if told in line}
                assert answers == {"Topology can only be provided when (re-)joining."}, app.diagnostics()
            for note in raced:  # the client race above, nothing else
                assert (note["exception"], note["cause"]) == (
                    "org.apache.kafka.streams.errors.StreamsException",
                    "java.lang.IllegalStateException",
                ), note
                assert "Consumer is not subscribed to any topics or assigned any partitions" in note["message"], note
            if not raced:  # the same consumer, rejoined under its member id
                assert group["members"]["c"]["id"] == stalled["id"], (stalled, group)
            else:  # a new thread, a new consumer
                assert group["members"]["c"]["client"] == f"{app_id}-c-StreamThread-{1 + len(raced)}-consumer"
            wc.produce()
            wc.counted()
            assert not app.of_type("uncaught", instance="a") and not app.of_type("uncaught", instance="b")


def test_a_coordinator_move_mid_stream_is_survived_without_a_rebalance(
    java_client_jar,  # noqa: F811
    tmp_path: Path,
):
    """The group's coordinator moves to another broker while records are being processed
    (at-least-once, so a lost task would show as a count past the true one): the members find
    the new coordinator (NOT_COORDINATOR from the old one), it loads the group as it was, and
    the group ends Stable at the same epochs with every task assigned."""
    app_id = f"move-{uuid.uuid4().hex[:6]}"
    with FakeCluster(brokers=3, config=FAST).run_in_thread() as cluster:
        with StreamsApp(java_client_jar, cluster) as app:
            wc = WordCount(cluster, app, app_id, tmp_path)
            cluster.create_topic(wc.source, PARTITIONS)
            cluster.create_topic(wc.sink, PARTITIONS)
            wc.start("a")
            wc.start("b")
            before, group_before = settle(wc, ["a", "b"], "a and b sharing the tasks")
            wc.produce()
            wc.counted()

            old = cluster.coordinator(app_id)
            mark = cluster.event_count
            wc.produce()  # round 2 ...
            new = cluster.move_coordinator(app_id)  # ... while the coordinator moves
            assert new != old and cluster.coordinator(app_id) == new
            wc.produce()
            wc.counted()
            after, group_after = settle(wc, ["a", "b"], "a and b sharing the tasks after the move")

            for name in "ab":  # the same members at the same epochs: no rebalance
                assert group_after["members"][name]["id"] == group_before["members"][name]["id"]
            assert (group_after["group_epoch"], group_after["assignment_epoch"]) == (
                group_before["group_epoch"],
                group_before["assignment_epoch"],
            ), (group_before, group_after)
            assert {n: after[n]["active"] for n in "ab"} == {n: before[n]["active"] for n in "ab"}
            events = cluster.events_since(mark)
            assert any(e.kind == "group_loaded" and e.group == app_id and e.broker == new for e in events)
            # The members learnt of the move from the old coordinator's NOT_COORDINATOR (to a
            # commit or a heartbeat, whichever came first); no other error.
            errors = [e for e in events if e.kind == "request_error" and (e.client_id or "").startswith(app_id)]
            assert errors, "no NOT_COORDINATOR"
            assert {e.details["error"] for e in errors} <= {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"}, errors
            assert {e.details["api"] for e in errors} <= {"OffsetCommit", "OffsetFetch", "StreamsGroupHeartbeat"}
            assert any(e.details["error"] == "NOT_COORDINATOR" and e.broker == old for e in errors), errors
            assert not [e for e in events if e.kind in ("member_left", "member_expired") and e.group == app_id]
            assert not app.of_type("uncaught"), app.of_type("uncaught")


def test_an_application_started_before_its_source_topic_exists_waits_for_it(
    java_client_jar,  # noqa: F811
    tmp_path: Path,
):
    """The input topic does not exist yet: the group is NotReady with MISSING_SOURCE_TOPICS
    ("Source topics <t> are missing."), the coordinator creates no internal topic, and the
    Streams client, after 2 heartbeat intervals of that status, fails its thread with a
    MissingSourceTopicException (the threads are replaced here, ``on_error=replace_thread``).

    Instance b has an ``application.server``: Kafka 4.4 cannot build the endpoint data a joiner
    gets while the source topics are missing and answers its join UNKNOWN_SERVER_ERROR
    (STREAMS-GROUPS.md §9.11), fatal to the thread; a, without one, joins. Once the topic is
    created both run and count exactly."""
    app_id = f"nosource-{uuid.uuid4().hex[:6]}"
    with FakeCluster(brokers=3, config=FAST).run_in_thread() as cluster:
        with StreamsApp(java_client_jar, cluster) as app:
            wc = WordCount(cluster, app, app_id, tmp_path)
            cluster.create_topic(wc.sink, PARTITIONS)
            wc.start("a", endpoint=False, on_error="replace_thread")
            wc.start("b", on_error="replace_thread")

            def missing() -> Any:
                def read() -> Any:
                    group = cluster.state.groups.streams.groups.get(app_id)
                    if group is None or group.configured is None:
                        return None
                    return group.state, group.configured.status

                return cluster.call(read)

            state = eventually(missing, "the group with its topology", 30, app)
            assert state == (
                GroupState.NOT_READY,
                (Status.MISSING_SOURCE_TOPICS, f"Source topics {wc.source} are missing."),
            ), state
            described = app.call("describe", app=app_id)
            assert described["state"] == "NotReady", described
            assert {t for t in cluster.topics() if t.startswith(app_id)} == {wc.sink}  # no internal topic yet

            # a's thread gives up after 2 heartbeat intervals (2 s) of the status ...
            def failed(name: str) -> list[dict]:
                return app.of_type("uncaught", instance=name)

            a_failed = eventually(lambda: failed("a"), "a MissingSourceTopicException", 30, app)
            assert a_failed[0]["exception"] == "org.apache.kafka.streams.errors.MissingSourceTopicException", a_failed
            assert f"Missing source topics: Source topics {wc.source} are missing." in a_failed[0]["message"]
            # ... b's at once: its joins are refused, so it never is a member
            b_failed = eventually(lambda: failed("b"), "b's thread failing", 30, app)
            refused = [
                e.details["error"]
                for e in cluster.events
                if e.kind == "request_error"
                and e.details["api"] == "StreamsGroupHeartbeat"
                and (e.client_id or "").startswith(f"{app_id}-b-")
            ]
            assert refused and set(refused) == {"UNKNOWN_SERVER_ERROR"}, refused
            assert (b_failed[0]["exception"], b_failed[0]["cause"]) == (
                "org.apache.kafka.streams.errors.StreamsException",
                "org.apache.kafka.common.errors.UnknownServerException",
            ), b_failed
            assert set(group_view(cluster, app_id)["members"]) <= {"a", "a+"}

            cluster.create_topic(wc.source, PARTITIONS)
            instances, group = settle(wc, ["a", "b"], "a and b sharing the tasks")
            assert group["members"]["a"]["endpoint"] is None
            assert group["members"]["b"]["endpoint"] == ("localhost", PORTS["b"])
            topics = cluster.topics()
            assert (topics[wc.repartition], topics[wc.changelog]) == (PARTITIONS, PARTITIONS), topics
            wc.produce()
            wc.counted()

"""kafka-python consumer groups (subscribe + group_id) against a 3-broker FakeCluster.

Every group id is chosen so that its coordinator is *not* broker 0, the first bootstrap
server: the client has to find the coordinator (FindCoordinator) and talk to it.

Every member runs its own poll loop in its own thread, as an application does (kafka-python 3
also runs the network and heartbeats on an IO thread per consumer; see ``Member`` for why
round-robin polling from one thread does not work with kafka-python 3.0.12). The commit
policy everywhere is: after every poll, synchronously commit exactly the records that poll
returned. So a record may only be delivered twice if, when the duplicate arrives, no
successful commit had covered it yet; ``Ledger.check`` asserts exactly that.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka import errors as kafka_errors  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402

from fakebroker.cluster import FakeCluster  # noqa: E402

pytestmark = pytest.mark.clients

TOPIC = "orders"
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_INTERVAL_MS = 500
MAX_POLL_INTERVAL_MS = 10_000  # kafka-python sends it as the rebalance timeout
MAX_POLL_RECORDS = 20
POLL_MS = 200
DEADLINE_S = 20.0
COMMON = {
    "request_timeout_ms": 10_000,
    "retry_backoff_ms": 50,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 500,
    "metadata_max_age_ms": 5_000,
}
# What a commit may fail with when a rebalance overtakes it (kafka-python turns the broker's
# REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID into CommitFailedError).
COMMIT_REBALANCE_ERRORS = (kafka_errors.CommitFailedError, kafka_errors.RebalanceInProgressError)


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}).run_in_thread() as c:
        yield c


def group_id_off_bootstrap(cluster, tag: str) -> str:
    """A group id whose coordinator is not broker 0 (the first bootstrap server)."""
    assert cluster.bootstrap_servers.split(",")[0].endswith(f":{cluster.servers[0].port}")
    for i in range(200):
        gid = f"kp-{tag}-{i}"
        if cluster.coordinator(gid) not in (0, -1):
            return gid
    raise AssertionError("no group id maps to a coordinator other than broker 0")


def produce(cluster, n: int, start: int = 0) -> None:
    """Records ``start..start+n-1``, record i into partition i % 6, acknowledged by all."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2, **COMMON)
    try:
        futures = [
            producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS)
            for i in range(start, start + n)
        ]
        producer.flush(timeout=10)
        for f in futures:
            f.get(timeout=10)
    finally:
        producer.close(timeout=5)


class PacedProducer(threading.Thread):
    """Records ``0..n-1`` (record i into partition i % 6) in bursts, while the test goes on."""

    def __init__(self, cluster, n: int, per_burst: int = 30, interval_s: float = 0.05):
        super().__init__(name="paced-producer", daemon=True)
        self.producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=2, **COMMON)
        self.n, self.per_burst, self.interval_s = n, per_burst, interval_s
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            for start in range(0, self.n, self.per_burst):
                futures = [
                    self.producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS)
                    for i in range(start, min(self.n, start + self.per_burst))
                ]
                self.producer.flush(timeout=10)
                for f in futures:
                    f.get(timeout=10)
                time.sleep(self.interval_s)
        except BaseException as exc:
            self.error = exc
        finally:
            self.producer.close(timeout=5)

    def finish(self) -> None:
        self.join(timeout=30)
        assert not self.is_alive(), "the producer did not finish"
        if self.error is not None:
            raise self.error


def stored(cluster) -> set[tuple[int, int]]:
    return {(p, o) for p, o, _, _ in cluster.records(TOPIC)}


def committed_on_broker(cluster, gid: str) -> dict[int, int]:
    return {p: o.offset for t, p, o in cluster.state.offsets.fetch(gid, None) if t == TOPIC}


def group_events(cluster, gid: str, since: int = 0, kinds: tuple[str, ...] | None = None) -> list:
    return [e for e in cluster.events[since:] if e.details.get("group") == gid and (kinds is None or e.kind in kinds)]


def no_broker_errors(cluster) -> None:
    assert not [e for e in cluster.events if e.kind in ("handler_error", "produce_rejected")]


class Ledger:
    """Every delivery and every commit outcome, in the order the member threads recorded them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.deliveries: list[tuple[str, int, int]] = []  # (member, partition, offset)
        self.frontier: dict[int, int] = {}  # partition -> highest offset committed successfully so far
        self.allowed_duplicates: list[tuple[int, int]] = []
        self.forbidden_duplicates: list[tuple[str, int, int, int]] = []
        self.commit_failures: list[tuple[str, str]] = []
        self._seen: set[tuple[int, int]] = set()

    def delivered(self, member: str, records: list[tuple[int, int]]) -> None:
        with self.lock:
            for partition, offset in records:
                if (partition, offset) in self._seen:
                    # A redelivery is allowed only while no successful commit has covered the record.
                    if self.frontier.get(partition, 0) > offset:
                        self.forbidden_duplicates.append((member, partition, offset, self.frontier[partition]))
                    else:
                        self.allowed_duplicates.append((partition, offset))
                self._seen.add((partition, offset))
                self.deliveries.append((member, partition, offset))

    def committed(self, offsets: dict[int, int]) -> None:
        with self.lock:
            for p, o in offsets.items():
                self.frontier[p] = max(self.frontier.get(p, 0), o)

    def commit_failed(self, member: str, error: str) -> None:
        with self.lock:
            self.commit_failures.append((member, error))

    def seen(self) -> set[tuple[int, int]]:
        with self.lock:
            return set(self._seen)

    def count(self) -> int:
        with self.lock:
            return len(self.deliveries)

    def check(self, expected: set[tuple[int, int]], max_duplicates: int) -> int:
        with self.lock:
            got = [(p, o) for _, p, o in self.deliveries]
            assert set(got) == expected, (
                f"lost: {sorted(expected - set(got))[:10]} extra: {sorted(set(got) - expected)[:10]}"
            )
            assert not self.forbidden_duplicates, (
                f"redelivered after a successful commit: {self.forbidden_duplicates[:10]}"
            )
            duplicates = len(got) - len(set(got))
            assert duplicates == len(self.allowed_duplicates)
            assert duplicates <= max_duplicates, f"{duplicates} duplicates (bound {max_duplicates})"
            return duplicates


class Member(threading.Thread):
    """One group consumer with its own poll loop, as an application runs it: poll, record what
    arrived, commit exactly that synchronously, repeat. ``paused`` stops the loop (a stall).

    One thread per consumer because kafka-python 3.0.12 discards a JoinGroup/SyncGroup result
    that completes while no poll() is waiting for it (``join_group_async`` starts a new join
    when ``_join_task.is_done``): driving several consumers round-robin with short polls makes
    a leader rejoin after every generation, which Kafka answers, correctly, with yet another
    rebalance."""

    def __init__(self, cluster, gid: str, name: str, ledger: Ledger, *, start: bool = True, **config):
        super().__init__(name=f"member-{name}", daemon=True)
        settings = dict(
            COMMON,
            bootstrap_servers=cluster.bootstrap_servers,
            group_id=gid,
            client_id=name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
            max_poll_records=MAX_POLL_RECORDS,
            fetch_max_wait_ms=50,
        )
        settings.update(config)
        self.label = name
        self.ledger = ledger
        self.consumer = KafkaConsumer(TOPIC, **settings)
        # Have the topic's metadata before the first JoinGroup. Otherwise a first leader assigns
        # nothing ("No partition metadata"), rejoins when the metadata arrives, and kafka-python
        # 3.0.12 can lose that rejoin's result: the leader's own assignment updates the snapshot
        # need_rejoin() compares, so a poll() that timed out mid-join never applies the
        # SyncGroup answer and the member sits in the new generation with no partitions and no
        # heartbeats (a client bug; the broker's answers in that trace are Kafka's).
        assert self.consumer.partitions_for_topic(TOPIC) == set(range(PARTITIONS))
        self.paused = threading.Event()
        self._stopping = threading.Event()
        self._calls: queue.Queue = queue.Queue()
        self.partitions: list[int] = []
        self.member_id = ""
        self.generation = -1
        self.polls = 0
        self.error: BaseException | None = None
        if start:
            self.start()

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                while not self._calls.empty():
                    fn, done = self._calls.get()
                    try:
                        done.set_result(fn(self.consumer))
                    except BaseException as exc:  # handed to the caller
                        done.set_exception(exc)
                if self.paused.is_set():
                    time.sleep(0.02)
                    continue
                self.step()
        except BaseException as exc:
            self.error = exc
        finally:
            self.consumer.close(autocommit=False)

    def step(self) -> None:
        batches = self.consumer.poll(timeout_ms=POLL_MS)
        self.polls += 1
        offsets = {}
        for tp, records in batches.items():
            self.ledger.delivered(self.label, [(r.partition, r.offset) for r in records])
            offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
        if offsets:
            try:
                self.consumer.commit(offsets)
            except COMMIT_REBALANCE_ERRORS as exc:
                self.ledger.commit_failed(self.label, type(exc).__name__)
            else:
                self.ledger.committed({tp.partition: o.offset for tp, o in offsets.items()})
        meta = self.consumer.group_metadata()
        self.partitions = sorted(tp.partition for tp in self.consumer.assignment())
        self.member_id, self.generation = meta.member_id, meta.generation_id

    def call(self, fn):
        """Run ``fn(consumer)`` on the member's own thread (KafkaConsumer is not thread-safe)."""
        done: Future = Future()
        self._calls.put((fn, done))
        return done.result(timeout=15)

    def close(self) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout=20)
            assert not self.is_alive(), f"{self.label} did not stop"
        elif self.ident is None:  # never started
            self.consumer.close(autocommit=False)
        if self.error is not None:
            raise self.error


def wait_until(condition, what: str, members: list[Member] = (), deadline_s: float = DEADLINE_S) -> float:
    """Wait (bounded) until ``condition()`` holds while the members poll; returns the seconds."""
    start = time.monotonic()
    while not condition():
        for m in members:
            if m.error is not None:
                raise m.error
        assert time.monotonic() - start < deadline_s, f"timed out waiting for {what}: " + ", ".join(
            f"{m.label}={m.partitions}@{m.generation}" for m in members
        )
        time.sleep(0.02)
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


def consume_all(members: list[Member], ledger: Ledger, expected: set, what: str) -> None:
    wait_until(lambda: ledger.seen() >= expected, what, members)


def close_all(members: list[Member]) -> None:
    errors = []
    for m in members:
        try:
            m.close()
        except BaseException as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


# -- 1. three consumers split six partitions -------------------------------------------------------


def test_three_consumers_split_six_partitions(cluster):
    gid = group_id_off_bootstrap(cluster, "split")
    ledger = Ledger()
    members = [Member(cluster, gid, f"c{i}", ledger) for i in range(3)]
    try:
        wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
        assert [len(m.partitions) for m in members] == [2, 2, 2]
        generation = cluster.state.groups.groups[gid].generation_id
        produce(cluster, 600)
        expected = stored(cluster)
        assert len(expected) == 600
        consume_all(members, ledger, expected, "all 600 records")
        wait_until(
            lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)},
            "the last commits",
            members,
        )
        # Nothing more arrives, and nothing was delivered twice: no rebalance while consuming.
        polls = [m.polls for m in members]
        wait_until(lambda: all(m.polls >= n + 2 for m, n in zip(members, polls)), "two more polls each", members)
        assert ledger.check(expected, max_duplicates=0) == 0
        # Each member read exactly its own two partitions.
        for m in members:
            assert {p for who, p, _ in ledger.deliveries if who == m.label} == set(m.partitions)
        assert cluster.state.groups.groups[gid].generation_id == generation
    finally:
        close_all(members)
    events = group_events(cluster, gid)
    assert max(e.details["members"] for e in events if e.kind == "generation_started") == 3
    assert len({e.details["member"] for e in events if e.kind == "member_joined"}) == 3
    assert [e for e in events if e.kind == "offset_committed"]
    # The members found the coordinator: only it saw their group requests.
    coordinator = cluster.coordinator(gid)
    assert coordinator != 0
    assert not [e for e in cluster.events if e.kind == "request_error" and e.details["error"] == "NOT_COORDINATOR"]
    no_broker_errors(cluster)


# -- 2. a member leaves; the survivors continue from the committed offsets ---------------------------


def test_member_leaves_survivors_take_over(cluster):
    gid = group_id_off_bootstrap(cluster, "leave")
    ledger = Ledger()
    members = [Member(cluster, gid, f"c{i}", ledger) for i in range(3)]
    try:
        wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
        produce(cluster, 300)
        wait_until(lambda: ledger.count() >= 120, "120 deliveries", members)
        leaver, survivors = members[1], [members[0], members[2]]
        leaver_id, leaver_parts = leaver.member_id, leaver.partitions
        since = len(cluster.events)
        leaver.close()  # commits what it read, then LeaveGroup
        produce(cluster, 300, start=300)
        expected = stored(cluster)
        wait_until(lambda: split_evenly(survivors, cluster, gid), "a 3/3 split", survivors)
        assert set(leaver_parts) <= set(survivors[0].partitions) | set(survivors[1].partitions)
        consume_all(survivors, ledger, expected, "all 600 records")
        wait_until(
            lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)},
            "the last commits",
            survivors,
        )
        # Duplicates only where a commit had not yet covered the record: at most one poll's
        # worth per partition that changed hands.
        duplicates = ledger.check(expected, max_duplicates=PARTITIONS * MAX_POLL_RECORDS)
    finally:
        close_all(members)
    after = group_events(cluster, gid, since)
    assert [e.details["reason"] for e in after if e.kind == "member_removed" and e.details["member"] == leaver_id] == [
        "left the group"
    ]
    assert [e.details["instance"] for e in after if e.kind == "member_left" and e.details["member"] == leaver_id] == [
        None
    ]
    assert any(e.kind == "rebalance_started" for e in after)
    assert [e.details["members"] for e in after if e.kind == "generation_started"][0] == 2
    print(f"duplicates after the leave: {duplicates}; commit failures: {ledger.commit_failures}")
    no_broker_errors(cluster)


# -- 3. a new member resumes exactly after the last commit -------------------------------------------


def test_new_member_resumes_after_last_commit(cluster):
    gid = group_id_off_bootstrap(cluster, "resume")
    produce(cluster, 120)  # 20 per partition
    ledger = Ledger()
    first = Member(cluster, gid, "first", ledger)
    chosen = {p: 3 + 2 * p for p in range(PARTITIONS)}
    try:
        wait_until(
            lambda: ledger.count() >= 120 and committed_on_broker(cluster, gid) == {p: 20 for p in range(PARTITIONS)},
            "120 deliveries, committed",
            [first],
        )
        # The last commit sets a chosen position on every partition (behind what was read).
        first.call(
            lambda c: c.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, f"m{p}", -1) for p, o in chosen.items()})
        )
        assert committed_on_broker(cluster, gid) == chosen
    finally:
        first.close()
    assert cluster.state.groups.groups[gid].state.value == "Empty"

    resumed = Ledger()
    second = Member(cluster, gid, "second", resumed, start=False)
    try:
        assert {p: second.consumer.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)} == chosen
        second.start()
        wait_until(
            lambda: (
                resumed.count() >= 120 - sum(chosen.values())
                and committed_on_broker(cluster, gid) == {p: 20 for p in range(PARTITIONS)}
            ),
            "the rest of every partition, committed",
            [second],
        )
        polls = second.polls
        wait_until(lambda: second.polls >= polls + 2, "two more polls", [second])
        by_partition: dict[int, list[int]] = {}
        for _, p, o in resumed.deliveries:
            by_partition.setdefault(p, []).append(o)
        # Exactly the records from each committed offset on, in order, nothing before it.
        assert by_partition == {p: list(range(o, 20)) for p, o in chosen.items()}
    finally:
        second.close()
    no_broker_errors(cluster)


# -- 4. static membership ------------------------------------------------------------------------------


def test_static_member_restart_keeps_partitions_without_rebalance(cluster):
    # kafka-python 3 supports group_instance_id (KIP-345, JoinGroup v5+); a static member
    # sends no LeaveGroup on close.
    gid = group_id_off_bootstrap(cluster, "static")
    ledger = Ledger()
    members = [Member(cluster, gid, f"c{i}", ledger, group_instance_id=f"instance-{i}") for i in range(3)]
    try:
        wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
        produce(cluster, 300)
        wait_until(lambda: ledger.count() >= 100, "100 deliveries", members)
        group = cluster.state.groups.groups[gid]
        generation = group.generation_id
        # Restart a follower (not the leader) well within the session timeout.
        index = next(i for i, m in enumerate(members) if m.member_id != group.leader_id)
        old = members[index]
        old_id, old_parts = old.member_id, old.partitions
        since = len(cluster.events)
        restart_start = time.monotonic()
        old.close()
        resumed_from = ledger.count()
        restarted = Member(cluster, gid, f"c{index}", ledger, group_instance_id=f"instance-{index}")
        members[index] = restarted
        wait_until(
            lambda: restarted.partitions == old_parts and restarted.generation == generation,
            "the restarted static member's assignment",
            members,
        )
        assert time.monotonic() - restart_start < SESSION_TIMEOUT_MS / 1000
        assert restarted.member_id not in ("", old_id)
        # It reads on from the committed offsets of its own partitions, including what arrives now.
        produce(cluster, 300, start=300)
        expected = stored(cluster)
        consume_all(members, ledger, expected, "all 600 records")
        wait_until(
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
        close_all(members)
    after = group_events(cluster, gid, since)
    # Static members send no LeaveGroup: everything up to the end of the test counts.
    assert not [e for e in after if e.kind in ("generation_started", "rebalance_started", "member_removed")]
    assert [
        (e.kind, e.details["instance"]) for e in after if e.kind in ("member_fenced", "static_member_rejoined")
    ] == [("member_fenced", f"instance-{index}"), ("static_member_rejoined", f"instance-{index}")]
    assert [e.details["member"] for e in after if e.kind == "static_member_rejoined"] == [restarted.member_id]
    assert [e.details["member"] for e in after if e.kind == "member_fenced"] == [old_id]
    no_broker_errors(cluster)


# -- 5. a member stalls past max_poll_interval_ms ---------------------------------------------------------


def test_stalled_member_is_removed_and_others_take_over(cluster):
    gid = group_id_off_bootstrap(cluster, "stall")
    max_poll_ms = 3000
    ledger = Ledger()
    members = [Member(cluster, gid, f"c{i}", ledger, max_poll_interval_ms=max_poll_ms) for i in range(3)]
    try:
        wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
        produce(cluster, 300)
        wait_until(lambda: ledger.count() >= 60, "60 deliveries", members)
        stalled, active = members[2], members[:2]
        stalled_id, stalled_parts = stalled.member_id, stalled.partitions
        generation = cluster.state.groups.groups[gid].generation_id
        since = len(cluster.events)
        # The stalled member stops calling poll() (its heartbeats go on in kafka-python's IO
        # thread); the others keep going and take its partitions once it is out of the group.
        stalled.paused.set()
        took = wait_until(lambda: split_evenly(active, cluster, gid), "the survivors' 3/3 split", active)
        assert took >= max_poll_ms / 1000 * 0.8
        assert set(stalled_parts) <= set(active[0].partitions) | set(active[1].partitions)
        # They read on from its committed offsets, including what arrives now.
        produce(cluster, 300, start=300)
        expected = stored(cluster)
        consume_all(active, ledger, expected, "all 600 records")
        wait_until(
            lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)}, "the last commits", active
        )
        ledger.check(expected, max_duplicates=2 * MAX_POLL_RECORDS)
        group = cluster.state.groups.groups[gid]
        assert stalled_id not in group.members and group.generation_id > generation
        assert set(group.members) == {m.member_id for m in active}
    finally:
        close_all(members)
    after = group_events(cluster, gid, since)
    removed = [e for e in after if e.kind == "member_removed" and e.details["member"] == stalled_id]
    # kafka-python, like the Java client, leaves the group itself once max_poll_interval_ms passes.
    assert [e.details["reason"] for e in removed] == ["left the group"]
    started = [e for e in after if e.kind == "generation_started"]
    assert started and started[0].details["members"] == 2
    assert stalled_id not in {e.details["member"] for e in after if e.kind == "assignment_delivered"}
    no_broker_errors(cluster)


# -- 6. the coordinator moves mid-stream -----------------------------------------------------------------


def test_coordinator_moves_mid_stream():
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}, coordinator_load_time_ms=300).run_in_thread() as cluster:
        gid = group_id_off_bootstrap(cluster, "move")
        ledger = Ledger()
        members = [Member(cluster, gid, f"c{i}", ledger) for i in range(3)]
        try:
            wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
            # Records keep arriving (30 every 50 ms) before, during and after the move.
            producer = PacedProducer(cluster, 600)
            wait_until(lambda: ledger.count() >= 150, "150 deliveries", members)
            old = cluster.coordinator(gid)
            generation = cluster.state.groups.groups[gid].generation_id
            since = len(cluster.events)
            new = cluster.move_coordinator(gid)
            assert new not in (old, -1) and cluster.coordinator(gid) == new
            assert producer.is_alive(), "the move should happen mid-stream"
            producer.finish()
            expected = stored(cluster)
            assert len(expected) == 600
            consume_all(members, ledger, expected, "all 600 records")
            # The commits after the move reached the new coordinator.
            wait_until(
                lambda: committed_on_broker(cluster, gid) == {p: 100 for p in range(PARTITIONS)},
                "the last commits",
                members,
            )
            duplicates = ledger.check(expected, max_duplicates=PARTITIONS * MAX_POLL_RECORDS)
            assert cluster.state.groups.groups[gid].state.value == "Stable"
        finally:
            close_all(members)
        after = group_events(cluster, gid, since)
        kinds = [e.kind for e in after]
        assert "group_unloaded" in kinds and "group_loaded" in kinds
        assert [e.details["generation"] for e in after if e.kind == "group_loaded"] == [generation]
        assert "offset_committed" in kinds[kinds.index("group_loaded") :]
        moved = cluster.events[since:]
        not_coordinator = [e for e in moved if e.kind == "request_error" and e.details["error"] == "NOT_COORDINATOR"]
        assert not_coordinator and {e.broker for e in not_coordinator} == {old}
        # The new coordinator loaded the group at its generation and the members went on with it:
        # no rebalance, so no commit failed and nothing was delivered twice.
        until_close = after[
            : next((i for i, e in enumerate(after) if e.details.get("reason") == "left the group"), len(after))
        ]
        assert not [e for e in until_close if e.kind in ("rebalance_started", "generation_started", "member_removed")]
        assert (duplicates, ledger.commit_failures) == (0, [])
        # While the new coordinator "read the offsets topic" it answered COORDINATOR_LOAD_IN_PROGRESS.
        loading = [
            e for e in moved if e.kind == "request_error" and e.details["error"] == "COORDINATOR_LOAD_IN_PROGRESS"
        ]
        assert loading and {e.broker for e in loading} == {new}
        no_broker_errors(cluster)


# -- 7. admin -------------------------------------------------------------------------------------------------


def test_admin_groups(cluster):
    # kafka-python 3 renamed the group admin calls: list_consumer_groups -> list_groups,
    # describe_consumer_groups -> describe_groups, list_consumer_group_offsets ->
    # list_group_offsets, delete_consumer_groups -> delete_groups.
    gid = group_id_off_bootstrap(cluster, "admin")
    ledger = Ledger()
    members = [Member(cluster, gid, f"c{i}", ledger) for i in range(3)]
    admin = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000, retry_backoff_ms=50
    )
    try:
        wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
        produce(cluster, 60)
        consume_all(members, ledger, stored(cluster), "all 60 records")
        wait_until(
            lambda: committed_on_broker(cluster, gid) == {p: 10 for p in range(PARTITIONS)}, "the commits", members
        )

        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[gid]["protocol_type"] == "consumer"
        assert listed[gid].get("group_state", "Stable") == "Stable"
        assert gid in {g["group_id"] for g in admin.list_groups(states_filter=["Stable"])}
        assert gid not in {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])}

        described = admin.describe_groups([gid])[gid]
        assert described["error"] is None
        assert (described["group_state"], described["protocol_type"], described["protocol_data"]) == (
            "Stable",
            "consumer",
            "range",
        )
        by_member = {m["member_id"]: m for m in described["members"]}
        assert set(by_member) == {m.member_id for m in members}
        for m in members:
            entry = by_member[m.member_id]
            assert entry["client_id"] == m.label and entry["client_host"] == "/127.0.0.1"
            # kafka-python decodes the consumer-protocol bytes into dicts.
            assigned = entry["member_assignment"]["assigned_partitions"]
            assert sorted(p for t in assigned if t["topic"] == TOPIC for p in t["partitions"]) == m.partitions
            assert entry["member_metadata"]["topics"] == [TOPIC]

        offsets = admin.list_group_offsets({gid: None})[gid]
        assert {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC} == {
            p: 10 for p in range(PARTITIONS)
        }

        assert admin.delete_groups([gid]) == {gid: "NonEmptyGroupError"}
        assert gid in cluster.state.groups.groups
    finally:
        close_all(members)
    try:
        assert cluster.state.groups.groups[gid].state.value == "Empty"
        assert {g["group_id"]: g.get("group_state", "Empty") for g in admin.list_groups()}[gid] == "Empty"
        assert admin.describe_groups([gid])[gid]["members"] == []
        assert admin.delete_groups([gid]) == {gid: "OK"}
        assert gid not in {g["group_id"] for g in admin.list_groups()}
        assert admin.list_group_offsets({gid: None})[gid] == {}
        gone = admin.describe_groups([gid])[gid]
        assert gone["group_state"] == "Dead" and "GroupIdNotFound" in (gone["error"] or "")
        assert admin.delete_groups([gid]) == {gid: "GroupIdNotFoundError"}
    finally:
        admin.close()
    assert any(e.kind == "group_deleted" for e in group_events(cluster, gid))
    no_broker_errors(cluster)

"""The Go client franz-go (github.com/twmb/franz-go: kgo and kadm) against FakeCluster.

``tests/clients/go`` is a small Go module whose program ``fbclient`` takes ``BOOTSTRAP SCENARIO
ARGS...`` and prints one JSON object per line on stdout (see main.go). The session fixture
``go_client`` builds it once per session with ``go build`` (the Go build cache makes a rebuild
of unchanged sources take about a second; a fresh machine downloads the modules from the Go
module proxy). The ``produce-consume`` and ``compression`` scenarios run to the end by
themselves; the ``driver`` scenario takes one JSON command per stdin line, so the test can
check the coordinator's live state between the group members' steps.

Set ``FAKEBROKER_GO_LOG=debug`` for kgo's DEBUG log (stderr, shown in a failing test's message).
"""

from __future__ import annotations

import collections
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import records as rec

from .conftest import expected_records
from .driver import LineDriver
from .group_state import events, group_off_first_broker, live_group, live_offsets

pytestmark = [pytest.mark.clients, pytest.mark.go]

GO_DIR = Path(__file__).parent / "go"
BINARY = GO_DIR / "fbclient"
BUILD_TIMEOUT = 300
RUN_TIMEOUT = 120
FRANZ_GO_VERSION = "v1.22.2"  # as in go.mod
KADM_VERSION = "v1.19.0"
TOPIC, PARTITIONS = "orders", 6
N = 600
CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # kgo codec -> batch attribute codec id
CLIENT_ID = "fakebroker-franz-go"


# -- building and running fbclient ----------------------------------------------------------------
def _go() -> str:
    path = shutil.which("go")
    if path is None:
        pytest.fail(
            "go is not installed: the franz-go tests need the Go toolchain (go.mod asks for Go 1.26; "
            "an older go with GOTOOLCHAIN=auto fetches it from the Go module proxy)"
        )
    return path


@pytest.fixture(scope="session")
def go_client() -> Path:
    """fbclient, built once per session (under a lock, in case several pytest processes start together)."""
    go = _go()
    env = {**os.environ, "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -mod=mod -buildvcs=false".strip()}
    with open(GO_DIR / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.monotonic()
        tmp = GO_DIR / f".fbclient-{os.getpid()}"
        try:
            out = subprocess.run(
                [go, "build", "-o", str(tmp), "."],
                cwd=GO_DIR,
                env=env,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            tmp.unlink(missing_ok=True)
            pytest.fail(f"go build took over {BUILD_TIMEOUT} s:\n{_tail(exc.stdout)}\n{_tail(exc.stderr)}")
        if out.returncode != 0 or not tmp.exists():
            tmp.unlink(missing_ok=True)
            pytest.fail(f"go build failed ({out.returncode}):\n{_tail(out.stdout)}\n{_tail(out.stderr)}")
        os.replace(tmp, BINARY)
        print(f"built {BINARY.name} in {time.monotonic() - started:.1f} s")
    return BINARY


def _tail(text: str | bytes | None, n: int = 12000) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return (text or "")[-n:]


def _env() -> dict[str, str]:
    return {**os.environ, "FAKEBROKER_GO_LOG": os.environ.get("FAKEBROKER_GO_LOG", "warn")}


def check_version(line: dict) -> None:
    assert line["type"] == "version"
    assert (line["franz_go"], line["kadm"]) == (FRANZ_GO_VERSION, KADM_VERSION), line


def run_go(binary: Path, bootstrap: str, scenario: str, *args: object) -> list[dict[str, Any]]:
    """Run one scenario to its end; returns its JSON lines. Fails the test on a non-zero exit or a timeout."""
    try:
        out = subprocess.run(
            [str(binary), bootstrap, scenario, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env=_env(),
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"fbclient {scenario} ran over {RUN_TIMEOUT} s\nstdout:\n{_tail(exc.stdout)}\nstderr:\n{_tail(exc.stderr)}"
        )
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    errors = [line for line in lines if line["type"] == "error"]
    if out.returncode != 0 or errors or not lines or lines[-1]["type"] != "end":
        pytest.fail(f"fbclient {scenario} exited {out.returncode}, errors: {errors}\nstderr:\n{_tail(out.stderr)}")
    check_version(lines[0])
    return lines


def of_type(lines: list[dict], kind: str, **match: Any) -> list[dict]:
    return [line for line in lines if line["type"] == kind and all(line.get(k) == v for k, v in match.items())]


def one(lines: list[dict], kind: str, **match: Any) -> dict:
    found = of_type(lines, kind, **match)
    assert len(found) == 1, f"expected one {kind} {match}, got {found}"
    return found[0]


def problems(cluster: FakeCluster) -> list[str]:
    return [e.describe() for e in cluster.events if e.kind in ("request_error", "produce_rejected", "handler_error")]


def stored_headers(cluster: FakeCluster, topic: str) -> list[tuple[int, rec.BatchHeader]]:
    """(partition, header) of every stored batch, read directly from the partition logs."""

    def read():
        return [
            (p.index, h)
            for p in cluster.state.topics[topic].partitions
            for batch in p.log.batches
            for h in rec.iter_batch_headers(batch.data)
        ]

    return cluster.call(read)


def check_round_trip(lines: list[dict], cluster: FakeCluster, topic: str, n: int, partitions: int) -> None:
    """Every record acknowledged at, stored at and read back from its exact place, in order."""
    want = expected_records(n, partitions)
    sent = of_type(lines, "sent", topic=topic)
    assert [s["i"] for s in sent] == list(range(n))
    assert [(s["partition"], s["offset"]) for s in sent] == [(i % partitions, i // partitions) for i in range(n)]
    assert one(lines, "produced", topic=topic)["count"] == n

    expected_rows = [(p, o, k.decode(), v.decode()) for p in range(partitions) for o, (k, v) in enumerate(want[p])]
    offsets = {x["partition"]: (x["beginning"], x["end"]) for x in of_type(lines, "offsets", topic=topic)}
    assert offsets == {p: (0, len(want[p])) for p in range(partitions)}

    consumed = of_type(lines, "record", topic=topic)
    by_partition: dict[int, list[tuple]] = {p: [] for p in range(partitions)}
    for r in consumed:
        by_partition[r["partition"]].append((r["partition"], r["offset"], r["key"], r["value"]))
    # per-partition order as the consumer saw it, and no duplicates or strays
    assert [row for p in range(partitions) for row in by_partition[p]] == expected_rows
    assert len(consumed) == n
    assert one(lines, "consumed", topic=topic)["count"] == n
    epochs = {p: cluster.state.topics[topic].partitions[p].leader_epoch for p in range(partitions)}
    assert all(r["leader_epoch"] == epochs[r["partition"]] for r in consumed)

    stored = [(p, o, k.decode(), v.decode()) for p, o, k, v in cluster.records(topic)]
    assert stored == expected_rows
    assert [cluster.offsets(topic, p) for p in range(partitions)] == [(0, len(want[p])) for p in range(partitions)]


def check_idempotent(lines: list[dict], cluster: FakeCluster, topic: str, n: int, partitions: int) -> None:
    """One producer id for every batch, the one the client reported, and per-partition sequences
    from 0 without gaps (franz-go is idempotent by default)."""
    headers = stored_headers(cluster, topic)
    producer_ids = {h.producer_id for _, h in headers}
    assert len(producer_ids) == 1 and next(iter(producer_ids)) >= 0, producer_ids
    assert {(s["producer_id"], s["producer_epoch"]) for s in of_type(lines, "sent", topic=topic)} == {
        (h.producer_id, h.producer_epoch) for _, h in headers
    }
    want = expected_records(n, partitions)
    for p in range(partitions):
        expected_next = 0
        for q, h in headers:
            if q == p:
                assert h.base_sequence == expected_next, (
                    f"partition {p}: {[(x.base_sequence, x.last_offset_delta) for y, x in headers if y == p]}"
                )
                expected_next = h.base_sequence + h.last_offset_delta + 1
        assert expected_next == len(want[p])


# -- 1. idempotent produce (acks=all), direct partition consumption --------------------------------
def test_idempotent_produce_then_consume_partitions_directly(go_client, cluster3):
    lines = run_go(go_client, cluster3.bootstrap_servers, "produce-consume", TOPIC, N, PARTITIONS)
    check_round_trip(lines, cluster3, TOPIC, N, PARTITIONS)
    check_idempotent(lines, cluster3, TOPIC, N, PARTITIONS)
    assert [e for e in cluster3.events if e.kind == "producer_id"]
    # partitions are led by all three brokers, so the client really followed Metadata
    assert {cluster3.leader(TOPIC, p) for p in range(PARTITIONS)} == {0, 1, 2}
    assert {
        e.broker for e in cluster3.events if e.kind == "client_connected" and e.details.get("client_id") == CLIENT_ID
    } == {0, 1, 2}
    assert not problems(cluster3)


# -- 2. every compression codec ------------------------------------------------------------------
@pytest.fixture(scope="module")
def compression_run(go_client):
    """One fbclient run produces and consumes ``comp-<codec>`` for every codec."""
    with FakeCluster(brokers=3, topics={f"comp-{codec}": PARTITIONS for codec in CODECS}).run_in_thread() as cluster:
        lines = run_go(go_client, cluster.bootstrap_servers, "compression", "comp", 120, PARTITIONS, *CODECS)
        yield cluster, lines


@pytest.mark.parametrize("codec", list(CODECS))
def test_compression_round_trip(compression_run, codec):
    cluster, lines = compression_run
    topic = f"comp-{codec}"
    check_round_trip(lines, cluster, topic, 120, PARTITIONS)
    check_idempotent(lines, cluster, topic, 120, PARTITIONS)
    headers = stored_headers(cluster, topic)
    assert headers and {h.compression for _, h in headers} == {CODECS[codec]}
    # linger 20 ms and 120 records produced at once: the codec ran over multi-record batches
    assert any(h.records_count > 1 for _, h in headers)
    assert not [p for p in problems(cluster) if topic in p]


# -- the interactive driver ----------------------------------------------------------------------
class Driver(LineDriver):
    """A running ``fbclient BOOTSTRAP driver``: ``call(cmd, **args)`` sends one command and returns
    its reply; other lines (assigned, revoked, lost, commit_error, ...) are kept in ``notes``."""

    name = "fbclient"
    log_name = "fbclient"

    def __init__(self, binary: Path, cluster: FakeCluster):
        super().__init__([str(binary), cluster.bootstrap_servers, "driver"], cluster, lifetime=RUN_TIMEOUT, env=_env())
        first = self.first_line(timeout=20)
        if first is None:
            self.close()
            pytest.fail(f"fbclient driver did not start{self.diagnostics()}")
        check_version(first)

    def call(self, cmd: str, timeout: float = 30, **args: Any) -> dict:
        if "timeout_ms" not in args:
            args["timeout_ms"] = int((timeout - 5) * 1000)
        return super().call(cmd, timeout, **args)

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.proc.stdin.write(self.encode(0, "exit", {}) + "\n")
                    self.proc.stdin.flush()
                    self.proc.wait(20)
                except (BrokenPipeError, subprocess.TimeoutExpired):
                    self.kill()
        finally:
            self.cancel_killer()


@pytest.fixture
def driver(go_client, cluster3):
    d = Driver(go_client, cluster3)
    try:
        yield d
    finally:
        d.close()


# -- the coordinator's live state ----------------------------------------------------------------
def wait_stable(cluster: FakeCluster, gid: str, got: dict, timeout: float = 10) -> dict:
    """Until the coordinator holds a Stable generation whose members, generation and stored
    assignments are exactly what the members reported."""
    want = {got["member_ids"][n]: {TOPIC: sorted(ps)} for n, ps in got["assignments"].items()}
    deadline = time.monotonic() + timeout
    while True:
        g = live_group(cluster, gid)
        have = g and {mid: {t: sorted(ps) for t, ps in m["assignment"].items()} for mid, m in g["members"].items()}
        if g and g["state"] == "Stable" and have == want and g["generation"] == got["generation"]:
            return g
        if time.monotonic() > deadline:
            raise AssertionError(f"group {gid} never became Stable with {want} at generation {got['generation']}: {g}")
        time.sleep(0.05)


def start_members(driver: Driver, cluster: FakeCluster, gid: str, names=("a", "b", "c")) -> tuple[dict, dict]:
    for name in names:
        driver.call("start", name=name, group=gid, topic=TOPIC)
    got = driver.call("waitAssigned", names=list(names), topic=TOPIC, partitions=PARTITIONS)
    return got, wait_stable(cluster, gid, got)


def check_records_in_place(records: list[list]) -> None:
    """Every consumed record is key-i at partition i % 6, offset i // 6 (nothing garbled)."""
    for _, partition, offset, key in records:
        i = int(key.split("-")[1])
        assert (partition, offset) == (i % PARTITIONS, i // PARTITIONS), (partition, offset, key)


def assert_healthy(cluster: FakeCluster, driver: Driver) -> None:
    bad = [e.describe() for e in cluster.events if e.kind in ("handler_error", "connection_closed")]
    assert not bad, "\n".join(bad)
    failures = [n for n in driver.drain() if n["type"] in ("commit_error", "fetch_error", "lost")]
    assert not failures, failures


# -- 3. a classic group: split 2/2/2, exactly once with commits, a member leaves ------------------
def test_group_splits_partitions_consumes_once_and_survivors_take_over(cluster3, driver):
    cluster = cluster3
    gid = group_off_first_broker(cluster, "go-split")
    coordinator = cluster.coordinator(gid)
    got, group = start_members(driver, cluster, gid)

    assert sorted(len(ps) for ps in got["assignments"].values()) == [2, 2, 2]
    assert sorted(p for ps in got["assignments"].values() for p in ps) == list(range(PARTITIONS))
    assert set(group["members"]) == set(got["member_ids"].values())
    # franz-go's default: the classic protocol with the cooperative-sticky balancer
    assert (group["protocol_type"], group["protocol"]) == ("consumer", "cooperative-sticky")
    assert all(
        (m["client_id"], m["client_host"], m["instance"]) == (CLIENT_ID, "/127.0.0.1", None)
        for m in group["members"].values()
    )
    gens = events(cluster, "generation_started", gid)
    assert gens[-1]["generation"] == got["generation"] and gens[-1]["members"] == 3
    assert events(cluster, "leader_assigned", gid)[-1]["generation"] == got["generation"]
    delivered = {
        e["member"] for e in events(cluster, "assignment_delivered", gid) if e["generation"] == got["generation"]
    }
    assert delivered == set(got["member_ids"].values())
    assert not [e for e in cluster.events if e.kind == "request_error" and e.details["api"] == "ConsumerGroupHeartbeat"]

    # phase 1: 600 records, each consumed once by its partition's owner, committed to the end
    driver.call("produce", topic=TOPIC, n=N, partitions=PARTITIONS)
    driver.call("waitConsumed", total=N)
    committed = driver.call("waitCommitted", group=gid, topic=TOPIC)["committed"]
    records = driver.call("consumed")["records"]
    check_records_in_place(records)
    keys = collections.Counter(r[3] for r in records)
    assert len(records) == N and set(keys) == {f"key-{i}" for i in range(N)} and set(keys.values()) == {1}
    owner = {p: name for name, ps in got["assignments"].items() for p in ps}
    assert all(owner[p] == name for name, p, _, _ in records), "each record went to its partition's owner"
    assert collections.Counter(r[0] for r in records) == {"a": 200, "b": 200, "c": 200}
    for p in range(PARTITIONS):  # per-partition order
        assert [o for _, q, o, _ in records if q == p] == list(range(N // PARTITIONS))
    assert (
        {int(p): o for p, o in committed.items()} == live_offsets(cluster, gid) == {p: 100 for p in range(PARTITIONS)}
    )
    commits = events(cluster, "offset_committed", gid)
    assert commits and {(e["partition"], e["offset"]) for e in commits if e["offset"] == 100} == {
        (p, 100) for p in range(PARTITIONS)
    }
    assert live_group(cluster, gid)["generation"] == got["generation"], "no rebalance while consuming"

    # phase 2: c leaves (LeaveGroup); a and b take its partitions over at its committed offsets
    leaving, orphaned = got["member_ids"]["c"], sorted(got["assignments"]["c"])
    stopped = driver.call("stop", name="c")
    assert stopped["member_id"] == leaving
    assert [e["member"] for e in events(cluster, "member_left", gid)] == [leaving]
    assert leaving not in live_group(cluster, gid)["members"]
    after = driver.call("waitAssigned", names=["a", "b"], topic=TOPIC, partitions=PARTITIONS)
    group = wait_stable(cluster, gid, after)
    assert sorted(len(ps) for ps in after["assignments"].values()) == [3, 3]
    assert after["generation"] > got["generation"]
    assert after["member_ids"] == {"a": got["member_ids"]["a"], "b": got["member_ids"]["b"]}, "survivors kept their ids"
    for name in "ab":  # cooperative-sticky: the survivors kept what they had
        assert set(got["assignments"][name]) <= set(after["assignments"][name])
    assert events(cluster, "generation_started", gid)[-1]["members"] == 2

    driver.call("produce", topic=TOPIC, first=N, n=N, partitions=PARTITIONS)
    driver.call("waitConsumed", total=2 * N)
    committed = driver.call("waitCommitted", group=gid, topic=TOPIC)["committed"]
    records = driver.call("consumed")["records"]
    check_records_in_place(records)
    keys = collections.Counter(r[3] for r in records)
    assert set(keys) == {f"key-{i}" for i in range(2 * N)}, "no record lost"
    assert set(keys.values()) == {1}, f"duplicates: {[k for k, n in keys.items() if n > 1][:20]}"
    late = records[N:]
    owner = {p: name for name, ps in after["assignments"].items() for p in ps}
    assert all(owner[p] == name for name, p, _, _ in late)
    for p in orphaned:  # started exactly at c's committed offset
        taken = [off for _, q, off, _ in late if q == p]
        assert taken == list(range(100, 200)), (p, taken[:5])
    assert (
        {int(p): o for p, o in committed.items()} == live_offsets(cluster, gid) == {p: 200 for p in range(PARTITIONS)}
    )
    assert cluster.coordinator(gid) == coordinator != 0
    assert_healthy(cluster, driver)
    refused = {(e.details["api"], e.details["error"]) for e in cluster.events if e.kind == "request_error"}
    assert refused <= {
        ("JoinGroup", "MEMBER_ID_REQUIRED"),
        ("Heartbeat", "REBALANCE_IN_PROGRESS"),
        ("SyncGroup", "REBALANCE_IN_PROGRESS"),
    }, refused
    assert {e.broker for e in cluster.events if e.kind == "request_error"} <= {coordinator}


# -- 4. kadm ---------------------------------------------------------------------------------------
def test_kadm_topics_metadata_and_group_admin(cluster3, driver):
    c = cluster3

    # CreateTopics, with a config; again -> TOPIC_ALREADY_EXISTS
    created = driver.call(
        "createTopics",
        topics=["go-adm-a", "go-adm-b"],
        partitions=3,
        replication_factor=2,
        configs={"retention.ms": "86400000"},
    )["results"]
    assert set(created) == {"go-adm-a", "go-adm-b"}
    for name, r in created.items():
        topic = c.state.topics[name]
        assert (r["error"], r["id"], r["partitions"], r["replication_factor"]) == (None, topic.topic_id.hex, 3, 2)
        assert r["configs"]["retention.ms"] == {"value": "86400000", "source": "DYNAMIC_TOPIC_CONFIG"}
        assert topic.config.overrides == {"retention.ms": "86400000"}
        assert all(len(p.replicas) == 2 for p in topic.partitions)
    again = driver.call("createTopics", topics=["go-adm-a"], partitions=1, replication_factor=1)["results"]
    assert again["go-adm-a"]["error"] == "TOPIC_ALREADY_EXISTS"
    assert c.topics() == {TOPIC: 6, "go-adm-a": 3, "go-adm-b": 3}

    # ListTopics and Metadata against the live state
    def expected_topic(name: str) -> dict:
        t = c.state.topics[name]
        return {
            "id": t.topic_id.hex,
            "internal": False,
            "error": None,
            "partitions": [
                {
                    "partition": p.index,
                    "leader": p.leader,
                    "leader_epoch": p.leader_epoch,
                    "replicas": p.replicas,
                    "isr": p.isr,
                    "offline": [],
                    "error": None,
                }
                for p in t.partitions
            ],
        }

    listed = driver.call("listTopics")["topics"]
    assert listed == {name: expected_topic(name) for name in c.topics()}
    assert driver.call("listTopics", topics=["go-adm-b"])["topics"] == {"go-adm-b": expected_topic("go-adm-b")}
    meta = driver.call("metadata", topics=[TOPIC])
    assert (meta["cluster"], meta["controller"]) == (c.cluster_id, c.state.controller_id)
    assert [(b["id"], f"{b['host']}:{b['port']}", b["rack"]) for b in meta["brokers"]] == [
        (i, addr, None) for i, addr in enumerate(c.bootstrap_servers.split(","))
    ]
    assert meta["topics"] == {TOPIC: expected_topic(TOPIC)}

    # a live group with committed offsets
    gid = group_off_first_broker(c, "go-admin")
    coordinator = c.coordinator(gid)
    got, _ = start_members(driver, c, gid)
    driver.call("produce", topic=TOPIC, n=60, partitions=PARTITIONS)
    driver.call("waitConsumed", total=60)
    driver.call("waitCommitted", group=gid, topic=TOPIC)

    # ListGroups asks every broker; the coordinator lists the group
    mine = [g for g in driver.call("listGroups")["groups"] if g["group"] == gid]
    assert mine == [{"group": gid, "coordinator": coordinator, "protocol_type": "consumer", "state": "Stable"}]

    # DescribeGroups, against the live group
    described = driver.call("describeGroups", groups=[gid])["groups"][gid]
    live = live_group(c, gid)
    assert (
        (
            described["error"],
            described["state"],
            described["protocol_type"],
            described["protocol"],
            described["coordinator"],
        )
        == (None, live["state"], live["protocol_type"], live["protocol"], coordinator)
        == (None, "Stable", "consumer", "cooperative-sticky", c.coordinator(gid))
    )
    assert {m["member_id"] for m in described["members"]} == set(live["members"]) == set(got["member_ids"].values())
    for m in described["members"]:
        mine = live["members"][m["member_id"]]
        assert (m["client_id"], m["client_host"], m["instance_id"]) == (mine["client_id"], mine["client_host"], None)
        assert m["assignment"] == {TOPIC: sorted(mine["assignment"][TOPIC])}
        assert m["topics"] == [TOPIC]
    by_member = {m["member_id"]: m["assignment"][TOPIC] for m in described["members"]}
    assert by_member == {got["member_ids"][n]: sorted(ps) for n, ps in got["assignments"].items()}

    # FetchOffsets = the committed offsets the coordinator holds
    fetched = driver.call("fetchOffsets", group=gid)["offsets"]
    assert (
        {int(p): o["offset"] for p, o in fetched[TOPIC].items()}
        == live_offsets(c, gid)
        == {p: 10 for p in range(PARTITIONS)}
    )
    assert set(fetched) == {TOPIC} and all(o["error"] is None for o in fetched[TOPIC].values())
    stored = c.call(lambda: {p: o.leader_epoch for (t, p), o in c.state.groups.offsets.offsets[gid].items()})
    assert {int(p): o["leader_epoch"] for p, o in fetched[TOPIC].items()} == stored
    metadata = c.call(lambda: {p: o.metadata for (t, p), o in c.state.groups.offsets.offsets[gid].items()})
    assert {int(p): o["metadata"] for p, o in fetched[TOPIC].items()} == metadata

    # DeleteGroups while members are active: NON_EMPTY_GROUP, nothing deleted
    assert driver.call("deleteGroups", groups=[gid])["results"] == {gid: "NON_EMPTY_GROUP"}
    assert live_group(c, gid)["state"] == "Stable" and live_offsets(c, gid)

    # everyone leaves: Empty, offsets kept
    for name in "abc":
        driver.call("stop", name=name)
    live = live_group(c, gid)
    assert (live["state"], live["members"]) == ("Empty", {})
    described = driver.call("describeGroups", groups=[gid])["groups"][gid]
    assert (described["error"], described["state"], described["members"]) == (None, "Empty", [])
    assert [g for g in driver.call("listGroups")["groups"] if g["group"] == gid] == [
        {"group": gid, "coordinator": coordinator, "protocol_type": "consumer", "state": "Empty"}
    ]
    fetched = driver.call("fetchOffsets", group=gid)["offsets"]
    assert {int(p): o["offset"] for p, o in fetched[TOPIC].items()} == {p: 10 for p in range(PARTITIONS)}

    # now DeleteGroups succeeds; the group and its offsets are gone
    assert driver.call("deleteGroups", groups=[gid])["results"] == {gid: None}
    assert live_group(c, gid) is None and live_offsets(c, gid) == {}
    assert [e["group"] for e in events(c, "group_deleted", gid)] == [gid]
    assert not [g for g in driver.call("listGroups")["groups"] if g["group"] == gid]
    assert driver.call("fetchOffsets", group=gid)["offsets"] == {}
    assert driver.call("deleteGroups", groups=[gid])["results"] == {gid: "GROUP_ID_NOT_FOUND"}
    gone = driver.call("describeGroups", groups=[gid])["groups"][gid]
    assert (gone["state"], gone["members"]) == ("Dead", [])
    assert_healthy(c, driver)
    refused = {(e.details["api"], e.details["error"]) for e in c.events if e.kind == "request_error"}
    rebalancing = {
        ("JoinGroup", "MEMBER_ID_REQUIRED"),
        ("Heartbeat", "REBALANCE_IN_PROGRESS"),
        ("SyncGroup", "REBALANCE_IN_PROGRESS"),
    }  # members joining one after the other
    assert sorted(refused - rebalancing) == [
        ("CreateTopics", "TOPIC_ALREADY_EXISTS"),
        ("DeleteGroups", "GROUP_ID_NOT_FOUND"),
        ("DeleteGroups", "NON_EMPTY_GROUP"),
        ("DescribeGroups", "GROUP_ID_NOT_FOUND"),
    ], refused

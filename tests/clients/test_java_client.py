"""The Java Kafka client (org.apache.kafka:kafka-clients) against FakeCluster.

``tests/clients/java`` is a small Maven project whose one class, ``fakebroker.JavaClient``,
takes ``BOOTSTRAP SCENARIO ARGS...`` and prints one JSON object per line on stdout. The
session fixture ``java_client_jar`` builds its shaded jar with ``mvn -q -B package`` when
the jar is missing or older than ``pom.xml`` or a source file (Maven keeps its downloads
in ~/.m2, so later builds need no network).

Set ``FAKEBROKER_JAVA_LOG=debug`` to get the client's DEBUG log (slf4j-simple, on stderr;
shown in a failing test's message).
"""

from __future__ import annotations

import base64
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

pytestmark = [pytest.mark.clients, pytest.mark.java]

JAVA_DIR = Path(__file__).parent / "java"
JAR = JAVA_DIR / "target" / "fakebroker-java-client.jar"
# The classes a client JVM loads, parsed and verified once (application class data sharing):
# written by ``java_client_jar`` after each build, read by every JVM ``java_command`` starts
CLASS_ARCHIVE = JAR.with_suffix(".jsa")
BUILD_TIMEOUT = 600  # a first build downloads kafka-clients, its codecs and Maven's plugins
RUN_TIMEOUT = 120
KAFKA_CLIENTS_VERSION = "4.4.0"  # as in pom.xml
N = 500
CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # compression.type -> batch attribute codec id


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not installed: the Java client tests need a JDK (17+) and Maven "
            "(Debian packages default-jdk-headless and maven)"
        )
    return path


def _sources() -> list[Path]:
    return [JAVA_DIR / "pom.xml", *sorted((JAVA_DIR / "src").rglob("*"))]


def _jar_is_fresh() -> bool:
    if not JAR.exists():
        return False
    built = JAR.stat().st_mtime
    return all(p.stat().st_mtime <= built for p in _sources() if p.is_file())


@pytest.fixture(scope="session")
def java_client_jar() -> Path:
    """The shaded client jar, built once (under a lock, in case several pytest processes start together)."""
    _tool("java")
    (JAVA_DIR / "target").mkdir(exist_ok=True)
    with open(JAVA_DIR / "target" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _jar_is_fresh():
            mvn = _tool("mvn")
            started = time.monotonic()
            try:
                out = subprocess.run(
                    [mvn, "-q", "-B", "package"], cwd=JAVA_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT
                )
            except subprocess.TimeoutExpired as exc:
                pytest.fail(f"mvn package took over {BUILD_TIMEOUT} s:\n{exc.stdout}\n{exc.stderr}")
            if out.returncode != 0 or not JAR.exists():
                pytest.fail(f"mvn package failed ({out.returncode}):\n{out.stdout[-8000:]}\n{out.stderr[-4000:]}")
            JAR.touch()  # newer than every source even if a source's clock is ahead
            print(f"built {JAR.name} in {time.monotonic() - started:.1f} s")
        if not (CLASS_ARCHIVE.exists() and CLASS_ARCHIVE.stat().st_mtime >= JAR.stat().st_mtime):
            _archive_classes()
    return JAR


def _archive_classes() -> None:
    """Write ``CLASS_ARCHIVE``: the classes a GroupScenarios JVM loads while it produces, two
    members of a group consume and commit, and its Admin client answers group calls, dumped when
    it exits (``-XX:ArchiveClassesAtExit``). A JVM started with it loads those classes from the
    archive, already parsed and verified: about half a second less for each JVM of the tests.
    Best effort: without the archive every JVM runs as well, only starting slower; a JVM given an
    archive of another build of the jar ignores it (the JVM checks the jar's size and time)."""
    from .driver import LineDriver
    from .jvm_driver import JvmDriver

    class Trainer(LineDriver):
        encode = JvmDriver.encode

    partial = CLASS_ARCHIVE.with_name(CLASS_ARCHIVE.name + ".partial")
    partial.unlink(missing_ok=True)
    with FakeCluster(brokers=1, topics={"orders": 2}).run_in_thread() as cluster:
        cmd = java_command(
            f"-XX:ArchiveClassesAtExit={partial}",
            "-cp",
            str(JAR),
            "fakebroker.GroupScenarios",
            cluster.bootstrap_servers,
            class_archive=False,
        )
        driver = Trainer(cmd, cluster, lifetime=120)
        try:
            driver.call("produce", topic="orders", n=20, partitions=2)
            for name in ("a", "b"):
                driver.call("start", name=name, group="cds", topic="orders")
            driver.call("waitAssigned", names=["a", "b"], topic="orders", partitions=2)
            driver.call("waitConsumed", total=20)
            driver.call("waitCommitted", group="cds", topic="orders")
            for call in ("describeGroup", "fetchOffsets"):
                driver.call(call, group="cds")
            driver.call("listGroups")
            driver.call("exit", timeout=60)
            exited = driver.proc.wait(60)
        except (Exception, pytest.fail.Exception) as exc:
            driver.kill()
            print(f"no class archive: the training JVM failed: {exc}")
            exited = None
        finally:
            driver.cancel_killer()
    if exited == 0 and partial.exists():
        os.replace(partial, CLASS_ARCHIVE)  # whole or not at all, for the JVMs starting meanwhile
    partial.unlink(missing_ok=True)


def java_command(*args: str, class_archive: bool = True) -> list[str]:
    """``java`` with the settings every driver runs with (quick start, with the jar's class archive
    when there is one, FAKEBROKER_JAVA_LOG's level)."""
    level = os.environ.get("FAKEBROKER_JAVA_LOG", "warn")
    # a missing archive or one of another build is passed over, and the JVM says nothing of it
    # (-Xlog: its warning would otherwise be a line on stdout, among the driver's)
    shared = [f"-XX:SharedArchiveFile={CLASS_ARCHIVE}", "-Xlog:cds=off,cds+dynamic=off"] if class_archive else []
    return [
        _tool("java"),
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        *shared,
        f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        *args,
    ]


def run_java(jar: Path, bootstrap: str, scenario: str, *args: object) -> list[dict[str, Any]]:
    """Run one scenario; returns its JSON lines. Fails the test on a non-zero exit or a timeout."""
    cmd = java_command("-jar", str(jar), bootstrap, scenario, *map(str, args))
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"java {scenario} ran over {RUN_TIMEOUT} s\nstdout:\n{_tail(exc.stdout)}\nstderr:\n{_tail(exc.stderr)}"
        )
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    errors = [line for line in lines if line["type"] == "error"]
    if out.returncode != 0 or errors or not lines or lines[-1]["type"] != "end":
        pytest.fail(f"java {scenario} exited {out.returncode}, errors: {errors}\nstderr:\n{_tail(out.stderr)}")
    assert lines[0] == {"type": "version", "kafka_clients": KAFKA_CLIENTS_VERSION, "java": lines[0]["java"]}
    return lines


def _tail(text: str | bytes | None, n: int = 12000) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return (text or "")[-n:]


def of_type(lines: list[dict], kind: str, **match: Any) -> list[dict]:
    return [line for line in lines if line["type"] == kind and all(line.get(k) == v for k, v in match.items())]


def one(lines: list[dict], kind: str, **match: Any) -> dict:
    found = of_type(lines, kind, **match)
    assert len(found) == 1, f"expected one {kind} {match}, got {found}"
    return found[0]


def kafka_uuid(u) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def problems(cluster: FakeCluster) -> list[str]:
    return [e.describe() for e in cluster.events if e.kind in ("request_error", "produce_rejected")]


def check_round_trip(lines: list[dict], cluster: FakeCluster, topic: str, n: int, partitions: int) -> None:
    """Every record acknowledged at, stored at and read back from its exact place, in order."""
    want = expected_records(n, partitions)
    sent = of_type(lines, "sent", topic=topic)
    assert [s["i"] for s in sent] == list(range(n))
    assert [(s["partition"], s["offset"]) for s in sent] == [(i % partitions, i // partitions) for i in range(n)]

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

    stored = [(p, o, k.decode(), v.decode()) for p, o, k, v in cluster.records(topic)]
    assert stored == expected_rows
    assert [cluster.offsets(topic, p) for p in range(partitions)] == [(0, len(want[p])) for p in range(partitions)]


def stored_headers(cluster: FakeCluster, topic: str) -> list[tuple[int, rec.BatchHeader]]:
    """(partition, header) of every stored batch; read directly, as the client has exited."""
    return [
        (p.index, h)
        for p in cluster.state.topics[topic].partitions
        for batch in p.log.batches
        for h in rec.iter_batch_headers(batch.data)
    ]


# -- produce with acks=all + idempotence, consume with assign() + seekToBeginning --------------


def test_idempotent_produce_then_assign_and_consume(java_client_jar, cluster3):
    lines = run_java(java_client_jar, cluster3.bootstrap_servers, "produce-consume", "orders", N)
    check_round_trip(lines, cluster3, "orders", N, 6)
    assert one(lines, "produced", topic="orders")["partitions"] == 6

    # idempotence was really on: one producer id, per-partition sequences from 0 without gaps
    headers = stored_headers(cluster3, "orders")
    assert {h.producer_id for _, h in headers} == {next(h.producer_id for _, h in headers)}
    assert headers[0][1].producer_id >= 0
    for p in range(6):
        seqs = [(h.base_sequence, h.last_offset_delta) for q, h in headers if q == p]
        expected_next = 0
        for base, delta in seqs:
            assert base == expected_next, f"partition {p}: sequences {seqs}"
            expected_next = base + delta + 1
        assert expected_next == len(expected_records(N, 6)[p])
    assert [e for e in cluster3.events if e.kind == "producer_id"]
    assert not problems(cluster3)


# -- every compression.type ----------------------------------------------------------------


@pytest.fixture(scope="module")
def compression_run(java_client_jar):
    """One JVM produces and consumes ``comp-<codec>`` for every codec (the JVM start dominates)."""
    with FakeCluster(brokers=3, topics={f"comp-{codec}": 6 for codec in CODECS}).run_in_thread() as cluster:
        lines = run_java(java_client_jar, cluster.bootstrap_servers, "compression", "comp", 120, *CODECS)
        yield cluster, lines


@pytest.mark.parametrize("codec", list(CODECS))
def test_compression_round_trip(compression_run, codec):
    cluster, lines = compression_run
    topic = f"comp-{codec}"
    check_round_trip(lines, cluster, topic, 120, 6)
    headers = stored_headers(cluster, topic)
    assert headers and {h.compression for _, h in headers} == {CODECS[codec]}
    # linger.ms=20 and 120 records sent at once: codecs ran over multi-record batches
    assert any(h.records_count > 1 for _, h in headers)
    assert not [p for p in problems(cluster) if topic in p]


# -- Admin --------------------------------------------------------------------------------


def test_admin_api_walk(java_client_jar, cluster3):
    c = cluster3
    main, doomed = "adm-main", "adm-doomed"
    lines = run_java(java_client_jar, c.bootstrap_servers, "admin", "adm")

    # createTopics, with configs; again -> TopicExistsException
    created_main, created_doomed = one(lines, "created", topic=main), one(lines, "created", topic=doomed)
    assert (created_main["partitions"], created_main["replication_factor"]) == (3, 1)
    assert (created_doomed["partitions"], created_doomed["replication_factor"]) == (1, 3)
    assert created_main["configs"]["retention.ms"] == "86400000"
    assert created_main["configs"]["max.message.bytes"] == "2000000"
    assert created_doomed["configs"]["retention.ms"] == "604800000"
    assert created_main["topic_id"] == kafka_uuid(c.state.topics[main].topic_id)
    assert one(lines, "create_again")["error"] == "TopicExistsException"

    # describeTopics, before and after createPartitions 3 -> 5; shrinking fails
    described = one(lines, "describe", topic=main)
    assert described["topic_id"] == created_main["topic_id"] and described["internal"] is False
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    doomed_desc = one(lines, "describe", topic=doomed)
    assert doomed_desc["topic_id"] == created_doomed["topic_id"]
    [only] = doomed_desc["partitions"]
    assert (
        sorted(only["replicas"]) == [0, 1, 2]
        and sorted(only["isr"]) == [0, 1, 2]
        and only["leader"] in only["replicas"]
    )
    grown = one(lines, "described_after_grow", topic=main)
    assert [p["partition"] for p in grown["partitions"]] == [0, 1, 2, 3, 4]
    assert grown["partitions"][:3] == described["partitions"]
    state_parts = c.state.topics[main].partitions
    assert [(p["leader"], p["replicas"], p["isr"]) for p in grown["partitions"]] == [
        (sp.leader, sp.replicas, sp.isr) for sp in state_parts
    ]
    assert c.topics()[main] == 5
    assert one(lines, "shrink")["error"] == "InvalidPartitionsException"

    # describeConfigs: topic and broker, before and after incrementalAlterConfigs
    topic_before = one(lines, "configs_before", resource_type="TOPIC")["configs"]
    assert topic_before["retention.ms"]["value"] == "86400000"
    assert topic_before["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert topic_before["max.message.bytes"] == {
        "value": "2000000",
        "source": "DYNAMIC_TOPIC_CONFIG",
        "read_only": False,
        "sensitive": False,
        "type": "INT",
    }
    assert (topic_before["cleanup.policy"]["value"], topic_before["cleanup.policy"]["source"]) == (
        "delete",
        "DEFAULT_CONFIG",
    )
    broker_before = one(lines, "configs_before", resource_type="BROKER")
    assert broker_before["name"] == "0"
    assert broker_before["configs"]["num.partitions"]["value"] == "1"
    assert broker_before["configs"]["num.partitions"]["source"] == "DEFAULT_CONFIG"
    assert broker_before["configs"]["auto.create.topics.enable"]["value"] == "true"

    assert of_type(lines, "altered")
    assert one(lines, "alter_unknown")["error"] == "InvalidConfigurationException"
    topic_after = one(lines, "configs_after", resource_type="TOPIC")["configs"]
    assert (topic_after["retention.ms"]["value"], topic_after["retention.ms"]["source"]) == (
        "3600000",
        "DYNAMIC_TOPIC_CONFIG",
    )
    assert (topic_after["max.message.bytes"]["value"], topic_after["max.message.bytes"]["source"]) == (
        "1048588",
        "DEFAULT_CONFIG",
    )
    assert (topic_after["cleanup.policy"]["value"], topic_after["cleanup.policy"]["source"]) == (
        "delete,compact",
        "DYNAMIC_TOPIC_CONFIG",
    )
    broker_after = one(lines, "configs_after", resource_type="BROKER")["configs"]
    assert broker_after["log.retention.bytes"]["value"] == "2000000"
    assert broker_after["log.retention.bytes"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert c.state.topics[main].config.overrides == {"retention.ms": "3600000", "cleanup.policy": "delete,compact"}
    assert c.state.config.dynamic == {"min.insync.replicas": "1", "log.retention.bytes": "2000000"}  # 1st: KRaft's

    # ten records on partition 0 with chosen timestamps; record 6 has the largest
    ts = {r["i"]: r["timestamp"] for r in of_type(lines, "ts_record")}
    assert [(r["partition"], r["offset"]) for r in of_type(lines, "ts_record")] == [(0, i) for i in range(10)]
    base = ts[0]

    def offsets(kind: str, partition: int) -> dict[str, tuple[int, int]]:
        return {x["spec"]: (x["offset"], x["timestamp"]) for x in of_type(lines, kind, partition=partition)}

    assert offsets("list_offsets", 0) == {
        "earliest": (0, -1),
        "latest": (10, -1),
        "for_timestamp": (3, ts[3]),  # base + 2500 -> first record at or after it
        "for_timestamp_exact": (3, ts[3]),  # base + 3000
        "for_timestamp_future": (-1, -1),
        "max_timestamp": (6, base + 50_000),
    }
    assert offsets("list_offsets_empty", 4) == {
        "earliest": (0, -1),
        "latest": (0, -1),
        "for_timestamp": (-1, -1),
        "for_timestamp_exact": (-1, -1),
        "for_timestamp_future": (-1, -1),
        "max_timestamp": (-1, -1),
    }

    # deleteRecords before 3; beyond the high watermark fails
    assert one(lines, "deleted_records")["low_watermark"] == 3
    assert one(lines, "delete_beyond")["error"] == "OffsetOutOfRangeException"
    assert offsets("list_offsets_after_delete", 0) == {
        "earliest": (3, -1),
        "latest": (10, -1),
        "for_timestamp_deleted": (3, ts[3]),
    }
    assert c.offsets(main, 0) == (3, 10)
    assert [(o, k, v) for _, o, k, v in c.records(main, 0)] == [
        (i, f"k{i}".encode(), f"v{i}".encode()) for i in range(3, 10)
    ]

    # deleteTopics
    assert one(lines, "describe_deleted")["error"] == "UnknownTopicOrPartitionException"
    assert doomed not in c.topics()
    assert one(lines, "topics")["names"] == sorted(c.topics()) == [main, "orders"]

    # describeCluster
    cluster = one(lines, "cluster")
    assert cluster["cluster_id"] == c.cluster_id
    assert cluster["controller"] == c.state.controller_id
    assert [(n["id"], f"{n['host']}:{n['port']}", n["rack"]) for n in cluster["nodes"]] == [
        (i, addr, None) for i, addr in enumerate(c.bootstrap_servers.split(","))
    ]

    # the broker saw the changes in this order, and refused only what the test expected it to
    kinds = [
        (e.kind, e.details.get("topic") or e.details.get("resource"))
        for e in c.events
        if e.kind in ("topic_created", "partitions_created", "configs_altered", "records_deleted", "topic_deleted")
    ]
    assert kinds == [
        ("topic_created", "orders"),
        ("topic_created", main),
        ("topic_created", doomed),
        ("partitions_created", main),
        ("configs_altered", main),
        ("configs_altered", "(cluster)"),
        ("records_deleted", main),
        ("topic_deleted", doomed),
    ]
    refused = sorted({(e.details["api"], e.details["error"]) for e in c.events if e.kind == "request_error"})
    assert refused == [
        ("CreatePartitions", "INVALID_PARTITIONS"),
        ("CreateTopics", "TOPIC_ALREADY_EXISTS"),
        ("DeleteRecords", "OFFSET_OUT_OF_RANGE"),
        ("DescribeTopicPartitions", "UNKNOWN_TOPIC_OR_PARTITION"),  # describeTopics of the deleted topic (4.x)
        ("IncrementalAlterConfigs", "INVALID_CONFIG"),
    ]

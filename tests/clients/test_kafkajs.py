"""kafkajs (Node.js) against fakebroker: produce and read back, codecs, idempotence, admin.

Each test runs ``tests/clients/js/scenarios.js`` (kafkajs pinned in ``js/package.json`` and
``js/package-lock.json``) in a subprocess with a timeout; the script prints one JSON document
and the test asserts on it and on the cluster's own state.

Consuming: kafkajs's public Consumer always joins a consumer group (FindCoordinator, JoinGroup,
SyncGroup, ... which fakebroker does not implement yet) and offers no ``assign()``. So the
consumed side is checked (a) through fakebroker's ``cluster.records()`` from Python, (b) with
kafkajs's public ``admin.fetchTopicOffsets`` for the high watermarks, and (c) by reading every
record back with plain Fetch requests through kafkajs's *internal* Cluster/Broker classes (stable
for the pinned version), so kafkajs's own batch decoding and decompression are exercised too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import compression
from fakebroker.protocol import records as rec

from .conftest import expected_records

pytestmark = [pytest.mark.clients, pytest.mark.node]

JS_DIR = Path(__file__).parent / "js"
SCRIPT = JS_DIR / "scenarios.js"
RUN_TIMEOUT = 45  # seconds per kafkajs run (the script's own watchdog fires at 40 s)
NPM_CI_TIMEOUT = 300
CODEC_IDS = {
    "none": compression.NONE,
    "gzip": compression.GZIP,
    "snappy": compression.SNAPPY,
    "lz4": compression.LZ4,
    "zstd": compression.ZSTD,
}


# -- running kafkajs -------------------------------------------------------------------------
@pytest.fixture(scope="session")
def node() -> str:
    """Path of ``node``, with ``js/node_modules`` installed from the lock file if missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are needed for the kafkajs tests: scripts/setup.sh installs them")
    if not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        proc = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=JS_DIR, capture_output=True, text=True, timeout=NPM_CI_TIMEOUT
        )
        assert proc.returncode == 0, f"npm ci failed in {JS_DIR}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return node


@pytest.fixture(scope="session")
def kafkajs_codecs(node) -> dict:
    """Which codecs this kafkajs install can write (codec packages are optional)."""
    return _run(node, "127.0.0.1:1", "codecs", {})


def _broker_log(cluster: FakeCluster) -> str:
    lines = [e.describe() for e in cluster.events if e.kind != "client_connected"]
    return "\n".join(lines[-60:])


def _run(node: str, bootstrap: str, scenario: str, args: dict, cluster: FakeCluster | None = None) -> dict:
    env = {
        **os.environ,
        "KAFKAJS_LOG_LEVEL": os.environ.get("KAFKAJS_LOG_LEVEL", "WARN"),
        "SCENARIO_TIMEOUT_MS": str((RUN_TIMEOUT - 5) * 1000),
    }
    cmd = [node, str(SCRIPT), bootstrap, scenario, json.dumps(args)]
    try:
        proc = subprocess.run(cmd, cwd=JS_DIR, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"kafkajs {scenario} {args} timed out after {RUN_TIMEOUT} s\nstderr:\n{exc.stderr}\n"
            f"broker events:\n{_broker_log(cluster) if cluster else ''}"
        )
    assert proc.returncode == 0, (
        f"kafkajs {scenario} {args} exited {proc.returncode}\nstderr:\n{proc.stderr[-6000:]}\n"
        f"broker events:\n{_broker_log(cluster) if cluster else ''}"
    )
    return json.loads(proc.stdout)


def kafkajs(node: str, cluster: FakeCluster, scenario: str, **args) -> dict:
    result = _run(node, cluster.bootstrap_servers, scenario, args, cluster)
    assert_broker_healthy(cluster)
    return result


def assert_broker_healthy(cluster: FakeCluster) -> None:
    """No handler crashed and no connection was dropped for a protocol error."""
    bad = [e.describe() for e in cluster.events if e.kind in ("handler_error", "connection_closed")]
    assert not bad, "\n".join(bad)


# -- reading the cluster's state ---------------------------------------------------------------
def stored_batch_headers(cluster: FakeCluster, topic: str) -> list[tuple[int, rec.BatchHeader]]:
    """(partition, header) of every batch stored for ``topic``, in partition and offset order."""

    def read():
        return [
            (p.index, header)
            for p in cluster.state.topics[topic].partitions
            for stored in p.log.batches
            for header in rec.iter_batch_headers(stored.data)
        ]

    return cluster.call(read)


def by_partition(rows, partitions: int) -> dict[int, list]:
    out: dict[int, list] = {p: [] for p in range(partitions)}
    for p, offset, key, value in rows:
        out[p].append((offset, key, value))
    return out


def assert_partition_order(got: dict[int, list], n: int, partitions: int, what: str) -> None:
    """Every partition holds exactly ``expected_records`` in order, at offsets 0, 1, 2, ..."""
    want = expected_records(n, partitions)
    for p in range(partitions):
        pairs = [
            (k if isinstance(k, bytes) else k.encode(), v if isinstance(v, bytes) else v.encode()) for _, k, v in got[p]
        ]
        assert pairs == want[p], f"{what}: records of partition {p}"
        assert [o for o, _, _ in got[p]] == list(range(len(want[p]))), f"{what}: offsets of partition {p}"


def assert_produced(cluster: FakeCluster, out: dict, n: int, partitions: int, topic: str = "orders") -> None:
    """What kafkajs was told (acks, watermarks, fetched records) agrees with what is stored."""
    assert out["sent"], "no produce acknowledgements"
    assert all(s["errorCode"] == 0 for s in out["sent"]), out["sent"]
    want = expected_records(n, partitions)
    for p in range(partitions):
        bases = [s["baseOffset"] for s in out["sent"] if s["partition"] == p]
        assert bases == sorted(bases) and bases[0] == 0 and len(set(bases)) == len(bases), (
            f"base offsets of {p}: {bases}"
        )
        assert cluster.offsets(topic, p) == (0, len(want[p]))
    assert {o["partition"]: (o["low"], o["high"]) for o in out["offsets"]} == {
        p: (0, len(want[p])) for p in range(partitions)
    }, "admin.fetchTopicOffsets high watermarks"
    assert_partition_order(by_partition(cluster.records(topic), partitions), n, partitions, "cluster.records")
    if "records" in out:
        assert_partition_order(by_partition(out["records"], partitions), n, partitions, "kafkajs Fetch")
        assert {int(p): hw for p, hw in out["highWatermarks"].items()} == {p: len(want[p]) for p in range(partitions)}


# -- tests -------------------------------------------------------------------------------------
def test_produce_300_records_explicit_partitions_and_read_them_back(node, cluster3):
    out = kafkajs(node, cluster3, "produce", topic="orders", n=300, partitions=6, chunk=50)
    assert_produced(cluster3, out, 300, 6)
    # 6 sends of 50 records: each partition got one batch per send, acknowledged in order.
    headers = stored_batch_headers(cluster3, "orders")
    assert all(sum(1 for p, _ in headers if p == part) == 6 for part in range(6)), [
        (p, h.base_offset) for p, h in headers
    ]
    assert {cluster3.leader("orders", p) for p in range(6)} == {0, 1, 2}, "the records went to all three leaders"
    assert out["fetchVersions"] and all(v >= 4 for v in out["fetchVersions"]), out["fetchVersions"]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_each_compression_codec(node, cluster3, kafkajs_codecs, codec):
    if not kafkajs_codecs["available"][codec]:
        reason = f"kafkajs has no {codec} codec here: {kafkajs_codecs['unavailableReasons'].get(codec)}"
        if codec != "lz4":  # only LZ4's package is optional (a native build): the others are installed
            pytest.fail(reason)
        pytest.skip(reason)
    out = kafkajs(node, cluster3, "produce", topic="orders", n=120, partitions=6, chunk=60, compression=codec)
    assert_produced(cluster3, out, 120, 6)
    headers = stored_batch_headers(cluster3, "orders")
    assert len(headers) == 12
    assert {h.compression for _, h in headers} == {CODEC_IDS[codec]}, "batches are stored as kafkajs compressed them"


def test_idempotent_producer_lands_every_record_exactly_once(node, cluster3):
    out = kafkajs(node, cluster3, "produce", topic="orders", n=300, partitions=6, chunk=50, idempotent=True, acks=-1)
    assert_produced(cluster3, out, 300, 6)
    stored = cluster3.records("orders")
    assert len(stored) == 300 and len({v for *_, v in stored}) == 300, "each record exactly once"
    pids = [e.details for e in cluster3.events if e.kind == "producer_id"]
    assert len(pids) == 1 and pids[0]["transactional_id"] is None, pids
    pid = pids[0]["producer_id"]
    headers = stored_batch_headers(cluster3, "orders")
    for part in range(6):
        batches = [h for p, h in headers if p == part]
        assert all((h.producer_id, h.producer_epoch) == (pid, 0) for h in batches)
        assert all(not h.is_transactional for h in batches)
        # sequences continue from batch to batch: base_sequence == the batch's first offset
        assert [h.base_sequence for h in batches] == [h.base_offset for h in batches], [
            (h.base_sequence, h.base_offset) for h in batches
        ]
    assert not [e for e in cluster3.events if e.kind == "request_error"], _broker_log(cluster3)


def test_admin_topics_partitions_configs_offsets_and_deletes(node):
    config = {"log.retention.ms": 86_400_000}  # a static broker setting, visible in describeConfigs
    with FakeCluster(brokers=3, topics={"orders": 6}, config=config).run_in_thread() as cluster:
        admin = lambda step, **args: kafkajs(node, cluster, "admin", step=step, **args)  # noqa: E731

        # createTopics
        out = admin(
            "createTopics",
            topics=[
                {
                    "topic": "audit",
                    "numPartitions": 3,
                    "replicationFactor": 2,
                    "configEntries": [{"name": "retention.ms", "value": "3600000"}],
                }
            ],
        )
        assert out == {"created": True}
        assert cluster.topics() == {"orders": 6, "audit": 3}
        assert [len(cluster.state.topics["audit"].partitions[p].replicas) for p in range(3)] == [2, 2, 2]
        assert cluster.state.topics["audit"].config.get("retention.ms") == "3600000"
        # an existing topic: kafkajs swallows TOPIC_ALREADY_EXISTS and answers false
        assert admin("createTopics", topics=[{"topic": "audit", "numPartitions": 1}]) == {"created": False}
        assert cluster.topics()["audit"] == 3
        assert any(e.kind == "request_error" and e.details["error"] == "TOPIC_ALREADY_EXISTS" for e in cluster.events)
        # more replicas than brokers
        out = admin("createTopics", topics=[{"topic": "too-wide", "numPartitions": 1, "replicationFactor": 4}])
        assert out["error"] == "KafkaJSAggregateError"
        assert [e["type"] for e in out["errors"]] == ["INVALID_REPLICATION_FACTOR"], out
        assert "too-wide" not in cluster.topics()
        # validateOnly creates nothing
        assert admin("createTopics", validateOnly=True, topics=[{"topic": "dry-run", "numPartitions": 2}]) == {
            "created": True
        }
        assert "dry-run" not in cluster.topics()

        # fetchTopicMetadata
        out = admin("fetchTopicMetadata", topics=["audit"])
        assert out["listTopics"] == ["audit", "orders"]
        [meta] = out["topics"]
        assert meta["name"] == "audit"
        assert [(p["partitionId"], p["leader"], p["errorCode"]) for p in meta["partitions"]] == [
            (p, cluster.leader("audit", p), 0) for p in range(3)
        ]
        assert [p["replicas"] for p in meta["partitions"]] == [
            cluster.state.topics["audit"].partitions[p].replicas for p in range(3)
        ]

        # createPartitions
        admin("createPartitions", topicPartitions=[{"topic": "audit", "count": 5}])
        assert cluster.topics()["audit"] == 5
        [meta] = admin("fetchTopicMetadata", topics=["audit"])["topics"]
        assert [(p["partitionId"], p["leader"]) for p in meta["partitions"]] == [
            (p, cluster.leader("audit", p)) for p in range(5)
        ]
        assert all(len(p["replicas"]) == 2 for p in meta["partitions"])

        # describeConfigs: a topic override, a broker setting inherited by a topic, the broker itself
        out = admin(
            "describeConfigs",
            resources=[
                {"type": "TOPIC", "name": "audit", "configNames": ["retention.ms", "cleanup.policy"]},
                {"type": "TOPIC", "name": "orders", "configNames": ["retention.ms"]},
                {"type": "BROKER", "name": "0"},
            ],
        )
        audit, orders, broker = out["resources"]
        assert (audit["errorCode"], audit["resourceType"], audit["resourceName"]) == (0, 2, "audit")
        assert audit["configs"] == {
            "retention.ms": {"value": "3600000", "readOnly": False, "isDefault": False, "source": 1},  # TOPIC_CONFIG
            "cleanup.policy": {"value": "delete", "readOnly": False, "isDefault": True, "source": 5},  # DEFAULT_CONFIG
        }
        assert (
            orders["configs"]["retention.ms"]["value"]
            == cluster.state.topics["orders"].config.get("retention.ms")
            == "86400000"
        )
        assert orders["configs"]["retention.ms"]["source"] == 4  # STATIC_BROKER_CONFIG
        assert (broker["errorCode"], broker["resourceType"], broker["resourceName"]) == (0, 4, "0")
        assert (
            broker["configs"]["log.retention.ms"]["value"] == cluster.state.config.get("log.retention.ms") == "86400000"
        )
        identity = {"node.id", "broker.id", "process.roles", "listeners", "advertised.listeners"}  # the broker's own
        assert {name: c["value"] for name, c in broker["configs"].items() if name not in identity} == {
            e.name: e.value for e in cluster.state.config.describe(0) if e.name not in identity
        }
        assert (broker["configs"]["node.id"]["value"], broker["configs"]["node.id"]["source"]) == ("0", 4)

        # fetchTopicOffsets / fetchTopicOffsetsByTimestamp on records with known timestamps:
        # record i goes to partition i % 5 with timestamp T0 + i, so offset k of partition p has T0 + p + 5k.
        t0 = 1_700_000_000_000
        out = kafkajs(
            node, cluster, "produce", topic="audit", n=50, partitions=5, chunk=25, timestampBase=t0, readBack=False
        )
        assert_produced(cluster, out, 50, 5, topic="audit")
        out = admin("fetchTopicOffsets", topic="audit", timestamps=[0, t0 + 23, t0 + 10_000])
        assert (
            sorted((o["partition"], o["low"], o["high"]) for o in out["offsets"])
            == [(p, *cluster.offsets("audit", p)) for p in range(5)]
            == [(p, 0, 10) for p in range(5)]
        )
        by_ts = {int(ts): {o["partition"]: o["offset"] for o in rows} for ts, rows in out["byTimestamp"].items()}
        assert by_ts[0] == {p: 0 for p in range(5)}
        assert by_ts[t0 + 23] == {0: 5, 1: 5, 2: 5, 3: 4, 4: 4}  # first timestamp >= T0+23: 25, 26, 27, 23, 24
        assert by_ts[t0 + 10_000] == {
            p: 10 for p in range(5)
        }  # none: the broker answers -1, kafkajs uses the high watermark

        # deleteTopicRecords: partition 0 before offset 4, partition 1 everything (-1 = high watermark)
        out = admin(
            "deleteTopicRecords",
            topic="audit",
            partitions=[{"partition": 0, "offset": 4}, {"partition": 1, "offset": -1}],
        )
        lows = {o["partition"]: (o["low"], o["high"]) for o in out["offsets"]}
        assert lows == {0: (4, 10), 1: (10, 10), 2: (0, 10), 3: (0, 10), 4: (0, 10)}
        assert {p: cluster.offsets("audit", p) for p in range(5)} == lows
        assert [o for _, o, _, _ in cluster.records("audit", 0)] == list(range(4, 10))
        assert cluster.records("audit", 1) == []
        # kafkajs sends one DeleteRecords per leader, concurrently: the events come in either order
        deleted = sorted(
            (e.details for e in cluster.events if e.kind == "records_deleted"), key=lambda d: d["partition"]
        )
        assert deleted == [
            {"topic": "audit", "partition": 0, "before": 4},
            {"topic": "audit", "partition": 1, "before": 10},
        ]
        out = admin("fetchTopicOffsets", topic="audit", timestamps=[0])
        assert {o["partition"]: o["offset"] for o in out["byTimestamp"]["0"]} == {0: 4, 1: 10, 2: 0, 3: 0, 4: 0}

        # deleteTopics
        assert admin("deleteTopics", topics=["audit"]) == {"listTopics": ["orders"]}
        assert cluster.topics() == {"orders": 6}
        assert [e.details["topic"] for e in cluster.events if e.kind == "topic_deleted"] == ["audit"]

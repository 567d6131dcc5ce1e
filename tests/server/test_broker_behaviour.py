"""What the broker answers, request by request, checked with exact requests from a raw client."""

from __future__ import annotations

import threading
import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import records
from fakebroker.protocol.error_codes import ErrorCode

from ..raw_client import RawClient

PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS = 0, 1, 2, 3, 18
INIT_PRODUCER_ID = 22


@pytest.fixture
def cluster():
    with FakeCluster(brokers=2, topics={"t": 2}).run_in_thread() as c:
        yield c


def leader_port(cluster: FakeCluster, topic: str, partition: int) -> int:
    return cluster.servers[cluster.leader(topic, partition)].port


def produce_body(topic: str, partition: int, batch: bytes, acks: int = -1, transactional_id=None) -> dict:
    return {
        "acks": acks,
        "timeout_ms": 5000,
        "transactional_id": transactional_id,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
    }


def partition_result(response):
    return response.responses[0].partition_responses[0]


def batch(values: list[bytes], **kw) -> bytes:
    return records.build_batch([(None, v) for v in values], **kw)


# -- ApiVersions ------------------------------------------------------------------------
def test_api_versions_lists_what_we_serve(cluster):
    with RawClient(cluster.servers[0].port) as client:
        body = client.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    ranges = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert body.error_code == 0
    assert ranges[PRODUCE] == (0, 13) and ranges[FETCH] == (4, 18) and ranges[METADATA] == (0, 13)
    assert ranges[INIT_PRODUCER_ID] == (0, 5)


def test_api_versions_newer_than_ours_gets_kip_511_answer(cluster):
    with RawClient(cluster.servers[0].port) as client:
        client.send_raw(API_VERSIONS, 99, b"\x07future\x00")  # a body we cannot read: not parsed
        body = client.receive(API_VERSIONS, 0)
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 5)]


def test_unsupported_api_closes_only_that_connection(cluster):
    port = cluster.servers[0].port
    with RawClient(port) as bad, RawClient(port) as good:
        bad.send(64, 0, {})  # UnregisterBroker: not served (Kafka forwards it to its controller)
        with pytest.raises(ConnectionError):
            bad.receive_payload()
        assert good.request(METADATA, 12, {"topics": None}).topics[0].name == "t"


# -- Metadata ---------------------------------------------------------------------------
def test_metadata_auto_creates_unless_told_not_to(cluster):
    with RawClient(cluster.servers[0].port) as client:
        no = client.request(METADATA, 12, {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": False})
        assert no.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        yes = client.request(METADATA, 12, {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": True})
        # as Kafka: the request that creates the topic answers UNKNOWN_TOPIC_OR_PARTITION, the next one sees it
        assert yes.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        again = client.request(METADATA, 12, {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": True})
        assert again.topics[0].error_code == 0 and len(again.topics[0].partitions) == 1
        bad = client.request(METADATA, 12, {"topics": [{"name": "bad name!"}]})
        assert bad.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        everything = client.request(METADATA, 0, {"topics": []})  # v0: empty list = all topics
        assert sorted(t.name for t in everything.topics) == ["fresh", "t"]
    assert cluster.topics() == {"t": 2, "fresh": 1}


def test_auto_create_can_be_disabled():
    with (
        FakeCluster(config={"auto.create.topics.enable": False}).run_in_thread() as c,
        RawClient(c.servers[0].port) as client,
    ):
        body = client.request(METADATA, 12, {"topics": [{"name": "x"}], "allow_auto_topic_creation": True})
        assert body.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- Produce ----------------------------------------------------------------------------
def test_produce_errors(cluster):
    right, wrong = leader_port(cluster, "t", 0), cluster.servers[1 - cluster.leader("t", 0)].port
    with RawClient(wrong) as client:
        r = partition_result(client.request(PRODUCE, 10, produce_body("t", 0, batch([b"x"]))))
        assert r.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert r.current_leader.leader_id == cluster.leader("t", 0)
    with RawClient(right) as client:
        r = partition_result(client.request(PRODUCE, 9, produce_body("nope", 0, batch([b"x"]))))
        assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        corrupt = bytearray(batch([b"x"]))
        corrupt[-1] ^= 0xFF
        r = partition_result(client.request(PRODUCE, 9, produce_body("t", 0, bytes(corrupt))))
        assert r.error_code == ErrorCode.CORRUPT_MESSAGE
        r = partition_result(client.request(PRODUCE, 9, produce_body("t", 0, batch([b"a"]) + batch([b"b"]))))
        assert r.error_code == ErrorCode.INVALID_RECORD  # v3+: exactly one batch per partition
        r = partition_result(client.request(PRODUCE, 9, produce_body("t", 0, batch([b"ok"]))))
        assert (r.error_code, r.base_offset) == (0, 0)
    assert [v for *_, v in cluster.records("t", 0)] == [b"ok"]


def test_acks_zero_gets_no_response(cluster):
    with RawClient(leader_port(cluster, "t", 0)) as client:
        client.send(PRODUCE, 9, produce_body("t", 0, batch([b"fire-and-forget"]), acks=0))
        cid = client.send(METADATA, 12, {"topics": None})
        payload = client.receive_payload()
        assert int.from_bytes(payload[:4], "big") == cid  # the next answer is the Metadata one
    assert [v for *_, v in cluster.records("t", 0)] == [b"fire-and-forget"]


def test_log_append_time_topic_rewrites_timestamps(cluster):
    cluster.create_topic("lat", 1, config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    with RawClient(leader_port(cluster, "lat", 0)) as client:
        r = partition_result(client.request(PRODUCE, 9, produce_body("lat", 0, batch([b"a", b"b"], base_timestamp=5))))
    assert r.error_code == 0 and r.log_append_time_ms >= before
    stored = cluster.state.topics["lat"].partitions[0].log.batches[0].data
    (entry,) = records.read_batches(stored)
    assert entry.timestamp_type == 1 and entry.max_timestamp == r.log_append_time_ms and records.verify_crc(stored)


def test_idempotent_duplicates_gaps_and_fencing(cluster):
    with RawClient(leader_port(cluster, "t", 0)) as client:
        init = client.request(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        pid = init.producer_id
        first = batch([b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0)
        r1 = partition_result(client.request(PRODUCE, 9, produce_body("t", 0, first)))
        again = partition_result(client.request(PRODUCE, 9, produce_body("t", 0, first)))  # a retry
        assert (r1.error_code, again.error_code, again.base_offset) == (0, 0, r1.base_offset)
        gap = batch([b"c"], producer_id=pid, producer_epoch=0, base_sequence=5)
        assert (
            partition_result(client.request(PRODUCE, 9, produce_body("t", 0, gap))).error_code
            == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        )
        nxt = batch([b"c"], producer_id=pid, producer_epoch=0, base_sequence=2)
        assert partition_result(client.request(PRODUCE, 9, produce_body("t", 0, nxt))).base_offset == 2
        bumped = client.request(
            INIT_PRODUCER_ID,
            4,
            {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": pid, "producer_epoch": 0},
        )
        # No transactional id: Kafka hands out a new producer id whatever was sent; an idempotent
        # producer bumps its epoch locally instead (the Java client does), which the partition accepts.
        assert bumped.error_code == 0 and bumped.producer_id != pid and bumped.producer_epoch == 0
        new_epoch = batch([b"d"], producer_id=pid, producer_epoch=1, base_sequence=0)
        assert partition_result(client.request(PRODUCE, 9, produce_body("t", 0, new_epoch))).error_code == 0
        stale = batch([b"e"], producer_id=pid, producer_epoch=0, base_sequence=3)
        assert (
            partition_result(client.request(PRODUCE, 9, produce_body("t", 0, stale))).error_code
            == ErrorCode.INVALID_PRODUCER_EPOCH
        )
    assert [v for *_, v in cluster.records("t", 0)] == [b"a", b"b", b"c", b"d"]


# -- Fetch ------------------------------------------------------------------------------
def fetch_body(
    topic: str,
    partition: int,
    offset: int,
    *,
    max_wait_ms=0,
    min_bytes=1,
    max_bytes=2**20,
    partition_max_bytes=2**20,
    session_id=0,
    session_epoch=-1,
) -> dict:
    return {
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": session_epoch,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max_bytes}
                ],
            }
        ],
    }


def test_fetch_long_poll_returns_when_data_arrives(cluster):
    port = leader_port(cluster, "t", 0)
    with RawClient(port) as consumer, RawClient(port) as producer:
        start = time.monotonic()
        empty = consumer.request(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=300))
        waited = time.monotonic() - start
        assert empty.responses[0].partitions[0].records == b"" and 0.25 <= waited < 2
        assert empty.session_id == 0  # fetch sessions are declined

        consumer.send(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=5000))
        timer = threading.Timer(0.2, lambda: producer.request(PRODUCE, 9, produce_body("t", 0, batch([b"late"]))))
        start = time.monotonic()
        timer.start()
        body = consumer.receive(FETCH, 12)
        timer.join()
        assert time.monotonic() - start < 3
        (entry,) = records.read_batches(body.responses[0].partitions[0].records)
        assert [r.value for r in entry.records] == [b"late"]


def test_fetch_limits_and_errors(cluster):
    port = leader_port(cluster, "t", 0)
    with RawClient(port) as client:
        for i in range(3):
            client.request(PRODUCE, 9, produce_body("t", 0, batch([b"v" * 100] * 5)))
        tiny = client.request(FETCH, 12, fetch_body("t", 0, 0, max_bytes=10, partition_max_bytes=10))
        got = records.read_batches(tiny.responses[0].partitions[0].records)
        assert len(got) == 1, "the first batch is returned even when larger than max_bytes (KIP-74)"
        mid = client.request(FETCH, 12, fetch_body("t", 0, 7))  # inside the second batch
        assert [b.base_offset for b in records.read_batches(mid.responses[0].partitions[0].records)] == [5, 10]
        out = client.request(FETCH, 12, fetch_body("t", 0, 99)).responses[0].partitions[0]
        # a read error: Kafka answers it with every offset unknown
        assert out.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and out.high_watermark == -1 and out.records == b""
        sessions = client.request(FETCH, 12, fetch_body("t", 0, 0, session_id=12345, session_epoch=1))
        assert sessions.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND  # an incremental fetch of no session


# -- ListOffsets and retention ---------------------------------------------------------------
def test_list_offsets_by_timestamp_and_max_timestamp(cluster):
    with RawClient(leader_port(cluster, "t", 0)) as client:
        client.request(
            PRODUCE,
            9,
            produce_body(
                "t",
                0,
                records.build_batch(
                    [records.Record(i, ts, None, b"x", []) for i, ts in enumerate([0, 10, 50, 20])], base_timestamp=1000
                ),
            ),
        )

        def lookup(ts: int):
            body = client.request(
                LIST_OFFSETS,
                7,
                {"replica_id": -1, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": ts}]}]},
            )
            p = body.topics[0].partitions[0]
            return p.offset, p.timestamp

        assert lookup(-2) == (0, -1) and lookup(-1) == (4, -1)
        assert lookup(1005) == (1, 1010)
        assert lookup(1030) == (2, 1050)
        assert lookup(-3) == (2, 1050)  # the record with the largest timestamp
        assert lookup(5000) == (-1, -1)


def test_retention_by_bytes_and_time(cluster):
    # retention deletes whole segments: with Kafka's smallest segment.bytes (1 MiB) and 400 kB
    # batches, segments hold offsets 0-1, 2-3 and 4; the first goes, the second keeps >= 1 MiB
    mib = 1024 * 1024
    cluster.create_topic("small", 1, config={"retention.bytes": mib, "segment.bytes": mib})
    cluster.create_topic("old", 1, config={"retention.ms": 60000, "segment.ms": 60000})
    now = int(time.time() * 1000)
    with RawClient(leader_port(cluster, "small", 0)) as client:
        for i in range(5):
            client.request(PRODUCE, 9, produce_body("small", 0, batch([b"y" * 400_000])))
    with RawClient(leader_port(cluster, "old", 0)) as client:
        client.request(PRODUCE, 9, produce_body("old", 0, batch([b"ancient"], base_timestamp=now - 3_600_000)))
        client.request(PRODUCE, 9, produce_body("old", 0, batch([b"recent"], base_timestamp=now)))
    assert cluster.apply_retention() > 0
    start, end = cluster.offsets("small", 0)
    assert (start, end) == (2, 5)
    size = sum(b.size for b in cluster.state.topics["small"].partitions[0].log.batches)
    assert size >= mib, "retention keeps at least retention.bytes, as Kafka does"
    assert [v for *_, v in cluster.records("old")] == [b"recent"] and cluster.offsets("old", 0) == (1, 2)

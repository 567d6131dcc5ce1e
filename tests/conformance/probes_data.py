"""Probes of the data path: Fetch byte budgets and error answers, Produce errors, idempotent
sequences, Metadata auto-creation and authorized operations, DescribeCluster, ListOffsets,
OffsetForLeaderEpoch and DeleteRecords (issue 15)."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from fakebroker.protocol import records as R

from .probing import (
    CREATE_TOPICS,
    DESCRIBE_GROUPS,
    FETCH,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    ProbeError,
    Target,
    error_name,
    probe,
)

DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CLUSTER = 21, 23, 60
ZERO = uuid.UUID(int=0)
FIXED_TS = 1_700_000_000_000  # every probe batch carries this timestamp, so both brokers store the same bytes


# -- helpers ----------------------------------------------------------------------------------
def create(s: Target, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    """CreateTopics with topic configs (``Target.create_topic`` has none), then wait until ready."""
    if configs:
        body = {
            "topics": [
                {
                    "name": topic,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            "timeout_ms": 10000,
            "validate_only": False,
        }
        r = s.req(None, CREATE_TOPICS, 7, body)
        if r["topics"][0]["error_code"] != 0:
            raise ProbeError(f"{s.kind}: CreateTopics {topic}: {error_name(r['topics'][0]['error_code'])}")
        # create_topic answers TOPIC_ALREADY_EXISTS now: wait for readiness with its second half
        wait_ready(s, topic, partitions)
    else:
        s.create_topic(topic, partitions)


def wait_ready(s: Target, topic: str, partitions: int = 1, tries: int = 200) -> None:
    for _ in range(tries):
        m = metadata(s, None, 12, [topic], auto=False)
        t = m["topics"][0]
        if t["error_code"] == 0 and len(t["partitions"]) == partitions:
            s.topic_ids[topic] = t["topic_id"]
            lo = s.list_offsets(topic, 0, -1, 0)
            if all(p["error_code"] == 0 for p in lo["topics"][0]["partitions"]):
                return
        time.sleep(0.05)
    raise ProbeError(f"{s.kind}: topic {topic} not ready")


def batch(values: list[str], **kw: Any) -> bytes:
    return R.build_batch([(None, v.encode(), [], FIXED_TS) for v in values], base_timestamp=FIXED_TS, **kw)


def produce_raw(
    s: Target,
    label: str | None,
    topic: str,
    partition: int,
    records: bytes,
    ver: int = 9,
    acks: int = -1,
    tid: str | None = None,
    **kw: Any,
) -> dict:
    data: dict[str, Any] = {"name": topic, "partition_data": [{"index": partition, "records": records}]}
    if ver >= 13:
        data["topic_id"] = s.topic_ids.get(topic, ZERO)
    body = {"transactional_id": tid, "acks": acks, "timeout_ms": 10000, "topic_data": [data]}
    answer = s.req(None, PRODUCE, ver, body)
    if label is not None:
        # a record error's message names the broker's clock (the timestamp bounds): digits go
        normed = s.norm(answer)
        for t in normed.get("responses", []):
            for p in t.get("partition_responses", []):
                for e in p.get("record_errors", []):
                    if e.get("batch_index_error_message"):
                        e["batch_index_error_message"] = re.sub(r"-?\d+", "<n>", e["batch_index_error_message"])
        s.record(label, normed, PRODUCE, ver, kw.get("expect"))
    return answer


def produce_values(s: Target, topic: str, partition: int, values: list[str], **kw: Any) -> None:
    r = produce_raw(s, None, topic, partition, batch(values, **kw))
    code = r["responses"][0]["partition_responses"][0]["error_code"]
    if code != 0:
        raise ProbeError(f"{s.kind}: Produce {topic}-{partition}: {error_name(code)}")


def fetch_raw(
    s: Target,
    label: str,
    ver: int,
    parts: list[tuple[str, int, int, int]],
    max_bytes: int = 1 << 22,
    isolation: int = 0,
    epoch: int = -1,
    **kw: Any,
) -> dict:
    """Fetch ``parts`` ((topic, partition, offset, partition_max_bytes), in that order) and record the
    answer with each partition's records as their byte length and the whole batches in them (a
    partial trailing batch shows only in the length)."""
    topics: list[dict[str, Any]] = []
    for topic, partition, offset, pmax in parts:
        if not topics or topics[-1]["topic"] != topic:
            topics.append({"topic": topic, "topic_id": s.topic_ids.get(topic, ZERO), "partitions": []})
        topics[-1]["partitions"].append(
            {
                "partition": partition,
                "current_leader_epoch": epoch,
                "fetch_offset": offset,
                "last_fetched_epoch": -1,
                "log_start_offset": -1,
                "partition_max_bytes": pmax,
            }
        )
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": max_bytes,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": topics,
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    answer = s.req(None, FETCH, ver, body)
    sizes = [
        [len(p["records"] or b"") if "records" in p else None for p in t["partitions"]]
        for t in answer.get("responses", [])
    ]
    normed = s.norm(answer)
    for t, ts in zip(normed.get("responses", []), sizes):
        for p, n in zip(t["partitions"], ts):
            p["records_bytes"] = n
    s.record(label, normed, FETCH, ver, kw.get("expect"))
    return answer


def metadata(
    s: Target,
    label: str | None,
    ver: int,
    topics: list[str] | None,
    *,
    ids: list[uuid.UUID] | None = None,
    auto: bool = True,
    topic_ops: bool = False,
    cluster_ops: bool = False,
    **kw: Any,
) -> dict:
    body = {
        "topics": [{"name": None, "topic_id": i} for i in ids]
        if ids
        else None
        if topics is None
        else [{"name": t, "topic_id": ZERO} for t in topics],
        "allow_auto_topic_creation": auto,
        "include_cluster_authorized_operations": cluster_ops,
        "include_topic_authorized_operations": topic_ops,
    }
    answer = s.req(None, METADATA, ver, body)
    if label is not None:
        # replicas are node ids, which differ between the brokers: kept as counts
        normed = s.norm(answer)
        for t in normed.get("topics", []):
            for p in t.get("partitions", []):
                for key in ("replica_nodes", "isr_nodes", "offline_replicas"):
                    if key in p:
                        p[key] = len(p[key])
        s.record(label, normed, METADATA, ver, kw.get("expect"))
    return answer


def delete_records(s: Target, label: str | None, topic: str, partition: int, offset: int, ver: int = 2, **kw):
    body = {
        "topics": [{"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}],
        "timeout_ms": 5000,
    }
    return s.req(label, DELETE_RECORDS, ver, body, **kw)


def idempotent_pid(s: Target) -> tuple[int, int]:
    r = s.req(
        None,
        INIT_PRODUCER_ID,
        4,
        {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    if r["error_code"] != 0:
        raise ProbeError(f"{s.kind}: InitProducerId: {error_name(r['error_code'])}")
    return r["producer_id"], r["producer_epoch"]


# -- probes -----------------------------------------------------------------------------------
@probe
def probe_fetch_byte_budgets(s: Target) -> None:
    """Fetch slices the log to the byte budget (KIP-74): the first batch whole even if bigger than
    ``partition_max_bytes``, then whole batches, then the part of the next batch that fits; the
    request's ``max_bytes`` is shared by the partitions in request order, the first non-empty one
    ignoring the limits; a later partition whose first batch does not fit gets nothing."""
    topic = s.name("t")
    create(s, topic, 2)
    for i in range(3):
        produce_values(s, topic, 0, [f"a{i}-{j}" * 4 for j in range(5)])
        produce_values(s, topic, 1, [f"b{i}-{j}" * 4 for j in range(5)])
    one = len(batch([f"a0-{j}" * 4 for j in range(5)]))
    for ver in (4, 11, 12, 16):
        fetch_raw(s, f"v{ver} partition_max_bytes=1", ver, [(topic, 0, 0, 1)])
        fetch_raw(s, f"v{ver} partition_max_bytes=first+20", ver, [(topic, 0, 0, one + 20)])
        fetch_raw(s, f"v{ver} partition_max_bytes=two batches", ver, [(topic, 0, 0, 2 * one)])
        fetch_raw(s, f"v{ver} from offset 7", ver, [(topic, 0, 7, one + 5)])
        fetch_raw(s, f"v{ver} max_bytes=1", ver, [(topic, 0, 0, 1 << 20), (topic, 1, 0, 1 << 20)], max_bytes=1)
        fetch_raw(
            s, f"v{ver} max_bytes=first+30", ver, [(topic, 0, 0, 1 << 20), (topic, 1, 0, 1 << 20)], max_bytes=one + 30
        )
        fetch_raw(
            s,
            f"v{ver} max_bytes=one and a half",
            ver,
            [(topic, 0, 3, 1 << 20), (topic, 1, 0, 1 << 20)],
            max_bytes=one * 3 // 2,
        )
        fetch_raw(s, f"v{ver} first partition empty", ver, [(topic, 0, 15, 1 << 20), (topic, 1, 0, 10)], max_bytes=30)
        fetch_raw(s, f"v{ver} partition_max_bytes=0", ver, [(topic, 0, 0, 0), (topic, 1, 0, 0)])


@probe
def probe_fetch_read_committed_budget(s: Target) -> None:
    """A read_committed Fetch stops at the last stable offset: the slice never reaches into an
    open transaction, whatever the byte budget."""
    topic, tid = s.name("t"), s.name("tx")
    create(s, topic)
    produce_values(s, topic, 0, ["plain-0", "plain-1"])
    s.find_coordinator(tid)
    pid, epoch = s.init_ok(tid)
    s.retry(
        "AddPartitionsToTxn",
        lambda: s.add_partitions(tid, pid, epoch, {topic: [0]}),
        lambda r: r["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"],
    )
    s.produce_ok(topic, 0, pid, epoch, 0, ["txn-0", "txn-1"], tid=tid)
    one = len(batch(["plain-0", "plain-1"]))
    for ver in (4, 12, 16):
        fetch_raw(s, f"v{ver} read_committed", ver, [(topic, 0, 0, one + 40)], isolation=1)
        fetch_raw(s, f"v{ver} read_uncommitted", ver, [(topic, 0, 0, one + 40)], isolation=0)
    s.end_ok(tid, pid, epoch, False)
    # after the abort: a budget that stops short of the transaction still lists it (Kafka's
    # upper bound for aborted transactions is not the end of the slice in a small log)
    produce_values(s, topic, 0, ["after"])
    for ver in (4, 12, 16):
        fetch_raw(s, f"v{ver} read_committed, first batch only", ver, [(topic, 0, 0, one)], isolation=1)
        fetch_raw(s, f"v{ver} read_committed, into the aborted batch", ver, [(topic, 0, 0, one + 30)], isolation=1)
        fetch_raw(s, f"v{ver} read_committed, from the marker", ver, [(topic, 0, 4, 1 << 20)], isolation=1)


@probe
def probe_fetch_out_of_range(s: Target) -> None:
    """Fetch at an offset past the log end or before the log start (after DeleteRecords):
    OFFSET_OUT_OF_RANGE, with the offsets and aborted transactions Kafka gives, per version and
    isolation level; a fetch at the log end is empty and fine."""
    topic = s.name("t")
    create(s, topic)
    for i in range(3):
        produce_values(s, topic, 0, [f"v{i}"])
    delete_records(s, "DeleteRecords to 1", topic, 0, 1, expect={"topics.0.partitions.0.error_code": "NONE"})
    for ver in (4, 5, 11, 12, 16):
        for iso in (0, 1):
            fetch_raw(s, f"v{ver} iso={iso} past the end", ver, [(topic, 0, 9, 1 << 20)], isolation=iso)
            fetch_raw(s, f"v{ver} iso={iso} before the start", ver, [(topic, 0, 0, 1 << 20)], isolation=iso)
            fetch_raw(s, f"v{ver} iso={iso} at the end", ver, [(topic, 0, 3, 1 << 20)], isolation=iso)
        fetch_raw(s, f"v{ver} unknown partition", ver, [(topic, 4, 0, 1 << 20)])
    s.topic_ids["unknown-id"] = uuid.uuid4()
    fetch_raw(s, "v16 unknown topic id", 16, [("unknown-id", 0, 0, 1 << 20)])
    for ver in (9, 12, 16):
        fetch_raw(s, f"v{ver} current leader epoch 5 (future)", ver, [(topic, 0, 1, 1 << 20)], epoch=5)
        fetch_raw(s, f"v{ver} current leader epoch 0", ver, [(topic, 0, 1, 1 << 20)], epoch=0)
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": 5, "timestamp": -1}]}],
        "timeout_ms": 1000,
    }
    s.req("ListOffsets v9 current leader epoch 5", LIST_OFFSETS, 9, body)
    metadata(s, "Metadata v12 unknown topic id", 12, None, ids=[uuid.uuid4()])


@probe
def probe_produce_errors(s: Target) -> None:
    """Produce errors and the log start offset they carry (the partition's after DeleteRecords
    moved it to 1, or -1)."""
    topic, small = s.name("t"), s.name("small")
    create(s, topic)
    create(s, small, configs={"max.message.bytes": "200"})
    for i in range(2):
        produce_values(s, topic, 0, [f"v{i}"])
        produce_values(s, small, 0, [f"v{i}"])
    delete_records(s, None, topic, 0, 1)
    delete_records(s, None, small, 0, 1)
    compacted = s.name("compacted")
    create(s, compacted, configs={"cleanup.policy": "compact"})
    s.find_coordinator(s.name("g"), 0)  # __consumer_offsets exists from here on, in both
    corrupt = bytearray(batch(["x"]))
    corrupt[-1] ^= 0xFF
    future = R.build_batch([(None, b"late", [], int(time.time() * 1000) + 10 * 3600 * 1000)])
    for ver in (3, 7, 9, 12):
        produce_raw(s, f"v{ver} ok", topic, 0, batch(["ok"]), ver)
        produce_raw(s, f"v{ver} corrupt", topic, 0, bytes(corrupt), ver)
        produce_raw(s, f"v{ver} too large", small, 0, batch(["x" * 400]), ver)
        produce_raw(s, f"v{ver} timestamp too new", topic, 0, future, ver)
        produce_raw(s, f"v{ver} two batches", topic, 0, batch(["x"]) + batch(["y"]), ver)
        produce_raw(s, f"v{ver} base offset 5", topic, 0, batch(["x"], base_offset=5), ver)
        produce_raw(s, f"v{ver} control batch", topic, 0, batch(["x"], control=True), ver)
        produce_raw(s, f"v{ver} compacted without key", compacted, 0, batch(["x"]), ver)
        produce_raw(s, f"v{ver} to an internal topic", "__consumer_offsets", 0, batch(["x"]), ver)
        produce_raw(s, f"v{ver} unknown partition", topic, 3, batch(["x"]), ver)
        produce_raw(s, f"v{ver} acks=2", topic, 0, batch(["x"]), ver, acks=2)
        produce_raw(s, f"v{ver} no such topic", s.name(f"none{ver}"), 0, batch(["x"]), ver)
    s.topic_ids["unknown-id"] = uuid.uuid4()
    produce_raw(s, "v13 unknown topic id", "unknown-id", 0, batch(["x"]), 13)
    produce_raw(s, "v13 ok", topic, 0, batch(["ok"]), 13)
    for ver in (3, 7, 9, 12):
        produce_raw(
            s,
            f"v{ver} transactional without id",
            topic,
            0,
            batch(["x"], producer_id=424242, producer_epoch=0, base_sequence=0, transactional=True),
            ver,
        )
    metadata(s, "Produce did not create the topic", 12, [s.name("none9")], auto=False)
    # acks=0: no answer is owed, so a failed partition closes the connection
    produce_raw(s, "acks=0 to an unknown partition", topic, 3, batch(["x"]), 9, acks=0)
    produce_raw(s, "the next request is answered", topic, 0, batch(["ok"]), 9)


@probe
def probe_produce_sequences(s: Target) -> None:
    """Idempotent sequences: a producer a partition has no state for may start at any sequence
    (Kafka accepts and starts tracking), then a gap is OUT_OF_ORDER_SEQUENCE_NUMBER, a retry of a
    cached batch is acknowledged with its offset, an older epoch is fenced."""
    topic = s.name("t")
    create(s, topic)
    produce_values(s, topic, 0, ["first"])
    delete_records(s, None, topic, 0, 1)
    pid, epoch = idempotent_pid(s)
    for ver in (3, 9):
        produce_raw(
            s,
            f"v{ver} unknown producer seq=5",
            topic,
            0,
            batch(["a"], producer_id=pid + ver, producer_epoch=0, base_sequence=5),
            ver,
        )
        produce_raw(
            s,
            f"v{ver} seq=7 (gap)",
            topic,
            0,
            batch(["b"], producer_id=pid + ver, producer_epoch=0, base_sequence=7),
            ver,
        )
        produce_raw(
            s,
            f"v{ver} seq=6",
            topic,
            0,
            batch(["c", "d"], producer_id=pid + ver, producer_epoch=0, base_sequence=6),
            ver,
        )
        produce_raw(
            s,
            f"v{ver} seq=6 again (duplicate)",
            topic,
            0,
            batch(["c", "d"], producer_id=pid + ver, producer_epoch=0, base_sequence=6),
            ver,
        )
        produce_raw(
            s,
            f"v{ver} seq=5 again (duplicate)",
            topic,
            0,
            batch(["a"], producer_id=pid + ver, producer_epoch=0, base_sequence=5),
            ver,
        )
        produce_raw(
            s,
            f"v{ver} seq=3 (old)",
            topic,
            0,
            batch(["e"], producer_id=pid + ver, producer_epoch=0, base_sequence=3),
            ver,
        )
        produce_raw(
            s,
            f"v{ver} epoch 1 seq=4",
            topic,
            0,
            batch(["f"], producer_id=pid + ver, producer_epoch=1, base_sequence=4),
            ver,
        )
        produce_raw(
            s,
            f"v{ver} epoch 1 seq=0",
            topic,
            0,
            batch(["g"], producer_id=pid + ver, producer_epoch=1, base_sequence=0),
            ver,
        )
        produce_raw(
            s,
            f"v{ver} epoch 0 (fenced)",
            topic,
            0,
            batch(["h"], producer_id=pid + ver, producer_epoch=0, base_sequence=8),
            ver,
        )
    produce_raw(
        s, "allocated producer seq=3", topic, 0, batch(["i"], producer_id=pid, producer_epoch=epoch, base_sequence=3)
    )
    s.fetch(topic, 0, 1, 0, label="Fetch the log")


@probe
def probe_metadata_auto_create(s: Target) -> None:
    """Metadata naming a topic that does not exist, with auto-creation: the first answer is
    UNKNOWN_TOPIC_OR_PARTITION (the creation is under way) and the topic is there on a later
    request; without auto-creation (v4+: the flag; v1-3 always create) it stays unknown."""
    for ver in range(1, 14):
        topic = s.name(f"auto{ver}")
        metadata(s, f"v{ver} first", ver, [topic])
        for _ in range(200):
            r = metadata(s, None, ver, [topic], auto=False)
            if r["topics"][0]["error_code"] == 0 and r["topics"][0]["partitions"][0]["error_code"] == 0:
                break
            time.sleep(0.05)
        metadata(s, f"v{ver} later", ver, [topic], auto=False)
    for ver in (4, 9, 12):
        metadata(s, f"v{ver} no auto-creation", ver, [s.name(f"manual{ver}")], auto=False)
    metadata(s, "v12 invalid name", 12, ["bad name!"])
    create(s, s.name("dot.ted"))
    metadata(s, "v12 colliding name", 12, [s.name("dot_ted")])
    time.sleep(0.5)
    metadata(s, "v12 colliding name, later", 12, [s.name("dot_ted")], auto=False)
    s.find_coordinator(s.name("g"), 0)  # __consumer_offsets exists from here on, in both
    metadata(s, "v12 internal", 12, ["__consumer_offsets"], auto=False)


@probe
def probe_metadata_authorized_operations(s: Target) -> None:
    """include_topic_authorized_operations / include_cluster_authorized_operations without an
    authorizer: every operation the resource type supports (v8+), INT_MIN where not asked."""
    topic = s.name("t")
    create(s, topic)
    for ver in range(8, 14):
        for topic_ops, cluster_ops in ((False, False), (True, False), (False, True), (True, True)):
            metadata(
                s,
                f"v{ver} topic_ops={topic_ops} cluster_ops={cluster_ops}",
                ver,
                [topic],
                auto=False,
                topic_ops=topic_ops,
                cluster_ops=cluster_ops,
            )
        metadata(s, f"v{ver} unknown topic with ops", ver, [s.name("none")], auto=False, topic_ops=True)
    group = s.name("g")
    s.find_coordinator(group, 0)
    for ver in (3, 5, 6):
        s.req(
            f"DescribeGroups v{ver} with authorized operations",
            DESCRIBE_GROUPS,
            ver,
            {"groups": [group], "include_authorized_operations": True},
        )
    for ver in range(3):
        for ops in (False, True):
            body = {"include_cluster_authorized_operations": ops, "endpoint_type": 1, "include_fenced_brokers": False}
            s.req(f"DescribeCluster v{ver} ops={ops}", DESCRIBE_CLUSTER, ver, body)
    for ver in (1, 2):
        for endpoint in (2, 7):
            body = {
                "include_cluster_authorized_operations": False,
                "endpoint_type": endpoint,
                "include_fenced_brokers": False,
            }
            s.req(f"DescribeCluster v{ver} endpoint_type={endpoint}", DESCRIBE_CLUSTER, ver, body)


@probe
def probe_list_offsets_data(s: Target) -> None:
    """ListOffsets after DeleteRecords: earliest, latest, max timestamp, by timestamp, the tiered
    specials, an unknown partition, per version."""
    topic = s.name("t")
    create(s, topic)
    for i in range(4):
        produce_raw(
            s,
            None,
            topic,
            0,
            R.build_batch([(None, f"v{i}".encode(), [], FIXED_TS + i * 1000)], base_timestamp=FIXED_TS + i * 1000),
        )
    delete_records(s, None, topic, 0, 1)
    for ver in range(1, 12):
        for ts in (-1, -2, -3, -4, -5, -6, -7, FIXED_TS, FIXED_TS + 2500, FIXED_TS + 9000):
            s.list_offsets(topic, 0, ts, 0, ver=ver, label=f"v{ver} ts={ts}")
        s.list_offsets(topic, 6, -1, 0, ver=ver, label=f"v{ver} unknown partition")


@probe
def probe_delete_records_and_epochs(s: Target) -> None:
    """DeleteRecords edge cases and OffsetForLeaderEpoch per version."""
    topic = s.name("t")
    create(s, topic)
    for i in range(3):
        produce_values(s, topic, 0, [f"v{i}"])
    for ver in range(3):
        delete_records(s, f"DeleteRecords v{ver} past the end", topic, 0, 9, ver)
        delete_records(s, f"DeleteRecords v{ver} unknown partition", topic, 5, 0, ver)
    delete_records(s, "DeleteRecords to -1 (high watermark)", topic, 0, -1)
    delete_records(s, "DeleteRecords backwards", topic, 0, 1)
    for ver in (2, 3, 4):
        for epoch in (-1, 0, 1, 7):
            body = {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}],
                    }
                ],
            }
            s.req(f"OffsetForLeaderEpoch v{ver} epoch={epoch}", OFFSET_FOR_LEADER_EPOCH, ver, body)
        body = {
            "replica_id": -1,
            "topics": [
                {"topic": topic, "partitions": [{"partition": 3, "current_leader_epoch": -1, "leader_epoch": 0}]}
            ],
        }
        s.req(f"OffsetForLeaderEpoch v{ver} unknown partition", OFFSET_FOR_LEADER_EPOCH, ver, body)

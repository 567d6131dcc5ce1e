"""Probes of the partition admin APIs: DescribeTopicPartitions (75) with its cursor and partition
limit, ElectLeaders (43) v0-2, DescribeLogDirs (35) v1-5, AlterPartitionReassignments (45) v0-1
and ListPartitionReassignments (46), on one broker without an authorizer.

Both brokers of a differential run are single nodes with different ids (Kafka's is 1,
fakebroker's 0), so broker ids in replica lists are written ``B`` for the target's own node (and
kept otherwise, 999 standing for an unknown broker). Answers that list every topic of the
broker (null topic lists) are cut down to this probe's topics, sorted: the other probes' topics
and Kafka's hash-map order are no part of the comparison. The log directory's path and the
volume's sizes are the machine's: written ``<dir>`` and ``>0``. What only a cluster of several
brokers shows (a preferred election that moves a leader, a reassignment that moves replicas)
is in tests/apis/test_partition_admin_apis.py.
"""

from __future__ import annotations

import time
from typing import Any

from fakebroker.protocol import records as R

from .probing import METADATA, PRODUCE, Target, probe

DELETE_RECORDS, DESCRIBE_LOG_DIRS, ELECT_LEADERS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 21, 35, 43, 45, 46
DESCRIBE_TOPIC_PARTITIONS = 75
BROKER_LISTS = {
    "replica_nodes",
    "isr_nodes",
    "offline_replicas",
    "eligible_leader_replicas",
    "last_known_elr",
    "replicas",
    "adding_replicas",
    "removing_replicas",
}
UNKNOWN_BROKER = 999


def node_id(s: Target) -> int:
    """The id of the target's (only) broker."""
    m = s.req(None, METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    [broker] = m["brokers"]
    return broker["node_id"]


def brokers_named(obj: Any, node: int, key: str | None = None) -> Any:
    """``obj`` with the target's node id written ``B`` in replica lists."""
    if isinstance(obj, dict):
        return {k: brokers_named(v, node, k) for k, v in obj.items()}
    if isinstance(obj, list):
        if key in BROKER_LISTS:
            return ["B" if x == node else x for x in obj]
        return [brokers_named(x, node, key) for x in obj]
    return obj


def record(s: Target, label: str, api: int, ver: int, body: dict, node: int, **kw: Any) -> dict:
    """Send, normalise (broker ids too) and record one step; returns the raw answer."""
    answer = s.req(None, api, ver, body)
    s.record(label, brokers_named(s.norm(answer), node), api, ver, kw.get("expect"))
    return answer


# -- DescribeTopicPartitions -----------------------------------------------------------------------


def dtp_body(topics: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> dict:
    return {
        "topics": [{"name": t} for t in topics],
        "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]},
    }


@probe
def probe_describe_topic_partitions(s: Target) -> None:
    """Two topics (3 and 2 partitions), an unknown and an illegal name; paging by a partition
    limit with the cursor Kafka answers, through the named topics and through every topic; the
    cursor errors (its topic not named, a negative partition); an internal topic."""
    node = node_id(s)
    a, b = s.name("a"), s.name("b")
    s.create_topic(a, 3)
    s.create_topic(b, 2)
    s.find_coordinator(s.name("g"), 0)  # __consumer_offsets exists
    step = lambda label, body, **kw: record(s, label, DESCRIBE_TOPIC_PARTITIONS, 0, body, node, **kw)  # noqa: E731
    step("both topics", dtp_body([b, a]), expect={"topics.0.name": a, "next_cursor": None})
    step(
        "unknown and illegal names",
        dtp_body([a, s.name("missing"), s.name("bad!name"), a]),
        expect={"topics.2.error_code": "UNKNOWN_TOPIC_OR_PARTITION"},
    )
    step("limit 2", dtp_body([a, b], 2), expect={"next_cursor.partition_index": 2})
    step("limit 2 from a-2", dtp_body([a, b], 2, (a, 2)), expect={"next_cursor.topic_name": b})
    step("limit 2 from b-1", dtp_body([a, b], 2, (b, 1)), expect={"next_cursor": None})
    step("limit 3 fills a", dtp_body([a, b], 3), expect={"next_cursor.partition_index": 0})
    step("limit 0 is 1", dtp_body([a, b], 0))
    step("limit -5 is 1", dtp_body([a], -5))
    step("cursor past the partitions", dtp_body([a], 10, (a, 7)))
    step("cursor topic not named", dtp_body([a], 10, (b, 0)), expect={"topics.0.error_code": "INVALID_REQUEST"})
    step("negative cursor partition", dtp_body([a, b], 10, (a, -1)), expect={"topics.0.error_code": "INVALID_REQUEST"})
    step("cursor before the names", dtp_body([b], 10, (a, 1)), expect={"topics.0.error_code": "INVALID_REQUEST"})
    step("every topic from a, limit 4", dtp_body([], 4, (a, 0)), expect={"next_cursor.partition_index": 1})
    step("every topic from b-1, limit 1", dtp_body([], 1, (b, 1)))
    step("every topic from a name between a and b", dtp_body([], 1, (a + "-zz", 1)), expect={"topics.0.name": b})
    step("internal topic, limit 2", dtp_body(["__consumer_offsets"], 2), expect={"topics.0.is_internal": True})
    step("unknown internal name", dtp_body(["__share_group_state"], 2))


# -- ElectLeaders ----------------------------------------------------------------------------------


def elect_body(election_type: int, topics: dict[str, list[int]] | None) -> dict:
    return {
        "election_type": election_type,
        "topic_partitions": None if topics is None else [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        "timeout_ms": 10000,
    }


@probe
def probe_elect_leaders(s: Target) -> None:
    """Preferred and unclean elections where the preferred replica leads (ELECTION_NOT_NEEDED),
    unknown topics and partitions, an empty and a null list (every partition: those not needing
    an election left out), an unknown election type, in every version."""
    node = node_id(s)
    t = s.name("t")
    s.create_topic(t, 2)
    for ver in (0, 1, 2):
        for kind in (0, 1) if ver else (0,):
            record(
                s,
                f"v{ver} type {kind}",
                ELECT_LEADERS,
                ver,
                elect_body(kind, {t: [0, 1], s.name("missing"): [0]}),
                node,
                expect={"replica_election_results.0.partition_result.0.error_code": "ELECTION_NOT_NEEDED"},
            )
        record(s, f"v{ver} unknown partition", ELECT_LEADERS, ver, elect_body(0, {t: [5, -1]}), node)
        record(s, f"v{ver} empty list", ELECT_LEADERS, ver, elect_body(0, {}), node)
        answer = s.req(None, ELECT_LEADERS, ver, elect_body(0, None))
        ours = [r for r in s.norm(answer)["replica_election_results"] if r["topic"].startswith(s.prefix)]
        s.record(
            f"v{ver} every partition (this probe's topics)",
            {**s.norm(answer), "replica_election_results": ours},
            ELECT_LEADERS,
            ver,
            expect={"replica_election_results.0.partition_result": []},
        )
    s.find_coordinator(s.name("g"), 0)  # __consumer_offsets exists
    record(s, "v2 an internal partition", ELECT_LEADERS, 2, elect_body(0, {"__consumer_offsets": [0]}), node)
    for ver in (1, 2):
        record(
            s,
            f"v{ver} unknown election type",
            ELECT_LEADERS,
            ver,
            elect_body(2, {t: [0]}),
            node,
            expect={"error_code": "INVALID_REQUEST"},
        )


# -- DescribeLogDirs -------------------------------------------------------------------------------


def log_dirs(s: Target, label: str, ver: int, topics: dict[str, list[int]] | None, mine: bool = False) -> None:
    """DescribeLogDirs, the directory's path and volume sizes written as placeholders, topics and
    partitions sorted (``mine``: only this probe's topics)."""
    body = {"topics": None if topics is None else [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
    answer = s.norm(s.req(None, DESCRIBE_LOG_DIRS, ver, body))
    for result in answer.get("results", []):
        result["log_dir"] = "<dir>" if result["log_dir"] else result["log_dir"]
        for key in ("total_bytes", "usable_bytes"):
            if key in result and result[key] > 0:
                result[key] = ">0"
        topics_ = [
            {**t, "partitions": sorted(t["partitions"], key=lambda p: p["partition_index"])}
            for t in result["topics"]
            if not mine or t["name"].startswith(s.prefix)
        ]
        result["topics"] = sorted(topics_, key=lambda t: t["name"])
    s.record(label, answer, DESCRIBE_LOG_DIRS, ver, {"error_code": "NONE"} if ver >= 3 else None)


@probe
def probe_describe_log_dirs(s: Target) -> None:
    """A topic with records in one partition and none in the other: each partition's size (the
    bytes of its batches), lag 0, not future; named partitions, unknown ones, a null list; every
    version."""
    t, empty = s.name("t"), s.name("empty")
    s.create_topic(t, 2)
    s.create_topic(empty, 1)
    now = int(time.time() * 1000)
    batch = R.build_batch([(None, b"one", [], now), (b"k", b"two", [], now)])
    produced = s.req(
        None,
        PRODUCE,
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 10000,
            "topic_data": [{"name": t, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0, produced
    for ver in range(1, 6):
        log_dirs(s, f"v{ver} named", ver, {t: [0, 1, 7], empty: [0], s.name("missing"): [0]})
        log_dirs(s, f"v{ver} every partition", ver, None, mine=True)
        log_dirs(s, f"v{ver} empty list", ver, {})
    log_dirs(s, "v4 unknown partitions only", 4, {t: [9]})
    deleted = s.req(
        None,
        DELETE_RECORDS,
        2,
        {"topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": 2}]}], "timeout_ms": 10000},
    )
    assert deleted["topics"][0]["partitions"][0]["error_code"] == 0, deleted
    log_dirs(s, "v4 after DeleteRecords of every record", 4, {t: [0]})


# -- AlterPartitionReassignments, ListPartitionReassignments --------------------------------------------


def alter_body(partitions: dict[tuple[str, int], list[int] | None], allow: bool = True) -> dict:
    topics: dict[str, list[dict]] = {}
    for (topic, index), replicas in partitions.items():
        topics.setdefault(topic, []).append({"partition_index": index, "replicas": replicas})
    return {
        "timeout_ms": 10000,
        "allow_replication_factor_change": allow,
        "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
    }


def list_body(topics: dict[str, list[int]] | None) -> dict:
    return {
        "timeout_ms": 10000,
        "topics": None if topics is None else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
    }


@probe
def probe_partition_reassignments(s: Target) -> None:
    """Reassignments a single broker can answer: to itself (nothing to move), to an unknown
    broker, to no broker, to itself twice, a cancel without a reassignment in progress, unknown
    topics and partitions, both versions and their replication-factor flag; listing them (none
    in progress) by name, all, or an empty list."""
    node = node_id(s)
    t = s.name("t")
    s.create_topic(t, 2)
    missing = s.name("x-missing")  # sorts after t (answers may be sorted by name)
    for ver in (0, 1):
        record(
            s,
            f"alter v{ver}",
            ALTER_REASSIGNMENTS,
            ver,
            alter_body(
                {
                    (t, 0): [node],
                    (t, 1): [UNKNOWN_BROKER],
                    (t, 2): [node],
                    (t, -1): [node],
                    (missing, 0): [node],
                }
            ),
            node,
            expect={"responses.0.partitions.0.error_code": "NONE"},
        )
        record(
            s,
            f"alter v{ver} bad lists",
            ALTER_REASSIGNMENTS,
            ver,
            alter_body({(t, 0): [], (t, 1): [node, node]}),
            node,
            expect={"responses.0.partitions.1.error_code": "INVALID_REPLICA_ASSIGNMENT"},
        )
        record(
            s,
            f"alter v{ver} cancel",
            ALTER_REASSIGNMENTS,
            ver,
            alter_body({(t, 0): None, (missing, 0): None}),
            node,
            expect={"responses.0.partitions.0.error_code": "NO_REASSIGNMENT_IN_PROGRESS"},
        )
        record(s, f"alter v{ver} no topics", ALTER_REASSIGNMENTS, ver, alter_body({}), node)
    record(
        s,
        "alter v1 keeping the replication factor",
        ALTER_REASSIGNMENTS,
        1,
        alter_body({(t, 0): [node], (t, 1): [node, UNKNOWN_BROKER]}, allow=False),
        node,
        expect={"allow_replication_factor_change": False},
    )
    record(s, "list named", LIST_REASSIGNMENTS, 0, list_body({t: [0, 1, 5], missing: [0]}), node)
    record(s, "list empty", LIST_REASSIGNMENTS, 0, list_body({}), node)
    record(s, "list a topic without partitions", LIST_REASSIGNMENTS, 0, list_body({t: []}), node)
    answer = s.norm(s.req(None, LIST_REASSIGNMENTS, 0, list_body(None)))
    answer["topics"] = [x for x in answer["topics"] if x["name"].startswith(s.prefix)]
    s.record("list all (this probe's topics)", answer, LIST_REASSIGNMENTS, 0)

"""Probes of the topic admin APIs: CreateTopics, DeleteTopics and CreatePartitions in every
version a 4.x broker serves, with their validation paths, and DescribeCluster."""

from __future__ import annotations

import uuid

from .probing import CREATE_TOPICS, Target, probe

DELETE_TOPICS, CREATE_PARTITIONS, DESCRIBE_CLUSTER = 20, 37, 60


def create(s: Target, label: str, ver: int, topics: list[dict], validate_only: bool = False, **kw) -> dict:
    entries = [{"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": [], **t} for t in topics]
    body = {"topics": entries, "timeout_ms": 10000, "validate_only": validate_only}
    return s.req(label, CREATE_TOPICS, ver, body, **kw)


@probe
def probe_create_topics(s: Target) -> None:
    """CreateTopics v2-v7: a topic, the same again, names Kafka refuses, partition and replica
    counts it refuses, explicit assignments (good, to an unknown broker, uneven), validate_only,
    the broker's defaults (-1), and two entries for one name."""
    for ver in range(2, 8):
        name = s.name(f"c{ver}")
        ok = create(s, f"CreateTopics v{ver} a topic", ver, [{"name": name, "num_partitions": 2}])
        if ver >= 5:  # v5+ answers the topic's configs; only their presence is compared here
            s.record(f"CreateTopics v{ver} configs", bool(ok["topics"][0]["configs"]))
        create(s, f"CreateTopics v{ver} the same again", ver, [{"name": name}])
    v = 7
    cases = [
        ("an empty name", {"name": ""}),
        ("a name with a space", {"name": s.name("bad name")}),
        ("'.'", {"name": "."}),
        ("'..'", {"name": ".."}),
        ("a 250-character name", {"name": s.name("x" * 240)}),
        ("0 partitions", {"name": s.name("p0"), "num_partitions": 0}),
        ("-2 partitions", {"name": s.name("pm2"), "num_partitions": -2}),
        ("replication 0", {"name": s.name("r0"), "replication_factor": 0}),
        ("replication 3 on one broker", {"name": s.name("r3"), "replication_factor": 3}),
        ("the broker's defaults", {"name": s.name("defaults"), "num_partitions": -1, "replication_factor": -1}),
        (
            "assignments with counts given",
            {"name": s.name("a1"), "num_partitions": 1, "assignments": [{"partition_index": 0, "broker_ids": [1]}]},
        ),
        (
            "assignments to an unknown broker",
            {
                "name": s.name("a2"),
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [{"partition_index": 0, "broker_ids": [77]}],
            },
        ),
        (
            "assignments skipping partition 0",
            {
                "name": s.name("a3"),
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [{"partition_index": 1, "broker_ids": [1]}],
            },
        ),
        ("an unknown config", {"name": s.name("cfg"), "configs": [{"name": "no.such.config", "value": "1"}]}),
        ("a bad config value", {"name": s.name("cfg2"), "configs": [{"name": "retention.ms", "value": "soon"}]}),
    ]
    for what, topic in cases:
        r = create(s, None, v, [topic])
        s.record(f"CreateTopics v{v} {what}", s.norm(_brief(r["topics"][0])))
    r = create(
        s, None, v, [{"name": s.name("big1"), "num_partitions": 6000}, {"name": s.name("big2"), "num_partitions": 6000}]
    )
    s.record("CreateTopics v7 more than 10,000 partitions in one request", s.norm([_brief(t) for t in r["topics"]]))
    r = create(s, None, v, [{"name": s.name("huge"), "num_partitions": 2**31 - 1}], validate_only=True)
    s.record("CreateTopics v7 validate_only 2^31-1 partitions", s.norm(_brief(r["topics"][0])))
    r = create(s, None, v, [{"name": s.name("vo"), "num_partitions": 3}], validate_only=True)
    s.record("CreateTopics v7 validate_only", s.norm(_brief(r["topics"][0])))
    r = create(s, None, v, [{"name": s.name("vo2")}, {"name": s.name("vo2")}])
    s.record("CreateTopics v7 one name twice", s.norm([_brief(t) for t in r["topics"]]))
    s.record("CreateTopics v7 a topic that collides with another by '.'/'_'", s.norm(_collision(s)))


def _brief(topic: dict) -> dict:
    """What CreateTopics decided for one entry (configs and ids are other probes' business)."""
    return {
        "name": topic["name"],
        "error_code": topic["error_code"],
        "error_message": topic.get("error_message"),
        "num_partitions": topic.get("num_partitions"),
        "replication_factor": topic.get("replication_factor"),
    }


def _collision(s: Target) -> dict:
    create(s, None, 7, [{"name": s.name("dot.ted")}])
    return _brief(create(s, None, 7, [{"name": s.name("dot_ted")}])["topics"][0])


@probe
def probe_delete_topics(s: Target) -> None:
    """DeleteTopics v1-v6: by name (v1-5) and by id (v6), an unknown name, an unknown id. (Kafka
    4.4 deletes ``__consumer_offsets`` when asked, answering NONE, and so does fakebroker; not
    probed, as it would take the shared brokers' group coordinators away from later probes.)"""
    for ver in range(1, 7):
        name = s.name(f"d{ver}")
        s.create_topic(name)
        if ver < 6:
            body = {"topic_names": [name, s.name(f"nosuch{ver}")], "timeout_ms": 10000}
        else:
            body = {
                "topics": [
                    {"name": name, "topic_id": uuid.UUID(int=0)},
                    {"name": None, "topic_id": uuid.uuid4()},
                ],
                "timeout_ms": 10000,
            }
        s.req(f"DeleteTopics v{ver}", DELETE_TOPICS, ver, body)
    name = s.name("d-both")
    s.create_topic(name)
    s.req(
        "DeleteTopics v6 by id",
        DELETE_TOPICS,
        6,
        {"topics": [{"name": None, "topic_id": s.topic_ids[name]}], "timeout_ms": 10000},
    )


@probe
def probe_create_partitions(s: Target) -> None:
    """CreatePartitions v0-v3: more partitions, the same count, fewer, an unknown topic,
    validate_only, assignments (right, wrong length, unknown broker), one topic twice."""
    for ver in range(4):
        name = s.name(f"cp{ver}")
        s.create_topic(name)
        body = {
            "topics": [
                {"name": name, "count": 3, "assignments": None},
                {"name": s.name(f"nosuch{ver}"), "count": 2, "assignments": None},
            ],
            "timeout_ms": 10000,
            "validate_only": False,
        }
        s.req(f"CreatePartitions v{ver} 1 to 3 and an unknown topic", CREATE_PARTITIONS, ver, body)
        again = {**body, "topics": [{"name": name, "count": 3, "assignments": None}]}
        s.req(f"CreatePartitions v{ver} 3 to 3", CREATE_PARTITIONS, ver, again)
    name = s.name("cpx")
    s.create_topic(name)

    def one(label: str, count: int, assignments=None, validate_only: bool = False, topics=None) -> None:
        topics = topics or [{"name": name, "count": count, "assignments": assignments}]
        s.req(
            label,
            CREATE_PARTITIONS,
            3,
            {"topics": topics, "timeout_ms": 10000, "validate_only": validate_only},
        )

    one("CreatePartitions v3 fewer", 0)
    one("CreatePartitions v3 validate_only", 4, validate_only=True)
    one("CreatePartitions v3 assignments of the wrong length", 3, [{"broker_ids": [1]}])
    one("CreatePartitions v3 assignments to an unknown broker", 2, [{"broker_ids": [77]}])
    one("CreatePartitions v3 an empty replica list", 2, [{"broker_ids": []}])
    one(
        "CreatePartitions v3 one topic twice",
        2,
        topics=[{"name": name, "count": 2, "assignments": None}, {"name": name, "count": 3, "assignments": None}],
    )


@probe
def probe_describe_cluster(s: Target) -> None:
    """DescribeCluster v0-v2: brokers (dropped by normalisation), error code, endpoint type (v1+)
    and the fenced flag (v2)."""
    for ver in range(3):
        body = {"include_cluster_authorized_operations": False, "endpoint_type": 1, "include_fenced_brokers": True}
        s.req(f"DescribeCluster v{ver}", DESCRIBE_CLUSTER, ver, body)
    s.req(
        "DescribeCluster v1 controller endpoints",
        DESCRIBE_CLUSTER,
        1,
        {"include_cluster_authorized_operations": False, "endpoint_type": 2},
    )

"""Probes of KIP-1071 streams groups: StreamsGroupHeartbeat (88) v0-v1 through its request
checks, a word-count application's life (internal topics, tasks, a second member's
revocation dance, epoch fencing, static members, leaves), standbys over three processes, the
statuses a topology can get, StreamsGroupDescribe (89) v0-v1, StreamsGroupTopologyDescription-
Update (93), and one id one type (the consumer and classic APIs on a streams group, the streams
APIs on the others).

Member ids, process ids and instance ids are client-made, so they are fixed here, and every
error message, status detail and user endpoint is compared word for word (:func:`msgs`).

Timing. Kafka's group coordinator learns of a new topic from its own copy of the metadata
image a moment after the broker answers for it, and creates a group's internal topics after
answering the heartbeat that asked for them: :func:`wait_until_seen` waits until the
coordinator's shard knows the topics before the compared heartbeat. The groups whose tasks
are compared run with ``streams.initial.rebalance.delay.ms`` and
``streams.assignment.interval.ms`` 0 (group configs), so a target is computed at every epoch
bump; the delays themselves are probed on groups of their own, where the answer does not
depend on the clock (an initial delay of 30 s, an assignment interval of 15 s).

Kafka 4.4 quirks these probes pin down (fakebroker follows them): a join with a user endpoint
fails (UNKNOWN_SERVER_ERROR) while a source topic is missing; the join that creates a group
runs on a transient group object, so its task offsets and shutdown request are not kept and a
describe shows the requested topology until a later heartbeat writes records.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from fakebroker.core.groups.placement import partition_for
from fakebroker.core.groups.streams.assignor import java_hash_map_order

from .kafka_broker import PARTITIONS as OFFSETS_PARTITIONS
from .probes_configs import norm_configs
from .probes_consumer_groups import heartbeat as consumer_heartbeat
from .probes_groups import join_body as classic_join_body
from .probes_share import _mark, _unmark, set_group_configs
from .probing import (
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    JOIN_GROUP,
    METADATA,
    OFFSET_COMMIT,
    ProbeError,
    Target,
    probe,
)

STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE, STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = 88, 89, 93
LIST_GROUPS, DESCRIBE_CONFIGS, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 16, 32, 68, 69
SHARE_GROUP_HEARTBEAT = 76
TOPIC_RESOURCE = 2
A, B, C, D = "streams-member-a", "streams-member-b", "streams-member-c", "streams-member-d"
S1, S2, S3 = "streams-static-1", "streams-static-2", "streams-static-3"
CHANGELOG_CONFIGS = (("cleanup.policy", "compact"), ("message.timestamp.type", "CreateTime"))
REPARTITION_CONFIGS = (
    ("cleanup.policy", "delete"),
    ("message.timestamp.type", "CreateTime"),
    ("retention.ms", "-1"),
    ("segment.bytes", "52428800"),
)
NO_DELAYS = {"streams.initial.rebalance.delay.ms": "0", "streams.assignment.interval.ms": "0"}


# -- topologies ------------------------------------------------------------------------------------
def topic_info(name: str, configs: tuple[tuple[str, str], ...], partitions: int = 0, rf: int = -1) -> dict:
    return {
        "name": name,
        "partitions": partitions,
        "replication_factor": rf,
        "topic_configs": [{"key": k, "value": v} for k, v in configs],
    }


def subtopology(sid: str, **fields: Any) -> dict:
    return {
        "subtopology_id": sid,
        "source_topics": [],
        "source_topic_regex": [],
        "state_changelog_topics": [],
        "repartition_sink_topics": [],
        "repartition_source_topics": [],
        "copartition_groups": [],
        **fields,
    }


def internal_names(app: str) -> tuple[str, str]:
    """The word count's repartition and changelog topics (Kafka Streams prefixes them with the
    application id, which is the group id)."""
    return f"{app}-count-repartition", f"{app}-count-changelog"


def unsorted_app(s: Target, base: str, internal: Callable[[str], list[str]]) -> str:
    """``s.name(base)`` or the first ``s.name(f"{base}{i}")`` whose internal topics (``internal``
    of the name) Kafka lists in MISSING_INTERNAL_TOPICS in another order than sorted: it keeps
    them in a HashMap, fakebroker sorts them (an allowed difference, test_conformance.py), so
    the difference shows on every run whatever the run's prefix."""
    for i in range(1000):
        name = s.name(f"{base}{i}" if i else base)
        names = internal(name)
        if java_hash_map_order(names) != sorted(names):
            return name
    raise ProbeError(f"no name for {base}")


def word_count(app: str, source: str, epoch: int = 0) -> dict:
    """Kafka Streams' word count as its client sends it: subtopology 0 reads ``source`` and
    writes the repartition topic, subtopology 1 reads that and keeps a changelog."""
    repartition, changelog = internal_names(app)
    return {
        "epoch": epoch,
        "subtopologies": [
            subtopology("0", source_topics=[source], repartition_sink_topics=[repartition]),
            subtopology(
                "1",
                state_changelog_topics=[topic_info(changelog, CHANGELOG_CONFIGS)],
                repartition_source_topics=[topic_info(repartition, REPARTITION_CONFIGS)],
            ),
        ],
    }


def stateless(source: str, epoch: int = 0) -> dict:
    """One subtopology reading ``source``, nothing internal."""
    return {"epoch": epoch, "subtopologies": [subtopology("0", source_topics=[source])]}


def tasks(by_sub: dict[str, list[int]]) -> list[dict]:
    return [{"subtopology_id": sid, "partitions": ps} for sid, ps in by_sub.items()]


NO_TASKS: dict[str, Any] = {"active_tasks": [], "standby_tasks": [], "warmup_tasks": []}


def owned(answer: dict, before: dict | None = None) -> dict[str, Any]:
    """The three task lists a member reports after ``answer``: the answer's when it carries
    them, else those of ``before`` (the lists it last got)."""
    if answer.get("active_tasks") is not None:
        return {k: answer[k] for k in ("active_tasks", "standby_tasks", "warmup_tasks")}
    if before is None:
        raise ProbeError(f"no task lists in {answer}")
    return before


# -- requests --------------------------------------------------------------------------------------
def _endpoints(obj: Any, key: str | None = None) -> Any:
    """User endpoints with their host and port kept (the harness drops every ``host`` and
    ``port``, a broker's; these are the client's own), and each endpoint's active and standby
    partitions sorted by topic: Kafka lists them per subtopology, the subtopologies in the order
    of an unmodifiable map (random for each JVM), the topics in a HashSet's order; the client
    reads them as a set."""
    if isinstance(obj, dict):
        return {
            k: {"endpoint_host": v.get("host"), "endpoint_port": v.get("port")}
            if k == "user_endpoint" and isinstance(v, dict)
            else _endpoints(v, k)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        items = [_endpoints(x) for x in obj]
        if key in ("active_partitions", "standby_partitions"):
            items.sort(key=lambda x: str(x.get("topic")) if isinstance(x, dict) else "")
        return items
    return obj


def msgs(s: Target, label: str, api: int, ver: int, body: dict, expect: dict | None = None) -> dict:
    """A step whose error messages (and user endpoints) are kept word for word: they carry only
    the probe's own names and ids."""
    answer = s.req(None, api, ver, body)
    s.record(label, _unmark(s.norm(_mark(_endpoints(answer)))), api, ver, expect)
    return answer


def heartbeat_body(group: str, member: str, epoch: int, **fields: Any) -> dict:
    return {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "endpoint_information_epoch": -1,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": -1,
        "topology": None,
        "active_tasks": None,
        "standby_tasks": None,
        "warmup_tasks": None,
        "process_id": None,
        "user_endpoint": None,
        "client_tags": None,
        "task_offsets": None,
        "task_end_offsets": None,
        "shutdown_application": False,
        **fields,
    }


def beat(
    s: Target, label: str | None, group: str, member: str, epoch: int, *, ver: int = 1, expect=None, **fields: Any
) -> dict:
    body = heartbeat_body(group, member, epoch, **fields)
    if label is None:
        return s.req(None, STREAMS_GROUP_HEARTBEAT, ver, body)
    return msgs(s, label, STREAMS_GROUP_HEARTBEAT, ver, body, expect)


def join_fields(topology: dict | None, process: str, **fields: Any) -> dict:
    return {
        "rebalance_timeout_ms": 300000,
        "topology": topology,
        **NO_TASKS,
        "process_id": process,
        "client_tags": [],
        **fields,
    }


def join(
    s: Target, label: str | None, group: str, member: str, topology: dict | None, process: str, **fields: Any
) -> dict:
    """A member's first heartbeat (epoch 0) with everything Kafka Streams sends on a join."""
    ver = fields.pop("ver", 1)
    expect = fields.pop("expect", None)
    return beat(s, label, group, member, 0, ver=ver, expect=expect, **join_fields(topology, process, **fields))


def describe(s: Target, label: str, groups: list[str], ver: int = 1, description: bool = False, **kw) -> dict:
    body: dict[str, Any] = {"group_ids": groups, "include_authorized_operations": False}
    if ver >= 1:
        body["include_topology_description"] = description
    return msgs(s, label, STREAMS_GROUP_DESCRIBE, ver, body, **kw)


def metadata(s: Target, topics: list[str]) -> dict:
    body = {
        "topics": [{"name": t, "topic_id": uuid.UUID(int=0)} for t in topics],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    return s.req(None, METADATA, 12, body)


def topics_brief(s: Target, topics: list[str]) -> list[dict]:
    """What Metadata says of ``topics``: error, internal flag, partitions and replicas."""
    out = []
    for t in metadata(s, topics)["topics"]:
        out.append(
            {
                "name": t["name"],
                "error_code": t["error_code"],
                "is_internal": t["is_internal"],
                "partitions": sorted(p["partition_index"] for p in t["partitions"]),
                "replicas": sorted({len(p["replica_nodes"]) for p in t["partitions"]}),
            }
        )
    return s.norm(sorted(out, key=lambda x: x["name"]))


# -- waiting for Kafka's coordinator ---------------------------------------------------------------
def wait_until_not_a_streams_group(s: Target, group: str, timeout: float = 10.0) -> None:
    """Kafka's StreamsGroupDescribe answers from its coordinator's committed state: an empty
    streams group that a JoinGroup turned classic shows as such a moment after the JoinGroup's
    answer, later on a busy machine (a CI run read the streams group back once, Empty at epoch
    3). fakebroker passes at once; a streams group still there at the deadline is recorded as
    it is by the step after."""
    body = {"group_ids": [group], "include_authorized_operations": False, "include_topology_description": False}
    deadline = time.monotonic() + timeout
    while s.req(None, STREAMS_GROUP_DESCRIBE, 1, body)["groups"][0]["error_code"] == 0:
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)


def wait_until_seen(s: Target, group: str, topics: list[str], timeout: float = 30.0) -> None:
    """Wait until the broker answers for every topic of ``topics``, then until the group
    coordinator's shard of ``group`` knows them too (Kafka's coordinator reads its own copy of
    the metadata image, a moment later): a throwaway consumer group of the same
    ``__consumer_offsets`` partition subscribes to them and heartbeats until it is assigned a
    partition of each, then leaves. fakebroker passes at once."""
    deadline = time.monotonic() + timeout
    while True:
        answer = metadata(s, topics)["topics"]
        if all(t["error_code"] == 0 and t["partitions"] for t in answer):
            break
        if time.monotonic() > deadline:
            raise ProbeError(f"{s.kind}: topics {topics} never appeared")
        time.sleep(0.05)
    ids = {t["topic_id"] for t in answer}
    shard = partition_for(group, OFFSETS_PARTITIONS)
    other = next(f"{group}-w{i}" for i in range(10_000) if partition_for(f"{group}-w{i}", OFFSETS_PARTITIONS) == shard)
    member = str(uuid.uuid4())
    join = {"rebalance_timeout_ms": 30000, "subscribed_topic_names": sorted(topics), "topic_partitions": []}
    r = consumer_heartbeat(s, None, 1, other, member, 0, **join)
    held: set = set()
    while True:
        if r["error_code"]:
            raise ProbeError(f"{s.kind}: ConsumerGroupHeartbeat {other}: {r['error_code']}")
        if r.get("assignment") is not None:
            held = {t["topic_id"] for t in r["assignment"]["topic_partitions"]}
        if held >= ids:
            break
        if time.monotonic() > deadline:
            raise ProbeError(f"{s.kind}: the coordinator of {group} never saw {topics}")
        time.sleep(0.05)
        r = consumer_heartbeat(s, None, 1, other, member, r["member_epoch"], topic_partitions=None)
    consumer_heartbeat(s, None, 1, other, member, -1)


def create_topics(s: Target, group: str, topics: dict[str, int]) -> None:
    """Create ``topics`` (name -> partitions) and wait until ``group``'s coordinator sees them."""
    for name, partitions in topics.items():
        s.create_topic(name, partitions)
    wait_until_seen(s, group, list(topics))


# -- StreamsGroupHeartbeat's checks ------------------------------------------------------------------
@probe
def probe_streams_heartbeat_errors(s: Target) -> None:
    """StreamsGroupHeartbeat's request checks in Kafka's order (STREAMS-GROUPS.md §2.3 #3-13),
    each with its message, v1 and v0; then the answers for a group nobody joined (non-join,
    leave, static leave), StreamsGroupDescribe v0/v1 of a missing group and an empty id, and
    the three APIs in ApiVersions with the ``streams.version`` feature."""
    group, source = s.name("app"), s.name("words")
    s.find_coordinator(group, 0)
    s.create_topic(source, 2)
    r = s.req(None, API_VERSIONS, 4, {"client_software_name": "conformance", "client_software_version": "1"})
    s.record(
        "ApiVersions v4: the streams APIs and the streams.version feature",
        {
            "api_keys": [k for k in r["api_keys"] if k["api_key"] in (88, 89, 93)],
            "supported": [f for f in r["supported_features"] if f["name"] == "streams.version"],
            "finalized": [f for f in r["finalized_features"] if f["name"] == "streams.version"],
        },
    )
    wc = word_count(group, source)
    repartition, changelog = internal_names(group)

    def sub0(**fields: Any) -> dict:
        return {**wc, "subtopologies": [{**wc["subtopologies"][0], **fields}, wc["subtopologies"][1]]}

    def sub1(**fields: Any) -> dict:
        return {**wc, "subtopologies": [wc["subtopologies"][0], {**wc["subtopologies"][1], **fields}]}

    join_cases: list[tuple[str, dict]] = [  # each refused: 130 (topology) or 42
        ("a source topic __consumer_offsets", {"topology": sub0(source_topics=["__consumer_offsets"])}),
        (
            "two internal topics (source and changelog)",
            {
                "topology": sub1(
                    state_changelog_topics=[topic_info("__transaction_state", CHANGELOG_CONFIGS)],
                    repartition_source_topics=[topic_info("__share_group_state", REPARTITION_CONFIGS)],
                )
            },
        ),
        ("an invalid topic name", {"topology": sub0(source_topics=["bad topic"])}),
        ("two invalid topic names", {"topology": sub0(source_topics=["bad topic", "bad:name"])}),
        ("an empty topic name", {"topology": sub0(source_topics=[""])}),
        ("a topic name of 250 characters", {"topology": sub0(source_topics=["x" * 250])}),
        (
            "an invalid name and an internal topic",
            {"topology": sub0(source_topics=["bad topic", "__consumer_offsets"])},
        ),
        ("an invalid repartition sink name", {"topology": sub0(repartition_sink_topics=["bad topic"])}),
        ("a source topic regex", {"topology": sub0(source_topic_regex=[f"{source}.*"])}),
        ("a regex and an empty member id", {"topology": sub0(source_topic_regex=["x.*"]), "member_id": ""}),
        ("a regex and an invalid topic name", {"topology": sub0(source_topic_regex=["x.*"], source_topics=["a b"])}),
        ("an empty member id", {"member_id": ""}),
        ("a blank member id", {"member_id": "   "}),
        ("an empty group id", {"group_id": ""}),
        ("a blank group id", {"group_id": "  "}),
        ("empty group and member ids", {"group_id": "", "member_id": ""}),
        ("an empty instance id", {"instance_id": ""}),
        ("an empty rack id", {"rack_id": ""}),
        ("an empty rack id and an empty instance id", {"rack_id": "", "instance_id": " "}),
        ("no rebalance timeout", {"rebalance_timeout_ms": -1}),
        ("active tasks null", {"active_tasks": None}),
        ("active tasks not empty", {"active_tasks": tasks({"0": [0]})}),
        ("standby tasks null", {"standby_tasks": None}),
        ("warm-up tasks not empty", {"warmup_tasks": tasks({"1": [1]})}),
        ("all task lists null", {"active_tasks": None, "standby_tasks": None, "warmup_tasks": None}),
        ("no topology", {"topology": None}),
        ("no topology and no rebalance timeout", {"topology": None, "rebalance_timeout_ms": -1}),
        (
            "a changelog topic with a partition count",
            {"topology": sub1(state_changelog_topics=[topic_info(changelog, CHANGELOG_CONFIGS, partitions=6)])},
        ),
        (
            "a changelog count and active tasks null",
            {
                "topology": sub1(state_changelog_topics=[topic_info(changelog, CHANGELOG_CONFIGS, partitions=6)]),
                "active_tasks": None,
            },
        ),
    ]
    topology_errors = {w for w, f in join_cases if "topology" in f and f["topology"] is not None}
    topology_errors -= {
        "a source topic regex",
        "a regex and an empty member id",
        "a changelog count and active tasks null",
    }
    for what, fields in join_cases:
        body = join_fields(**{"topology": wc, "process": "process-a", **fields})
        gid, mid = body.pop("group_id", group), body.pop("member_id", A)
        code = "STREAMS_INVALID_TOPOLOGY" if what in topology_errors else "INVALID_REQUEST"
        beat(s, f"join with {what}", gid, mid, 0, expect={"error_code": code}, **body)
    beat(s, "v0 join with an empty member id", group, "", 0, ver=0, **join_fields(wc, "process-a"))
    beat(s, "v0 join with a source topic __consumer_offsets", group, A, 0, ver=0,
         **join_fields(sub0(source_topics=["__consumer_offsets"]), "process-a"))  # fmt: skip
    beat(s, "epoch -2 without an instance id", group, A, -2)
    beat(s, "epoch -3", group, A, -3)
    beat(s, "epoch -3 with a blank member id", group, " ", -3)
    beat(s, "epoch 5 with only the active tasks", group, A, 5, active_tasks=[])
    beat(s, "epoch 5 with active and standby tasks", group, A, 5, active_tasks=[], standby_tasks=[])
    beat(s, "epoch 5 with a topology", group, A, 5, topology=wc)
    beat(s, "epoch 5 with a topology and only the active tasks", group, A, 5, topology=wc, active_tasks=[])
    beat(s, "epoch -1 with a topology", group, A, -1, topology=wc)
    beat(s, "epoch 5 with an empty rack id", group, A, 5, rack_id="")
    # the request is valid: the group is missing
    beat(s, "epoch 5: the group does not exist", group, A, 5, expect={"error_code": "GROUP_ID_NOT_FOUND"})
    beat(s, "v0 epoch 5: the group does not exist", group, A, 5, ver=0)
    beat(s, "epoch 5 with the task lists: the group does not exist", group, A, 5, **NO_TASKS)
    beat(s, "leave (-1): the group does not exist", group, A, -1, expect={"error_code": "GROUP_ID_NOT_FOUND"})
    beat(s, "static leave (-2): the group does not exist", group, A, -2, instance_id="instance-a")
    beat(s, "epoch 5 of a static member: the group does not exist", group, A, 5, instance_id="instance-a")
    for ver in (0, 1):
        describe(s, f"StreamsGroupDescribe v{ver} a missing group and an empty id", [group, ""], ver=ver)
    describe(s, "StreamsGroupDescribe v1 no groups", [])
    describe(s, "StreamsGroupDescribe v1 one id twice", [group, group])


# -- a word-count application's life ------------------------------------------------------------------
@probe
def probe_streams_group_life(s: Target) -> None:
    """A word count joins (its member id its own): MISSING_INTERNAL_TOPICS, the internal topics
    Kafka creates (counts, replication, configs), all tasks at the next heartbeat; a second
    process (v0) joins: the first member revokes half its tasks, the second gets them once
    released; epoch fencing, unknown members, invalid owned tasks, topology mismatches; a static
    member's -2 leave and its replacement; StreamsGroupDescribe v0/v1 along the way; the leaves."""
    group, source = unsorted_app(s, "app", lambda g: list(internal_names(g))), s.name("words")
    repartition, changelog = internal_names(group)
    s.find_coordinator(group, 0)
    set_group_configs(s, group, {**NO_DELAYS, "streams.session.timeout.ms": "60000"})
    create_topics(s, group, {source: 6})
    topology = word_count(group, source)
    r = join(s, "A joins (v1, with an endpoint)", group, A, topology, "process-a",
             user_endpoint={"host": "host-a", "port": 8080}, expect={"error_code": "NONE"})  # fmt: skip
    epoch_a, endpoints_a, lists_a = r["member_epoch"], r["endpoint_information_epoch"], owned(r)
    describe(s, "StreamsGroupDescribe v1 while the internal topics are missing", [group])
    wait_until_seen(s, group, [repartition, changelog])
    s.record("Metadata of the internal topics", topics_brief(s, [repartition, changelog]))
    keys = ["cleanup.policy", "message.timestamp.type", "retention.ms", "segment.bytes", "min.insync.replicas"]
    answer = s.req(
        None,
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": TOPIC_RESOURCE, "resource_name": t, "configuration_keys": keys}
                for t in (repartition, changelog)
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    s.record("DescribeConfigs of the internal topics", norm_configs(s.norm(answer)), DESCRIBE_CONFIGS, 4)
    msgs(s, "CreateTopics v7 validate_only the changelog topic", CREATE_TOPICS, 7, {
        "topics": [{"name": changelog, "num_partitions": 6, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout_ms": 10000, "validate_only": True})  # fmt: skip
    r = beat(s, "A heartbeats: every task", group, A, epoch_a, endpoint_information_epoch=endpoints_a, **lists_a,
             expect={"error_code": "NONE", "status": []})  # fmt: skip
    epoch_a, endpoints_a, lists_a = r["member_epoch"], r["endpoint_information_epoch"], owned(r, lists_a)
    r = beat(s, "A heartbeats with its tasks", group, A, epoch_a, endpoint_information_epoch=endpoints_a, **lists_a)
    describe(s, "StreamsGroupDescribe v1 one member, Stable", [group])
    describe(s, "StreamsGroupDescribe v0 one member", [group], ver=0)

    # a second process joins: A gives half its tasks up, B gets them once A said so
    r = join(s, "B joins (v0, with an endpoint)", group, B, topology, "process-b", ver=0,
             user_endpoint={"host": "host-b", "port": 8080}, expect={"error_code": "NONE"})  # fmt: skip
    epoch_b, endpoints_b, lists_b = r["member_epoch"], r["endpoint_information_epoch"], owned(r)
    r = beat(s, "A heartbeats: tasks to revoke", group, A, epoch_a, endpoint_information_epoch=endpoints_a)
    epoch_a, endpoints_a, lists_a = r["member_epoch"], r["endpoint_information_epoch"], owned(r, lists_a)
    describe(s, "StreamsGroupDescribe v1 while A revokes", [group])
    r = beat(s, "B heartbeats (v0): its tasks are not released yet", group, B, epoch_b, ver=0,
             endpoint_information_epoch=endpoints_b)  # fmt: skip
    epoch_b, endpoints_b, lists_b = r["member_epoch"], r["endpoint_information_epoch"], owned(r, lists_b)
    too_many = {**lists_a, "active_tasks": tasks({"0": list(range(6))})}
    beat(s, "A heartbeats with tasks it should have revoked", group, A, epoch_a,
         endpoint_information_epoch=endpoints_a, **too_many)  # fmt: skip
    r = beat(s, "A heartbeats: revoked", group, A, epoch_a, endpoint_information_epoch=endpoints_a, **lists_a)
    epoch_a, endpoints_a, lists_a = r["member_epoch"], r["endpoint_information_epoch"], owned(r, lists_a)
    r = beat(s, "B heartbeats (v0): its tasks", group, B, epoch_b, ver=0, endpoint_information_epoch=endpoints_b)
    epoch_b, endpoints_b, lists_b = r["member_epoch"], r["endpoint_information_epoch"], owned(r, lists_b)
    r = beat(s, "B heartbeats (v0) with its tasks", group, B, epoch_b, ver=0, endpoint_information_epoch=endpoints_b,
             **lists_b)  # fmt: skip
    r = beat(s, "A heartbeats: the endpoints changed", group, A, epoch_a, endpoint_information_epoch=endpoints_a)
    endpoints_a = r["endpoint_information_epoch"]
    describe(s, "StreamsGroupDescribe v1 two members, Stable", [group])
    describe(s, "StreamsGroupDescribe v0 two members", [group], ver=0)

    # errors on a live group
    beat(s, "an unknown member", group, C, epoch_a, expect={"error_code": "UNKNOWN_MEMBER_ID"})
    beat(s, "an unknown member leaves", group, C, -1)
    beat(s, "A with a newer epoch", group, A, epoch_a + 1, expect={"error_code": "FENCED_MEMBER_EPOCH"})
    beat(s, "A with its previous epoch and its tasks", group, A, epoch_a - 1, **lists_a)
    beat(s, "A with its previous epoch, no task lists", group, A, epoch_a - 1)
    beat(s, "A with an older epoch and its tasks", group, A, epoch_a - 2, **lists_a)
    beat(s, "A with its previous epoch and a task it does not own", group, A, epoch_a - 1,
         **{**lists_a, "standby_tasks": tasks({"1": [0, 1, 2, 3, 4, 5]})})  # fmt: skip
    beat(s, "A owns task 99 of subtopology 0", group, A, epoch_a, **{**lists_a, "active_tasks": tasks({"0": [99]})})
    beat(s, "A owns a task of subtopology 9", group, A, epoch_a, **{**lists_a, "standby_tasks": tasks({"9": [0]})})
    beat(s, "A owns task -1 of subtopology 1", group, A, epoch_a, **{**lists_a, "warmup_tasks": tasks({"1": [-1]})})
    join(s, "C joins with topology epoch 1", group, C, word_count(group, source, epoch=1), "process-c")
    join(s, "C joins with another source topic", group, C, word_count(group, s.name("other")), "process-c")
    reordered = {**topology, "subtopologies": list(reversed(topology["subtopologies"]))}
    r = join(s, "C joins with the subtopologies in another order", group, C, reordered, "process-c")
    if r["error_code"] == 0:
        beat(s, None, group, C, -1)
    swapped = word_count(group, source)
    swapped["subtopologies"][1]["repartition_source_topics"][0]["topic_configs"].reverse()
    r = join(s, "C joins with the topic configs in another order", group, C, swapped, "process-c")
    if r["error_code"] == 0:
        beat(s, None, group, C, -1)
    describe(s, "StreamsGroupDescribe v1 after the errors", [group])
    r = beat(s, "A heartbeats after the errors", group, A, epoch_a, endpoint_information_epoch=endpoints_a, **lists_a)
    epoch_a, lists_a = r["member_epoch"], owned(r, lists_a)
    r = beat(s, "B heartbeats after the errors", group, B, epoch_b, **lists_b)
    epoch_b, lists_b = r["member_epoch"], owned(r, lists_b)

    # a static member: joins, gets its tasks, leaves with -2, another member id takes its place
    r = join(s, "S1 joins as instance-s", group, S1, topology, "process-s", instance_id="instance-s")
    epoch_s, lists_s = r["member_epoch"], owned(r)
    r = beat(s, "A heartbeats: tasks to revoke for S1", group, A, epoch_a)
    epoch_a, lists_a = r["member_epoch"], owned(r, lists_a)
    r = beat(s, "A heartbeats: revoked for S1", group, A, epoch_a, **lists_a)
    epoch_a, lists_a = r["member_epoch"], owned(r, lists_a)
    r = beat(s, "B heartbeats: tasks to revoke for S1", group, B, epoch_b)
    epoch_b, lists_b = r["member_epoch"], owned(r, lists_b)
    r = beat(s, "B heartbeats: revoked for S1", group, B, epoch_b, **lists_b)
    epoch_b, lists_b = r["member_epoch"], owned(r, lists_b)
    r = beat(s, "S1 heartbeats: its tasks", group, S1, epoch_s, instance_id="instance-s")
    epoch_s, lists_s = r["member_epoch"], owned(r, lists_s)
    beat(s, "S1 heartbeats with its tasks", group, S1, epoch_s, instance_id="instance-s", **lists_s)
    describe(s, "StreamsGroupDescribe v1 three members", [group])
    beat(s, "S1 without its instance id", group, S1, epoch_s)
    beat(s, "S2 heartbeats for instance-s", group, S2, epoch_s, instance_id="instance-s")
    beat(s, "S1 for an unknown instance", group, S1, epoch_s, instance_id="instance-x")
    join(s, "S2 joins as instance-s while S1 holds it", group, S2, topology, "process-s", instance_id="instance-s")
    beat(s, "S1 leaves with -2", group, S1, -2, instance_id="instance-s", expect={"error_code": "NONE"})
    describe(s, "StreamsGroupDescribe v1 after the -2 leave", [group])
    beat(s, "S1 heartbeats after its -2 leave", group, S1, epoch_s, instance_id="instance-s")
    r = join(s, "S2 joins as instance-s", group, S2, topology, "process-s", instance_id="instance-s")
    epoch_s2 = r["member_epoch"]
    beat(s, "S1 heartbeats after S2 took instance-s", group, S1, epoch_s, instance_id="instance-s")
    join(s, "S3 joins as instance-s while S2 holds it", group, S3, topology, "process-s", instance_id="instance-s")
    r = beat(s, "S2 heartbeats", group, S2, epoch_s2, instance_id="instance-s")
    describe(s, "StreamsGroupDescribe v1 after S2 took instance-s", [group])
    beat(s, "S2 leaves with -1", group, S2, -1, instance_id="instance-s", expect={"error_code": "NONE"})
    r = beat(s, "A heartbeats after the static member left", group, A, epoch_a)
    epoch_a = r["member_epoch"]

    # the leaves
    beat(s, "B leaves (v0)", group, B, -1, ver=0, expect={"error_code": "NONE", "member_epoch": -1})
    beat(s, "B heartbeats after its leave", group, B, epoch_b)
    describe(s, "StreamsGroupDescribe v1 after B left", [group])
    beat(s, "A leaves", group, A, -1, expect={"error_code": "NONE"})
    describe(s, "StreamsGroupDescribe v1 the empty group", [group])
    describe(s, "StreamsGroupDescribe v0 the empty group", [group], ver=0)
    r = join(s, "A joins the empty group again", group, A, topology, "process-a")
    describe(s, "StreamsGroupDescribe v1 after the rejoin", [group])
    beat(s, None, group, A, -1)


# -- standbys and three processes ---------------------------------------------------------------------
def offsets(items: dict[tuple[str, int], int]) -> list[dict]:
    return [{"subtopology_id": sid, "partition": p, "offset": o} for (sid, p), o in items.items()]


@probe
def probe_streams_group_standbys(s: Target) -> None:
    """A word count with ``streams.num.standby.replicas`` 1 (a group config) and its internal
    topics created beforehand: one process, then a second (rack and client tags) and a third
    (task offsets that steer its standbys), each followed by heartbeat rounds of every member
    until the tasks have moved (revocations, unreleased tasks, standbys granted at once); task
    offsets on the creating join and on a later heartbeat; the standby count set back to 0
    (the assignment configs changed: an epoch bump); StreamsGroupDescribe along the way."""
    group, source = s.name("app"), s.name("words")
    repartition, changelog = internal_names(group)
    for name in (source, repartition, changelog):
        s.create_topic(name, 6)
    prepare(s, group, [source, repartition, changelog], {**NO_DELAYS, "streams.num.standby.replicas": "1"})
    topology = word_count(group, source)
    members: dict[str, dict[str, Any]] = {}

    def round_of_heartbeats(label: str) -> None:
        for mid in sorted(members):
            m = members[mid]
            r = beat(s, f"{label}: {mid}", group, mid, m["epoch"], **m["lists"])
            if r["error_code"]:
                raise ProbeError(f"{s.kind}: {mid}: {r['error_code']}")
            m["epoch"], m["lists"] = r["member_epoch"], owned(r, m["lists"])

    r = join(s, "A joins with task offsets", group, A, topology, "process-a",
             task_offsets=offsets({("1", 0): 100}), task_end_offsets=offsets({("1", 0): 120}))  # fmt: skip
    members[A] = {"epoch": r["member_epoch"], "lists": owned(r)}
    describe(s, "StreamsGroupDescribe v1 after the creating join with task offsets", [group])
    more = {"task_offsets": offsets({("1", 0): 100, ("1", 1): 50}), "task_end_offsets": offsets({("1", 0): 120})}
    beat(s, "A heartbeats with task offsets", group, A, members[A]["epoch"], **members[A]["lists"], **more)
    describe(s, "StreamsGroupDescribe v1 after task offsets in a heartbeat", [group])

    r = join(s, "B joins (a rack, client tags)", group, B, topology, "process-b", rack_id="rack-b",
             client_tags=[{"key": "zone", "value": "z1"}])  # fmt: skip
    members[B] = {"epoch": r["member_epoch"], "lists": owned(r)}
    for i in (1, 2, 3):
        round_of_heartbeats(f"two processes, round {i}")
    describe(s, "StreamsGroupDescribe v1 two processes with standbys", [group])

    r = join(s, "C joins with task offsets of subtopology 1", group, C, topology, "process-c",
             task_offsets=offsets({("1", 3): 500, ("1", 4): 400}))  # fmt: skip
    members[C] = {"epoch": r["member_epoch"], "lists": owned(r)}
    for i in (1, 2, 3):
        round_of_heartbeats(f"three processes, round {i}")
    describe(s, "StreamsGroupDescribe v1 three processes with standbys", [group])

    r = join(s, "D joins in process C's process", group, D, topology, "process-c")
    members[D] = {"epoch": r["member_epoch"], "lists": owned(r)}
    for i in (1, 2, 3):
        round_of_heartbeats(f"four members, round {i}")
    describe(s, "StreamsGroupDescribe v1 four members in three processes", [group])

    set_group_configs(s, group, {"streams.num.standby.replicas": "0"})
    wait_until_seen(s, group, [source])  # a few round trips more: Kafka's coordinator reads it a moment later
    for i in (1, 2):
        round_of_heartbeats(f"no standbys, round {i}")
    describe(s, "StreamsGroupDescribe v1 without standbys", [group])
    for mid in sorted(members):
        beat(s, None, group, mid, -1)


# -- statuses -------------------------------------------------------------------------------------------
def prepare(s: Target, group: str, seen: list[str], configs: dict[str, str] | None = NO_DELAYS) -> None:
    """A group's coordinator found, its configs set, and the topics it needs known to its shard
    (the configs first: Kafka's coordinator takes them from its metadata a moment after
    DescribeConfigs shows them, and the wait gives it that moment)."""
    s.find_coordinator(group, 0)
    if configs:
        set_group_configs(s, group, configs)
    if seen:
        wait_until_seen(s, group, seen)


@probe
def probe_streams_group_statuses(s: Target) -> None:
    """The statuses of a streams heartbeat: MISSING_SOURCE_TOPICS (and a join with an endpoint
    then), the same group once the source exists, INCORRECTLY_PARTITIONED_TOPICS (a
    copartition group, an existing internal topic of another count), a join's copartitioned
    repartition topics, a fixed repartition count, STALE_TOPOLOGY, SHUTDOWN_APPLICATION,
    ASSIGNMENT_DELAYED (the initial delay, the assignment interval), and topologies Kafka calls
    invalid once it configures them."""
    source, four, late, missing = s.name("words"), s.name("four"), s.name("late"), s.name("missing")
    s.create_topic(source, 6)
    s.create_topic(four, 4)

    # a missing source topic
    group = s.name("ms")
    prepare(s, group, [source])
    r = join(s, "join: the source topic is missing", group, A, stateless(late), "process-a")
    beat(s, "heartbeat: still missing", group, A, r["member_epoch"], **NO_TASKS)
    describe(s, "StreamsGroupDescribe v1 a group without its source", [group])
    s.create_topic(late, 3)
    wait_until_seen(s, group, [late])
    r = beat(s, "heartbeat: the source exists now", group, A, r["member_epoch"], **NO_TASKS)
    describe(s, "StreamsGroupDescribe v1 the group with its source", [group])
    beat(s, None, group, A, -1)
    # Kafka 4.4 fails a join with an endpoint while a source is missing (UNKNOWN_SERVER_ERROR),
    # and keeps some of the failed heartbeat's in-memory state (the endpoint epoch, a target
    # computed for the next epoch): the group is left alone after that
    group = s.name("mse")
    prepare(s, group, [source])
    join(s, "join with an endpoint while the source is missing", group, A, stateless(missing), "process-a",
         user_endpoint={"host": "host-a", "port": 9090})  # fmt: skip
    describe(s, "StreamsGroupDescribe v1 after the failed join", [group])
    join(s, "join without an endpoint while the source is missing", group, A, stateless(missing), "process-a")
    join(s, "B joins with an endpoint while the source is missing", group, B, stateless(missing), "process-b",
         user_endpoint={"host": "host-b", "port": 9090})  # fmt: skip
    describe(s, "StreamsGroupDescribe v1 after the second failed join", [group])
    group = s.name("ms4")
    prepare(s, group, [source])
    missing4 = [s.name(f"m{i}") for i in (3, 1, 4, 2)]
    join(s, "join: four source topics are missing", group, A,
         {"epoch": 0, "subtopologies": [subtopology("0", source_topics=missing4)]}, "process-a")  # fmt: skip
    beat(s, None, group, A, -1)

    # copartitioning
    group = s.name("cp")
    prepare(s, group, [source, four])
    co = {
        "epoch": 0,
        "subtopologies": [
            subtopology(
                "0",
                source_topics=[source, four],
                copartition_groups=[
                    {"source_topics": [0, 1], "source_topic_regex": [], "repartition_source_topics": []}
                ],
            )
        ],
    }
    join(s, "join: copartitioned sources of 6 and 4 partitions", group, A, co, "process-a")
    beat(s, None, group, A, -1)
    group = s.name("ncp")
    prepare(s, group, [source, four])
    join(s, "join: the same sources without a copartition group", group, A,
         {**co, "subtopologies": [subtopology("0", source_topics=[source, four])]}, "process-a")  # fmt: skip
    beat(s, None, group, A, -1)
    group = unsorted_app(s, "rcp", lambda g: [f"{g}-left-repartition", f"{g}-right-repartition", f"{g}-join-changelog"])
    prepare(s, group, [source, four])
    left, right, store = f"{group}-left-repartition", f"{group}-right-repartition", f"{group}-join-changelog"
    joined = {
        "epoch": 0,
        "subtopologies": [
            subtopology("0", source_topics=[four], repartition_sink_topics=[left]),
            subtopology("1", source_topics=[source], repartition_sink_topics=[right]),
            subtopology(
                "2",
                repartition_source_topics=[
                    topic_info(left, REPARTITION_CONFIGS),
                    topic_info(right, REPARTITION_CONFIGS),
                ],
                state_changelog_topics=[topic_info(store, CHANGELOG_CONFIGS)],
                copartition_groups=[
                    {"source_topics": [], "source_topic_regex": [], "repartition_source_topics": [0, 1]}
                ],
            ),
        ],
    }
    r = join(s, "join: two repartition topics copartitioned (a join)", group, A, joined, "process-a")
    wait_until_seen(s, group, [left, right, store])
    s.record("Metadata of the join's internal topics", topics_brief(s, [left, right, store]))
    beat(s, "heartbeat: the join's tasks", group, A, r["member_epoch"], **NO_TASKS)
    beat(s, None, group, A, -1)

    # an internal topic that exists with another partition count
    group = s.name("wrong")
    repartition, changelog = internal_names(group)
    s.create_topic(changelog, 2)
    prepare(s, group, [source, changelog])
    r = join(s, "join: the changelog topic exists with 2 partitions", group, A, word_count(group, source), "process-a")
    beat(s, "heartbeat: the changelog topic still has 2 partitions", group, A, r["member_epoch"], **NO_TASKS)
    s.record("Metadata of the internal topics next to a wrong one", topics_brief(s, [repartition, changelog]))
    beat(s, None, group, A, -1)

    # a repartition topic with a fixed count, internal topics that exist already
    group = s.name("fixed")
    repartition, changelog = internal_names(group)
    s.create_topic(repartition, 3)
    s.create_topic(changelog, 3)
    prepare(s, group, [source, repartition, changelog])
    fixed = word_count(group, source)
    fixed["subtopologies"][1]["repartition_source_topics"][0]["partitions"] = 3
    join(s, "join: a repartition topic of 3 partitions, the internal topics exist", group, A, fixed, "process-a")
    describe(s, "StreamsGroupDescribe v1 a group with a fixed repartition count", [group])
    beat(s, None, group, A, -1)

    # topologies Kafka refuses once it configures them
    group = s.name("bad")
    prepare(s, group, [source])
    cases = [
        (
            "a repartition source nobody writes",
            {"epoch": 0, "subtopologies": [subtopology("0", repartition_source_topics=[
                topic_info(f"{group}-orphan-repartition", REPARTITION_CONFIGS)])]},
        ),
        ("a subtopology without source topics", {"epoch": 0, "subtopologies": [subtopology("0")]}),
        (
            "two repartition topics feeding each other",
            {
                "epoch": 0,
                "subtopologies": [
                    subtopology("0", repartition_sink_topics=[f"{group}-b-repartition"],
                                repartition_source_topics=[topic_info(f"{group}-a-repartition", REPARTITION_CONFIGS)]),
                    subtopology("1", repartition_sink_topics=[f"{group}-a-repartition"],
                                repartition_source_topics=[topic_info(f"{group}-b-repartition", REPARTITION_CONFIGS)]),
                ],
            },
        ),
    ]  # fmt: skip
    for what, topology in cases:
        join(s, f"join with {what}", group, A, topology, "process-a")
    describe(s, "StreamsGroupDescribe v1 after the refused topologies", [group])

    # STALE_TOPOLOGY: the group's topology has epoch 2, a member sends epoch 1
    group = s.name("stale")
    prepare(s, group, [source])
    r = join(s, "A joins with topology epoch 2", group, A, stateless(source, epoch=2), "process-a")
    epoch_a = r["member_epoch"]
    r = join(s, "B joins with topology epoch 1: stale", group, B, stateless(source, epoch=1), "process-b")
    epoch_b = r["member_epoch"]
    r = beat(s, "B heartbeats: still stale", group, B, epoch_b, **NO_TASKS)
    epoch_b = r["member_epoch"]
    join(s, "C joins with topology epoch 3", group, C, stateless(source, epoch=3), "process-c")
    join(s, "C joins with topology epoch 1 and another source", group, C, stateless(four, epoch=1), "process-c")
    join(s, "A rejoins with topology epoch 3", group, A, stateless(source, epoch=3), "process-a")
    describe(s, "StreamsGroupDescribe v1 a group with a stale member", [group])

    # SHUTDOWN_APPLICATION: asked for by the join that creates a group, then by a member
    shut = s.name("shut")
    prepare(s, shut, [source])
    r = join(s, "the creating join asks for the application's shutdown", shut, A, stateless(source), "process-a",
             shutdown_application=True)  # fmt: skip
    beat(s, "the next heartbeat after the creating join's shutdown request", shut, A, r["member_epoch"])
    beat(s, None, shut, A, -1)
    beat(s, "B asks for the application's shutdown", group, B, epoch_b, shutdown_application=True)
    beat(s, "A heartbeats (v0) after B's shutdown request", group, A, epoch_a, ver=0)
    beat(s, "B leaves", group, B, -1)
    beat(s, "A heartbeats after B left", group, A, epoch_a)
    beat(s, "A leaves", group, A, -1)
    join(s, "A joins the emptied group", group, A, stateless(source, epoch=2), "process-a")
    beat(s, None, group, A, -1)

    # ASSIGNMENT_DELAYED: the broker's initial delay (0 here); a delay of 30 s; an interval of 15 s
    group = unsorted_app(s, "delay", lambda g: list(internal_names(g)))
    prepare(s, group, [source], configs=None)
    join(s, "join with the broker's initial delay (0 in these tests), internal topics missing", group, A,
         word_count(group, source), "process-a")  # fmt: skip
    beat(s, None, group, A, -1)
    group = s.name("delay30")
    prepare(s, group, [source], configs={"streams.initial.rebalance.delay.ms": "30000"})
    r = join(s, "join with an initial delay of 30 s", group, A, stateless(source), "process-a")
    join(s, "a second member joins during the initial delay", group, B, stateless(source), "process-b")
    beat(s, "the first member heartbeats during the initial delay", group, A, r["member_epoch"], **NO_TASKS)
    describe(s, "StreamsGroupDescribe v1 during the initial delay", [group])
    beat(s, None, group, A, -1)
    beat(s, None, group, B, -1)
    group = s.name("interval")
    prepare(s, group, [source], configs={"streams.initial.rebalance.delay.ms": "0",
                                         "streams.assignment.interval.ms": "15000"})  # fmt: skip
    join(s, "join with an assignment interval of 15 s", group, A, stateless(source), "process-a")
    r = join(s, "a second member joins within the interval", group, B, stateless(source), "process-b")
    beat(s, "the first member heartbeats within the interval", group, A, r["member_epoch"], **NO_TASKS)
    describe(s, "StreamsGroupDescribe v1 while the assignment waits", [group])
    beat(s, None, group, A, -1)
    beat(s, None, group, B, -1)


# -- one id, one type -------------------------------------------------------------------------------------
def consumer_join(s: Target, label: str | None, group: str, member: str, topic: str) -> dict:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": [topic],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }
    if label is None:
        return s.req(None, CONSUMER_GROUP_HEARTBEAT, 1, body)
    return msgs(s, label, CONSUMER_GROUP_HEARTBEAT, 1, body)


def list_ours(s: Target, label: str, ver: int, body: dict, ours: set[str]) -> None:
    r = s.req(None, LIST_GROUPS, ver, body)
    r = {**r, "groups": [g for g in r["groups"] if g["group_id"] in ours]}
    s.record(label, s.norm(r), LIST_GROUPS, ver)


@probe
def probe_streams_group_types(s: Target) -> None:
    """A streams group id on the consumer, share and classic APIs (ConsumerGroupHeartbeat,
    JoinGroup, ConsumerGroupDescribe, DescribeGroups, ListGroups, DeleteGroups), the streams
    APIs on consumer and classic groups, and an empty streams group taken over by JoinGroup."""
    streams, consumer, classic, busy = s.name("sg"), s.name("cg"), s.name("g"), s.name("busy")
    topic = s.name("t")
    s.create_topic(topic, 2)
    for g in (streams, consumer, classic, busy):
        prepare(s, g, [topic])
    r = join(s, "a streams group's first member", streams, A, stateless(topic), "process-a")
    epoch_a = r["member_epoch"]
    consumer_member = str(uuid.uuid4())
    consumer_join(s, None, consumer, consumer_member, topic)
    commit = {
        "group_id": classic,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}]}],
    }  # fmt: skip
    s.req(None, OFFSET_COMMIT, 8, commit)  # a simple commit makes an empty classic group
    first = s.req(None, JOIN_GROUP, 9, classic_join_body(busy, ""))
    s.req(None, JOIN_GROUP, 9, classic_join_body(busy, first["member_id"]))  # a classic group with a member

    consumer_join(s, "ConsumerGroupHeartbeat on a streams group", streams, str(uuid.uuid4()), topic)
    msgs(s, "JoinGroup v9 on a streams group with a member", JOIN_GROUP, 9, classic_join_body(streams, ""))
    msgs(s, "JoinGroup v5 on a streams group with a member", JOIN_GROUP, 5, classic_join_body(streams, ""))
    msgs(s, "ShareGroupHeartbeat on a streams group", SHARE_GROUP_HEARTBEAT, 1,
         {"group_id": streams, "member_id": "share-member-one-000001", "member_epoch": 0, "rack_id": None,
          "subscribed_topic_names": [topic]})  # fmt: skip
    msgs(s, "OffsetCommit v9 on a streams group, unknown member", OFFSET_COMMIT, 9,
         {**commit, "group_id": streams, "generation_id_or_member_epoch": 1, "member_id": "nobody"})  # fmt: skip
    msgs(s, "ConsumerGroupDescribe a streams group", CONSUMER_GROUP_DESCRIBE, 1,
         {"group_ids": [streams], "include_authorized_operations": False})  # fmt: skip
    for ver in (5, 6):
        msgs(s, f"DescribeGroups v{ver} a streams group", DESCRIBE_GROUPS, ver,
             {"groups": [streams], "include_authorized_operations": False})  # fmt: skip
    ours = {streams, consumer, classic, busy}
    for ver, body in (
        (5, {"states_filter": [], "types_filter": ["streams"]}),
        (5, {"states_filter": ["Stable"], "types_filter": []}),
        (5, {"states_filter": [], "types_filter": []}),
        (4, {"states_filter": []}),
    ):
        list_ours(s, f"ListGroups v{ver} {body}", ver, body, ours)
    msgs(s, "DeleteGroups v2 a streams group with a member", DELETE_GROUPS, 2, {"groups_names": [streams]})

    join(s, "StreamsGroupHeartbeat join on a consumer group", consumer, B, stateless(topic), "process-b")
    beat(s, "StreamsGroupHeartbeat epoch 1 on a consumer group", consumer, B, 1)
    beat(s, "StreamsGroupHeartbeat leave on a consumer group", consumer, B, -1)
    join(s, "StreamsGroupHeartbeat join on a classic group with a member", busy, B, stateless(topic), "process-b")
    beat(s, "StreamsGroupHeartbeat leave on a classic group with a member", busy, B, -1)
    for ver in (0, 1):
        describe(s, f"StreamsGroupDescribe v{ver} streams, consumer, classic, missing and empty ids",
                 [streams, consumer, classic, busy, s.name("nosuch"), ""], ver=ver)  # fmt: skip
    join(s, "StreamsGroupHeartbeat join on an empty classic group", classic, B, stateless(topic), "process-b",
         expect={"error_code": "NONE"})  # fmt: skip
    describe(s, "StreamsGroupDescribe v1 the classic group taken over", [classic])
    msgs(s, "DescribeGroups v5 the classic group taken over", DESCRIBE_GROUPS, 5,
         {"groups": [classic], "include_authorized_operations": False})  # fmt: skip

    beat(s, "the streams group's member leaves", streams, A, -1)
    del epoch_a
    consumer_join(s, "ConsumerGroupHeartbeat on an empty streams group", streams, str(uuid.uuid4()), topic)
    list_ours(s, "ListGroups v5 an empty streams group", 5, {"states_filter": [], "types_filter": ["streams"]}, ours)
    r = s.req(None, JOIN_GROUP, 9, classic_join_body(streams, ""))
    s.record("JoinGroup v9 on an empty streams group", {"error_code": s.norm(r)["error_code"],
                                                        "member_id_given": bool(r["member_id"])})  # fmt: skip
    wait_until_not_a_streams_group(s, streams)
    describe(s, "StreamsGroupDescribe v1 after the JoinGroup", [streams])
    msgs(s, "DescribeGroups v5 after the JoinGroup", DESCRIBE_GROUPS, 5,
         {"groups": [streams], "include_authorized_operations": False})  # fmt: skip

    # DeleteGroups of an empty streams group
    gone = s.name("gone")
    prepare(s, gone, [topic])
    join(s, None, gone, A, stateless(topic), "process-a")
    beat(s, None, gone, A, -1)
    msgs(s, "DeleteGroups v2 an empty streams group", DELETE_GROUPS, 2, {"groups_names": [gone]})
    describe(s, "StreamsGroupDescribe v1 after DeleteGroups", [gone])
    beat(s, "StreamsGroupHeartbeat epoch 1 after DeleteGroups", gone, A, 1)


# -- StreamsGroupTopologyDescriptionUpdate --------------------------------------------------------------
def description_body(group: str | None, member: str | None, epoch: int, topic: str) -> dict:
    return {
        "group_id": group,
        "member_id": member,
        "topology_epoch": epoch,
        "topology_description": {
            "subtopologies": [
                {
                    "subtopology_id": "0",
                    "nodes": [
                        {
                            "name": "KSTREAM-SOURCE-0000000000",
                            "node_type": 1,
                            "source_topics": [topic],
                            "sink_topic": None,
                            "stores": [],
                            "successors": ["KSTREAM-PEEK-0000000001"],
                        },
                        {
                            "name": "KSTREAM-PEEK-0000000001",
                            "node_type": 2,
                            "source_topics": [],
                            "sink_topic": None,
                            "stores": [],
                            "successors": [],
                        },
                    ],
                }
            ],
            "global_stores": [],
        },
    }


@probe
def probe_streams_topology_description_update(s: Target) -> None:
    """StreamsGroupTopologyDescriptionUpdate (93): without a topology description plugin (Kafka's
    default) a member's push, an unknown group's and blank ids'; the v1 heartbeat's
    TopologyDescriptionRequired; StreamsGroupDescribe v1 with and without the description."""
    group, topic = s.name("app"), s.name("t")
    s.create_topic(topic, 1)
    prepare(s, group, [topic])
    r = join(s, "join (v1): TopologyDescriptionRequired", group, A, stateless(topic), "process-a")
    epoch = r["member_epoch"]
    u = STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
    msgs(s, "a member's push", u, 0, description_body(group, A, 0, topic))
    msgs(s, "a push with another topology epoch", u, 0, description_body(group, A, 7, topic))
    msgs(s, "an unknown member's push", u, 0, description_body(group, B, 0, topic))
    msgs(s, "an unknown group", u, 0, description_body(s.name("nosuch"), A, 0, topic))
    msgs(s, "an empty group id", u, 0, description_body("", A, 0, topic))
    msgs(s, "a blank member id", u, 0, description_body(group, "  ", 0, topic))
    msgs(s, "an empty member id", u, 0, description_body(group, "", 0, topic))
    beat(s, "heartbeat (v1) after the push", group, A, epoch)
    describe(s, "StreamsGroupDescribe v1 with the topology description", [group], description=True)
    describe(s, "StreamsGroupDescribe v1 without the topology description", [group], description=False)
    beat(s, None, group, A, -1)

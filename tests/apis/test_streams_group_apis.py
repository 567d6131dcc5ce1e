"""StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89) on the wire, v0 and v1: the gate,
Kafka's error codes and messages in its order (STREAMS-GROUPS.md §2.3), §10's word count
(internal topics created by the API layer after the answer, then the tasks), describe, and
streams groups in ListGroups, DescribeGroups and DeleteGroups."""

from __future__ import annotations

import pytest

from fakebroker.protocol.error_codes import ErrorCode as E

from .support import call, cluster, encodes

HEARTBEAT, DESCRIBE = 88, 89
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
G = "wc"
STREAMS_ON = {
    "group.coordinator.rebalance.protocols": "classic,consumer,streams",
    "group.streams.initial.rebalance.delay.ms": 0,
}
REPARTITION, CHANGELOG = "wc-count-repartition", "wc-count-changelog"


def word_count(source: str = "wc-input", epoch: int = 0) -> dict:
    return {
        "epoch": epoch,
        "subtopologies": [
            {"subtopology_id": "0", "source_topics": [source], "repartition_sink_topics": [REPARTITION]},
            {
                "subtopology_id": "1",
                "repartition_source_topics": [
                    {
                        "name": REPARTITION,
                        "partitions": 0,
                        "replication_factor": -1,
                        "topic_configs": [{"key": "cleanup.policy", "value": "delete"}],
                    }
                ],
                "state_changelog_topics": [
                    {
                        "name": CHANGELOG,
                        "partitions": 0,
                        "replication_factor": -1,
                        "topic_configs": [{"key": "cleanup.policy", "value": "compact"}],
                    }
                ],
            },
        ],
    }


def streams_cluster(**config):
    state = cluster(1, {**STREAMS_ON, **config})
    state.create_topic("wc-input", 6)
    return state


def join(member: str = "m-a", *, version: int = 1, now: int = 0, state=None, **fields):
    body = dict(
        group_id=G,
        member_id=member,
        member_epoch=0,
        endpoint_information_epoch=-1,
        rebalance_timeout_ms=300_000,
        topology=word_count(),
        active_tasks=[],
        standby_tasks=[],
        warmup_tasks=[],
        process_id=f"process-{member}",
        client_tags=[],
    )
    body.update(fields)
    return call(state, HEARTBEAT, version, now_ms=now, **body)[0]


def beat(state, member: str, epoch: int, *, version: int = 1, now: int = 0, **fields):
    body = dict(group_id=G, member_id=member, member_epoch=epoch, endpoint_information_epoch=-1)
    body.update(fields)
    return call(state, HEARTBEAT, version, now_ms=now, **body)[0]


def tasks_of(entries) -> dict[str, list[int]] | None:
    return None if entries is None else {t.subtopology_id: list(t.partitions) for t in entries}


def test_gate_unsupported_without_streams_protocol():
    state = cluster(1, {"group.coordinator.rebalance.protocols": "classic,consumer"})
    state.create_topic("wc-input", 6)
    answer = join(state=state)
    assert (answer.error_code, answer.error_message, answer.member_id, answer.acceptable_recovery_lag) == (
        E.UNSUPPORTED_VERSION,
        None,
        "",
        -1,
    )
    described = call(state, DESCRIBE, 0, group_ids=[G])[0]
    assert [g.error_code for g in described.groups] == [E.UNSUPPORTED_VERSION]


@pytest.mark.parametrize("version", [0, 1])
def test_word_count_join_creates_internal_topics_then_assigns(version):
    state = streams_cluster()
    first = join(version=version, state=state, user_endpoint={"host": "app-a", "port": 7070})
    assert first.error_code == E.NONE and first.member_epoch == 2
    assert [(s.status_code, s.status_detail) for s in first.status] == [
        (3, f"Internal topics are missing: {REPARTITION}, {REPARTITION.replace('repartition', 'changelog')}")
    ]
    assert (first.heartbeat_interval_ms, first.task_offset_interval_ms) == (5000, 60000)
    if version == 1:
        assert first.acceptable_recovery_lag == 10000
    assert (tasks_of(first.active_tasks), tasks_of(first.standby_tasks), tasks_of(first.warmup_tasks)) == ({}, {}, {})
    # a new group's endpoint epoch is 0; the requester's endpoint comes with no partitions yet
    assert first.endpoint_information_epoch == 0
    assert [
        (e.user_endpoint.host, e.user_endpoint.port, list(e.active_partitions))
        for e in first.partitions_by_user_endpoint
    ] == [("app-a", 7070, [])]
    # the API layer created them after answering, with the decided count and the topology's configs

    assert len(state.topics[CHANGELOG].partitions) == 6
    assert len(state.topics[REPARTITION].partitions) == 6
    second = beat(state, "m-a", 2, version=version, now=10, active_tasks=[], standby_tasks=[], warmup_tasks=[])
    assert second.error_code == E.NONE and [s.status_code for s in second.status] == []
    assert second.member_epoch == 3
    assert tasks_of(second.active_tasks) == {"0": list(range(6)), "1": list(range(6))}
    assert (tasks_of(second.standby_tasks), tasks_of(second.warmup_tasks)) == ({}, {})
    # the endpoint's tasks changed: a new endpoint epoch, with every source partition it serves
    assert second.endpoint_information_epoch == 1
    [endpoint] = second.partitions_by_user_endpoint
    assert [(p.topic, list(p.partitions)) for p in endpoint.active_partitions] == [
        (REPARTITION, list(range(6))),
        ("wc-input", list(range(6))),
    ]
    quiet = beat(state, "m-a", 3, version=version, now=20, endpoint_information_epoch=1)
    assert (quiet.member_epoch, quiet.active_tasks, quiet.partitions_by_user_endpoint) == (3, None, None)


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        ({"member_id": ""}, E.INVALID_REQUEST, "MemberId can't be empty."),
        ({"topology": None}, E.INVALID_REQUEST, "Topology must be non-null when (re-)joining."),
        ({"rebalance_timeout_ms": -1}, E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."),
        ({"active_tasks": None}, E.INVALID_REQUEST, "ActiveTasks must be empty when (re-)joining."),
        ({"member_epoch": -3}, E.INVALID_REQUEST, "MemberEpoch is -3, but must be greater than or equal to -2."),
        (
            {"topology": word_count("__consumer_offsets")},
            E.STREAMS_INVALID_TOPOLOGY,
            "Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is prohibited.",
        ),
        (
            {"topology": word_count("bad topic")},
            E.STREAMS_INVALID_TOPOLOGY,
            "Topic names bad topic are not valid topic names.",
        ),
    ],
)
def test_request_errors(fields, code, message):
    state = streams_cluster()
    body = {"member_epoch": 0, **fields}
    answer = join(state=state, **body)
    assert (answer.error_code, answer.error_message, answer.member_epoch, list(answer.status)) == (code, message, 0, [])
    encodes(HEARTBEAT, 0, answer)


def test_changelog_with_partitions_and_regex_are_refused():
    state = streams_cluster()
    topology = word_count()
    topology["subtopologies"][1]["state_changelog_topics"][0]["partitions"] = 6
    answer = join(state=state, topology=topology)
    assert (answer.error_code, answer.error_message) == (
        E.STREAMS_INVALID_TOPOLOGY,
        f"Changelog topic {CHANGELOG} must have an undefined partition count, but it is set to 6.",
    )
    regex = word_count()
    regex["subtopologies"][0]["source_topic_regex"] = ["wc-.*"]
    answer = join(state=state, topology=regex)
    assert (answer.error_code, answer.error_message) == (
        E.INVALID_REQUEST,
        "Regular expressions for source topics are not supported yet.",
    )


def test_group_and_member_errors():
    state = streams_cluster()
    missing = beat(state, "m-a", 1)
    assert (missing.error_code, missing.error_message) == (E.GROUP_ID_NOT_FOUND, f"Streams group {G} not found.")
    leave = beat(state, "m-a", -1)
    assert (leave.error_code, leave.error_message) == (E.GROUP_ID_NOT_FOUND, f"Group {G} not found.")
    assert join(state=state).member_epoch == 2
    unknown = beat(state, "m-x", 2)
    assert (unknown.error_code, unknown.error_message) == (
        E.UNKNOWN_MEMBER_ID,
        f"Member m-x is not a member of group {G}.",
    )
    assert beat(state, "m-a", 999).error_code == E.FENCED_MEMBER_EPOCH
    other = join("m-b", state=state, topology=word_count(epoch=1))
    assert (other.error_code, other.error_message) == (E.INVALID_REQUEST, "Topology updates are not supported yet.")
    changed = join("m-b", state=state, topology=word_count("wc-other"))
    assert (changed.error_code, changed.error_message) == (E.INVALID_REQUEST, "Topology updates are not supported yet.")


def test_missing_source_topic_status():
    state = streams_cluster()
    answer = join(state=state, topology=word_count("no-such-topic"))
    assert answer.error_code == E.NONE
    assert [(s.status_code, s.status_detail) for s in answer.status] == [
        (1, "Source topics no-such-topic are missing.")
    ]
    assert tasks_of(answer.active_tasks) == {}
    assert REPARTITION not in state.topics  # nothing is created while a source is missing


def test_leave_answer_and_static_leave():
    state = streams_cluster()
    join(state=state)
    gone = beat(state, "m-a", -1)
    assert (gone.error_code, gone.member_id, gone.member_epoch, gone.heartbeat_interval_ms) == (E.NONE, "m-a", -1, 0)
    assert (gone.acceptable_recovery_lag, list(gone.status), gone.active_tasks) == (-1, [], None)
    assert join("s-1", state=state, instance_id="i-1").error_code == E.NONE
    assert beat(state, "s-1", -2).error_code == E.INVALID_REQUEST  # -2 needs the instance id
    static = beat(state, "s-1", -2, instance_id="i-1")
    assert (static.error_code, static.member_epoch) == (E.NONE, -2)
    # a new member id takes the instance over; another member id cannot heartbeat for it
    assert join("s-2", state=state, instance_id="i-1").error_code == E.NONE
    assert beat(state, "s-1", 3, instance_id="i-1").error_code == E.FENCED_INSTANCE_ID
    assert join("s-3", state=state, instance_id="i-1").error_code == E.UNRELEASED_INSTANCE_ID


@pytest.mark.parametrize("version", [0, 1])
def test_describe(version):
    state = streams_cluster()
    join(state=state, user_endpoint={"host": "app-a", "port": 7070})
    beat(state, "m-a", 2, now=10, active_tasks=[], standby_tasks=[], warmup_tasks=[])
    state.create_topic("plain", 1)
    fields = {"include_topology_description": True} if version == 1 else {}
    answer = call(state, DESCRIBE, version, group_ids=[G, "nope", ""], include_authorized_operations=False, **fields)[0]
    group, missing, empty = answer.groups
    assert (group.error_code, group.group_state, group.group_epoch, group.assignment_epoch) == (E.NONE, "Stable", 3, 3)
    assert [s.subtopology_id for s in group.topology.subtopologies] == ["0", "1"]
    assert [(t.name, t.partitions) for t in group.topology.subtopologies[1].state_changelog_topics] == [(CHANGELOG, 6)]
    [member] = group.members
    assert (member.member_id, member.member_epoch, member.process_id, member.client_id) == (
        "m-a",
        3,
        "process-m-a",
        "tester",
    )
    assert (member.user_endpoint.host, member.user_endpoint.port, member.is_classic) == ("app-a", 7070, False)
    assert tasks_of(member.assignment.active_tasks) == {"0": list(range(6)), "1": list(range(6))}
    assert tasks_of(member.target_assignment.active_tasks) == {"0": list(range(6)), "1": list(range(6))}
    if version == 1:
        assert (group.assignor_name, group.topology_description_status) == ("sticky", 1)
    assert (missing.error_code, missing.error_message) == (E.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert empty.error_code == E.INVALID_GROUP_ID


def test_list_describe_groups_and_delete():
    state = streams_cluster()
    join(state=state)
    listed = call(state, LIST_GROUPS, 5, types_filter=["streams"])[0]
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups] == [
        (G, "streams", "NotReady", "streams")
    ]
    old = call(state, DESCRIBE_GROUPS, 5, groups=[G])[0].groups[0]
    new = call(state, DESCRIBE_GROUPS, 6, groups=[G])[0].groups[0]
    assert (old.error_code, old.group_state, new.error_code, new.group_state) == (
        E.NONE,
        "Dead",
        E.GROUP_ID_NOT_FOUND,
        "Dead",
    )
    assert call(state, DELETE_GROUPS, 2, groups_names=[G])[0].results[0].error_code == E.NON_EMPTY_GROUP
    beat(state, "m-a", -1)
    assert call(state, DELETE_GROUPS, 2, groups_names=[G])[0].results[0].error_code == E.NONE
    assert G not in state.groups.streams.groups
    assert CHANGELOG in state.topics  # internal topics stay, as in Kafka


def test_consumer_heartbeat_on_streams_group_is_not_found():
    state = streams_cluster()
    join(state=state)
    answer = call(
        state,
        68,
        0,
        group_id=G,
        member_id="c-1",
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["wc-input"],
        topic_partitions=[],
    )[0]
    assert (answer.error_code, answer.error_message) == (E.GROUP_ID_NOT_FOUND, f"Group {G} is not a consumer group.")


def test_topology_description_update_without_a_plugin():
    """Key 93 (KIP-1331): Kafka configures no topology description plugin by default, so its
    heartbeat never asks for the push, and a push is answered UNSUPPORTED_VERSION with its
    text, after the gate."""
    body = dict(
        group_id=G,
        member_id="m-a",
        topology_epoch=0,
        topology_description={
            "subtopologies": [
                {
                    "subtopology_id": "0",
                    "nodes": [
                        {"name": "KSTREAM-SOURCE-0000000000", "node_type": 1, "source_topics": ["wc-input"]},
                    ],
                }
            ],
            "global_stores": [],
        },
    )
    off = cluster(1, {"group.coordinator.rebalance.protocols": "classic,consumer"})
    assert (call(off, 93, 0, **body)[0].error_code, call(off, 93, 0, **body)[0].error_message) == (
        E.UNSUPPORTED_VERSION,
        None,
    )
    state = streams_cluster()
    assert join(state=state).error_code == E.NONE
    assert join(state=state).topology_description_required is False  # never asked for
    answer = call(state, 93, 0, **body)[0]
    assert (answer.error_code, answer.error_message) == (
        E.UNSUPPORTED_VERSION,
        "The broker has no streams group topology description plugin configured.",
    )


# -- conformance fixes (tests/conformance/probes_streams.py, issue 39) --------------------------------
def test_internal_topic_names_in_kafkas_order():
    """KafkaApis lists a topology's topics per subtopology: sources, repartition sinks,
    repartition sources, then changelogs."""
    state = streams_cluster()
    topology = word_count()
    topology["subtopologies"][1]["state_changelog_topics"][0]["name"] = "__transaction_state"
    topology["subtopologies"][1]["repartition_source_topics"][0]["name"] = "__share_group_state"
    answer = join(state=state, topology=topology)
    assert (answer.error_code, answer.error_message) == (
        E.STREAMS_INVALID_TOPOLOGY,
        "Use of Kafka internal topics __share_group_state,__transaction_state in a Kafka Streams topology "
        "is prohibited.",
    )


def test_join_with_an_endpoint_fails_only_when_the_configuration_failed():
    """Kafka's endpoint quirk needs configured subtopologies that are absent: a missing source
    fails the join (UNKNOWN_SERVER_ERROR), missing internal topics do not."""
    state = streams_cluster()
    endpoint = {"host": "app-a", "port": 7070}
    ok = join(state=state, user_endpoint=endpoint)
    assert (ok.error_code, [s.status_code for s in ok.status]) == (E.NONE, [3])
    failed = join("m-b", state=state, user_endpoint=endpoint, topology=word_count("no-such-topic"), group_id="other")
    assert (failed.error_code, failed.error_message) == (E.UNKNOWN_SERVER_ERROR, None)


def test_fencing_messages():
    state = streams_cluster()
    assert join(state=state).member_epoch == 2
    newer = beat(state, "m-a", 7)
    assert (newer.error_code, newer.error_message) == (
        E.FENCED_MEMBER_EPOCH,
        "The streams group member has a greater member epoch (7) than the one known by the group coordinator "
        "(2). The member must abandon all its partitions and rejoin.",
    )
    older = beat(state, "m-a", 1)
    assert older.error_message.endswith("The member must abandon all its partitions and rejoin.")
    assert join("s-1", state=state, instance_id="i-1").error_code == E.NONE
    fenced = beat(state, "s-2", 2, instance_id="i-1")
    assert (fenced.error_code, fenced.error_message) == (
        E.FENCED_INSTANCE_ID,
        "Static member s-2 with instance id i-1 was fenced by member s-1.",
    )
    leave = beat(state, "s-2", -1, instance_id="i-1")
    assert (leave.error_code, leave.error_message) == (fenced.error_code, fenced.error_message)


@pytest.mark.parametrize(
    ("subtopologies", "message"),
    [
        (
            [{"subtopology_id": "0", "repartition_source_topics": [{"name": "r", "partitions": 0}]}],
            "Failed to compute number of partitions for all repartition topics, because a repartition source "
            "topic is never used as a sink topic.",
        ),
        (
            [
                {
                    "subtopology_id": "0",
                    "repartition_sink_topics": ["b"],
                    "repartition_source_topics": [{"name": "a", "partitions": 0}],
                },
                {
                    "subtopology_id": "1",
                    "repartition_sink_topics": ["a"],
                    "repartition_source_topics": [{"name": "b", "partitions": 0}],
                },
            ],
            "Failed to compute number of partitions for all repartition topics. There may be loops in the "
            "topology that cannot be resolved.",
        ),
        ([{"subtopology_id": "0"}], "No source topics found for subtopology 0"),
    ],
)
def test_topologies_kafka_refuses_once_configured(subtopologies, message):
    state = streams_cluster()
    answer = join(state=state, topology={"epoch": 0, "subtopologies": subtopologies})
    assert (answer.error_code, answer.error_message) == (E.STREAMS_INVALID_TOPOLOGY, message)
    assert G not in state.groups.streams.groups


def _described_counts(state) -> list[tuple[str, int]]:
    group = call(state, DESCRIBE, 1, group_ids=[G], include_authorized_operations=False)[0].groups[0]
    sub = group.topology.subtopologies[1]
    return [(t.name, t.partitions) for t in list(sub.repartition_source_topics) + list(sub.state_changelog_topics)]


def test_describe_shows_the_configured_topology_as_kafka_commits_it():
    """Kafka configures the creating join's topology on a transient group object, and later sets
    it outside its records: a describe shows the decided counts only from the next heartbeat
    that writes records."""
    state = streams_cluster()
    state.create_topic(REPARTITION, 6)
    state.create_topic(CHANGELOG, 6)
    first = join(state=state)
    assert first.error_code == E.NONE and first.status == []
    assert _described_counts(state) == [(REPARTITION, 0), (CHANGELOG, 0)]  # as requested
    lists = {"active_tasks": first.active_tasks, "standby_tasks": [], "warmup_tasks": []}
    quiet = beat(state, "m-a", first.member_epoch, now=10, **lists)
    assert quiet.active_tasks is None  # nothing changed, nothing written
    assert _described_counts(state) == [(REPARTITION, 0), (CHANGELOG, 0)]
    assert join("m-b", state=state, now=20).error_code == E.NONE  # records: the decided counts show
    assert _described_counts(state) == [(REPARTITION, 6), (CHANGELOG, 6)]


def test_the_creating_join_keeps_neither_task_offsets_nor_a_shutdown_request():
    state = streams_cluster()
    offsets = [{"subtopology_id": "1", "partition": 0, "offset": 100}]
    first = join(state=state, task_offsets=offsets, task_end_offsets=offsets, shutdown_application=True)
    assert [s.status_code for s in first.status] == [3, 4]  # in its own answer only
    member = call(state, DESCRIBE, 1, group_ids=[G], include_authorized_operations=False)[0].groups[0].members[0]
    assert (list(member.task_offsets), list(member.task_end_offsets)) == ([], [])
    later = beat(state, "m-a", first.member_epoch, now=10, task_offsets=offsets)
    assert [s.status_code for s in later.status] == []
    member = call(state, DESCRIBE, 1, group_ids=[G], include_authorized_operations=False)[0].groups[0].members[0]
    assert [(t.subtopology_id, t.partition, t.offset) for t in member.task_offsets] == [("1", 0, 100)]
    second = join("m-b", state=state, now=20, task_offsets=offsets)
    assert second.error_code == E.NONE
    described = call(state, DESCRIBE, 1, group_ids=[G], include_authorized_operations=False)[0].groups[0]
    assert {m.member_id: len(m.task_offsets) for m in described.members} == {"m-a": 1, "m-b": 1}


def test_missing_client_tags_status_on_v1_only():
    """With rack-aware assignment tags configured, a member whose client tags lack some gets
    MISSING_CLIENT_TAGS (6) last in its statuses, on v1 only, the tags in the config's order."""
    state = streams_cluster(**{"group.streams.rack.aware.assignment.tags": "zone,rack"})
    detail = (
        "Missing required client tags for rack-aware standby assignment: [{}]. Configure them via "
        "'client.tag.<tagKey>' in your Streams config."
    )
    first = join("m-a", state=state, client_tags=[{"key": "rack", "value": "r1"}])
    assert (first.error_code, [(s.status_code, s.status_detail) for s in first.status][-1]) == (
        E.NONE,
        (6, detail.format("zone")),
    )
    old = join("m-b", state=state, version=0, client_tags=[])
    assert 6 not in [s.status_code for s in old.status]
    tagged = join("m-c", state=state, client_tags=[{"key": "zone", "value": "z"}, {"key": "rack", "value": "r"}])
    assert 6 not in [s.status_code for s in tagged.status]
    bare = beat(state, "m-b", old.member_epoch)
    assert (bare.status[-1].status_code, bare.status[-1].status_detail) == (6, detail.format("zone, rack"))

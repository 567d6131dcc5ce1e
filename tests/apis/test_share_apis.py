"""Share groups (KIP-932) through their handlers, without sockets: the test vectors of
SHARE-GROUPS.md §8 (assignment, leave, epoch fencing, archive at the limit, lock expiry,
sessions, acknowledgement validation), one id one type, and the admin offsets APIs."""

from __future__ import annotations

import uuid

import pytest

from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import ApiKey

from .support import call, cluster, produce_records

ACCEPT, RELEASE, REJECT = 1, 2, 3


@pytest.fixture
def state():
    s = cluster(1)
    s.features.finalized["share.version"] = 2
    return s


def heartbeat(state, group, member, epoch, topics=None, now_ms=0):
    result, _ = call(
        state,
        ApiKey.SHARE_GROUP_HEARTBEAT,
        1,
        now_ms=now_ms,
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        rack_id=None,
        subscribed_topic_names=topics,
    )
    return result


def assigned(state, result) -> list[int]:
    if result.assignment is None:
        return None
    return sorted(p for t in result.assignment.topic_partitions for p in t.partitions)


def topic_id(state, name) -> uuid.UUID:
    return state.topics[name].topic_id


def fetch(state, group, member, epoch, partitions=(), acks=None, now_ms=0, max_wait_ms=0, version=1, **extra):
    """A ShareFetch of (topic, partition) pairs; ``acks``: {(topic, partition): [(first, last, [types])]}.
    A session's first fetch comes after its member joined the group, as a client's does (a
    share partition no group initialized is an UNKNOWN_SERVER_ERROR, as on Kafka)."""
    acks = acks or {}
    if epoch == 0 and partitions:
        joined = state.groups.share.live(group)
        if joined is None or member not in joined.members:
            heartbeat(state, group, member, 0, sorted({t for t, _ in partitions}), now_ms=now_ms)
    names = list(dict.fromkeys([t for t, _ in partitions] + [t for t, _ in acks]))
    topics = []
    for name in names:
        parts = sorted({p for t, p in partitions if t == name} | {p for t, p in acks if t == name})
        topics.append(
            {
                "topic_id": topic_id(state, name),
                "partitions": [
                    {
                        "partition_index": p,
                        "acknowledgement_batches": [
                            {"first_offset": f, "last_offset": last, "acknowledge_types": types}
                            for f, last, types in acks.get((name, p), [])
                        ],
                    }
                    for p in parts
                ],
            }
        )
    fields = dict(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=500,
        batch_size=500,
        topics=topics,
        forgotten_topics_data=[],
    )
    fields.update(extra)
    result, _ = call(state, ApiKey.SHARE_FETCH, version, now_ms=now_ms, **fields)
    return result


def acquired(result) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in result.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def acknowledge(state, group, member, epoch, name, partition, batches, now_ms=0):
    result, _ = call(
        state,
        ApiKey.SHARE_ACKNOWLEDGE,
        1,
        now_ms=now_ms,
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        topics=[
            {
                "topic_id": topic_id(state, name),
                "partitions": [
                    {
                        "partition_index": partition,
                        "acknowledgement_batches": [
                            {"first_offset": f, "last_offset": last, "acknowledge_types": types}
                            for f, last, types in batches
                        ],
                    }
                ],
            }
        ],
    )
    return result


def earliest(state, group, **configs):
    state.group_configs.overrides.setdefault(group, {}).update(
        {"share.auto.offset.reset": "earliest", **{k.replace("_", "."): str(v) for k, v in configs.items()}}
    )


# -- ShareGroupHeartbeat ---------------------------------------------------------------------------
def test_members_get_epochs_and_a_balanced_assignment(state):
    state.create_topic("t", 4, 1)
    first = heartbeat(state, "g", "m1", 0, ["t"])
    assert (first.error_code, first.member_epoch, assigned(state, first)) == (E.NONE, 2, [0, 1, 2, 3])
    assert first.heartbeat_interval_ms == 5000
    second = heartbeat(state, "g", "m2", 0, ["t"], now_ms=2000)
    assert second.member_epoch == 3 and len(assigned(state, second)) == 2
    again = heartbeat(state, "g", "m1", 2, now_ms=2100)
    assert again.member_epoch == 3 and sorted(assigned(state, again) + assigned(state, second)) == [0, 1, 2, 3]
    quiet = heartbeat(state, "g", "m1", 3, now_ms=2200)
    assert quiet.assignment is None  # unchanged since the member was told


def test_one_partition_is_shared_by_every_member(state):
    state.create_topic("t", 1, 1)
    results = [heartbeat(state, "g", f"m{i}", 0, ["t"], now_ms=i * 2000) for i in range(3)]
    for i in range(3):
        results[i] = heartbeat(state, "g", f"m{i}", results[i].member_epoch, now_ms=10_000)
    assert {m: sorted(g.assigned["t"]) for m, g in state.groups.share.groups["g"].members.items()} == {
        "m0": [0],
        "m1": [0],
        "m2": [0],
    }


def test_leave_fencing_and_unknown_members(state):
    state.create_topic("t", 1, 1)
    heartbeat(state, "g", "m1", 0, ["t"])
    left = heartbeat(state, "g", "m1", -1)
    assert (left.error_code, left.member_id, left.member_epoch, left.heartbeat_interval_ms, left.assignment) == (
        E.NONE,
        "m1",
        -1,
        0,
        None,
    )
    assert state.groups.share.groups["g"].state.value == "Empty"
    assert heartbeat(state, "g", "m1", 5).error_code == E.UNKNOWN_MEMBER_ID
    missing = heartbeat(state, "other", "m1", 5)
    assert (missing.error_code, missing.error_message) == (E.GROUP_ID_NOT_FOUND, "Share group other not found.")


def test_epoch_fencing_tolerates_the_previous_epoch(state):
    state.create_topic("t", 2, 1)
    heartbeat(state, "g", "m1", 0, ["t"])  # epoch 2
    heartbeat(state, "g", "m2", 0, ["t"], now_ms=5000)  # group epoch 3
    member = heartbeat(state, "g", "m1", 2, now_ms=6000)
    assert member.member_epoch == 3
    assert heartbeat(state, "g", "m1", 2, now_ms=6100).error_code == E.NONE  # the lost response's epoch
    assert heartbeat(state, "g", "m1", 1, now_ms=6200).error_code == E.FENCED_MEMBER_EPOCH
    assert heartbeat(state, "g", "m1", 9, now_ms=6300).error_code == E.FENCED_MEMBER_EPOCH
    assert heartbeat(state, "g", "m1", 0, ["t"], now_ms=6400).member_epoch == 3  # epoch 0: rejoins


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"member_id": " "}, "MemberId can't be empty."),
        ({"member_epoch": 0, "subscribed_topic_names": None}, "SubscribedTopicNames must be set in first request."),
        ({"member_epoch": -3}, "MemberEpoch is invalid."),
    ],
)
def test_invalid_heartbeats(state, fields, message):
    request = {"group_id": "g", "member_id": "m", "member_epoch": 0, "rack_id": None, "subscribed_topic_names": ["t"]}
    result, _ = call(state, ApiKey.SHARE_GROUP_HEARTBEAT, 1, **{**request, **fields})
    assert (result.error_code, result.error_message) == (E.INVALID_REQUEST, message)


def test_one_id_one_type(state):
    state.create_topic("t", 1, 1)
    call(
        state,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        0,
        group_id="kip848",
        member_id="c1",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    on_consumer = heartbeat(state, "kip848", "m1", 0, ["t"])
    assert (on_consumer.error_code, on_consumer.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group kip848 is not a share group.",
    )
    heartbeat(state, "shared", "m1", 0, ["t"])
    on_share, _ = call(
        state,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        0,
        group_id="shared",
        member_id="c1",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    assert (on_share.error_code, on_share.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group shared is not a consumer group.",
    )
    joined, _ = call(
        state,
        ApiKey.JOIN_GROUP,
        9,
        group_id="shared",
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id="",
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b""}],
    )
    assert (joined.error_code, joined.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    listed, _ = call(state, ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["share"])
    assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [("shared", "share", "Stable")]
    described, _ = call(state, ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=["shared", "kip848", "none"])
    assert [(g.error_code, g.error_message) for g in described.groups] == [
        (E.NONE, None),
        (E.GROUP_ID_NOT_FOUND, "Group kip848 is not a share group."),
        (E.GROUP_ID_NOT_FOUND, "Group none not found."),
    ]
    group = described.groups[0]
    assert (group.group_state, group.group_epoch, group.assignor_name) == ("Stable", 2, "simple")
    assert [(m.member_id, m.member_epoch, m.subscribed_topic_names) for m in group.members] == [("m1", 2, ["t"])]


def test_share_groups_need_share_version(state):
    state.features.finalized["share.version"] = 0
    assert heartbeat(state, "g", "m1", 0, ["t"]).error_code == E.UNSUPPORTED_VERSION


# -- ShareFetch and ShareAcknowledge ---------------------------------------------------------------
def test_archive_at_the_delivery_limit(state):
    state.create_topic("t", 1, 1)
    earliest(state, "g", share_delivery_count_limit=2)
    produce_records(state, "t", 0, b"a", b"b", b"c")
    first = fetch(state, "g", "m1", 0, [("t", 0)])
    assert acquired(first) == [(0, 2, 1)]
    second = fetch(state, "g", "m1", 1, acks={("t", 0): [(0, 2, [RELEASE])]})
    assert acquired(second) == [(0, 2, 2)]
    third = fetch(state, "g", "m1", 2, acks={("t", 0): [(0, 2, [RELEASE])]})
    assert acquired(third) == []  # archived at the second release
    sp = state.groups.shares.partitions[("g", "t", 0)]
    assert (sp.start, sp.ranges) == (3, [])
    assert [e.details["reason"] for e in state.events if e.kind == "share_records_archived"] == ["delivery limit"]


def test_lock_expiry_hands_records_to_another_member(state):
    state.create_topic("t", 1, 1)
    earliest(state, "g", share_record_lock_duration_ms=15000)
    produce_records(state, "t", 0, b"a", b"b", b"c")
    first = fetch(state, "g", "m1", 0, [("t", 0)])
    assert acquired(first) == [(0, 2, 1)] and first.acquisition_lock_timeout_ms == 15000
    state.tick(15_000)
    late = acknowledge(state, "g", "m1", 1, "t", 0, [(0, 2, [ACCEPT])], now_ms=15_000)
    part = late.responses[0].partitions[0]
    assert (part.error_code, part.error_message) == (
        E.INVALID_RECORD_STATE,
        "The batch cannot be acknowledged. The batch is not in the acquired state.",
    )
    other = fetch(state, "g", "m2", 0, [("t", 0)], now_ms=15_000)
    assert acquired(other) == [(0, 2, 2)]
    stolen = acknowledge(state, "g", "m1", 2, "t", 0, [(0, 2, [ACCEPT])], now_ms=15_001)
    part = stolen.responses[0].partitions[0]
    assert (part.error_code, part.error_message) == (E.INVALID_RECORD_STATE, "Member is not the owner of batch record")


def test_share_session_epochs(state):
    state.create_topic("t", 1, 1)
    earliest(state, "g")
    assert fetch(state, "g", "m1", 0, [("t", 0)]).error_code == E.NONE  # session at epoch 1
    assert fetch(state, "g", "m1", 1).error_code == E.NONE
    assert fetch(state, "g", "m1", 1).error_code == E.INVALID_SHARE_SESSION_EPOCH
    assert acknowledge(state, "g", "m1", 2, "t", 0, []).error_code == E.NONE
    assert acknowledge(state, "g", "m1", 0, "t", 0, []).error_code == E.INVALID_SHARE_SESSION_EPOCH
    with_acks = fetch(state, "g", "m1", 0, acks={("t", 0): [(0, 0, [ACCEPT])]})
    assert with_acks.error_code == E.INVALID_REQUEST and with_acks.error_message is None
    assert fetch(state, "g", "m1", -1).error_code == E.NONE
    assert fetch(state, "g", "m1", 3).error_code == E.SHARE_SESSION_NOT_FOUND
    assert fetch(state, "g", "m2", 4).error_code == E.SHARE_SESSION_NOT_FOUND


def test_a_full_session_cache_answers_after_max_wait():
    state = cluster(1, {"group.share.max.share.sessions": 1})
    state.features.finalized["share.version"] = 2
    state.create_topic("t", 1, 1)
    fetch(state, "g", "m1", 0, [("t", 0)])
    waiting = fetch(state, "g", "m2", 0, [("t", 0)], max_wait_ms=100)
    assert waiting.poll(50, False) is None
    assert waiting.poll(100, True).error_code == E.SHARE_SESSION_LIMIT_REACHED


@pytest.mark.parametrize(
    "batches",
    [
        [(5, 3, [ACCEPT])],  # first > last
        [(0, 4, [ACCEPT, ACCEPT])],  # two types for five offsets
        [(0, 1, [9])],  # no such type
    ],
)
def test_invalid_acknowledgement_batches(state, batches):
    state.create_topic("t", 1, 1)
    earliest(state, "g")
    produce_records(state, "t", 0, b"a", b"b", b"c", b"d", b"e", b"f")
    fetch(state, "g", "m1", 0, [("t", 0)])
    result = fetch(state, "g", "m1", 1, acks={("t", 0): batches})
    assert result.responses[0].partitions[0].acknowledge_error_code == E.INVALID_REQUEST


def test_a_group_that_never_joined_has_no_share_state(state):
    state.create_topic("t", 1, 1)
    produce_records(state, "t", 0, b"a")
    first = fetch(state, "nobody", "m1", 0, [])  # opens a session, names nothing
    assert first.error_code == E.NONE
    topics = [{"topic_id": topic_id(state, "t"), "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}]
    result, _ = call(
        state,
        ApiKey.SHARE_FETCH,
        1,
        group_id="nobody",
        member_id="m1",
        share_session_epoch=1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=500,
        batch_size=500,
        topics=topics,
        forgotten_topics_data=[],
    )
    assert result.responses == []  # a fetch that does not wait: the partition's load is not done
    later = fetch(state, "nobody", "m1", 2, max_wait_ms=100)  # waits for the load: it fails
    assert [p.error_code for t in later.responses for p in t.partitions] == [E.UNKNOWN_SERVER_ERROR]
    assert not state.groups.share_states.states and not state.groups.shares.partitions  # nothing kept


def test_auto_offset_reset_latest_skips_what_was_there(state):
    state.create_topic("t", 1, 1)
    produce_records(state, "t", 0, b"old")
    assert acquired(fetch(state, "g", "m1", 0, [("t", 0)])) == []
    produce_records(state, "t", 0, b"new")
    assert acquired(fetch(state, "g", "m1", 1)) == [(1, 1, 1)]


def test_a_waiting_fetch_acquires_what_arrives(state):
    state.create_topic("t", 1, 1)
    earliest(state, "g")
    waiting = fetch(state, "g", "m1", 0, [("t", 0)], max_wait_ms=500)
    assert waiting.poll(10, False) is None
    produce_records(state, "t", 0, b"x")
    assert acquired(waiting.poll(20, False)) == [(0, 0, 1)]


# -- admin -----------------------------------------------------------------------------------------
def test_offsets_are_described_altered_and_deleted(state):
    state.create_topic("t", 1, 1)
    earliest(state, "g")
    produce_records(state, "t", 0, *[b"r%d" % i for i in range(8)])
    heartbeat(state, "g", "m1", 0, ["t"])
    fetch(state, "g", "m1", 0, [("t", 0)])
    fetch(state, "g", "m1", 1, acks={("t", 0): [(0, 7, [ACCEPT])]})
    described, _ = call(state, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[{"group_id": "g", "topics": None}])
    p = described.groups[0].topics[0].partitions[0]
    assert (p.start_offset, p.lag) == (0, 0)  # the persisted start offset trails by one write
    busy, _ = call(state, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="g", topics=[])
    assert (busy.error_code, busy.error_message) == (E.NON_EMPTY_GROUP, "The group is not empty.")
    heartbeat(state, "g", "m1", -1)
    altered, _ = call(
        state,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        0,
        group_id="g",
        topics=[{"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 2}]}],
    )
    assert altered.error_code == E.NONE and altered.responses[0].partitions[0].error_code == E.NONE
    again = fetch(state, "g", "m2", 0, [("t", 0)])
    assert acquired(again) == [(2, 7, 1)]
    heartbeat(state, "g", "m2", -1)  # the group is empty again
    deleted, _ = call(state, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="g", topics=[{"topic_name": "t"}])
    assert [(r.topic_name, r.error_code) for r in deleted.responses] == [("t", E.NONE)]
    twice, _ = call(state, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="g", topics=[{"topic_name": "t"}])
    assert (twice.responses[0].error_code, twice.responses[0].error_message) == (
        E.UNKNOWN_TOPIC_OR_PARTITION,
        "There is no offset information to delete.",
    )
    gone, _ = call(state, ApiKey.DELETE_GROUPS, 2, groups_names=["g"])
    assert gone.results[0].error_code == E.NONE
    assert "g" not in state.groups.share.groups and not state.groups.share_states.keys_of("g")


# -- dead letters (KIP-1191) -----------------------------------------------------------------------
def dead_letters(state, topic):
    from fakebroker.protocol import records

    out = []
    for stored in state.topics[topic].partitions[0].log.iter_batches():
        for batch in records.read_batches(stored.data):
            for r in batch.records:
                out.append((r.key, r.value, {k: v.decode() for k, v in r.headers}))
    return out


def test_rejected_and_exhausted_records_go_to_the_dead_letter_topic(state):
    state.create_topic("t", 1, 1)
    state.create_topic("dlq.g", 1, 1, {"errors.deadletterqueue.group.enable": "true"})
    earliest(state, "g", share_delivery_count_limit=2)
    state.group_configs.overrides["g"].update(
        {"errors.deadletterqueue.topic.name": "dlq.g", "errors.deadletterqueue.copy.record.enable": "true"}
    )
    produce_records(state, "t", 0, b"bad", b"flaky", b"fine")
    fetch(state, "g", "m1", 0, [("t", 0)])
    fetch(state, "g", "m1", 1, acks={("t", 0): [(0, 2, [REJECT, RELEASE, ACCEPT])]})
    fetch(state, "g", "m1", 2, acks={("t", 0): [(1, 1, [RELEASE])]})
    letters = dead_letters(state, "dlq.g")
    assert [
        (v, h["__dlq.errors.offset"], h["__dlq.errors.delivery.count"], h["__dlq.errors.message"])
        for _, v, h in letters
    ] == [
        (b"bad", "0", "1", "Offset rejected by client."),
        (b"flaky", "1", "2", "Offset delivery count exceeded the threshold."),
    ]
    assert {h["__dlq.errors.topic"] for *_, h in letters} == {"t"}
    assert {h["__dlq.errors.group"] for *_, h in letters} == {"g"}


@pytest.mark.parametrize(
    "share_version, topic_configs", [(1, {"errors.deadletterqueue.group.enable": "true"}), (2, {})]
)
def test_dead_letters_need_share_version_2_and_a_topic_that_accepts_them(state, share_version, topic_configs):
    state.features.finalized["share.version"] = share_version
    state.create_topic("t", 1, 1)
    state.create_topic("dlq.g", 1, 1, topic_configs)
    earliest(state, "g")
    state.group_configs.overrides["g"]["errors.deadletterqueue.topic.name"] = "dlq.g"
    produce_records(state, "t", 0, b"bad")
    fetch(state, "g", "m1", 0, [("t", 0)])
    fetch(state, "g", "m1", 1, acks={("t", 0): [(0, 0, [REJECT])]})
    assert dead_letters(state, "dlq.g") == []
    assert state.groups.shares.partitions[("g", "t", 0)].start == 1  # archived all the same


def test_late_assignment_follows_kafkas_sequence():
    state = cluster(1, {"fakebroker.share.late.assignment": True})
    state.features.finalized["share.version"] = 2
    state.create_topic("t", 4, 1)
    first = heartbeat(state, "g", "m1", 0, ["t"])
    assert (first.member_epoch, assigned(state, first)) == (2, [])  # the partitions initialize after this answer
    later = heartbeat(state, "g", "m1", 2, now_ms=5000)
    assert (later.member_epoch, assigned(state, later)) == (3, [0, 1, 2, 3])
    joined = heartbeat(state, "g", "m2", 0, ["t"], now_ms=7000)  # initialized already: at once
    assert (joined.member_epoch, len(assigned(state, joined))) == (4, 2)

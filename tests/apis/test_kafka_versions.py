"""``kafka_version``: a cluster serves the API window and feature levels of the Kafka release it
poses as. The 4.3.1 and 3.9.2 figures below are real brokers' ApiVersions answers (freshly
formatted, default settings), for the APIs fakebroker answers."""

from __future__ import annotations

import uuid

import pytest

from fakebroker.apis.registry import served
from fakebroker.core.releases import UnknownRelease, release
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.specs import release_windows

from .support import CLUSTER_ID, call, cluster
from .txn_calls import TID, add_offsets, begin, txn_cluster, txn_offset_commit

API_VERSIONS = 18

# Kafka 4.3.1's ApiVersions answer, for the keys fakebroker serves
KAFKA_4_3_1 = {
    0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5),
    23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3),
    32: (1, 4), 33: (0, 2), 37: (0, 3), 42: (0, 2), 44: (0, 1), 47: (0, 0), 60: (0, 2), 61: (0, 0), 65: (0, 0),
    66: (0, 2), 68: (0, 1), 69: (0, 1), 35: (1, 5), 43: (0, 2), 45: (0, 1), 46: (0, 0), 75: (0, 0),
    48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 74: (0, 1),
    38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3),
}  # fmt: skip
# Kafka 3.9.2's, where fakebroker's handlers reach that far down (Fetch starts at v4 here, not v0)
KAFKA_3_9_2 = {
    0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5),
    23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3),
    32: (0, 4), 33: (0, 2), 37: (0, 3), 42: (0, 2), 44: (0, 1), 47: (0, 0), 60: (0, 1), 61: (0, 0), 65: (0, 0),
    66: (0, 1), 68: (0, 0), 69: (0, 0), 35: (0, 4), 43: (0, 2), 45: (0, 0), 46: (0, 0), 75: (0, 0),
    48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 1), 74: (0, 0),
    38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3),
}  # fmt: skip
SERVED_BELOW_KAFKA = {"3.9": {1: 4, 27: 1, 29: 1, 30: 1, 31: 1}}  # key -> our lowest version, higher than Kafka's


def posing(version: str):
    state = cluster(1)
    state.pose_as(version)
    return state


def api_versions(state, version=3, **fields):
    body = {"client_software_name": "tests", "client_software_version": "1", **fields}
    response, _ = call(state, API_VERSIONS, version, **body)
    return response


@pytest.mark.parametrize(("name", "kafka"), [("4.3", KAFKA_4_3_1), ("3.9", KAFKA_3_9_2)])
def test_each_release_serves_the_window_its_kafka_advertises(name, kafka):
    response = api_versions(posing(name))
    ours = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    expected = {key: (SERVED_BELOW_KAFKA.get(name, {}).get(key, lo), hi) for key, (lo, hi) in kafka.items()}
    assert {k: v for k, v in ours.items() if k in expected} == expected
    assert all(key in release_windows(name) for key in ours)


def test_4_4_adds_api_versions_v5_delete_groups_v3_and_txn_offset_commit_v6():
    windows = served("4.4")
    assert windows[18] == (0, 5) and windows[42] == (0, 3) and windows[28] == (0, 6)
    assert served("4.3")[18] == (0, 4) and served("4.3")[42] == (0, 2) and served("4.3")[28] == (0, 5)


def test_4_x_no_longer_serves_the_versions_kip_896_removed():
    for name in ("4.4", "4.3"):
        assert served(name)[2][0] == 1 and served(name)[8][0] == 2 and served(name)[23][0] == 2
    assert served("3.9")[2][0] == 0 and served("3.9")[8][0] == 0


@pytest.mark.parametrize(
    ("name", "supported", "finalized"),
    [
        ("4.4", {"metadata.version": (7, 33)}, {"metadata.version": 33, "transaction.version": 2, "group.version": 1}),
        ("4.3", {"metadata.version": (7, 30)}, {"metadata.version": 30, "transaction.version": 2, "group.version": 1}),
        ("3.9", {"metadata.version": (1, 21)}, {"metadata.version": 21}),
    ],
)
def test_each_release_reports_its_feature_levels(name, supported, finalized):
    response = api_versions(posing(name), version=3)
    got_supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    got_finalized = {f.name: f.max_version_level for f in response.finalized_features}
    assert got_supported == supported  # v3 leaves out features whose minimum is 0, as Kafka does
    assert {k: got_finalized.get(k) for k in finalized} == finalized
    if name == "3.9":
        assert got_finalized == {"metadata.version": 21}  # no transaction.version: clients use protocol 1


def test_3_9_has_no_transaction_version_so_transactions_use_protocol_1():
    state = posing("3.9")
    assert state.features.transaction_version == 0
    with pytest.raises(ValueError, match="unknown feature 'transaction.version'"):
        state.features.set("transaction.version", 2)


def test_an_unknown_release_names_the_valid_ones():
    with pytest.raises(UnknownRelease, match=r"valid: 4\.4, 4\.3, 3\.9"):
        release("5.1")
    assert release("3.9.2").name == "3.9"
    with pytest.raises(UnknownRelease):
        release("3.9.x")


# -- ApiVersions v5 (KIP-1242) and KIP-511's name rule ------------------------------------------


def test_api_versions_v5_accepts_its_own_cluster_and_node():
    response = api_versions(cluster(1), 5, cluster_id=CLUSTER_ID, node_id=0)
    assert response.error_code == E.NONE and response.api_keys


@pytest.mark.parametrize(
    ("cluster_id", "node_id", "error"),
    [
        ("another-cluster", 0, E.REBOOTSTRAP_REQUIRED),
        (CLUSTER_ID, 3, E.REBOOTSTRAP_REQUIRED),
        (CLUSTER_ID, -1, E.INVALID_REQUEST),
        (None, 0, E.INVALID_REQUEST),
    ],
)
def test_api_versions_v5_refuses_another_cluster_or_node(cluster_id, node_id, error):
    response = api_versions(cluster(1), 5, cluster_id=cluster_id, node_id=node_id)
    assert response.error_code == error and list(response.api_keys) == []


@pytest.mark.parametrize("name", ["", "-java", "bad name", "java-"])
def test_api_versions_v3_refuses_a_software_name_outside_kip_511s_pattern(name):
    assert api_versions(cluster(1), 3, client_software_name=name).error_code == E.INVALID_REQUEST


def test_api_versions_v2_does_not_read_software_names():
    assert api_versions(cluster(1), 2).error_code == E.NONE


# -- TxnOffsetCommit v6 (KIP-1319) ----------------------------------------------------------------


def txn_offset_commit_v6(state, pid, epoch, topic_ids, generation=-1, member=""):
    response, _ = call(
        state,
        28,
        6,
        broker=state.groups.coordinator_of("g"),
        transactional_id=TID,
        group_id="g",
        producer_id=pid,
        producer_epoch=epoch,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=None,
        topics=[{"topic_id": i, "partitions": [{"partition_index": 0, "committed_offset": 4}]} for i in topic_ids],
    )
    return response


def test_txn_offset_commit_v6_names_topics_by_id():
    state = txn_cluster()
    topic_id = state.topics["t"].topic_id
    pid, epoch = begin(state)
    add_offsets(state, pid, epoch)
    [known, unknown] = txn_offset_commit_v6(state, pid, epoch, [topic_id, uuid.uuid4()]).topics
    assert known.topic_id == topic_id and known.partitions[0].error_code == E.NONE
    assert unknown.partitions[0].error_code == E.UNKNOWN_TOPIC_ID


@pytest.mark.parametrize(("version", "error"), [(5, E.ILLEGAL_GENERATION), (6, E.GROUP_ID_NOT_FOUND)])
def test_txn_offset_commit_to_a_missing_group_at_a_generation(version, error):
    state = txn_cluster()
    pid, epoch = begin(state)
    add_offsets(state, pid, epoch)
    if version >= 6:
        response = txn_offset_commit_v6(state, pid, epoch, [state.topics["t"].topic_id], generation=5, member="m")
        assert response.topics[0].partitions[0].error_code == error
    else:
        answers = txn_offset_commit(state, pid, epoch, {("t", 0): 4}, version=5, generation=5, member="m")
        assert answers == {("t", 0): error}

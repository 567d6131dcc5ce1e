"""DescribeClientQuotas, AlterClientQuotas, UpdateFeatures, DescribeQuorum, ListConfigResources
and DescribeUserScramCredentials through their handlers, at every version they are
advertised at (each answer is encoded at that version)."""

from __future__ import annotations

import pytest

from fakebroker.apis import REGISTRY
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import call, cluster

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, DESCRIBE_SCRAM = 48, 49, 50
DESCRIBE_QUORUM, UPDATE_FEATURES, LIST_CONFIG_RESOURCES, API_VERSIONS = 55, 57, 74, 18


def test_versions_are_kafka_4_4s():
    got = {k: (REGISTRY[k].min_version, REGISTRY[k].max_version) for k in (48, 49, 50, 55, 57, 74)}
    assert got == {48: (0, 1), 49: (0, 1), 50: (0, 0), 55: (0, 2), 57: (0, 2), 74: (0, 1)}


def entity(kind, name):
    return {"entity_type": kind, "entity_name": name}


@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe_client_quotas(version):
    state = cluster()
    ops = [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]
    r, _ = call(
        state,
        ALTER_CLIENT_QUOTAS,
        version,
        entries=[{"entity": [entity("user", "u"), entity("client-id", "c")], "ops": ops}],
        validate_only=False,
    )
    assert [(e.error_code, [x.entity_type for x in e.entity]) for e in r.entries] == [(E.NONE, ["client-id", "user"])]
    r, _ = call(
        state,
        DESCRIBE_CLIENT_QUOTAS,
        version,
        components=[{"entity_type": "user", "match_type": 0, "match": "u"}],
        strict=False,
    )
    assert (r.error_code, r.error_message) == (E.NONE, "")
    assert [(v.key, v.value) for v in r.entries[0].values] == [("producer_byte_rate", 1024.0)]
    r, _ = call(
        state,
        DESCRIBE_CLIENT_QUOTAS,
        version,
        components=[{"entity_type": "group", "match_type": 2, "match": None}],
        strict=False,
    )
    assert (r.error_code, r.entries) == (E.UNSUPPORTED_VERSION, None)


def test_alter_client_quotas_errors_are_per_entity():
    state = cluster()
    r, _ = call(
        state,
        ALTER_CLIENT_QUOTAS,
        1,
        entries=[
            {
                "entity": [entity("client-id", "ok")],
                "ops": [{"key": "consumer_byte_rate", "value": 5.0, "remove": False}],
            },
            {"entity": [entity("client-id", "bad")], "ops": [{"key": "nope", "value": 5.0, "remove": False}]},
        ],
        validate_only=False,
    )
    got = {e.entity[0].entity_name: (e.error_code, e.error_message) for e in r.entries}
    assert got == {"ok": (E.NONE, None), "bad": (E.INVALID_REQUEST, "Invalid configuration key nope")}


def feature(name, level, upgrade_type=1):
    return {"feature": name, "max_version_level": level, "upgrade_type": upgrade_type, "allow_downgrade": False}


def finalized(state, version=3):
    r, _ = call(state, API_VERSIONS, version, client_software_name="t", client_software_version="1")
    return {f.name: f.max_version_level for f in r.finalized_features}, r.finalized_features_epoch


@pytest.mark.parametrize("version", [0, 1, 2])
def test_update_features_refusal(version):
    state = cluster()
    before = finalized(state)
    r, _ = call(state, UPDATE_FEATURES, version, timeout_ms=1000, feature_updates=[feature("transaction.version", 1)])
    assert r.error_code == E.INVALID_UPDATE_VERSION
    assert r.error_message.startswith("The update failed for all features since the following feature had an error: ")
    assert "without setting the upgrade type" in r.error_message
    assert finalized(state) == before


def test_update_features_downgrade_shows_in_api_versions_and_validate_only_does_not():
    state = cluster()
    levels, epoch = finalized(state)
    assert levels["transaction.version"] == 2
    r, _ = call(state, UPDATE_FEATURES, 1, feature_updates=[feature("transaction.version", 1, 2)], validate_only=True)
    assert (r.error_code, [(x.feature, x.error_message) for x in r.results]) == (
        E.NONE,
        [("transaction.version", "NONE")],
    )
    assert finalized(state) == (levels, epoch)
    r, _ = call(state, UPDATE_FEATURES, 2, feature_updates=[feature("transaction.version", 1, 2)], validate_only=False)
    assert r.error_code == E.NONE
    now, new_epoch = finalized(state)
    assert now["transaction.version"] == 1 and new_epoch > epoch
    assert state.features.transaction_version == 1
    r, _ = call(state, UPDATE_FEATURES, 2, feature_updates=[feature("group.version", 0, 3)], validate_only=False)
    assert "group.version" not in finalized(state)[0]  # level 0: no longer finalized


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum(version):
    state = cluster(brokers=3)
    topics = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    r, _ = call(state, DESCRIBE_QUORUM, version, now_ms=5000, topics=topics)
    p = r.topics[0].partitions[0]
    assert (r.error_code, p.error_code, p.leader_id, p.leader_epoch) == (E.NONE, E.NONE, 0, 1)
    assert [v.replica_id for v in p.current_voters] == [0]
    assert [o.replica_id for o in p.observers] == [1, 2]
    assert p.high_watermark == p.current_voters[0].log_end_offset > 0
    if version >= 2:
        assert [(n.node_id, n.listeners[0].name) for n in r.nodes] == [(0, "CONTROLLER")]
    r, _ = call(state, DESCRIBE_QUORUM, version, topics=[{"topic_name": "x", "partitions": [{"partition_index": 0}]}])
    assert r.topics[0].partitions[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_list_config_resources():
    state = cluster(brokers=2)
    state.create_topic("t1", 1, 1)
    r, _ = call(state, LIST_CONFIG_RESOURCES, 0)
    assert (r.error_code, r.config_resources) == (E.NONE, [])
    r, _ = call(state, LIST_CONFIG_RESOURCES, 1, resource_types=[])
    got = [(x.resource_name, x.resource_type) for x in r.config_resources]
    assert got == [("0", 8), ("1", 8), ("0", 4), ("1", 4), ("t1", 2)]
    r, _ = call(state, LIST_CONFIG_RESOURCES, 1, resource_types=[2, 1])
    assert (r.error_code, r.config_resources) == (E.UNSUPPORTED_VERSION, [])


def test_describe_user_scram_credentials_knows_nobody():
    r, _ = call(cluster(), DESCRIBE_SCRAM, 0, users=[{"name": "a"}, {"name": "b"}, {"name": "b"}])
    assert [(x.user, x.error_code) for x in r.results] == [("a", E.RESOURCE_NOT_FOUND), ("b", E.DUPLICATE_RESOURCE)]
    r, _ = call(cluster(), DESCRIBE_SCRAM, 0, users=None)
    assert (r.error_code, r.results) == (E.NONE, [])

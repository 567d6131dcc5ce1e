"""A cluster posing as an older Kafka release over real sockets: versions outside the release's
window close the connection, as Kafka does, and the KIP-511 fallback names the release's range."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.core.releases import UnknownRelease
from fakebroker.protocol.error_codes import ErrorCode

from ..raw_client import RawClient

LIST_OFFSETS, METADATA, API_VERSIONS, CONSUMER_GROUP_HEARTBEAT = 2, 3, 18, 68
LIST_OFFSETS_V0 = {"replica_id": -1, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}


def test_kafka_4_closes_the_connection_on_a_version_kip_896_removed():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster, RawClient(cluster.servers[0].port) as client:
        client.send(LIST_OFFSETS, 0, LIST_OFFSETS_V0)
        with pytest.raises(ConnectionError):
            client.receive_payload()


def test_kafka_3_9_still_answers_it():
    with FakeCluster(topics={"t": 1}, kafka_version="3.9").run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as client:
            answer = client.request(LIST_OFFSETS, 0, LIST_OFFSETS_V0)
    assert answer.topics[0].partitions[0].error_code == ErrorCode.NONE


def test_kafka_4_3_answers_api_versions_v5_with_its_own_range():
    with FakeCluster(kafka_version="4.3").run_in_thread() as cluster, RawClient(cluster.servers[0].port) as client:
        client.send_raw(API_VERSIONS, 5, b"\x07future\x00")
        body = client.receive(API_VERSIONS, 0)
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]


def test_kafka_3_9_answers_the_consumer_protocol_unsupported_as_its_defaults_do():
    body = {
        "group_id": "g",
        "member_id": "",
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["t"],
        "topic_partitions": [],
    }
    with FakeCluster(kafka_version="3.9").run_in_thread() as cluster, RawClient(cluster.servers[0].port) as client:
        answer = client.request(CONSUMER_GROUP_HEARTBEAT, 0, body)
    assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_an_unknown_kafka_version_names_the_valid_ones():
    with pytest.raises(UnknownRelease, match="valid: 4.4, 4.3, 3.9"):
        FakeCluster(kafka_version="2.8")

"""The Java Admin client (kafka-clients 4.4) on features, client quotas and the metadata
quorum, against fakebroker: describeFeatures, updateFeatures (the change seen by
describeFeatures and by a transactional producer negotiating afterwards),
alterClientQuotas/describeClientQuotas round trips, a producer throttled by a
``producer_byte_rate`` quota (its produce-throttle-time metrics), and describeMetadataQuorum.

One JVM runs ``fakebroker.QuotaFeatureScenarios`` (tests/clients/java), driven line by line."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster

from .jvm_driver import JvmDriver
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]


class Driver(JvmDriver):
    main_class = "fakebroker.QuotaFeatureScenarios"


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3, topics={"q": 1, "t": 1}).run_in_thread() as c:
        yield c


@pytest.fixture
def driver(java_client_jar, cluster):  # noqa: F811
    with Driver(java_client_jar, cluster) as d:
        yield d


def test_describe_and_update_features(cluster, driver):
    features = driver.call("describeFeatures")
    assert features["finalized"]["transaction.version"] == 2
    assert features["finalized"]["group.version"] == 1
    assert features["finalized"]["metadata.version"] == 33
    assert features["supported"]["transaction.version"] == [0, 2]
    epoch = features["epoch"]
    assert epoch >= 0

    refused = driver.call("updateFeature", name="transaction.version", level=1)
    assert refused["ok"] is False and refused["exception"] == "InvalidUpdateVersionException"
    assert "without setting the upgrade type" in refused["message"]
    unknown = driver.call("updateFeature", name="no.such.version", level=1)
    assert (
        unknown["exception"] == "InvalidUpdateVersionException"
        and "does not support this feature" in unknown["message"]
    )
    assert driver.call("updateFeature", name="transaction.version", level=1, type="safe", validateOnly="true")["ok"]
    assert driver.call("describeFeatures")["finalized"]["transaction.version"] == 2

    # a downgrade to transaction version 1: a transaction afterwards keeps its epoch at commit
    assert driver.call("updateFeature", name="transaction.version", level=1, type="safe")["ok"]
    after = driver.call("describeFeatures")
    assert after["finalized"]["transaction.version"] == 1 and after["epoch"] > epoch
    assert cluster.features()["transaction.version"] == 1
    assert driver.call("txn", tid="tv1", topic="t")["ok"]
    assert cluster.transaction("tv1").producer_epoch == 0  # KIP-890's bump at EndTxn is version 2's

    # back to version 2: the next transactional producer bumps its epoch at commit
    assert driver.call("updateFeature", name="transaction.version", level=2)["ok"]
    assert driver.call("describeFeatures")["finalized"]["transaction.version"] == 2
    assert driver.call("txn", tid="tv2", topic="t")["ok"]
    assert cluster.transaction("tv2").producer_epoch == 1


def test_client_quotas_round_trip(cluster, driver):
    assert driver.call("alterQuota", entity="client-id:svc", key="producer_byte_rate", value=1048576)["ok"]
    assert driver.call("alterQuota", entity="user:alice,client-id:", key="consumer_byte_rate", value=2048)["ok"]
    assert driver.call("alterQuota", entity="ip:", key="connection_creation_rate", value=50)["ok"]
    assert driver.call("alterQuota", entity="client-id:vo", key="producer_byte_rate", value=5, validateOnly="true")[
        "ok"
    ]
    bad = driver.call("alterQuota", entity="client-id:svc", key="nope", value=1)
    assert bad["ok"] is False and bad["exception"] == "InvalidRequestException"
    assert bad["message"] == "Invalid configuration key nope"

    assert driver.call("describeQuotas")["quotas"] == {
        "{client-id=null, user=alice}": {"consumer_byte_rate": 2048.0},
        "{client-id=svc}": {"producer_byte_rate": 1048576.0},
        "{ip=null}": {"connection_creation_rate": 50.0},
    }
    assert driver.call("describeQuotas", type="client-id", name="svc")["quotas"] == {
        "{client-id=svc}": {"producer_byte_rate": 1048576.0}
    }
    assert list(driver.call("describeQuotas", type="client-id", strict="true")["quotas"]) == ["{client-id=svc}"]
    assert list(driver.call("describeQuotas", type="client-id", default="true")["quotas"]) == [
        "{client-id=null, user=alice}"
    ]
    assert driver.call("alterQuota", entity="client-id:svc", key="producer_byte_rate")["ok"]  # remove
    assert driver.call("describeQuotas", type="client-id", name="svc")["quotas"] == {}
    assert (("client-id", "svc"),) not in cluster.quotas()


def test_a_producer_byte_rate_quota_throttles_the_producer(cluster, driver):
    unthrottled = driver.call("burst", clientId="free", topic="q", n=13, size=10000)
    assert not unthrottled["metrics"]["produce-throttle-time-max"] > 0  # 0 or NaN: never throttled
    assert driver.call("alterQuota", entity="client-id:bulk", key="producer_byte_rate", value=10000)["ok"]
    # 13 requests of ~10 kB at 10 kB/s: Kafka's rate is measured over at least 10 s, so the 11th
    # and 12th answers carry throttle times, which the producer waits out
    throttled = driver.call("burst", clientId="bulk", topic="q", n=13, size=10000, timeout=60)
    assert throttled["metrics"]["produce-throttle-time-max"] > 0
    assert throttled["metrics"]["produce-throttle-time-avg"] > 0
    # the 12th answer's throttle alone is over 1.1 s whatever the window's fraction (10-11 s);
    # not compared with the unthrottled burst's time, which a loaded machine stretches
    assert throttled["metrics"]["produce-throttle-time-max"] >= 1000
    assert throttled["elapsedMs"] >= 1100


def test_describe_metadata_quorum(cluster, driver):
    quorum = driver.call("describeQuorum")
    controller = cluster.state.controller_id
    assert quorum["leaderId"] == controller
    assert quorum["leaderEpoch"] == 1
    assert [v["id"] for v in quorum["voters"]] == [controller]
    assert quorum["voters"][0]["logEndOffset"] == quorum["highWatermark"] > 0
    assert sorted(quorum["observers"]) == sorted({0, 1, 2} - {controller})
    assert quorum["nodes"] == [{"id": controller, "listeners": ["CONTROLLER"]}]

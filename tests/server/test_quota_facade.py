"""The facade's quota and feature methods: set_quota, quotas, features (and set_feature)."""

from __future__ import annotations

import pytest

from fakebroker.cluster import FakeCluster

PRODUCER_BYTE_RATE = "producer_byte_rate"


def test_facade_sets_and_lists_quotas():
    with FakeCluster(brokers=1).run_in_thread() as cluster:
        cluster.set_quota({"client-id": "svc"}, PRODUCER_BYTE_RATE, 1024)
        cluster.set_quota({"user": None}, "request_percentage", 50.5)
        assert cluster.quotas() == {
            (("client-id", "svc"),): {PRODUCER_BYTE_RATE: 1024.0},
            (("user", None),): {"request_percentage": 50.5},
        }
        with pytest.raises(ValueError, match="Invalid configuration key nope"):
            cluster.set_quota({"client-id": "svc"}, "nope", 1)
        cluster.set_quota({"client-id": "svc"}, PRODUCER_BYTE_RATE, None)
        assert list(cluster.quotas()) == [(("user", None),)]
        assert cluster.features()["transaction.version"] == 2
        cluster.set_feature("transaction.version", 1)
        assert cluster.features()["transaction.version"] == 1

"""Issue 16 on the wire: a 32 KB zstd bomb is answered INVALID_RECORD at once, and the broker
keeps serving that connection and every other one."""

from __future__ import annotations

import resource
import time

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import compression as c
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E

from ..apis.test_hostile_produce import GIB, with_payload, zeros_bomb
from ..raw_client import RawClient

PRODUCE = 0


def body(records: bytes) -> dict:
    return {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    }


def test_a_zstd_bomb_on_the_wire_is_invalid_record_and_everyone_carries_on():
    bomb = with_payload(c.ZSTD, zeros_bomb(c.ZSTD, GIB))
    assert len(bomb) < 40_000
    with FakeCluster(brokers=1, topics={"t": 1}).run_in_thread() as cluster:
        port = cluster.servers[0].port
        with RawClient(port, client_id="bystander") as bystander, RawClient(port, client_id="hostile") as hostile:
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            started = time.monotonic()
            answer = hostile.request(PRODUCE, 9, body(bomb))
            elapsed = time.monotonic() - started
            rss_growth_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
            assert answer.responses[0].partition_responses[0].error_code == E.INVALID_RECORD
            assert elapsed < 2.0 and rss_growth_mib < 64, (elapsed, rss_growth_mib)
            ok = hostile.request(PRODUCE, 9, body(rec.build_batch([(None, b"same connection")])))
            assert ok.responses[0].partition_responses[0].error_code == 0
            ok = bystander.request(PRODUCE, 9, body(rec.build_batch([(None, b"other connection")])))
            assert ok.responses[0].partition_responses[0].error_code == 0
        assert [v for _, _, _, v in cluster.records("t", 0)] == [b"same connection", b"other connection"]

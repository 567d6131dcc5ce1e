"""Byte-rate quotas at the pipeline: a Produce or Fetch over its client's quota is answered
with throttle_time_ms (a Fetch without data), the connection is muted for that long on the
cluster clock, and a Fetch is capped at the quota's window."""

from __future__ import annotations

import anyio

from fakebroker.core.configs import BrokerConfig
from fakebroker.core.quotas import Alteration, entity_of
from fakebroker.protocol import headers
from fakebroker.protocol import records as rec
from fakebroker.server.clock import VirtualClock
from fakebroker.server.pipeline import Peer, Pipeline
from fakebroker.server.runtime import Runtime


def runtime() -> Runtime:
    rt = Runtime("cluster", BrokerConfig({}), VirtualClock(start_ms=0))
    rt.state.broker_started(0, "127.0.0.1", 9092, 0)
    rt.state.create_topic("t", 1, 1)
    return rt


def quota(rt: Runtime, client_id: str, key: str, value: float) -> None:
    rt.state.quotas.alter([Alteration(entity_of([("client-id", client_id)]), [(key, value, False)])], False)


def produce(correlation_id: int, size: int, client_id: str = "p") -> bytes:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": rec.build_batch([(None, b"x" * size)])}]}
        ],
    }
    return headers.encode_request(0, 9, correlation_id, body, client_id=client_id)


def fetch(correlation_id: int, client_id: str = "c", partition_max_bytes: int = 1 << 20) -> bytes:
    partition = {
        "partition": 0,
        "fetch_offset": 0,
        "partition_max_bytes": partition_max_bytes,
        "current_leader_epoch": -1,
    }
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": "t", "partitions": [{**partition, "log_start_offset": -1}]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return headers.encode_request(1, 12, correlation_id, body, client_id=client_id)


def run(rt: Runtime, *payloads: tuple[int, int, bytes]) -> tuple[list, Peer]:
    pipeline, peer = Pipeline(rt, 0), Peer("127.0.0.1:1", "127.0.0.1")

    async def main() -> list:
        out = []
        for api_key, version, payload in payloads:
            out.append(headers.decode_response(api_key, version, await pipeline.process(payload, peer))[1])
        return out

    return anyio.run(main, backend="trio"), peer


def test_produce_over_the_rate_is_throttled_and_mutes_the_connection():
    rt = runtime()
    quota(rt, "p", "producer_byte_rate", 1000.0)
    (first, second), peer = run(rt, (0, 9, produce(1, 5000)), (0, 9, produce(2, 10_000)))
    assert first.throttle_time_ms == 0
    assert 4000 < second.throttle_time_ms < 7000  # ~15.2 kB over 10 s against 1 kB/s
    assert peer.muted_until_ms == second.throttle_time_ms  # the cluster clock is at 0
    # another client id has no quota
    (other,), _ = run(rt, (0, 9, produce(3, 50_000, client_id="q")))
    assert other.throttle_time_ms == 0


def test_a_throttled_fetch_has_no_data_and_a_capped_one_has_its_first_batch():
    rt = runtime()
    run(rt, (0, 9, produce(1, 3000, client_id="w")), (0, 9, produce(2, 3000, client_id="w")))
    quota(rt, "c", "consumer_byte_rate", 400.0)  # a 4000-byte window: one batch a fetch
    # the first asks for one batch's worth and stays under the window; the second goes over it
    (first, second), _ = run(rt, (1, 12, fetch(1, partition_max_bytes=3100)), (1, 12, fetch(2)))
    assert first.throttle_time_ms == 0
    data = first.responses[0].partitions[0].records
    assert len(data) == 3100 and len(list(rec.read_batches(data))) == 1  # one whole batch, then part of one
    assert second.throttle_time_ms > 0 and second.responses == []
    # a capped Fetch is filled to the quota's window as Kafka fills it (a partial batch at its end),
    # which with the answer's own bytes is just over the quota: throttled too, as on Kafka
    rt2 = runtime()
    run(rt2, (0, 9, produce(1, 3000, client_id="w")), (0, 9, produce(2, 3000, client_id="w")))
    quota(rt2, "c", "consumer_byte_rate", 400.0)
    (capped,), _ = run(rt2, (1, 12, fetch(3)))
    assert 0 < capped.throttle_time_ms < 1000 and capped.responses == []

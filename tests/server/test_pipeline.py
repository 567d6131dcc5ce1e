"""The request pipeline without sockets: bytes in, bytes out, and the path a request takes.

A JoinGroup walks connection -> pipeline (its cut check) -> quota stage -> fault stage (which
consults the fault rules) -> handler stage -> apis -> core and back; no call goes from a lower
room to a higher one (the core never calls the server, the facade or a handler back), so every
room is entered from above only.
"""

from __future__ import annotations

import dataclasses
import sys

import anyio
import pytest

from fakebroker.apis.registry import REGISTRY
from fakebroker.core.configs import BrokerConfig
from fakebroker.protocol import data, headers
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import ApiKey
from fakebroker.server.clock import VirtualClock
from fakebroker.server.exchange import CloseConnection
from fakebroker.server.fault_stage import FaultStage
from fakebroker.server.handler_stage import HandlerStage
from fakebroker.server.pipeline import STAGES, CutStage, Peer, Pipeline
from fakebroker.server.quota_stage import QuotaStage
from fakebroker.server.runtime import Runtime
from fakebroker.server.sasl_stage import SaslStage

JOIN_GROUP, API_VERSIONS, METADATA = 11, 18, 3
ROOMS = [  # from the top floor down
    ("server.connection", "fakebroker.server.connection"),
    ("server.pipeline", "fakebroker.server.pipeline"),
    ("server.quota_stage", "fakebroker.server.quota_stage"),
    ("server.fault_stage", "fakebroker.server.fault_stage"),
    ("server.handler_stage", "fakebroker.server.handler_stage"),
    ("faults", "fakebroker.faults"),
    ("apis", "fakebroker.apis"),
    ("core", "fakebroker.core"),
]


def room_of(module: str) -> str | None:
    return next((name for name, prefix in ROOMS if module == prefix or module.startswith(prefix + ".")), None)


def runtime(**config) -> Runtime:
    rt = Runtime("cluster", BrokerConfig({"group.initial.rebalance.delay.ms": 0, **config}), VirtualClock(start_ms=0))
    rt.state.broker_started(0, "127.0.0.1", 9092, 0)
    return rt


def join_payload(correlation_id: int, member_id: str = "") -> bytes:
    body = {
        "group_id": "g",
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": data.encode_subscription(["orders"])}],
    }
    return headers.encode_request(JOIN_GROUP, 9, correlation_id, body, client_id="svc")


def answer(api_key: int, version: int, payload: bytes):
    return headers.decode_response(api_key, version, payload)[1]


def test_bytes_in_bytes_out_without_a_socket():
    rt = runtime()
    pipeline = Pipeline(rt, 0)
    peer = Peer("127.0.0.1:5555", "127.0.0.1")

    async def main() -> tuple:
        first = answer(JOIN_GROUP, 9, await pipeline.process(join_payload(1), peer))
        second = answer(JOIN_GROUP, 9, await pipeline.process(join_payload(2, first.member_id), peer))
        return first, second

    first, second = anyio.run(main, backend="trio")
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id.startswith("svc-")
    assert second.error_code == E.NONE and second.generation_id == 1 and second.leader == first.member_id
    assert peer.client_id == "svc"
    kinds = [e.kind for e in rt.state.events]
    assert kinds[:2] == ["broker_started", "client_connected"] and "generation_started" in kinds


def test_unsupported_versions_close_the_connection_or_get_kip_511():
    pipeline = Pipeline(runtime(), 0)
    peer = Peer()

    async def main():
        too_new = headers.encode_request(
            API_VERSIONS, 3, 7, {"client_software_name": "x", "client_software_version": "1"}, client_id="c"
        )
        too_new = too_new[:2] + (99).to_bytes(2, "big") + too_new[4:]  # ApiVersions v99
        kip_511 = answer(API_VERSIONS, 0, await pipeline.process(too_new, peer))
        with pytest.raises(CloseConnection, match="unsupported API key 3 version 99"):
            metadata = headers.encode_request(METADATA, 12, 8, {"topics": None}, client_id="c")
            await pipeline.process(metadata[:2] + (99).to_bytes(2, "big") + metadata[4:], peer)
        return kip_511

    kip_511 = anyio.run(main, backend="trio")
    assert kip_511.error_code == E.UNSUPPORTED_VERSION and [k.api_key for k in kip_511.api_keys] == [API_VERSIONS]


def test_a_join_group_walks_down_the_rooms_and_never_back_up():
    rt = runtime()
    rt.faults.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS")  # a rule that does not match: the stage is walked
    pipeline = Pipeline(rt, 0)
    peer = Peer("127.0.0.1:5555", "127.0.0.1")
    edges: list[tuple[str, str]] = []
    paths: list[list[str]] = []  # the rooms on the stack each time the coordinator's join() is entered

    def profile(frame, event, arg):
        if event != "call":
            return
        callee = room_of(frame.f_globals.get("__name__", ""))
        if callee is None:
            return
        caller_frame = frame.f_back
        while caller_frame is not None and room_of(caller_frame.f_globals.get("__name__", "")) is None:
            caller_frame = caller_frame.f_back  # through anyio, trio and the protocol layer
        caller = room_of(caller_frame.f_globals.get("__name__", "")) if caller_frame is not None else None
        if caller != callee:
            edges.append((caller, callee))
        if frame.f_code.co_name == "join" and frame.f_globals["__name__"].endswith("groups.classic.coordinator"):
            rooms, f = [], frame
            while f is not None:
                room = room_of(f.f_globals.get("__name__", ""))
                if room is not None and (not rooms or rooms[-1] != room):
                    rooms.append(room)
                f = f.f_back
            paths.append(rooms[::-1])

    async def main():
        first = answer(JOIN_GROUP, 9, await pipeline.process(join_payload(1), peer))
        sys.setprofile(profile)
        try:
            return answer(JOIN_GROUP, 9, await pipeline.process(join_payload(2, first.member_id), peer))
        finally:
            sys.setprofile(None)

    joined = anyio.run(main, backend="trio")
    assert joined.error_code == E.NONE and joined.generation_id == 1
    order = [name for name, _ in ROOMS]
    upward = [(a, b) for a, b in edges if a is not None and order.index(b) < order.index(a)]
    assert upward == [], f"calls from a lower room to a higher one: {upward}"
    # the quota stage hands a JoinGroup on at once (it counts against no byte quota): not on the stack
    assert paths == [["server.pipeline", "server.fault_stage", "server.handler_stage", "apis", "core"]]


def test_a_request_walks_the_declared_stages_in_order():
    assert STAGES == (SaslStage, CutStage, QuotaStage, FaultStage, HandlerStage)
    pipeline = Pipeline(runtime(), 0)
    assert [type(stage) for stage in pipeline.stages] == list(STAGES)
    walked: list[object] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "__call__":
            stage = frame.f_locals.get("self")
            if any(stage is s for s in pipeline.stages) and not any(stage is w for w in walked):
                walked.append(stage)

    async def main():
        sys.setprofile(profile)
        try:
            return answer(JOIN_GROUP, 9, await pipeline.process(join_payload(1), Peer()))
        finally:
            sys.setprofile(None)

    assert anyio.run(main, backend="trio").error_code == E.MEMBER_ID_REQUIRED
    assert walked == pipeline.stages


def acks0_produce(correlation_id: int) -> bytes:
    body = {
        "transactional_id": None,
        "acks": 0,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": rec.build_batch([(None, b"v")])}]}],
    }
    return headers.encode_request(ApiKey.PRODUCE, 9, correlation_id, body, client_id="writer")


def test_whether_a_request_is_owed_an_answer_is_the_registry_s_fact(monkeypatch):
    """acks=0 gets no answer, so a fault's error closes the connection instead; the pipeline
    knows that from Produce's declaration, not from its API key."""
    rt = runtime()
    rt.state.create_topic("t", 1)
    rt.faults.add(api="Produce", error="NOT_LEADER_OR_FOLLOWER")
    pipeline = Pipeline(rt, 0)

    async def main(correlation_id: int):
        return await pipeline.process(acks0_produce(correlation_id), Peer())

    with pytest.raises(CloseConnection, match="acks=0 produce failed with NOT_LEADER_OR_FOLLOWER"):
        anyio.run(main, 1, backend="trio")
    # declared without the fact, the same request is answered with the fault's error
    monkeypatch.setitem(REGISTRY, ApiKey.PRODUCE, dataclasses.replace(REGISTRY[ApiKey.PRODUCE], unanswered=None))
    failed = answer(ApiKey.PRODUCE, 9, anyio.run(main, 2, backend="trio"))
    assert failed.responses[0].partition_responses[0].error_code == E.NOT_LEADER_OR_FOLLOWER


def test_the_facts_the_pipeline_acts_on_are_declared_by_the_few_apis_they_concern():
    facts = ("unanswered", "decode_on_loop", "too_new", "byte_quota", "same_answer")
    declared = {fact: sorted(a.name for a in REGISTRY.values() if getattr(a, fact) is not None) for fact in facts}
    assert declared == {
        "unanswered": ["Produce"],  # acks=0
        "decode_on_loop": ["Produce"],  # large for its records alone
        "too_new": ["ApiVersions"],  # KIP-511
        "byte_quota": ["Fetch", "Produce", "ShareFetch"],
        "same_answer": ["ApiVersions"],  # every connection's first request, most often the same bytes
    }


def test_the_answer_to_a_version_too_new_is_the_registry_s_fact(monkeypatch):
    pipeline = Pipeline(runtime(), 0)
    metadata = headers.encode_request(METADATA, 12, 8, {"topics": None}, client_id="c")
    too_new = metadata[:2] + (99).to_bytes(2, "big") + metadata[4:]
    declared = REGISTRY[METADATA]
    monkeypatch.setitem(REGISTRY, METADATA, dataclasses.replace(declared, too_new=lambda release: {"brokers": []}))
    got = anyio.run(pipeline.process, too_new, Peer(), backend="trio")
    assert answer(METADATA, 0, got).brokers == []  # answered at v0, as KIP-511 answers ApiVersions


def fetch_request(correlation_id: int) -> bytes:
    partition = {
        "partition": 0,
        "fetch_offset": 0,
        "partition_max_bytes": 1 << 20,
        "current_leader_epoch": -1,
        "log_start_offset": -1,
    }
    body = {
        "replica_id": -1,
        "max_wait_ms": 5_000,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": "t", "partitions": [partition]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return headers.encode_request(1, 12, correlation_id, body, client_id="reader")


def parked_fetch_then(request: tuple[int, int, bytes]) -> dict:
    """Park a Fetch on the empty partition t-0, send ``request`` (api key, version, payload) from
    another client, and return both answers and how long the Fetch waited."""
    rt = runtime()
    rt.state.create_topic("t", 1)
    pipeline = Pipeline(rt, 0)

    async def main() -> dict:
        got: dict = {}

        async def reader() -> None:
            start = anyio.current_time()
            got["fetch"] = answer(1, 12, await pipeline.process(fetch_request(1), Peer()))
            got["waited"] = anyio.current_time() - start

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await anyio.sleep(0.05)
            api_key, version, payload = request
            got["other"] = answer(api_key, version, await pipeline.process(payload, Peer()))
        return got

    return anyio.run(main, backend="trio")


def test_a_produce_wakes_a_parked_fetch():
    batch = rec.build_batch([(b"k", b"v", [], 1_000)])
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
    }
    got = parked_fetch_then((0, 9, headers.encode_request(0, 9, 2, body, client_id="writer")))
    assert got["other"].responses[0].partition_responses[0].error_code == E.NONE
    assert got["fetch"].responses[0].partitions[0].records  # woken by the append, not by max_wait_ms
    assert got["waited"] < 2.0


def test_a_deleted_topic_wakes_a_parked_fetch():
    # DeleteTopics reports changed data too, so the Fetch answers at once instead of after 5 s
    got = parked_fetch_then(
        (20, 5, headers.encode_request(20, 5, 2, {"topic_names": ["t"], "timeout_ms": 1000}, client_id="admin"))
    )
    assert got["other"].responses[0].error_code == E.NONE
    assert got["fetch"].responses[0].partitions[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert got["waited"] < 2.0


def test_a_failing_event_listener_does_not_fail_the_request(caplog):
    rt = runtime()
    rt.listeners.append(lambda event: 1 / 0)
    pipeline = Pipeline(rt, 0)

    async def main():
        return answer(JOIN_GROUP, 9, await pipeline.process(join_payload(1), Peer()))

    assert anyio.run(main, backend="trio").error_code == E.MEMBER_ID_REQUIRED
    assert "event listener" in caplog.text and "ZeroDivisionError" in caplog.text


@pytest.mark.parametrize(
    "partitions, value_size, off_loop",
    [
        (1, 900_000, False),  # a batch of about 1 MB for one partition (as librdkafka sends): on the loop
        (4, 256 << 10, False),
        (1200, 300, True),  # more entries than the bound: decoded on a worker thread
    ],
)
def test_a_large_produce_is_decoded_off_the_loop_only_when_it_has_many_partitions(
    monkeypatch, partitions, value_size, off_loop
):
    from fakebroker.server import pipeline as pipeline_module

    assert partitions * value_size >= pipeline_module.OFF_LOOP_BYTES
    rt = runtime()
    rt.state.create_topic("t", partitions)
    threads: list[object] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func, *args, **kwargs):
        threads.append(func)
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    batch = rec.build_batch([(None, b"v" * value_size, [], 1_000)])
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": p, "records": batch} for p in range(partitions)]}],
    }
    payload = headers.encode_request(0, 9, 7, body, client_id="writer")

    async def main():
        return answer(0, 9, await Pipeline(rt, 0).process(payload, Peer()))

    got = anyio.run(main, backend="trio")
    assert [p.error_code for r in got.responses for p in r.partition_responses] == [E.NONE] * partitions
    assert [rt.state.topics["t"].partitions[p].log.high_watermark for p in range(partitions)] == [1] * partitions
    assert bool(threads) == off_loop, threads

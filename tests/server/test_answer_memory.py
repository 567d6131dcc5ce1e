"""The pipeline's answer memory (``server/answer_memory.py``): an ApiVersions of the same bytes
is answered again from memory, the same answer with its own correlation id, while nothing that
could change the answer or stand in the way of the request has moved."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import anyio
import pytest

from fakebroker.apis.registry import REGISTRY
from fakebroker.core import events as ev
from fakebroker.core.configs import BrokerConfig
from fakebroker.protocol import headers
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import ApiKey
from fakebroker.server import answer_memory
from fakebroker.server.clock import VirtualClock
from fakebroker.server.exchange import CloseConnection
from fakebroker.server.pipeline import Peer, Pipeline
from fakebroker.server.runtime import Runtime

VERSIONS = ApiKey.API_VERSIONS


def hello(correlation_id: int, version: int = 3, client_id: str = "svc", name: str = "librdkafka") -> bytes:
    body = {"client_software_name": name, "client_software_version": "2.6.0"} if version >= 3 else {}
    return headers.encode_request(VERSIONS, version, correlation_id, body, client_id=client_id)


def answer(payload: bytes, version: int = 3):
    return headers.decode_response(VERSIONS, version, payload)


@pytest.fixture
def handled(monkeypatch) -> list[int]:
    """The correlation ids the ApiVersions handler saw (the others were answered from memory)."""
    seen: list[int] = []
    declared = REGISTRY[VERSIONS]

    def counting(ctx, request):
        seen.append(ctx.correlation_id)
        return declared.handle(ctx, request)

    monkeypatch.setitem(REGISTRY, VERSIONS, dataclasses.replace(declared, handle=counting))
    return seen


def make_pipeline() -> Pipeline:
    rt = Runtime("cluster", BrokerConfig({}), VirtualClock(start_ms=0))
    rt.state.broker_started(0, "127.0.0.1", 9092, 0)
    return Pipeline(rt, 0)


def ask(pipeline: Pipeline, payload: bytes, peer: Peer | None = None) -> bytes:
    async def main() -> bytes:
        reply = await pipeline.process(payload, peer or Peer("127.0.0.1:1", "127.0.0.1"))
        assert reply is not None
        return reply

    return anyio.run(main, backend="trio")


def test_the_same_bytes_get_the_same_answer_from_memory(handled):
    pipeline = make_pipeline()
    first, second = ask(pipeline, hello(1)), ask(pipeline, hello(2))
    assert handled == [1]
    assert second[4:] == first[4:] and answer(second)[0].correlation_id == 2
    assert answer(second)[1].error_code == E.NONE and len(answer(second)[1].api_keys) > 50
    # another client, another version, another software name: each asked once, then remembered
    for payload in (hello(3, client_id="other"), hello(4, version=0), hello(5, name="kafka-python")):
        ask(pipeline, payload)
    ask(pipeline, hello(6, client_id="other"))
    ask(pipeline, hello(7, version=0))
    assert handled == [1, 3, 4, 5]
    assert (
        answer(ask(pipeline, hello(8, version=0)), 0)[1].api_keys
        == answer(ask(pipeline, hello(9, version=0)), 0)[1].api_keys
    )


def test_each_connection_is_still_introduced_by_its_first_request(handled):
    pipeline = make_pipeline()
    ask(pipeline, hello(1))
    peers = [Peer(f"127.0.0.1:{port}", "127.0.0.1") for port in (2, 3)]
    for peer in peers:
        ask(pipeline, hello(2), peer)
    assert handled == [1]
    connected = pipeline.runtime.state.events.of_kind(ev.ClientConnected)
    assert [(e.peer, e.client_id) for e in connected] == [
        ("127.0.0.1:1", "svc"),
        ("127.0.0.1:2", "svc"),
        ("127.0.0.1:3", "svc"),
    ]
    assert all(peer.introduced and peer.client_id == "svc" for peer in peers)


def test_a_feature_change_is_answered_at_once(handled):
    pipeline = make_pipeline()
    before = answer(ask(pipeline, hello(1)))[1]
    pipeline.runtime.state.features.update({"transaction.version": 1})
    after = answer(ask(pipeline, hello(2)))[1]
    assert handled == [1, 2]
    assert after.finalized_features_epoch == before.finalized_features_epoch + 1
    assert {f.name: f.max_version_level for f in after.finalized_features}["transaction.version"] == 1
    ask(pipeline, hello(3))
    assert handled == [1, 2]


def test_a_fault_rule_or_a_cut_is_never_stepped_around(handled):
    pipeline = make_pipeline()
    runtime = pipeline.runtime
    ask(pipeline, hello(1))
    rule = runtime.faults.add(api="ApiVersions", error="CLUSTER_AUTHORIZATION_FAILED")
    assert answer(ask(pipeline, hello(2)))[1].error_code == E.CLUSTER_AUTHORIZATION_FAILED
    assert rule.fired == 1
    runtime.faults.remove(rule)
    assert answer(ask(pipeline, hello(3)))[1].error_code == E.NONE
    runtime.cuts.add(("svc", None))
    with pytest.raises(CloseConnection, match="network partition"):
        ask(pipeline, hello(4))
    runtime.cuts.clear()
    ask(pipeline, hello(5))
    assert handled == [1]  # the fault rule answered 2 before the handler; 4 was refused


def test_a_sasl_connection_walks_the_pipeline(handled):
    pipeline = make_pipeline()
    ask(pipeline, hello(1))
    signed_in = SimpleNamespace(
        expects_raw_token=False, authenticated=True, session_end_ms=None, principal="User:a", token_authenticated=False
    )
    peer = Peer("127.0.0.1:2", "127.0.0.1", auth=signed_in)  # type: ignore[arg-type]
    ask(pipeline, hello(2), peer)
    ask(pipeline, hello(3), peer)
    assert handled == [1, 2, 3]


def test_an_answer_with_an_error_is_not_kept(handled):
    pipeline = make_pipeline()
    for correlation_id in (1, 2):
        refused = answer(ask(pipeline, hello(correlation_id, name="not a name!")))[1]
        assert refused.error_code == E.INVALID_REQUEST
    assert handled == [1, 2]


def test_the_memory_is_bounded(handled, monkeypatch):
    monkeypatch.setattr(answer_memory, "ENTRIES", 8)
    pipeline = make_pipeline()
    for n in range(20):
        ask(pipeline, hello(n, client_id=f"client-{n}"))
    assert len(pipeline.answers._answers) <= 8
    assert handled == list(range(20))

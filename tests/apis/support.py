"""Calling API handlers without sockets or trio: a fresh :class:`ClusterState` with brokers
started, and :func:`call`, which builds a typed request, passes it through the wire codec
at the version asked for (so the handler sees what a client of that version can send) and
hands it to :func:`fakebroker.apis.dispatch`. A response the handler returns must encode at
that version, since the server sends it."""

from __future__ import annotations

from typing import Any

from fakebroker.apis import RequestContext, dispatch
from fakebroker.apis.context import Result, Steps
from fakebroker.core.cluster_state import ClusterState
from fakebroker.core.configs import BrokerConfig
from fakebroker.core.events import Event
from fakebroker.protocol import records
from fakebroker.protocol.messages import Message, request_type, response_type

CLUSTER_ID = "apis-test-cluster"
HOST = "127.0.0.1"
FIRST_PORT = 9092


def cluster(brokers: int = 1, config: dict[str, Any] | None = None, **kwargs: Any) -> ClusterState:
    """A fresh cluster with brokers 0..brokers-1 started at time 0 (ports 9092, 9093, ...)."""
    state = ClusterState(CLUSTER_ID, BrokerConfig(config), **kwargs)
    for node in range(brokers):
        state.broker_started(node, HOST, FIRST_PORT + node, 0)
    return state


def call(
    state: ClusterState,
    api_key: int,
    version: int,
    broker: int = 0,
    now_ms: int = 0,
    client_id: str | None = "tester",
    **fields: Any,
) -> tuple[Result, RequestContext]:
    """Answer one request of ``api_key`` at ``version`` on ``broker``: (result, context)."""
    kind = request_type(api_key)
    request = kind.decode(kind.encode(kind.new(**fields), version), version)
    ctx = RequestContext(state, broker, api_key, version, correlation_id=7, client_id=client_id, now_ms=now_ms)
    result = dispatch(ctx, request)
    if isinstance(result, Steps):  # a large request the server would run slice by slice
        result = result.finish()
    if isinstance(result, (Message, dict)):
        encodes(api_key, version, result)
    return result, ctx


def encodes(api_key: int, version: int, response: Message | dict) -> bytes:
    """The response's bytes at ``version`` (fails the test if it cannot be sent)."""
    return response_type(api_key).encode(response, version)


def batch(*values: bytes, key: bytes | None = None, timestamp: int = 1_000, **options: Any) -> bytes:
    """One v2 record batch with a record per value (``options`` go to ``build_batch``)."""
    return records.build_batch([(key, v, [], timestamp) for v in values], **options)


def events_after(state: ClusterState, mark: int) -> list[Event]:
    """Events appended since ``mark = len(state.events)`` was taken."""
    return list(state.events)[mark:]


def kinds_after(state: ClusterState, mark: int) -> list[str]:
    return [e.kind for e in events_after(state, mark)]


def produce_records(state: ClusterState, topic: str, partition: int, *values: bytes, broker: int | None = None) -> int:
    """Produce one batch of ``values`` through the Produce handler (v9, acks=-1): its base offset."""
    leader = state.partition(topic, partition).leader if broker is None else broker
    response, _ = call(
        state,
        0,
        9,
        broker=leader,
        acks=-1,
        timeout_ms=30_000,
        transactional_id=None,
        topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": batch(*values)}]}],
    )
    [answer] = response.responses[0].partition_responses
    assert answer.error_code == 0, answer
    return answer.base_offset

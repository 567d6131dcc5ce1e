"""The request pipeline of one broker: decode -> cut check -> fault stage -> handler -> encode.

It works on payloads (frames without their length prefix), so it can be driven without a
socket. A request that cannot be parsed, or a stage that says so, ends with
:class:`CloseConnection`; the connection closes and every other one carries on.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from ..apis import NO_RESPONSE
from ..apis.api_versions import unsupported_version_response
from ..apis.context import CloseInstead
from ..apis.registry import served
from ..core import events as ev
from ..protocol import headers
from ..protocol.errors import UnsupportedVersionError
from ..protocol.messages import Message, MessageType, request_type
from ..protocol.produce_peek import partition_entries
from .exchange import CloseConnection, Exchange
from .fault_stage import fault_stage
from .handler_stage import HandlerStage
from .quota_stage import applies, cap_fetch, produce_throttle, set_throttle, throttle_fetch
from .request_memory import RequestMemory
from .runtime import Runtime

PRODUCE, API_VERSIONS = 0, 18
# A request this large (a Produce to 50,000 partitions, a DeleteTopics of 50,000 topics) is
# decoded on a worker thread, as a sliced answer is encoded there: the thread gives the GIL
# back every few ms, so the loop keeps answering every other connection meanwhile.
OFF_LOOP_BYTES = 256 * 1024
# A Produce up to this large with at most this many partition entries is large for its
# records alone. It is decoded on the loop: about 0.45 ms for the entries and 0.3 ms to copy
# 4 MB of records, less than the hand-off costs a client (librdkafka's 1 MB requests, embedded:
# about 10% of its produce rate). Counting stops at the bound: at most 0.5 ms for one with more.
ON_LOOP_PRODUCE_BYTES = 4 * 1024 * 1024
ON_LOOP_PRODUCE_ENTRIES = 1000


@dataclass
class Peer:
    """The client end of a connection, as far as requests tell (its id comes with the first)."""

    address: str = "?"
    host: str = ""
    client_id: str | None = None
    introduced: bool = False
    muted_until_ms: int = 0  # a quota throttle: read nothing more from this client until then (cluster clock)
    park: Callable[[], None] | None = None  # called as a request starts to wait: the connection watches its socket
    flush: Callable[[], Awaitable[None]] | None = None  # sends the answers the connection holds (before a wait)


class _RequestTypes(dict):
    """API key -> its request's MessageType, looked up once (served keys only get here)."""

    def __missing__(self, api_key: int) -> MessageType:
        found = self[api_key] = request_type(api_key)
        return found


_request_types = _RequestTypes()


def _cheap_to_decode(api_key: int, api_version: int, payload: bytes, stream: io.BytesIO) -> bool:
    """Whether a large request is a Produce of a few partitions: large for its records alone."""
    if api_key != PRODUCE or len(payload) > ON_LOOP_PRODUCE_BYTES:
        return False
    return partition_entries(stream, api_version, ON_LOOP_PRODUCE_ENTRIES) <= ON_LOOP_PRODUCE_ENTRIES


class Pipeline:
    def __init__(self, runtime: Runtime, broker_id: int):
        self.runtime = runtime
        self.broker_id = broker_id
        self.handler_stage = HandlerStage(runtime, broker_id)
        self.request_memory = RequestMemory(runtime.state.config.get_int("queued.max.request.bytes"))

    async def process(self, payload: bytes, peer: Peer) -> bytes | None:
        """The response payload for one request payload, or None when none is owed."""
        runtime = self.runtime
        api_key, api_version, correlation_id = headers.peek_request(payload)
        header, stream = headers.decode_peeked_header(payload, api_key, api_version, correlation_id)
        if not peer.introduced:
            peer.client_id, peer.introduced = header.client_id, True
            runtime.emit(ev.ClientConnected(broker=self.broker_id, peer=peer.address, client_id=header.client_id))
        release = runtime.state.kafka_version
        window = served(release).get(api_key)
        if api_key == API_VERSIONS and window and api_version > window[1]:
            return headers.encode_response(API_VERSIONS, 0, correlation_id, unsupported_version_response(release))
        if window is None or not window[0] <= api_version <= window[1]:
            raise CloseConnection(f"unsupported API key {api_key} version {api_version} (Kafka {release})")
        try:
            if len(payload) >= OFF_LOOP_BYTES and not _cheap_to_decode(api_key, api_version, payload, stream):
                if peer.flush is not None:  # a long decode: the answers before it go out first
                    await peer.flush()
                headers.prepare(api_key, api_version)
                body = await anyio.to_thread.run_sync(request_type(api_key).decode_from, stream, api_version)
            else:
                body = _request_types[api_key].decode_from(stream, api_version)
        except UnsupportedVersionError as exc:
            raise CloseConnection(str(exc)) from None
        if runtime.is_cut_off(header.client_id, self.broker_id):
            raise CloseConnection(
                f"network partition: client {header.client_id!r} is cut off from broker {self.broker_id}"
            )
        if api_key == 1 and applies(runtime, api_key):
            cap_fetch(runtime, header.client_id, body)
        exchange = Exchange(
            self.broker_id, api_key, api_version, correlation_id, header, peer.host, park=peer.park, flush=peer.flush
        )
        if len(runtime.faults):
            result = await fault_stage(runtime, exchange, body, functools.partial(self.handler_stage, exchange))
        else:
            result = await self.handler_stage(exchange, body)
        throttle = 0
        quota = applies(runtime, api_key) and not isinstance(result, CloseInstead)
        if quota and api_key == 0:
            throttle = produce_throttle(runtime, header.client_id, len(payload))
            if isinstance(result, Message):
                set_throttle(result, throttle)
        if isinstance(result, CloseInstead):
            raise CloseConnection(result.reason)
        if result is NO_RESPONSE or result is None:
            self._mute(peer, throttle)
            return None
        if exchange.sliced:
            headers.prepare(api_key, api_version)
            encoded = await anyio.to_thread.run_sync(
                headers.encode_response, api_key, api_version, correlation_id, result
            )
        else:
            encoded = headers.encode_response(api_key, api_version, correlation_id, result)
        if quota and api_key == 1 and isinstance(result, Message):
            encoded, throttle = throttle_fetch(runtime, header.client_id, api_version, correlation_id, result, encoded)
        self._mute(peer, throttle)
        return encoded

    def _mute(self, peer: Peer, throttle_ms: int) -> None:
        if throttle_ms > 0:
            peer.muted_until_ms = self.runtime.clock.now_ms() + throttle_ms

"""The request pipeline of one broker: decode -> stages -> encode.

The stages are a declared list (:data:`STAGES`), each one called with the request and
``proceed``, the stages after it: the cut check (a partitioned client's connection closes),
the quota stage (byte-rate throttling, around everything after it), the fault stage (the
rules a test set) and the handler stage (the API's handler and its waiting). What differs
between APIs is declared on each API (``apis/registry.py``'s :class:`Api`), never asked here.

It works on payloads (frames without their length prefix), so it can be driven without a
socket. An API whose answer depends only on the request's bytes and a little cluster state
(``Api.same_answer``: ApiVersions) has its good answers kept (``answer_memory.py``): the same
bytes again are answered from there while nothing is in the way. A request that cannot be
parsed, or a stage that says so, ends with :class:`CloseConnection`; the connection closes and
every other one carries on.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from typing import cast

import anyio

from ..apis import NO_RESPONSE
from ..apis.context import CloseInstead
from ..apis.registry import REGISTRY, served
from ..core import events as ev
from ..core.security.authenticator import Authenticator
from ..lazy_dataclasses import dataclass
from ..protocol import headers
from ..protocol.errors import UnsupportedVersionError
from ..protocol.messages import Message, MessageType, request_type
from .answer_memory import AnswerMemory
from .exchange import Answer, CloseConnection, Encoded, Exchange, Proceed, Stage, joined
from .fault_stage import FaultStage
from .handler_stage import HandlerStage
from .quota_stage import QuotaStage
from .request_memory import RequestMemory
from .runtime import Runtime
from .sasl_stage import SaslStage, raw_token_answer

# A request this large (a Produce to 50,000 partitions, a DeleteTopics of 50,000 topics) is
# decoded on a worker thread, as a sliced answer is encoded there: the thread gives the GIL
# back every few ms, so the loop keeps answering every other connection meanwhile (unless
# its API says it is cheap to decode: ``Api.decode_on_loop``).
OFF_LOOP_BYTES = 256 * 1024


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
    auth: Authenticator | None = None  # a SASL listener's connection: its authentication
    principal: str | None = None  # an SSL listener's connection: its client certificate's principal
    security_protocol: str = "PLAINTEXT"  # its listener's
    listener: str = ""  # its listener's name


class CutStage:
    """A client cut off from this broker (a network partition a test made) loses its connection."""

    def __init__(self, runtime: Runtime, broker_id: int):
        self.runtime = runtime
        self.broker_id = broker_id

    def __call__(self, exchange: Exchange, body: Message, proceed: Proceed) -> Awaitable[Answer]:
        if self.runtime.cuts and self.runtime.is_cut_off(exchange.client_id, self.broker_id):
            raise CloseConnection(
                f"network partition: client {exchange.client_id!r} is cut off from broker {self.broker_id}"
            )
        return proceed(exchange, body)


# The stages a request walks, in order, each made from (runtime, broker id): a cut-off client is
# refused before anything is counted; the quota stage counts what the fault stage answers too (a
# fault's error is bytes sent all the same); the handler stage, last, has nothing to proceed to.
# A SASL listener's connection is authenticated before anything else sees its requests.
STAGES = (SaslStage, CutStage, QuotaStage, FaultStage, HandlerStage)


class _RequestTypes(dict):
    """API key -> its request's MessageType, looked up once (served keys only get here)."""

    def __missing__(self, api_key: int) -> MessageType:
        found = self[api_key] = request_type(api_key)
        return found


_request_types = _RequestTypes()


class Pipeline:
    def __init__(self, runtime: Runtime, broker_id: int):
        self.runtime = runtime
        self.broker_id = broker_id
        self.stages = [stage(runtime, broker_id) for stage in STAGES]
        # every stage but the last (the handler's, which has nothing to proceed to) is a Stage
        self._walk = joined(cast("list[Stage]", self.stages[:-1]), cast(HandlerStage, self.stages[-1]))
        self.request_memory = RequestMemory(runtime.state.config.get_int("queued.max.request.bytes"))
        self.answers = AnswerMemory(runtime)

    async def process(self, payload: bytes, peer: Peer) -> bytes | None:
        """decode -> stages -> encode: the response payload for one request payload, or None
        when none is owed."""
        if peer.auth is not None and peer.auth.expects_raw_token:  # after a v0 SaslHandshake
            return raw_token_answer(self.runtime, self.broker_id, peer.auth, peer.address, peer.client_id, payload)
        recalled = self.answers.recall(payload, peer.auth)
        if recalled is not None:  # the same bytes as an earlier request, answered the same way
            self._introduce(peer, recalled[1])
            return recalled[0]
        decoded = self._decode(payload, peer)
        if isinstance(decoded, bytes):  # a version too new, answered as its API declares (KIP-511)
            return decoded
        exchange, body = decoded
        if isinstance(body, io.BytesIO):  # too large to decode on the loop
            body = await self._decode_off_loop(exchange, body, peer)
        answer = await self._walk(exchange, body)
        if exchange.throttle_ms > 0:  # a quota's: read nothing more from this client until then
            peer.muted_until_ms = self.runtime.clock.now_ms() + exchange.throttle_ms
        if exchange.sliced and isinstance(answer, Message | dict):  # a long answer: encoded on a worker thread
            answer = Encoded(await exchange.encode(answer))
        reply = self._encode(exchange, answer)
        if reply is not None and exchange.api.same_answer is not None:
            self.answers.keep(payload, exchange, answer, reply)
        return reply

    def _decode(self, payload: bytes, peer: Peer) -> tuple[Exchange, Message | io.BytesIO] | bytes:
        """The request (its body still a stream when it is to be decoded on a worker thread),
        or the answer owed without one (KIP-511's to a version too new)."""
        runtime = self.runtime
        api_key, api_version, correlation_id = headers.peek_request(payload)
        header, stream = headers.decode_peeked_header(payload, api_key, api_version, correlation_id)
        self._introduce(peer, header.client_id)
        window = served(runtime.state.kafka_version).get(api_key)
        if window is None or not window[0] <= api_version <= window[1]:
            return self._unsupported(api_key, api_version, correlation_id, window)
        declared = REGISTRY[api_key]
        exchange = Exchange(
            self.broker_id,
            declared,
            api_version,
            correlation_id,
            header,
            peer.host,
            len(payload),
            park=peer.park,
            flush=peer.flush,
            peer=peer.address,
            auth=peer.auth,
            principal=peer.principal,
            security_protocol=peer.security_protocol,
            listener=peer.listener,
        )
        on_loop = declared.decode_on_loop
        if len(payload) >= OFF_LOOP_BYTES and not (on_loop and on_loop(stream, api_version, len(payload))):
            return exchange, stream
        try:
            return exchange, _request_types[api_key].decode_from(stream, api_version)
        except UnsupportedVersionError as exc:
            raise CloseConnection(str(exc)) from None

    def _introduce(self, peer: Peer, client_id: str | None) -> None:
        """A connection's first request names its client."""
        if not peer.introduced:
            peer.client_id, peer.introduced = client_id, True
            self.runtime.emit(ev.ClientConnected(broker=self.broker_id, peer=peer.address, client_id=client_id))

    async def _decode_off_loop(self, exchange: Exchange, stream: io.BytesIO, peer: Peer) -> Message:
        """A large body, decoded on a worker thread: it gives the GIL back every few ms."""
        if peer.flush is not None:  # a long decode: the answers before it go out first
            await peer.flush()
        headers.prepare(exchange.api_key, exchange.api_version)
        decode = request_type(exchange.api_key).decode_from
        try:
            return await anyio.to_thread.run_sync(decode, stream, exchange.api_version)
        except UnsupportedVersionError as exc:
            raise CloseConnection(str(exc)) from None

    def _unsupported(
        self, api_key: int, api_version: int, correlation_id: int, window: tuple[int, int] | None
    ) -> bytes:
        """The answer to a version above the served ones if the API has one (KIP-511); else
        the connection closes, as Kafka closes it."""
        release = self.runtime.state.kafka_version
        declared = REGISTRY.get(api_key) if window is not None and api_version > window[1] else None
        if declared is not None and declared.too_new is not None:
            return headers.encode_response(api_key, 0, correlation_id, declared.too_new(release))
        raise CloseConnection(f"unsupported API key {api_key} version {api_version} (Kafka {release})")

    def _encode(self, exchange: Exchange, answer: Answer) -> bytes | None:
        if isinstance(answer, CloseInstead):
            raise CloseConnection(answer.reason)
        if answer is NO_RESPONSE or answer is None:
            return None
        if isinstance(answer, Encoded):
            return answer.payload
        response = cast("Message | dict", answer)  # the handler stage's answer: its waits, parks and steps are over
        return headers.encode_response(exchange.api.key, exchange.api_version, exchange.correlation_id, response)

"""The request pipeline of one broker: decode -> cut check -> fault stage -> handler -> encode.

It works on payloads (frames without their length prefix), so it can be driven without a
socket. A request that cannot be parsed, or a stage that says so, ends with
:class:`CloseConnection`; the connection closes and every other one carries on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import anyio

from ..apis import NO_RESPONSE, REGISTRY, RequestContext, Wait, dispatch
from ..apis.api_versions import unsupported_version_response
from ..apis.context import CloseInstead, Parked, Result
from ..core import events as ev
from ..protocol import headers
from ..protocol.errors import UnsupportedVersionError
from ..protocol.messages import Message, request_type
from .exchange import CloseConnection, Exchange, note_errors
from .fault_stage import fault_stage
from .runtime import Runtime

log = logging.getLogger("fakebroker")
API_VERSIONS = 18


@dataclass
class Peer:
    """The client end of a connection, as far as requests tell (its id comes with the first)."""

    address: str = "?"
    host: str = ""
    client_id: str | None = None
    introduced: bool = False


class Pipeline:
    def __init__(self, runtime: Runtime, broker_id: int):
        self.runtime = runtime
        self.broker_id = broker_id

    async def process(self, payload: bytes, peer: Peer) -> bytes | None:
        """The response payload for one request payload, or None when none is owed."""
        runtime = self.runtime
        api_key, api_version, correlation_id = headers.peek_request(payload)
        header, stream = headers.decode_request_header(payload)
        if not peer.introduced:
            peer.client_id, peer.introduced = header.client_id, True
            runtime.emit(ev.ClientConnected(broker=self.broker_id, peer=peer.address, client_id=header.client_id))
        declared = REGISTRY.get(api_key)
        if api_key == API_VERSIONS and declared and api_version > declared.max_version:
            return headers.encode_response(API_VERSIONS, 0, correlation_id, unsupported_version_response())
        if declared is None or not declared.supports(api_version):
            raise CloseConnection(f"unsupported API key {api_key} version {api_version}")
        try:
            body = request_type(api_key).decode_from(stream, api_version)
        except UnsupportedVersionError as exc:
            raise CloseConnection(str(exc)) from None
        if runtime.is_cut_off(header.client_id, self.broker_id):
            raise CloseConnection(f"network partition: client {header.client_id!r} is cut off from broker {self.broker_id}")
        exchange = Exchange(self.broker_id, api_key, api_version, correlation_id, header, peer.host)

        async def handler_stage(request: Message) -> Result:
            return await self.handle(exchange, request)

        if len(runtime.faults):
            result = await fault_stage(runtime, exchange, body, handler_stage)
        else:
            result = await handler_stage(body)
        if isinstance(result, CloseInstead):
            raise CloseConnection(result.reason)
        if result is NO_RESPONSE or result is None:
            return None
        return headers.encode_response(api_key, api_version, correlation_id, result)

    async def handle(self, exchange: Exchange, body: Message) -> Result:
        """The handler stage: call the API's handler, tell the runtime what changed, wait for
        answers that come later."""
        runtime = self.runtime
        ctx = RequestContext(runtime.state, self.broker_id, exchange.api_key, exchange.api_version,
                             exchange.correlation_id, exchange.client_id, runtime.clock.now_ms(), exchange.client_host)
        try:
            result = dispatch(ctx, body)
        except Exception as exc:  # a handler bug must not take the broker down
            log.exception("handler of API %s v%s failed", exchange.api_key, exchange.api_version)
            runtime.emit(ev.HandlerError(broker=self.broker_id, api=exchange.api_key, version=exchange.api_version,
                                         error=repr(exc)))
            raise CloseConnection(f"internal error handling API {exchange.api_key} v{exchange.api_version}: {exc!r}") from exc
        runtime.settle(data_changed=ctx.effects.data_changed)
        if isinstance(result, Wait):
            result = await self._wait(result)
        elif isinstance(result, Parked):
            done = anyio.Event()
            result.pending.on_done(done.set)
            await done.wait()
            result = result.respond(result.pending.value)
        if isinstance(result, Message):
            note_errors(runtime, exchange, result)
        return result

    async def _wait(self, wait: Wait) -> Message:
        runtime = self.runtime
        deadline = anyio.current_time() + max(0, wait.deadline_ms - runtime.clock.now_ms()) / 1000
        while True:
            await runtime.wait_data(deadline)
            final = anyio.current_time() >= deadline
            response = wait.poll(runtime.clock.now_ms(), final)
            if response is not None:
                return response

"""One client connection: read frames, answer requests one at a time, in order (as Kafka does).

Anything that cannot be parsed closes this connection only, with a log line; every other
connection keeps being served.
"""

from __future__ import annotations

import itertools
import logging
from typing import TYPE_CHECKING

import anyio
from anyio.abc import SocketStream

from ..apis import HANDLERS, NO_RESPONSE, SUPPORTED, RequestContext, Wait
from ..apis.context import CloseInstead, Parked
from ..apis.api_versions import unsupported_version_response
from .fault_actions import CloseConnection, apply_faults
from ..protocol import headers
from ..protocol.errors import ProtocolError, UnsupportedVersionError
from ..protocol.framing import FrameDecoder, frame
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message, api_keys, request_type

log = logging.getLogger("fakebroker")

if TYPE_CHECKING:
    from .broker import BrokerServer

API_VERSIONS = 18
PRODUCE = 0
_ids = itertools.count(1)
API_NAMES = api_keys()


def _error_codes(msg: Message, found: set[int] | None = None) -> set[int]:
    """Every non-zero ``error_code`` anywhere in a response (for the event log)."""
    found = set() if found is None else found
    code = getattr(msg, "error_code", 0)
    if code:
        found.add(code)
    for info in msg._fields:
        if info.struct is None:
            continue
        value = getattr(msg, info.attr)
        if isinstance(value, list):
            for item in value:
                _error_codes(item, found)
        elif value is not None:
            _error_codes(value, found)
    return found


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class Connection:
    def __init__(self, broker: BrokerServer, stream: SocketStream):
        self.broker = broker
        self.runtime = broker.runtime
        self.stream = stream
        self.id = next(_ids)
        self.client_id: str | None = None
        self._scope = anyio.CancelScope()
        try:
            host, port = stream.extra(anyio.abc.SocketAttribute.remote_address)[:2]
            self.peer, self.host = f"{host}:{port}", str(host)
        except Exception:  # pragma: no cover - unusual socket families
            self.peer, self.host = "?", ""

    def abort(self) -> None:
        """Close this connection now (a network cut); the client sees it reset."""
        self._scope.cancel()

    async def serve(self) -> None:
        decoder = FrameDecoder(self.runtime.max_frame_size)
        try:
            with self._scope:
                await self._serve_frames(decoder)
        except (ProtocolError, CloseConnection) as exc:
            self.runtime.emit("connection_closed", self.broker.node_id, peer=self.peer, client_id=self.client_id, reason=str(exc))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await self.stream.aclose()

    async def _serve_frames(self, decoder: FrameDecoder) -> None:
        while True:
            try:
                data = await self.stream.receive(65536)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
            decoder.feed(data)
            for payload in decoder.frames():
                reply = await self.process(payload)
                if reply is not None:
                    await self.stream.send(frame(reply))

    async def process(self, payload: bytes) -> bytes | None:
        """The response payload for one request payload, or None when none is owed."""
        api_key, api_version, correlation_id = headers.peek_request(payload)
        header, stream = headers.decode_request_header(payload)
        if self.client_id is None:
            self.client_id = header.client_id
            self.runtime.emit("client_connected", self.broker.node_id, peer=self.peer, client_id=header.client_id)
        supported = SUPPORTED.get(api_key)
        if api_key == API_VERSIONS and supported and api_version > supported[1]:
            return headers.encode_response(API_VERSIONS, 0, correlation_id, unsupported_version_response())
        if supported is None or not supported[0] <= api_version <= supported[1]:
            raise CloseConnection(f"unsupported API key {api_key} version {api_version}")
        try:
            body = request_type(api_key).decode_from(stream, api_version)
        except UnsupportedVersionError as exc:
            raise CloseConnection(str(exc)) from None
        if self.runtime.is_cut_off(header.client_id, self.broker.node_id):
            raise CloseConnection(f"network partition: client {header.client_id!r} is cut off from broker {self.broker.node_id}")
        if len(self.runtime.faults):
            result = await apply_faults(self, api_key, api_version, correlation_id, header, body)
        else:
            result = await self.handle(api_key, api_version, correlation_id, header, body)
        if isinstance(result, CloseInstead):
            raise CloseConnection(result.reason)
        if result is NO_RESPONSE or result is None:
            return None
        return headers.encode_response(api_key, api_version, correlation_id, result)

    async def handle(self, api_key: int, api_version: int, correlation_id: int, header: Message, body: Message):
        runtime = self.runtime
        ctx = RequestContext(runtime.state, self.broker.node_id, api_key, api_version, correlation_id,
                             header.client_id, runtime.clock.now_ms(), [], self.host)
        try:
            result = HANDLERS[api_key](ctx, body)
        except Exception as exc:  # a handler bug must not take the broker down
            log.exception("handler of API %s v%s failed", api_key, api_version)
            runtime.emit("handler_error", self.broker.node_id, api=api_key, version=api_version, error=repr(exc))
            raise CloseConnection(f"internal error handling API {api_key} v{api_version}: {exc!r}") from exc
        for kind, details in ctx.events:
            runtime.emit(kind, self.broker.node_id, **details)
        if api_key == PRODUCE:
            runtime.data_changed()
        if isinstance(result, Wait):
            result = await self._wait(result)
        elif isinstance(result, Parked):
            done = anyio.Event()
            result.pending.on_done(done.set)
            await done.wait()
            result = result.respond(result.pending.value)
        if isinstance(result, Message):
            self.note_errors(api_key, header.client_id, result)
        return result

    def note_errors(self, api_key: int, client_id: str | None, result: Message, **extra: object) -> None:
        """A ``request_error`` event for every error code an answer carries."""
        for code in sorted(_error_codes(result)):
            self.runtime.emit("request_error", self.broker.node_id, api=API_NAMES.get(api_key, api_key),
                              client_id=client_id, error=_error_name(code), **extra)

    async def _wait(self, wait: Wait) -> Message:
        runtime = self.runtime
        now_ms = runtime.clock.now_ms()
        deadline = anyio.current_time() + max(0, wait.deadline_ms - now_ms) / 1000
        while True:
            await runtime.wait_changed(deadline)
            final = anyio.current_time() >= deadline
            response = wait.poll(runtime.clock.now_ms(), final)
            if response is not None:
                return response

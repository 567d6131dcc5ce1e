"""One client connection: read frames, hand each to the pipeline, send answers in order (a
connection processes one request at a time, as Kafka does).

A reader task watches the socket the whole time, also while a request is parked (a Fetch
long poll, a JoinGroup): when the client goes away, the parked request is dropped and the
socket closed at once instead of after its max wait. Requests already received are still
handled (as Kafka handles the completed receives of a channel closed by its peer), but
nothing of theirs waits any more. A connection with no request for
``connections.max.idle.ms`` (Kafka's default 600000) is closed, as Kafka's selector does.

Anything that cannot be parsed closes this connection only, with an event; every other
connection keeps being served.
"""

from __future__ import annotations

import math

import anyio
from anyio.abc import SocketStream

from ..core import events as ev
from ..protocol.errors import ProtocolError
from ..protocol.framing import FrameDecoder, frame
from .exchange import CloseConnection
from .pipeline import Peer, Pipeline

ENDINGS = (ProtocolError, CloseConnection, anyio.BrokenResourceError, anyio.ClosedResourceError)
READ_AHEAD = 16  # frames read ahead of the one being processed (a client's pipelined requests)


class Connection:
    def __init__(self, pipeline: Pipeline, stream: SocketStream):
        self.pipeline = pipeline
        self.runtime = pipeline.runtime
        self.stream = stream
        self._scope = anyio.CancelScope()
        self._request_scope: anyio.CancelScope | None = None  # around the request being processed
        self.peer_gone = False  # the client closed its end
        self._read_error: ProtocolError | None = None  # a frame that cannot be parsed
        self.last_active = anyio.current_time()
        try:
            host, port = stream.extra(anyio.abc.SocketAttribute.remote_address)[:2]
            self.peer = Peer(f"{host}:{port}", str(host))
        except Exception:  # pragma: no cover - unusual socket families
            self.peer = Peer()

    @property
    def client_id(self) -> str | None:
        return self.peer.client_id

    def abort(self) -> None:
        """Close this connection now (a network cut); the client sees it reset."""
        self._scope.cancel()

    def _idle_timeout(self) -> float:
        try:
            ms = self.runtime.state.config.get_int("connections.max.idle.ms")
        except (KeyError, ValueError):  # pragma: no cover - validated settings
            ms = 600000
        return math.inf if ms < 0 else ms / 1000

    async def serve(self) -> None:
        decoder = FrameDecoder(self.runtime.max_frame_size)
        send, receive = anyio.create_memory_object_stream[bytes](READ_AHEAD)
        try:
            with self._scope:
                error: Exception | None = None
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._read, decoder, send)
                    try:
                        await self._serve_frames(receive)
                    except ENDINGS as exc:
                        error = exc
                    tg.cancel_scope.cancel()
                error = error or self._read_error
                if error is not None:
                    raise error
        except (ProtocolError, CloseConnection) as exc:
            self.runtime.emit(
                ev.ConnectionClosed(
                    broker=self.pipeline.broker_id,
                    peer=self.peer.address,
                    client_id=self.peer.client_id,
                    reason=str(exc),
                )
            )
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            receive.close()
            with anyio.CancelScope(shield=True):
                await self.stream.aclose()

    async def _read(self, decoder: FrameDecoder, send: anyio.abc.ObjectSendStream[bytes]) -> None:
        """Read frames into ``send``; on the client's EOF drop what waits for it; close
        the connection when it has been idle too long."""
        idle = self._idle_timeout()
        with send:
            while True:
                left = self.last_active + idle - anyio.current_time()
                if left <= 0 and self._request_scope is None:
                    self.runtime.emit(
                        ev.ConnectionClosed(
                            broker=self.pipeline.broker_id,
                            peer=self.peer.address,
                            client_id=self.peer.client_id,
                            reason=f"idle for more than connections.max.idle.ms={idle * 1000:.0f}",
                        )
                    )
                    self._scope.cancel()
                    return
                data = None
                with anyio.move_on_after(left if left > 0 else idle):  # around the read only
                    try:
                        data = await self.stream.receive(65536)
                    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        self.peer_gone = True
                        if self._request_scope is not None:
                            self._request_scope.cancel()  # a parked request waits for nobody
                        return
                if data is None:
                    continue
                decoder.feed(data)
                try:
                    for payload in decoder.frames():
                        self.last_active = anyio.current_time()
                        await send.send(payload)  # waits while READ_AHEAD frames are queued
                except ProtocolError as exc:  # after the frames before it are handled
                    self._read_error = exc
                    return

    async def _serve_frames(self, receive: anyio.abc.ObjectReceiveStream[bytes]) -> None:
        async with receive:
            async for payload in receive:
                with anyio.CancelScope() as scope:
                    self._request_scope = scope
                    if self.peer_gone:
                        scope.cancel()  # handled up to its first wait, then dropped
                    try:
                        reply = await self.pipeline.process(payload, self.peer)
                    finally:
                        self._request_scope = None
                    if reply is not None and not self.peer_gone:
                        await self.stream.send(frame(reply))
                    self.last_active = anyio.current_time()
                    if self.peer.muted_until_ms:
                        await self._muted()

    async def _muted(self) -> None:
        """A quota throttle: wait until the cluster clock passes the end of it (virtual time
        ends it as soon as the test advances the clock)."""
        clock = self.runtime.clock
        while (left := self.peer.muted_until_ms - clock.now_ms()) > 0:
            await anyio.sleep(min(left / 1000, 0.05))
        self.peer.muted_until_ms = 0

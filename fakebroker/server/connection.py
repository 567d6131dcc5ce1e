"""One client connection: read frames, hand each to the pipeline, send answers in order (a
connection processes one request at a time, as Kafka does).

Anything that cannot be parsed closes this connection only, with an event; every other
connection keeps being served.
"""

from __future__ import annotations

import anyio
from anyio.abc import SocketStream

from ..core import events as ev
from ..protocol.errors import ProtocolError
from ..protocol.framing import FrameDecoder, frame
from .exchange import CloseConnection
from .pipeline import Peer, Pipeline


class Connection:
    def __init__(self, pipeline: Pipeline, stream: SocketStream):
        self.pipeline = pipeline
        self.runtime = pipeline.runtime
        self.stream = stream
        self._scope = anyio.CancelScope()
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

    async def serve(self) -> None:
        decoder = FrameDecoder(self.runtime.max_frame_size)
        try:
            with self._scope:
                await self._serve_frames(decoder)
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
                reply = await self.pipeline.process(payload, self.peer)
                if reply is not None:
                    await self.stream.send(frame(reply))
                if self.peer.muted_until_ms:
                    await self._muted()

    async def _muted(self) -> None:
        """A quota throttle: wait until the cluster clock passes the end of it (virtual time
        ends it as soon as the test advances the clock)."""
        clock = self.runtime.clock
        while (left := self.peer.muted_until_ms - clock.now_ms()) > 0:
            await anyio.sleep(min(left / 1000, 0.05))
        self.peer.muted_until_ms = 0

"""One broker: a loopback listener whose connections live in the broker's own task group."""

from __future__ import annotations

import anyio
from anyio.abc import SocketStream, TaskStatus

from .connection import Connection
from .pipeline import Pipeline
from .runtime import Runtime


class BrokerServer:
    def __init__(self, node_id: int, runtime: Runtime, host: str = "127.0.0.1", port: int = 0):
        self.node_id = node_id
        self.runtime = runtime
        self.pipeline = Pipeline(runtime, node_id)
        self.host = host
        self.port = port
        self.connections: set[Connection] = set()
        self._scope: anyio.CancelScope | None = None
        self.stopped: anyio.Event | None = None  # set once a stopped broker has closed everything

    async def serve(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled or stopped; reports the bound port through ``task_status``.
        A restart binds the same port again."""
        self.stopped = anyio.Event()
        try:
            listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self.port, reuse_port=False)
            self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with listener, anyio.create_task_group() as tg:
                    task_status.started(self.port)
                    await listener.serve(self._serve_one, task_group=tg)
        finally:
            self.stopped.set()

    async def _serve_one(self, stream: SocketStream) -> None:
        conn = Connection(self.pipeline, stream)
        self.connections.add(conn)
        try:
            await conn.serve()
        finally:
            self.connections.discard(conn)

    def stop(self) -> None:
        """Close the listener and every connection."""
        if self._scope is not None:
            self._scope.cancel()

    def cut(self) -> None:
        """Close the connections of every client now cut off from this broker."""
        for conn in list(self.connections):
            if self.runtime.is_cut_off(conn.client_id, self.node_id):
                conn.abort()

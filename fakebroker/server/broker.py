"""One broker: its listeners (loopback by default; one per name in Kafka's ``listeners``, each
with its own security), whose connections live in the broker's own task group, a few hundred
to a task group of their own inside it (each an accept task's)."""

from __future__ import annotations

import errno
import ipaddress
import logging
import math
import socket
import ssl
import sys
from functools import partial
from typing import TYPE_CHECKING, cast

import anyio
import sniffio
import trio
from anyio.abc import ByteStream, Listener, SocketListener, SocketStream, TaskGroup, TaskStatus

from ..core import events as ev
from ..core.security.acls import ANONYMOUS
from ..core.security.authenticator import Authenticator
from ..lazy_dataclasses import dataclass
from .connection import Connection, DirectSocket
from .pipeline import Pipeline
from .runtime import Runtime
from .security import ListenerSecurity, client_principal, start_tls
from .tasks import task_group

if TYPE_CHECKING:  # imported by the first TLS connection (server/security.py)
    from anyio.streams.tls import TLSStream

log = logging.getLogger("fakebroker")

# Accept errors that mean "out of resources for now": log them and try again later, as
# Kafka's acceptor does, instead of ending the broker (the connections it has carry on).
RESOURCE_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
ACCEPT_BACKOFF_S = (0.01, 1.0)  # first and longest pause after such an error
REAP_CHECK_S = 5.0  # the idle reaper looks at least this often (a changed connections.max.idle.ms)
REAP_PAUSE_S = 0.01  # and at most this often (connections.max.idle.ms=0 must not spin the loop)
LISTEN_BACKLOG = 65536  # anyio's default (the kernel caps it at somaxconn)
GROUP_SIZE = 256  # connections served in one accept task's task group (see _accept_loop)


def advertised_for(host: str) -> str:
    """The address clients are told for a listener on ``host``: the host itself when it is a
    concrete address; 127.0.0.1 (or ::1) for the wildcard 0.0.0.0 (or ::), which is no
    address a client can connect to. Other machines need an explicit advertised host."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


async def listen(host: str, port: int) -> Listener[SocketStream]:
    """A TCP listener on ``host``:``port``. For an IPv4 address, one socket made here as anyio
    would make it (non-blocking, SO_REUSEADDR, the same backlog), skipping its name lookup
    and per-address loop: 40 us of each broker's start. Any other host goes through anyio,
    which resolves it and may listen on several addresses (a ``MultiListener``)."""
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return await anyio.create_tcp_listener(local_host=host, local_port=port, reuse_port=False)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        if sys.platform == "win32":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
        else:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except BaseException:
        sock.close()
        raise
    return await SocketListener.from_socket(sock)


@dataclass
class Endpoint:
    """One listener of a broker, as Kafka's ``listeners`` names it: its name, its security, the
    address it binds (port 0: a free one, kept for restarts once bound) and the one it advertises
    (its clients are told the addresses of this listener on every broker)."""

    name: str
    security: ListenerSecurity
    host: str = "127.0.0.1"
    port: int = 0
    advertised_host: str | None = None
    advertised_port: int = 0  # 0: the bound port

    def __post_init__(self) -> None:
        self.advertised_host = self.advertised_host or advertised_for(self.host)

    @property
    def advertised(self) -> tuple[str, int]:
        assert self.advertised_host is not None
        return self.advertised_host, self.advertised_port or self.port


class BrokerServer:
    def __init__(
        self,
        node_id: int,
        runtime: Runtime,
        host: str = "127.0.0.1",
        port: int = 0,
        advertised_host: str | None = None,
        security: ListenerSecurity | None = None,
        endpoints: list[Endpoint] | None = None,
    ):
        """One broker, listening on ``endpoints`` (the first is the client-facing one that
        ``port``, ``advertised_host`` and ``security`` name), or on one listener made of
        ``host``, ``port``, ``advertised_host`` and ``security``, named for its protocol."""
        self.node_id = node_id
        if not endpoints:
            security = security or ListenerSecurity()
            endpoints = [Endpoint(security.protocol, security, host, port, advertised_host)]
        self.endpoints = endpoints
        self.runtime = runtime
        self.pipeline = Pipeline(runtime, node_id)
        self.connections: set[Connection] = set()
        self._scope: anyio.CancelScope | trio.CancelScope | None = None
        self.stopped: anyio.Event | None = None  # set once a stopped broker has closed everything
        self.accept_errors = 0  # resource errors met while accepting (EMFILE, ...)
        self._reaping = False  # the idle reaper runs (from the first connection on)
        self._listeners: list[tuple[Endpoint, Listener[SocketStream]]] = []  # bound by open(), served by run()

    @property
    def port(self) -> int:
        """The first listener's port (bound once the broker has started)."""
        return self.endpoints[0].port

    @property
    def host(self) -> str:
        return self.endpoints[0].host

    @property
    def advertised_host(self) -> str:
        return self.endpoints[0].advertised[0]

    @property
    def security(self) -> ListenerSecurity:
        return self.endpoints[0].security

    def advertised(self) -> dict[str, tuple[str, int]]:
        """Every listener's advertised address by name (ports bound)."""
        return {e.name: e.advertised for e in self.endpoints}

    async def serve(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled or stopped; reports the first listener's bound port through
        ``task_status``. A restart binds the same ports again."""
        await self.open()
        await self.run(task_status=task_status)

    async def open(self) -> None:
        """Bind every listener (port 0: a free one, then kept for restarts), without waiting:
        a cluster's start opens its brokers at once and starts :meth:`run` in a task, instead
        of starting a task and waiting for it to report its port."""
        self.stopped = anyio.Event()
        # Made here, entered by run(): a stop that comes before run() began cancels it all the same.
        # Under trio, trio's own scope and task groups (server/tasks.py): anyio's cost a 3-broker
        # start 65 us more.
        self._scope = trio.CancelScope() if sniffio.current_async_library() == "trio" else anyio.CancelScope()
        listeners: list[tuple[Endpoint, Listener[SocketStream]]] = []
        try:
            for endpoint in self.endpoints:
                listener = await listen(endpoint.host, endpoint.port)
                listeners.append((endpoint, listener))
                endpoint.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        except BaseException:
            with anyio.CancelScope(shield=True):
                for _, listener in listeners:
                    await listener.aclose()
            raise
        self._listeners = listeners

    async def run(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve what :meth:`open` bound until cancelled or stopped (the listeners close then)."""
        listeners, self._listeners = self._listeners, []
        assert self._scope is not None
        try:
            with self._scope:
                async with task_group() as tg:
                    task_status.started(self.port)
                    self._reaping = False  # the idle reaper starts with the first connection
                    loops = [(one, end) for end, bound in listeners for one in getattr(bound, "listeners", [bound])]
                    for one, endpoint in loops[1:]:
                        tg.start_soon(self._accept_loop, one, tg, endpoint)
                    await self._accept_loop(loops[0][0], tg, loops[0][1])  # the first in this task
        finally:
            with anyio.CancelScope(shield=True):
                for _, listener in listeners:
                    await listener.aclose()
            assert self.stopped is not None
            self.stopped.set()

    async def _accept_loop(self, listener: SocketListener, tg: TaskGroup | trio.Nursery, endpoint: Endpoint) -> None:
        """Accept connections and serve them in a task group of this task's own, ``GROUP_SIZE``
        of them; then a new task accepts the next ones while this one waits for its connections
        to close. In one task group for every connection, trio's set of the group's tasks and
        that of its cancel scope's child scopes grew to 10,000 entries in a burst and kept their
        tables (512 KiB to 1 MiB each: a set never shrinks) for the broker's life (issue 33).
        Its own group, rather than one a task started for it, spares the first connection the
        wait for that task (a fresh cluster's first answer).

        Under trio a plain TCP listener's connections are taken from its socket directly and
        served as sockets (:class:`DirectSocket`): anyio's accept, its stream and that
        stream's close cost each connection 30-40 us more, a tenth of what a connection's
        ApiVersions round trip costs the broker. TLS needs anyio's streams; so does asyncio."""
        raw: socket.socket = listener.extra(anyio.abc.SocketAttribute.raw_socket)  # once: extra() builds a dict
        direct = (
            endpoint.security.ssl_context is None
            and raw.family in (socket.AF_INET, socket.AF_INET6)
            and sniffio.current_async_library() == "trio"
        )
        serve = partial(self._serve_one, endpoint=endpoint)
        async with task_group() as connections:
            room = GROUP_SIZE
            while room:
                if direct:
                    streams: list[SocketStream] | list[DirectSocket] = await self._accept_direct(raw, tg, room)
                else:
                    streams = await self._accept(listener, raw, tg, room)
                for stream in streams:
                    connections.start_soon(serve, stream)
                room -= len(streams)
            tg.start_soon(self._accept_loop, listener, tg, endpoint)  # this group is full

    async def _accept(
        self, listener: SocketListener, raw: socket.socket, tg: TaskGroup | trio.Nursery, most: int
    ) -> list[SocketStream]:
        """The next connection, and up to ``most`` - 1 more already waiting on ``raw``, the
        listener's socket (see :meth:`_take_waiting`); an accept that fails for want of
        resources (EMFILE, ...) is logged and tried again later, as Kafka's acceptor does."""
        pause = ACCEPT_BACKOFF_S[0]
        while True:
            try:
                stream = await listener.accept()
            except (OSError, anyio.BrokenResourceError) as exc:
                cause = exc if isinstance(exc, OSError) else exc.__cause__  # anyio wraps the OSError
                if not isinstance(cause, OSError) or cause.errno not in RESOURCE_ERRNOS:
                    raise
                pause = await self._accept_failed(cause, pause)
                continue
            self._start_reaping(tg)
            streams = [stream]
            waiting = self._take_waiting(raw, most - 1)
            try:
                while waiting:
                    sock = waiting[0]
                    try:
                        streams.append(await SocketStream.from_socket(sock))  # under trio: no yield
                    except (OSError, ValueError):  # the client hung up already ("not connected")
                        sock.close()
                    del waiting[0]
                return streams
            except BaseException:  # cancelled while wrapping them (asyncio's wrap waits): none served
                for sock in waiting:
                    sock.close()
                for taken in streams:
                    taken.extra(anyio.abc.SocketAttribute.raw_socket).close()
                raise

    async def _accept_direct(self, raw: socket.socket, tg: TaskGroup | trio.Nursery, most: int) -> list[DirectSocket]:
        """Under trio: the connections waiting on ``raw``, at least one and at most ``most``
        (waiting for the first), as sockets served directly; resource errors as :meth:`_accept`."""
        pause = ACCEPT_BACKOFF_S[0]
        while True:
            try:
                taken = self._take_waiting(raw, most, first_error=True)
            except OSError as exc:
                if exc.errno not in RESOURCE_ERRNOS:
                    raise
                pause = await self._accept_failed(exc, pause)
                continue
            if taken:
                self._start_reaping(tg)
                return [DirectSocket(sock) for sock in taken]
            await trio.lowlevel.wait_readable(raw)  # the loop runs the others meanwhile

    def _take_waiting(self, raw: socket.socket, most: int, first_error: bool = False) -> list[socket.socket]:
        """Up to ``most`` connections the kernel has already completed, taken without waiting.
        Each accept through the listener yields to every other task once, so under load (10,000
        members heartbeating) a burst of new connections waited there one scheduler turn each:
        1,000 connections made in 0.1 s were still being accepted 6 s later, and each late
        member restarted the group's rebalance. Kafka's acceptor takes every ready connection
        at once too. Stops at the first error, which the next accept meets again and deals
        with (``first_error``: raised when it comes before any connection)."""
        taken: list[socket.socket] = []
        while len(taken) < most:
            try:
                sock, _ = raw.accept()
            except BlockingIOError:  # none waiting
                break
            except ConnectionAbortedError:  # a client that left before it was taken: the next one
                continue
            except OSError:  # one the listener's accept reports
                if first_error and not taken:
                    raise
                break
            try:
                sock.setblocking(False)
                if sock.family in (socket.AF_INET, socket.AF_INET6):  # as anyio's accept does
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # the client hung up already
                sock.close()
                continue
            taken.append(sock)
        return taken

    async def _accept_failed(self, cause: OSError, pause: float) -> float:
        """Log an accept that failed for want of resources, wait ``pause``; the next pause."""
        self.accept_errors += 1
        log.warning(
            "broker %s cannot accept a connection: %s; retrying in %.2fs (%d connections kept)",
            self.node_id,
            cause.strerror or cause,
            pause,
            len(self.connections),
        )
        await anyio.sleep(pause)
        return min(pause * 2, ACCEPT_BACKOFF_S[1])

    def _start_reaping(self, tg: TaskGroup | trio.Nursery) -> None:
        if not self._reaping:  # a broker nobody connects to has nothing to reap: no task for it
            self._reaping = True
            tg.start_soon(self._reap_idle)

    async def _serve_one(self, stream: SocketStream | DirectSocket, endpoint: Endpoint) -> None:
        security = endpoint.security
        served: ByteStream | DirectSocket = stream
        if security.ssl_context is not None:
            assert not isinstance(stream, DirectSocket)  # TLS listeners' connections come as anyio streams
            try:
                served = await start_tls(stream, security.ssl_context)
            except (anyio.BrokenResourceError, anyio.EndOfStream):
                # the client hung up before the handshake ended: Kafka logs a disconnect,
                # not a failed handshake, and so does this (no event, as for any hang-up)
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                return
            except (TimeoutError, ssl.SSLError, OSError) as exc:
                self._tls_failed(stream, exc)
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                return
            except BaseException:  # the broker is stopping: the socket closes with it
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                raise
        conn = Connection(self.pipeline, served)
        conn.peer.security_protocol = security.protocol
        conn.peer.listener = endpoint.name
        if security.protocol == "SSL" and served is not stream:  # TLS: the stream start_tls made
            assert not isinstance(stream, DirectSocket)
            principal = client_principal(cast("TLSStream", served), security.mapping_rules)
            if principal is None:
                self._tls_failed(stream, ValueError("no ssl.principal.mapping.rules rule maps the certificate"))
                with anyio.CancelScope(shield=True):
                    await served.aclose()
                return
            conn.peer.principal = principal
            if principal != ANONYMOUS:  # a client certificate: the connection is authenticated
                self.runtime.emit(
                    ev.ClientAuthenticated(
                        broker=self.node_id,
                        peer=conn.peer.address,
                        client_id=None,
                        principal=principal,
                        mechanism="SSL",
                    )
                )
        if security.sasl:
            config = self.runtime.state.config
            conn.peer.auth = Authenticator(
                security.mechanisms,
                self.runtime.state.users,
                reauth_ms=config.get_int("connections.max.reauth.ms"),
                scram_nonce_may_repeat=self.runtime.state.kafka_version.startswith("3."),
                oauth=security.oauth,
            )
        self.connections.add(conn)
        try:
            await conn.serve()
        finally:
            self.connections.discard(conn)
            if not self.connections:  # a set keeps the table it grew to: a burst's goes with it
                self.connections = set()

    def _tls_failed(self, stream: SocketStream, exc: BaseException) -> None:
        try:
            address = stream.extra(anyio.abc.SocketAttribute.remote_address)
            peer = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
        except Exception:  # pragma: no cover - unusual socket families
            peer = "?"
        reason = "TLS handshake timed out" if isinstance(exc, TimeoutError) else f"TLS handshake failed: {exc}"
        self.runtime.emit(ev.ConnectionClosed(broker=self.node_id, peer=peer, client_id=None, reason=reason))

    def _idle_timeout(self) -> float:
        try:
            ms = self.runtime.state.config.get_int("connections.max.idle.ms")
        except (KeyError, ValueError):  # pragma: no cover - validated settings
            ms = 600000
        return math.inf if ms < 0 else ms / 1000

    async def _reap_idle(self) -> None:
        """Close connections idle for ``connections.max.idle.ms``, as Kafka's selector does:
        one task per broker, waking when the first of them would be due (and at least every
        ``REAP_CHECK_S``, so a changed setting applies)."""
        while True:
            idle, now = self._idle_timeout(), anyio.current_time()
            wake = now + min(idle, REAP_CHECK_S)
            if idle < math.inf:
                for conn in list(self.connections):
                    wake = min(wake, conn.reap_if_idle(now, idle))
            await anyio.sleep_until(max(wake, now + REAP_PAUSE_S))

    def stop(self) -> None:
        """Close the listener and every connection."""
        if self._scope is not None:
            self._scope.cancel()

    def cut(self) -> None:
        """Close the connections of every client now cut off from this broker."""
        for conn in list(self.connections):
            if self.runtime.is_cut_off(conn.client_id, self.node_id):
                conn.abort()

"""One client connection: read frames, hand each to the pipeline, send answers in order (a
connection processes one request at a time, as Kafka does).

Between requests the serving task reads the socket itself. While a request waits (a Fetch
long poll, a JoinGroup, a fault's delay) a watcher task, started for that wait, reads it
instead: when the client goes away, the parked request is dropped and the socket closed at
once instead of after its max wait. (A reader task beside every request halved the request
rate: two task switches and a channel per round trip.) Requests already received are still
handled (as Kafka handles the completed receives of a channel closed by its peer), but
nothing of theirs waits any more. Answers to requests that arrived together (a client's
pipelined Metadata and FindCoordinator) go out together, in order, in one write: each is held
only while the next request is already here and runs without waiting, so the client reads
them at once, as from a broker that answers in microseconds. A connection with no request in
flight, none received and none ended for ``connections.max.idle.ms`` (Kafka's default 600000)
is closed, as Kafka's selector does: the broker's one reaper task asks each connection
(:meth:`Connection.reap_if_idle`).

Under trio a plain TCP connection reads and writes its socket itself (:class:`DirectSocket`):
a trio socket call that succeeds yields to the scheduler once more after it, a turn of the
loop (an ``epoll_wait`` with it) twice per request that a request-and-answer client never
needed. It still yields at every wait, and after a read that found data already there.

Anything that cannot be parsed closes this connection only, with an event; every other
connection keeps being served.
"""

from __future__ import annotations

import math
import socket
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import sniffio
import trio
from anyio.abc import ByteStream

from ..core import events as ev
from ..core.security.authenticator import State
from ..protocol.errors import ProtocolError
from ..protocol.framing import FrameDecoder, frame
from .exchange import CloseConnection, authenticated_as
from .pipeline import Peer, Pipeline
from .request_memory import SMALL

ENDINGS = (ProtocolError, CloseConnection, anyio.BrokenResourceError, anyio.ClosedResourceError)
READ_AHEAD = 16  # frames read ahead of the one being processed (a client's pipelined requests)
HOLD_BYTES = 1 << 20  # answers held for one write (requests that arrived together) up to this size


class DirectSocket:
    """A plain TCP connection's socket under trio, read and written without trio's socket
    wrapper (see the module's docstring); errors as anyio's stream raises them. The broker
    serves the sockets it accepts under trio through one of these from the start, with no
    anyio stream (:meth:`Connection.__init__`)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    async def aclose(self) -> None:
        """Close the socket now (trio forgets it first, as trio's own close does)."""
        trio.lowlevel.notify_closing(self.sock)
        self.sock.close()

    async def receive(self, max_bytes: int) -> bytes:
        sock = self.sock
        await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled reader reads nothing (as trio's)
        try:
            data = sock.recv(max_bytes)
        except BlockingIOError:  # nothing yet, as between a client's requests
            while True:
                try:
                    await trio.lowlevel.wait_readable(sock)  # the loop runs the others meanwhile
                except trio.ClosedResourceError as exc:
                    raise anyio.ClosedResourceError from exc
                try:
                    data = sock.recv(max_bytes)
                    break
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise anyio.BrokenResourceError from exc
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        else:  # it was there already (requests sent together): let the others run first, and
            # never lose what was read to a cancellation (a watcher stopped as its request ends)
            await trio.lowlevel.cancel_shielded_checkpoint()
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, data: bytes) -> None:
        sock = self.sock
        view = memoryview(data)
        while view:
            try:
                sent = sock.send(view)
            except BlockingIOError:  # the client is not reading: wait until it does
                try:
                    await trio.lowlevel.wait_writable(sock)
                except trio.ClosedResourceError as exc:
                    raise anyio.ClosedResourceError from exc
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[sent:]


def _uncycle(exc: BaseException) -> None:
    """Drop the traceback of a cancellation raised out of ``stream.receive``: anyio's trio
    backend re-raises it from a frame that holds it (``_convert_socket_error``), a cycle that
    kept the connection and everything its frames hold (~80 objects) until a full collection,
    once per parked request (issue 33). The cancellation goes on to its scope, which ends it."""
    exc.__traceback__ = None


class Connection:
    def __init__(self, pipeline: Pipeline, stream: ByteStream | DirectSocket):
        self.pipeline = pipeline
        self.runtime = pipeline.runtime
        self.stream = stream
        # Under trio, trio's own primitives (anyio's look up the backend on every call: a cancel
        # scope costs 3 us against 0.4, the time 1.1 against 0.3); anyio's under asyncio.
        under_trio = sniffio.current_async_library() == "trio"
        self._scope_type = trio.CancelScope if under_trio else anyio.CancelScope
        self._event_type = trio.Event if under_trio else anyio.Event
        self._task_group = trio.open_nursery if under_trio else anyio.create_task_group
        self._now = trio.current_time if under_trio else anyio.current_time
        self._scope = self._scope_type()
        self._decoder = FrameDecoder(self.runtime.max_frame_size)
        self._tasks: trio.Nursery | anyio.abc.TaskGroup | None = None  # the watchers run in it
        self._request_scope: anyio.CancelScope | trio.CancelScope | None = None  # cancelled to drop a parked request
        self._in_flight = False  # a request is being processed
        self.peer_gone = False  # the client closed its end
        self._read_error: ProtocolError | None = None  # a frame that cannot be parsed
        self._pending: deque[bytes] = deque()  # frames the watcher read ahead
        self._parked = False  # the request being processed waits (or waited)
        self._watch_scope: anyio.CancelScope | trio.CancelScope | None = None  # the running watcher's
        self._watch_done: anyio.Event | trio.Event | None = None  # set when that watcher has ended
        self._memory = pipeline.request_memory  # queued.max.request.bytes
        self._assembling = 0  # bytes reserved for the frame being received
        self._reserved: deque[tuple[bytes, int]] = deque()  # received frames holding a reservation
        self._held: list[bytes] = []  # framed answers not sent yet (see the module's docstring)
        self._held_bytes = 0
        self.last_active = self._now()
        try:
            if isinstance(stream, DirectSocket):  # the broker's plain TCP connections under trio
                raw = stream.sock
            else:  # a TLS stream, or any stream under asyncio
                attributes: Mapping[Any, Callable[[], Any]] = stream.extra_attributes  # built at each extra(): once
                raw = attributes[anyio.abc.SocketAttribute.raw_socket]()
            address = raw.getpeername()  # (host, port, ...) over TCP
            host, port = address[0], address[1]
            self.peer = Peer(f"{host}:{port}", str(host))
        except Exception:  # pragma: no cover - unusual socket families
            self.peer = Peer()
        self.peer.park = self._park
        self.peer.flush = self._flush

    @property
    def client_id(self) -> str | None:
        return self.peer.client_id

    def abort(self) -> None:
        """Close this connection now (a network cut); the client sees it reset."""
        self._scope.cancel()

    async def serve(self) -> None:
        try:
            with self._scope:
                error: Exception | None = None
                async with self._task_group() as tasks:
                    self._tasks = tasks
                    try:
                        await self._serve_frames()
                    except ENDINGS as exc:  # raised out of the task group, not as a group
                        error = exc
                        await self._flush_before_closing()
                    tasks.cancel_scope.cancel()
                if error is not None:
                    raise error
        except (ProtocolError, CloseConnection) as exc:
            self.runtime.emit(
                ev.ConnectionClosed(
                    broker=self.pipeline.broker_id,
                    peer=self.peer.address,
                    client_id=self.peer.client_id,
                    reason=str(exc),
                    principal=authenticated_as(self.peer.auth, self.peer.principal),
                )
            )
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            for _, size in self._reserved:
                self._memory.release(size)
            self._memory.release(self._assembling)
            self._reserved.clear()
            self._assembling = 0
            if isinstance(self.stream, DirectSocket):
                await self.stream.aclose()  # no checkpoint: nothing to shield
            else:
                with anyio.CancelScope(shield=True):
                    await self.stream.aclose()
            # The peer's bound methods point back here: a cycle that kept this connection, its
            # socket, task and scopes (~27 objects) until a full collection (issue 33).
            self.peer.park = self.peer.flush = None
            self._close_share_sessions()

    def _close_share_sessions(self) -> None:
        """Closing the connection that opened a share session releases its member's records."""
        runtime = self.runtime
        groups = runtime.state.groups
        if not groups.made("shares"):  # no share group has fetched yet: nothing to release
            return
        shares = groups.shares
        if not shares.sessions.sessions:
            return
        woken = shares.connection_closed(self.pipeline.broker_id, self.peer.address, runtime.clock.now_ms())
        runtime.settle(partitions=woken)

    def reap_if_idle(self, now: float, idle: float) -> float:
        """Close the connection if it has had no request for ``idle`` seconds and none is being
        processed (``connections.max.idle.ms``); else the time it would be idle from."""
        due = self.last_active + idle
        if due > now:
            return due
        if self._in_flight:  # a request in flight (a long poll) is not idleness
            return now + idle
        self.runtime.emit(
            ev.ConnectionClosed(
                broker=self.pipeline.broker_id,
                peer=self.peer.address,
                client_id=self.peer.client_id,
                reason=f"idle for more than connections.max.idle.ms={idle * 1000:.0f}",
                principal=authenticated_as(self.peer.auth, self.peer.principal),
            )
        )
        self._scope.cancel()
        return math.inf

    async def _flush(self) -> None:
        """Send the answers held, in one write."""
        if not self._held:
            return
        held, self._held, self._held_bytes = self._held, [], 0
        if not self.peer_gone:
            await self.stream.send(held[0] if len(held) == 1 else b"".join(held))

    async def _flush_before_closing(self) -> None:
        """The answers of the requests before the one that ends the connection still go out
        (Kafka sent each before reading the next), unless the client is not reading."""
        with anyio.move_on_after(1):
            try:
                await self._flush()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    def _next_payload(self) -> bytes | None:
        """The next request received, in order: those the watcher read ahead first."""
        if self._pending:
            return self._pending.popleft()
        if self._read_error is not None:  # after the frames before it are handled
            raise self._read_error
        return self._received(self._decoder.next_frame())

    def _received(self, payload: bytes | None) -> bytes | None:
        """``payload``, the frame the reservation being made was for when it has one."""
        if payload is not None and self._assembling:
            self._reserved.append((payload, self._assembling))
            self._assembling = 0
        return payload

    async def _reserve(self) -> None:
        """Before reading a large frame's body: take its size from the broker's request memory
        (Kafka mutes a connection while its memory pool is spent)."""
        size = self._decoder.pending_size()
        if size >= SMALL and not self._assembling:
            await self._memory.reserve(size)
            self._assembling = size

    def _done_with(self, payload: bytes) -> None:
        if self._reserved and self._reserved[0][0] is payload:
            self._memory.release(self._reserved.popleft()[1])

    async def _receive(self) -> bool:
        """Read once between requests; False when the client has left."""
        if self.peer_gone:
            return False
        await self._reserve()
        try:
            data = await self.stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.peer_gone = True
            return False
        except trio.Cancelled as exc:
            _uncycle(exc)
            raise
        self._decoder.feed(data)
        self.last_active = self._now()
        return True

    async def _serve_frames(self) -> None:
        # One cancel scope serves request after request until one is dropped (its client left
        # while it waited): entering a scope per request cost more than the rest of a loop turn.
        while True:
            with self._scope_type() as scope:
                self._request_scope = scope
                await self._serve_requests(scope)
                return

    async def _serve_requests(self, scope: anyio.CancelScope | trio.CancelScope) -> None:
        while True:
            payload = self._next_payload()
            if payload is None:
                await self._flush()
                if not await self._receive():
                    return
                continue
            if self.peer_gone:
                scope.cancel()  # handled up to its first wait, then dropped
            self._in_flight = True
            try:
                reply = await self.pipeline.process(payload, self.peer)
            finally:
                self._done_with(payload)
                self._in_flight = False
                # a request ending is activity (Kafka counts its answer's write): idle from now,
                # not from its arrival, or the reaper may close it before the answer goes out
                self.last_active = self._now()
                if self._parked:
                    await self._stop_watching()
            if reply is not None and not self.peer_gone:
                self._held.append(frame(reply))
                self._held_bytes += len(reply)
                if self._held_bytes >= HOLD_BYTES:
                    await self._flush()
            self.last_active = self._now()
            if self.peer.auth is not None and self.peer.auth.state is State.FAILED:
                await self._flush()  # the failure's answer, then the connection closes (as Kafka's)
                raise CloseConnection("SASL authentication failed")
            if self.peer.muted_until_ms:
                await self._flush()
                await self._muted()

    def _park(self) -> None:
        """The request being processed is about to wait: watch the socket meanwhile (a task of
        its own for this wait, so a connection whose requests never wait never starts one)."""
        if self._parked:  # it waits again (a fault's delay after a long poll): still watched
            return
        self._parked = True
        if self.peer_gone or self._read_error is not None or self._tasks is None:
            return  # nothing more to read
        self._watch_scope, self._watch_done = self._scope_type(), self._event_type()
        self._tasks.start_soon(self._watch, self._watch_scope, self._watch_done)

    async def _stop_watching(self) -> None:
        """The parked request is over: the watcher stops reading and this task reads again."""
        self._parked = False
        scope, done = self._watch_scope, self._watch_done
        if scope is None or done is None:
            return
        self._watch_scope = self._watch_done = None
        with anyio.CancelScope(shield=True):
            scope.cancel()
            await done.wait()

    async def _watch(self, scope: anyio.CancelScope | trio.CancelScope, done: anyio.Event | trio.Event) -> None:
        """While a request waits (a Fetch long poll, a JoinGroup), read the socket: on the
        client's EOF drop the parked request; frames read meanwhile wait their turn (up to
        ``READ_AHEAD``)."""
        try:
            with scope:
                if self._in_flight and not self.peer_gone and self._read_error is None:
                    await self._read_ahead()
        finally:  # stopped, or cancelled with the connection: never leave the request task waiting
            done.set()

    async def _read_ahead(self) -> None:
        while len(self._pending) < READ_AHEAD:
            await self._reserve()
            try:
                data = await self.stream.receive(65536)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.peer_gone = True
                if self._in_flight and self._request_scope is not None:
                    self._request_scope.cancel()  # a parked request waits for nobody
                return
            except trio.Cancelled as exc:  # as every watch ends
                _uncycle(exc)
                raise
            self._decoder.feed(data)
            try:
                while (payload := self._received(self._decoder.next_frame())) is not None:
                    self.last_active = self._now()
                    self._pending.append(payload)
            except ProtocolError as exc:  # raised after the frames before it are handled
                self._read_error = exc
                return

    async def _muted(self) -> None:
        """A quota throttle: wait until the cluster clock passes the end of it (virtual time
        ends it as soon as the test advances the clock)."""
        clock = self.runtime.clock
        while (left := self.peer.muted_until_ms - clock.now_ms()) > 0:
            await anyio.sleep(min(left / 1000, 0.05))
        self.peer.muted_until_ms = 0

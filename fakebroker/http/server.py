"""A loopback JSON-over-HTTP control endpoint for a running FakeCluster.

Tests written in other languages (kafkajs, Java, shell) script faults, time and cluster actions
with plain HTTP::

    curl -s -H "Authorization: Bearer $TOKEN" -d '{"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS", "times": 3}' \\
        http://127.0.0.1:$PORT/faults

The app is a small hand-written ASGI callable served by hypercorn inside the cluster's own event
loop (trio or asyncio), so every handler runs on the loop thread and calls the cluster's methods
directly. One route table (``fakebroker.http.routes.ROUTES``) drives both the dispatch
and the OpenAPI document at ``/openapi.json``, the only path open without the token. The
endpoint binds loopback only: it can stop brokers, so nothing off the machine may reach it.

Errors are ``{"error": "..."}``: 400 for bad input (a misspelt API or error name gets the fault
module's message with the valid names), 401 without the right token, 404 for an unknown rule,
group, broker or topic, 409 when the cluster's state refuses (a real clock cannot be advanced,
the topic exists), 408 when ``POST /wait`` times out.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, unquote

import anyio
import sniffio
from anyio.abc import TaskGroup, TaskStatus

from ..cluster import ErrorCode, FakeCluster, TopicError
from . import console
from .console import Response
from .live import EventStream
from .routes import ROUTES, Request, Route, openapi_document
from .schemas import HTTPError, check_body

__all__ = ["ROUTES", "ControlApp", "Route", "loopback_host", "openapi_document", "serve", "start"]

log = logging.getLogger(__name__)

MAX_BODY = 1 << 20  # a control call is a few hundred bytes; refuse anything silly
MAX_DEPTH = 32  # JSON nesting a body may have (a control call's is 3 or 4 levels)
# A request's headers must arrive within HEADERS_TIMEOUT_S of the connection opening (or of the
# previous answer on a kept-alive connection): hypercorn's keep-alive timer, which runs until
# the headers are in. Its body must then arrive within BODY_TIMEOUT_S, or the answer is 408 and
# the connection is closed. At most MAX_BODY_READERS requests read a body at once (the others
# wait for a turn within their BODY_TIMEOUT_S), so bodies held in memory stay under
# MAX_BODY_READERS * MAX_BODY. Read when used: a test may set them lower.
HEADERS_TIMEOUT_S = 5.0
BODY_TIMEOUT_S = 10.0
MAX_BODY_READERS = 16
SHUTDOWN_GRACE_S = 1.0  # how long open requests (a long POST /wait) may finish when the cluster stops


# -- the ASGI app -------------------------------------------------------------------------------
class ControlApp:
    """ASGI app: token check, route match, JSON in and out, errors as ``{"error": ...}``."""

    def __init__(self, cluster: FakeCluster, token: str):
        self.cluster = cluster
        self._token = token.encode()
        self._readers: anyio.Semaphore | None = None  # made on the loop, at the first body read
        self._closing: anyio.Event | None = None  # set when the endpoint stops: streams end

    def close_streams(self) -> None:
        if self._closing is not None:
            self._closing.set()

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict]], send: Callable[[dict], Awaitable[None]]
    ) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            await send({"type": "websocket.close"})  # refused before accepting
            return
        try:
            status, headers = 200, []
            payload: Any = None
            self._check_host(scope)
            self._check_origin(scope)
            if console.is_console_path(scope["path"]):
                payload = console.answer(scope, self._token, _port(scope), self._authorized(scope))
            else:
                status, payload = await self._handle(scope, receive)
        except HTTPError as exc:
            status, payload, headers = exc.status, {"error": exc.message}, exc.headers
        except Exception as exc:  # a bug: say so instead of closing the connection
            log.exception("control endpoint: %s %s failed", scope.get("method"), scope.get("path"))
            status, payload = 500, {"error": f"{type(exc).__name__}: {exc}"}
        if isinstance(payload, EventStream):
            await self._stream(payload, receive, send)
            return
        if isinstance(payload, Response):
            await send_whole(send, payload.status, payload.body, payload.content_type, payload.headers)
            return
        await send_whole(send, status, json.dumps(payload, default=str).encode(), "application/json", headers)

    def _check_host(self, scope: dict[str, Any]) -> None:
        """Refuse a Host header other than a loopback name with this port (DNS rebinding: a
        web page whose name was pointed at 127.0.0.1 would otherwise reach the endpoint)."""
        given = next((v for n, v in scope.get("headers", []) if n.lower() == b"host"), None)
        server = scope.get("server") or (None, None)
        if given is None or not host_allowed(given.decode("latin-1"), server[1]):
            shown = given.decode("latin-1") if given is not None else "(none)"
            raise HTTPError(403, f"Host {shown!r} refused: use 127.0.0.1, localhost or [::1] with the endpoint's port")

    def _check_origin(self, scope: dict[str, Any]) -> None:
        """Refuse what a browser sends on behalf of another site: an Origin header other than
        this endpoint's own (a loopback name with its port), or Sec-Fetch-Site cross-site."""
        headers = {n.lower(): v for n, v in scope.get("headers", [])}
        origin = headers.get(b"origin")
        if origin is not None:
            scheme, _, host = origin.decode("latin-1").partition("://")
            if scheme != "http" or not host_allowed(host, _port(scope)):
                raise HTTPError(403, f"Origin {origin.decode('latin-1')!r} refused: only the endpoint's own page")
        if headers.get(b"sec-fetch-site") == b"cross-site":
            raise HTTPError(403, "a cross-site request is refused")

    async def _handle(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict]]) -> tuple[int, Any]:
        raw = scope.get("raw_path") or scope["path"].encode()
        raw = raw.split(b"?", 1)[0].decode("latin-1")
        parts = [unquote(p) for p in raw.strip("/").split("/")]  # %2F inside a group id stays in its segment
        method = scope["method"].upper()
        candidates = [(r, p) for r in ROUTES if (p := r.match(parts)) is not None]
        route, params = next(((r, p) for r, p in candidates if r.method == method), (None, None))
        if (route is None or not route.open) and not self._authorized(scope):
            raise HTTPError(
                401,
                "missing or wrong token: send 'Authorization: Bearer TOKEN' (the token serve printed)",
                [(b"www-authenticate", b'Bearer realm="fakebroker"')],
            )
        if method not in ("GET", "HEAD") and console.cookie_token(scope, _port(scope)) and not _bearer(scope):
            # a browser's call on the cookie: it sends Origin with every unsafe method
            if not any(n.lower() == b"origin" for n, _ in scope.get("headers", [])):
                raise HTTPError(403, f"{method} with the console's cookie needs an Origin header")
        if route is None:
            if candidates:
                allowed = ", ".join(sorted({r.method for r, _ in candidates}))
                raise HTTPError(
                    405, f"{method} is not allowed here (allowed: {allowed})", [(b"allow", allowed.encode())]
                )
            raise HTTPError(404, f"no resource {raw}; GET /openapi.json lists them")
        body = await self._read_body(scope, receive)
        if route.body is not None:
            body = check_body(route.body, body if body is not None else {})
        elif body not in (None, {}):
            raise HTTPError(400, f"{method} {route.path} takes no body")
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        headers = {n.decode("latin-1").lower(): v.decode("latin-1") for n, v in scope.get("headers", [])}
        req = Request(self.cluster, params or {}, query, body or {}, headers)
        try:
            return route.status, await route.handler(req)
        except TopicError as exc:
            status = (
                404
                if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else 409
                if exc.code == ErrorCode.TOPIC_ALREADY_EXISTS
                else 400
            )
            raise HTTPError(status, str(exc)) from None
        except KeyError as exc:  # faults.get / remove of an unknown rule
            raise HTTPError(404, str(exc.args[0]) if exc.args else "not found") from None
        except (ValueError, TypeError) as exc:  # misspelt API / error / action names, bad values
            raise HTTPError(400, str(exc)) from None

    def _authorized(self, scope: dict[str, Any]) -> bool:
        """The request carries the token: as a bearer token, or the console's cookie."""
        given = _bearer(scope) or console.cookie_token(scope, _port(scope))
        return bool(given) and hmac.compare_digest(given, self._token)

    async def _stream(self, stream: EventStream, receive: Callable[[], Awaitable[dict]], send: Any) -> None:
        """Send a server-sent event stream until the client goes away or the endpoint stops."""
        if self._closing is None:
            self._closing = anyio.Event()
        closing = self._closing
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-store"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )
        gone = False
        async with anyio.create_task_group() as tg:

            async def until_gone() -> None:
                nonlocal gone
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone = True
                tg.cancel_scope.cancel()

            async def until_closing() -> None:
                await closing.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(until_gone)
            tg.start_soon(until_closing)
            try:
                async for chunk in stream.chunks():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except Exception:  # the cluster stopping under the stream, or a bug: end this stream only
                log.debug("control endpoint: a stream ended", exc_info=True)
            tg.cancel_scope.cancel()
        if not gone:
            with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _read_body(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict]]) -> Any:
        """The body as JSON (None if empty), read within BODY_TIMEOUT_S, at most MAX_BODY bytes
        nested at most MAX_DEPTH deep; HTTPError otherwise (and hypercorn closes a connection whose
        body was not read to its end)."""
        declared = next((v for n, v in scope.get("headers", []) if n.lower() == b"content-length"), b"0")
        if declared.strip().isdigit() and int(declared) > MAX_BODY:
            raise HTTPError(413, f"request body over {MAX_BODY} bytes", [(b"connection", b"close")])
        if self._readers is None:
            self._readers = anyio.Semaphore(MAX_BODY_READERS)
        timeout = BODY_TIMEOUT_S
        with anyio.move_on_after(timeout):
            async with self._readers:
                return self._parse(await self._receive_all(receive))
        raise HTTPError(
            408, f"the request body did not arrive within {timeout:g} s; send it whole", [(b"connection", b"close")]
        )

    async def _receive_all(self, receive: Callable[[], Awaitable[dict]]) -> bytes:
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise HTTPError(400, "client went away")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                raise HTTPError(413, f"request body over {MAX_BODY} bytes", [(b"connection", b"close")])
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks).strip()

    @staticmethod
    def _parse(data: bytes) -> Any:
        if not data:
            return None
        try:
            body = json.loads(data)
        except RecursionError:
            raise HTTPError(400, f"the body is JSON nested too deep: at most {MAX_DEPTH} levels") from None
        except ValueError as exc:
            raise HTTPError(400, f"the body is not JSON: {exc}") from None
        if nesting(body) > MAX_DEPTH:
            raise HTTPError(400, f"the body is JSON nested too deep: at most {MAX_DEPTH} levels")
        return body


async def send_whole(
    send: Callable[[dict], Awaitable[None]], status: int, body: bytes, content_type: str, headers: list
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                (b"x-content-type-options", b"nosniff"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _port(scope: dict[str, Any]) -> int | None:
    server = scope.get("server") or (None, None)
    return server[1]


def _bearer(scope: dict[str, Any]) -> bytes:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, credentials = value.partition(b" ")
            if scheme.lower() == b"bearer":
                return credentials.strip()
    return b""


def nesting(value: Any) -> int:
    """How deep JSON arrays and objects nest in ``value`` (0 for a scalar), without recursion; it
    stops counting past MAX_DEPTH."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        todo.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


# -- serving ------------------------------------------------------------------------------------
LOOPBACK_NAMES = {"127.0.0.1", "localhost", "[::1]"}


def host_allowed(header: str, port: int | None) -> bool:
    """Whether a Host header names this endpoint by a loopback name and its port."""
    header = header.strip().lower()
    if header.startswith("["):
        name, _, rest = header.partition("]")
        name, rest = name + "]", rest
        given_port = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    else:
        name, sep, given_port = header.partition(":")
        given_port = given_port if sep else ""
    if name not in LOOPBACK_NAMES or given_port is None:
        return False
    if port is None:
        return True
    return (given_port or "80") == str(port)


def loopback_host(host: str) -> str:
    """``host`` as a loopback IP literal, or ValueError: the endpoint must not leave the machine."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(
            f"the control endpoint binds a loopback address only (127.0.0.1 or ::1), not {host!r}"
        ) from None
    if not ip.is_loopback:
        raise ValueError(f"the control endpoint binds a loopback address only (127.0.0.1 or ::1), not {host!r}")
    return str(ip)


def _listening_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


async def serve(
    cluster: FakeCluster,
    *,
    port: int = 0,
    token: str | None = None,
    host: str = "127.0.0.1",
    task_status: TaskStatus[tuple[int, str]] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the endpoint until cancelled; reports ``(port, token)`` through ``task_status``
    once the port accepts connections. For ``task_group.start(serve, cluster, ...)``."""
    from hypercorn.config import Config

    host = loopback_host(host)
    token = token or secrets.token_urlsafe(24)
    # We bind (and listen) ourselves so the port is known and accepting before hypercorn runs,
    # then hand the descriptor over with an fd:// bind, which hypercorn owns and closes.
    sock = _listening_socket(host, port)
    bound = sock.getsockname()[1]
    identity = os.fstat(sock.fileno())
    fd = sock.detach()
    config = Config()
    config.bind = [f"fd://{fd}"]
    config.errorlog = log  # a Logger is used as is: hypercorn adds no stderr handler
    config.accesslog = None
    config.graceful_timeout = SHUTDOWN_GRACE_S
    config.keep_alive_timeout = HEADERS_TIMEOUT_S  # also bounds the wait for a request's headers
    config.include_server_header = False
    app = ControlApp(cluster, token)
    stop = anyio.Event()
    scope = anyio.CancelScope(shield=True)

    async def run_hypercorn() -> None:
        # Shielded so hypercorn shuts down through its own trigger (closing its connections)
        # rather than being cut mid-cleanup; the deadline set below bounds that.
        try:
            with scope:
                # either loop's serve; typed loosely, as ControlApp reads plain-dict scopes where
                # hypercorn's types name a TypedDict per scope kind
                hypercorn_serve: Callable[..., Awaitable[None]]
                if sniffio.current_async_library() == "trio":
                    from hypercorn.trio import serve as hypercorn_serve
                else:
                    from hypercorn.asyncio import serve as hypercorn_serve
                await hypercorn_serve(app, config, shutdown_trigger=stop.wait)
        finally:
            _close_if_unclaimed(fd, identity)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_hypercorn)
        task_status.started((bound, token))
        try:
            await anyio.sleep_forever()
        finally:
            app.close_streams()
            stop.set()
            scope.deadline = anyio.current_time() + SHUTDOWN_GRACE_S + 2


def _close_if_unclaimed(fd: int, identity: os.stat_result) -> None:
    """Close our listening descriptor if hypercorn never took it over (cancelled early)."""
    try:
        now = os.fstat(fd)
    except OSError:
        return  # closed by hypercorn
    if (now.st_dev, now.st_ino) == (identity.st_dev, identity.st_ino):
        os.close(fd)


async def start(
    cluster: FakeCluster,
    port: int = 0,
    token: str | None = None,
    host: str = "127.0.0.1",
    *,
    task_group: TaskGroup | None = None,
) -> tuple[int, str]:
    """Start the endpoint for a running cluster in ``task_group`` (default: the cluster's, from
    its own loop); returns ``(port, token)``. It stops with the task group."""
    loopback_host(host)  # refuse before starting anything

    async def run(*, task_status: TaskStatus[tuple[int, str]] = anyio.TASK_STATUS_IGNORED) -> None:
        await serve(cluster, port=port, token=token, host=host, task_status=task_status)

    if task_group is not None:
        return await task_group.start(run)
    return await cluster.start_task_async(run)


class ControlEndpoint:
    """The control endpoint of a running cluster, for as long as the cluster runs::

    with FakeCluster().run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        requests.get(control.url + "/groups", headers={"Authorization": f"Bearer {control.token}"})

    async with FakeCluster() as cluster, ControlEndpoint(cluster) as control:
        ...
    """

    def __init__(self, cluster: FakeCluster, port: int = 0, token: str | None = None, host: str = "127.0.0.1"):
        self.cluster = cluster
        self.host = loopback_host(host)
        self.port = port
        self.token = token
        self.url: str | None = None
        self.console_url: str | None = None  # the console page, its token in the URL (once)

    def _started(self, bound: tuple[int, str]) -> ControlEndpoint:
        self.port, self.token = bound
        self.url = f"http://127.0.0.1:{self.port}"
        self.console_url = f"{self.url}/?token={self.token}"
        return self

    async def _run(self, *, task_status: TaskStatus[tuple[int, str]] = anyio.TASK_STATUS_IGNORED) -> None:
        await serve(self.cluster, port=self.port, token=self.token, host=self.host, task_status=task_status)

    def __enter__(self) -> ControlEndpoint:
        return self._started(self.cluster.start_task(self._run))

    def __exit__(self, *exc_info: Any) -> None:
        pass  # it stops with the cluster

    async def __aenter__(self) -> ControlEndpoint:
        return self._started(await self.cluster.start_task_async(self._run))

    async def __aexit__(self, *exc_info: Any) -> None:
        pass

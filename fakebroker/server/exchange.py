"""One request on its way through the pipeline, what a stage of it looks like, and how a
stage ends a connection."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import anyio

from ..apis.context import Result
from ..apis.registry import Api
from ..core import events as ev
from ..core.security.acls import ANONYMOUS
from ..core.security.authenticator import Authenticator
from ..lazy_dataclasses import dataclass
from ..protocol import headers
from ..protocol.error_codes import error_code
from ..protocol.messages import Message
from .runtime import Runtime


class CloseConnection(Exception):
    """Stop serving this connection (the reason goes to the event log)."""


@dataclass(slots=True)
class Exchange:
    """A decoded request and where it came from."""

    broker_id: int
    api: Api  # the API's declaration: its handler and the facts the stages act on
    api_version: int
    correlation_id: int
    header: Message
    client_host: str
    size: int = 0  # of the request payload (header included): what a producer quota counts
    sliced: bool = False  # the answer was worked out in slices (a long one): encoded off the loop
    throttle_ms: int = 0  # a quota's throttle: the connection reads nothing more for this long
    park: Callable[[], None] | None = None  # the connection's: called before the request waits
    flush: Callable[[], Awaitable[None]] | None = None  # the connection's: sends the answers it holds
    peer: str = ""  # the client's address and port: names the connection (share sessions live on it)
    auth: Authenticator | None = None  # the connection's SASL authentication (a SASL listener's)
    principal: str | None = None  # an SSL listener's connection's, from its client certificate
    security_protocol: str = "PLAINTEXT"  # the connection's listener's
    listener: str = ""  # the connection's listener's name (the addresses its client is told)

    async def waiting(self) -> None:
        """The request is about to wait: its connection watches for the client leaving meanwhile,
        and sends the answers it held for the requests before this one."""
        if self.park is not None:
            self.park()
        if self.flush is not None:
            await self.flush()

    @property
    def api_key(self) -> int:
        return self.api.key

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def api_name(self) -> str:
        return self.api.name

    @property
    def authenticated_as(self) -> str | None:
        """Who the connection authenticated as (SASL, or an SSL client certificate); None for
        ``User:ANONYMOUS`` or before it did: what request-scoped events name as ``principal``."""
        return authenticated_as(self.auth, self.principal)

    async def encode(self, response: Message | dict) -> bytes:
        """The answer's payload; a long one (worked out in slices) encoded on a worker thread."""
        if not self.sliced:
            return headers.encode_response(self.api.key, self.api_version, self.correlation_id, response)
        headers.prepare(self.api.key, self.api_version)
        return await anyio.to_thread.run_sync(
            headers.encode_response, self.api.key, self.api_version, self.correlation_id, response
        )


@dataclass(frozen=True, slots=True)
class Encoded:
    """An answer a stage has encoded already (the quota stage counts a Fetch answer's bytes)."""

    payload: bytes


Answer = Result | Encoded
Proceed = Callable[[Exchange, Message], Awaitable[Answer]]


class Stage(Protocol):
    """One stage of the pipeline: it gets the request and ``proceed``, the stages after it, and
    answers instead of ``proceed``, around it, or not at all (raising :class:`CloseConnection`).
    The last stage, the handler's, has nothing to proceed to.

    A stage is a plain call that returns an awaitable: one with nothing to do for a request
    returns ``proceed(exchange, body)`` as it is, so a request pays no coroutine for the
    stages it does not need (most requests need none but the handler's)."""

    def __call__(self, exchange: Exchange, body: Message, proceed: Proceed) -> Awaitable[Answer]: ...


def joined(stages: Sequence[Stage], last: Proceed) -> Proceed:
    """The stages joined once (not per request), each given the ones after it as ``proceed``."""
    proceed = last
    for stage in reversed(stages):
        proceed = _given(stage.__call__, proceed)
    return proceed


def _given(stage: Stage, proceed: Proceed) -> Proceed:
    # a closure over the bound method: a third of what functools.partial(proceed=...) costs a call
    def walk(exchange: Exchange, body: Message) -> Awaitable[Answer]:
        return stage(exchange, body, proceed)

    return walk


def authenticated_as(auth: Authenticator | None, principal: str | None) -> str | None:
    """A connection's principal for its events: its SASL login's, else its client certificate's;
    None for ``User:ANONYMOUS`` (PLAINTEXT, SSL without a certificate) or before a login."""
    who = auth.principal if auth is not None else principal
    return None if who == ANONYMOUS else who


@functools.cache
def error_name(code: int | None) -> str | None:
    if code is None:
        return None
    try:
        return error_code(code).name
    except ValueError:
        return str(code)


@functools.cache
def _error_fields(cls: type[Message]) -> tuple[tuple[str, bool], ...]:
    """The fields of ``cls`` worth walking for error codes, as (attr, is a struct): the error
    codes themselves and the structs that can hold one; the rest (a CreateTopics answer's
    configs, say: 37 per topic) is never walked."""
    walked = []
    for info in cls._fields:
        if info.struct is None:
            if info.attr.endswith("error_code"):
                walked.append((info.attr, False))
        elif _error_fields(info.struct):  # type: ignore[arg-type]  # mypy#11470: type[X] not Hashable
            walked.append((info.attr, True))
    return tuple(walked)


def error_codes(msg: Message) -> set[int]:
    """Every non-zero error code anywhere in a response (``error_code``, and the prefixed
    ones such as AddPartitionsToTxn's ``partition_error_code``)."""
    found: set[int] = set()
    _collector(type(msg))(msg, found)  # type: ignore[arg-type]  # mypy#11470: type[X] not Hashable
    return found


@functools.cache
def _collector(cls: type[Message]) -> Callable[[Message, set[int]], None]:
    """A function that adds the error codes of a ``cls`` message to a set, its loops over
    ``_error_fields`` written out once (the answer to every request is walked)."""
    lines = ["def collect(m0, found):"]
    env: dict[str, Any] = {}

    def walk(cls: type[Message], var: str, depth: int) -> None:
        pad = "    " * depth
        for attr, struct in _error_fields(cls):  # type: ignore[arg-type]  # mypy#11470: type[X] not Hashable
            if not struct:
                lines.append(f"{pad}v = {var}.{attr}")
                lines.append(f"{pad}if v and isinstance(v, int):\n{pad}    found.add(v)")
                continue
            info = cls._by_attr[attr]
            assert info.struct is not None  # _error_fields marks struct fields only
            child = f"m{depth}"
            if info.is_array:
                lines.append(f"{pad}for {child} in {var}.{attr} or ():")
            else:
                lines.append(f"{pad}{child} = {var}.{attr}")
                lines.append(f"{pad}if {child} is not None:")
            walk(info.struct, child, depth + 1)

    walk(cls, "m0", 1)
    lines.append("    return None")
    exec("\n".join(lines) + "\n", env)  # noqa: S102 - field names from the specs
    return env["collect"]


def note_errors(runtime: Runtime, exchange: Exchange, response: Message, fault: int | None = None) -> None:
    """A ``request_error`` event for every error code an answer carries."""
    codes = error_codes(response)
    if not codes:
        return
    principal = exchange.authenticated_as
    for code in sorted(codes):
        runtime.emit(
            ev.RequestError(
                broker=exchange.broker_id,
                api=exchange.api_name,
                client_id=exchange.client_id,
                error=error_name(code),
                fault=fault,
                principal=principal,
            )
        )

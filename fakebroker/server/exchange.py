"""One request on its way through the pipeline, and how a stage ends a connection."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..core import events as ev
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message, api_keys
from .runtime import Runtime

API_NAMES = api_keys()


class CloseConnection(Exception):
    """Stop serving this connection (the reason goes to the event log)."""


@dataclass(slots=True)
class Exchange:
    """A decoded request and where it came from."""

    broker_id: int
    api_key: int
    api_version: int
    correlation_id: int
    header: Message
    client_host: str
    sliced: bool = False  # the answer was worked out in slices (a long one): encoded off the loop
    park: Callable[[], None] | None = None  # the connection's: called before the request waits
    flush: Callable[[], Awaitable[None]] | None = None  # the connection's: sends the answers it holds

    async def waiting(self) -> None:
        """The request is about to wait: its connection watches for the client leaving meanwhile,
        and sends the answers it held for the requests before this one."""
        if self.park is not None:
            self.park()
        if self.flush is not None:
            await self.flush()

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def api_name(self) -> str | int:
        return API_NAMES.get(self.api_key, self.api_key)


@functools.cache
def error_name(code: int | None) -> str | None:
    if code is None:
        return None
    try:
        return ErrorCode(code).name
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
        elif _error_fields(info.struct):
            walked.append((info.attr, True))
    return tuple(walked)


def error_codes(msg: Message) -> set[int]:
    """Every non-zero error code anywhere in a response (``error_code``, and the prefixed
    ones such as AddPartitionsToTxn's ``partition_error_code``)."""
    found: set[int] = set()
    _collector(type(msg))(msg, found)
    return found


@functools.cache
def _collector(cls: type[Message]) -> Callable[[Message, set[int]], None]:
    """A function that adds the error codes of a ``cls`` message to a set, its loops over
    ``_error_fields`` written out once (the answer to every request is walked)."""
    lines = ["def collect(m0, found):"]
    env: dict[str, Any] = {}

    def walk(cls: type[Message], var: str, depth: int) -> None:
        pad = "    " * depth
        for attr, struct in _error_fields(cls):
            if not struct:
                lines.append(f"{pad}v = {var}.{attr}")
                lines.append(f"{pad}if v and isinstance(v, int):\n{pad}    found.add(v)")
                continue
            info = cls._by_attr[attr]
            child = f"m{depth}"
            if info.is_array:
                lines.append(f"{pad}for {child} in {var}.{attr} or ():")
            else:
                lines.append(f"{pad}{child} = {var}.{attr}")
                lines.append(f"{pad}if {child} is not None:")
            walk(info.struct, child, depth + 1)  # type: ignore[arg-type]

    walk(cls, "m0", 1)
    lines.append("    return None")
    exec("\n".join(lines) + "\n", env)  # noqa: S102 - field names from the specs
    return env["collect"]


def note_errors(runtime: Runtime, exchange: Exchange, response: Message, fault: int | None = None) -> None:
    """A ``request_error`` event for every error code an answer carries."""
    codes = error_codes(response)
    if not codes:
        return
    for code in sorted(codes):
        runtime.emit(
            ev.RequestError(
                broker=exchange.broker_id,
                api=exchange.api_name,
                client_id=exchange.client_id,
                error=error_name(code),
                fault=fault,
            )
        )

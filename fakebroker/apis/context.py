"""What a handler gets and may return.

A handler is ``handle(ctx, request) -> response`` where ``request`` is the typed request
body and the response a typed body (a dict works too). A handler that has to wait (Fetch
until ``min_bytes`` arrive) returns a :class:`Wait`; one whose answer the core decides later
(a JoinGroup waiting for the group) a :class:`Parked`; acks=0 Produce returns
:data:`NO_RESPONSE` (or :class:`CloseInstead` when it failed). Handlers never touch sockets
or trio: the server does the waiting. A handler reports what its request changed beyond
its own answer in ``ctx.effects`` (new records wake parked fetches).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.timers import Pending
from ..protocol.messages import Message, response_type


@dataclass
class Effects:
    """What a request changed that others may wait on."""

    data_changed: bool = False  # records appended or deleted, topics or partitions gone or added


@dataclass
class RequestContext:
    cluster: ClusterState
    broker_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    now_ms: int
    client_host: str = "127.0.0.1"
    effects: Effects = field(default_factory=Effects)

    def response(self, **fields: Any) -> Message:
        """A response body of this request's API with the given fields, defaults elsewhere."""
        return response_type(self.api_key).new(**fields)

    def data_changed(self) -> None:
        self.effects.data_changed = True


@dataclass
class Wait:
    """A response that may wait: the server calls ``poll(now_ms, final)`` whenever data may
    have changed and once more at ``deadline_ms`` with ``final=True``; a non-None result is
    sent."""

    deadline_ms: int
    poll: Callable[[int, bool], Message | None]


@dataclass
class Parked:
    """A response decided later by the core (a JoinGroup or SyncGroup waiting for the rest of
    the group): the server waits for ``pending`` and sends ``respond(pending.value)``."""

    pending: Pending
    respond: Callable[[Any], Message]


class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


class CloseInstead:
    """No answer, and the connection closes: what Kafka does when an acks=0 Produce fails,
    so that the client, which waits for no answer, still notices."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"CloseInstead({self.reason!r})"


Result = Message | dict | Wait | Parked | _NoResponse | CloseInstead
Handler = Callable[[RequestContext, Message], Result]

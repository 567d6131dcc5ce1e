"""Event kinds of authentication (a SASL listener's connections)."""

from __future__ import annotations

from .base import Event, _kind


@_kind
class ClientAuthenticated(Event):
    """A connection authenticated (or re-authenticated) as ``principal`` with ``mechanism``."""

    peer: str
    client_id: str | None
    principal: str
    mechanism: str
    session_lifetime_ms: int = 0  # 0: the session does not end


@_kind
class AuthenticationFailed(Event):
    """A connection's authentication failed: Kafka's answer's text in ``reason``; the
    connection closes after ``connection.failed.authentication.delay.ms``."""

    peer: str
    client_id: str | None
    mechanism: str | None
    reason: str

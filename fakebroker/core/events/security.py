"""Event kinds of security: authentication (a SASL listener's connections), the ACLs and the
delegation tokens."""

from __future__ import annotations

from .base import Event, _kind


@_kind
class ClientAuthenticated(Event):
    """A connection authenticated (or re-authenticated) as ``principal`` with ``mechanism`` (a
    SASL mechanism, or ``SSL`` for a client certificate on an SSL listener)."""

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


@_kind
class AclsCreated(Event):
    """CreateAcls (or a test, in code) added ``acls``, each as ``ALLOW User:alice READ
    TOPIC:LITERAL:orders from *``; one already there is not added again, nor listed."""

    acls: list[str]


@_kind
class AclsDeleted(Event):
    """DeleteAcls (or a test, in code) removed ``acls``, written as in ``acls_created``."""

    acls: list[str]


@_kind
class TokenCreated(Event):
    """CreateDelegationToken made token ``token_id`` for ``owner`` (asked for by
    ``requester``), renewable by ``renewers``, valid until ``expiry_ms`` and renewable up to
    ``max_ms`` (cluster clock). Its HMAC is never recorded."""

    token_id: str
    owner: str
    requester: str
    renewers: list[str]
    expiry_ms: int
    max_ms: int


@_kind
class TokenRenewed(Event):
    """RenewDelegationToken (by ``renewer``, the owner or one of its renewers) moved token
    ``token_id``'s expiry to ``expiry_ms``."""

    token_id: str
    owner: str
    renewer: str
    expiry_ms: int


@_kind
class TokenExpired(Event):
    """Token ``token_id`` expires at ``expiry_ms`` (ExpireDelegationToken by ``requester``) or
    is gone (``removed``: ExpireDelegationToken with a negative period, or, with no
    ``requester``, the expiry sweep, ``delegation.token.expiry.check.interval.ms``)."""

    token_id: str
    owner: str
    expiry_ms: int
    removed: bool
    requester: str | None = None

"""Event kinds of security: authentication (a SASL listener's connections), the ACLs, the
authorizer's denials and the delegation tokens."""

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
class AccessDenied(Event):
    """The authorizer refused ``principal`` (from ``host``, written as Java writes a client's
    address, as host ACLs name it) the ``operation`` (Kafka's name: ``READ``, ``WRITE``, ...) on
    the resource ``resource_type`` (``TOPIC``, ``GROUP``, ``TRANSACTIONAL_ID``, ``CLUSTER``,
    ``DELEGATION_TOKEN``, ``USER``) named ``resource`` (``kafka-cluster`` for the cluster), for a
    request of ``api`` from ``client_id`` to ``broker``; ``group`` is the resource's name when it
    is a group. Recorded where Kafka 4.4's authorizer logs a denial (``kafka.authorizer.logger``
    at INFO: a check a request asked for, made with ``logIfDenied``), once per operation and
    resource per request; never for the checks Kafka makes quietly: the topics an all-topics
    Metadata or a regex subscription leaves out, the KIP-430 ``authorized_operations`` bit sets,
    ListGroups' filtering, the cluster-wide checks tried before per-resource ones (CREATE or
    DELETE on the cluster before each topic's), an idempotent producer's (IDEMPOTENT_WRITE on the
    cluster, WRITE on some topic)."""

    principal: str
    host: str
    operation: str
    resource_type: str
    resource: str
    api: str | None = None
    client_id: str | None = None
    group: str | None = None


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

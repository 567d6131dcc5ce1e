"""Authorization at the API edge (issue 37): what Kafka's ``AuthHelper`` gives ``KafkaApis``.

Every helper asks :meth:`RequestContext.allowed`, so with no authorizer configured
(``authorizer.class.name`` unset) each one allows everything and a handler answers as it did
before. The decisions themselves are the authorizer's (``core/security/authorizer.py``); this
module only says how a handler asks and how a denial reads.

A denial is recorded as an ``access_denied`` event, as Kafka's authorizer logs one, unless the
helper is asked ``quiet=True``: where Kafka passes ``logIfDenied=false`` (a check that only
filters, or a cluster-wide check tried before the per-resource ones). The KIP-430 bit sets
(:func:`operations`) are never recorded.

For every handler, group-side or not (produce, fetch, metadata, transactions, admin): the helpers
stay generic, an operation and a resource type in, a decision out, nothing about one API.

- :func:`denied`: one resource (Kafka's ``authorize``), the cluster when unnamed; a ``None``
  name (a null group id) is asked as "".
- :func:`split`: items into (allowed, denied) by their resource name, order kept
  (``partitionSeqByAuthorized``); each distinct name is asked once, as Kafka asks once per
  name; an item whose name is ``None`` (a topic id no topic has) counts as allowed, for the
  caller's own check to answer.
- :func:`allowed_names`: the names allowed among some (``filterByAuthorized``).
- :func:`any_denied`: whether any of the names is denied (the topics a ConsumerGroupHeartbeat
  or ShareGroupHeartbeat subscribes to).
- :func:`refuse_checked`: TOPIC_AUTHORIZATION_FAILED into the partitions
  ``common.checked_partitions`` checked (OffsetCommit, TxnOffsetCommit), over an unknown topic
  or partition but not an unknown topic id, as Kafka authorizes names before their existence.
- :func:`operations`: the KIP-430 ``authorized_operations`` bit set of a resource (every
  operation its type supports without an authorizer).
- :data:`MESSAGES`: ``Errors.message()`` of the authorization errors, the text Kafka sends where
  a response carries the default message (``new ApiError(Errors.X)``, ``prepareOldResponse``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..core.security.acls import ALL_OPERATIONS_BITS, CLUSTER_NAME, Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from .context import RequestContext

T = TypeVar("T")

MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}


def denied(
    ctx: RequestContext,
    operation: Operation,
    resource_type: ResourceType,
    name: str | None = CLUSTER_NAME,
    *,
    quiet: bool = False,
) -> bool:
    """May this request's principal not do ``operation`` on the resource (the cluster when unnamed)?"""
    return not ctx.allowed(operation, resource_type, name or "", quiet=quiet)


def allowed_names(
    ctx: RequestContext,
    operation: Operation,
    resource_type: ResourceType,
    names: Iterable[str | None],
    *,
    quiet: bool = False,
) -> set[str]:
    """The names among ``names`` the principal may do ``operation`` on, each asked once."""
    if not ctx.cluster.authorizer.enabled:  # asked once per request: everything is allowed
        return {n for n in names if n is not None}
    return {n for n in dict.fromkeys(names) if n is not None and ctx.allowed(operation, resource_type, n, quiet=quiet)}


def split(
    ctx: RequestContext,
    operation: Operation,
    resource_type: ResourceType,
    items: Iterable[T],
    name_of: Callable[[T], str | None],
    *,
    quiet: bool = False,
) -> tuple[list[T], list[T]]:
    """``items`` as (allowed, denied), each in its order, by ``name_of(item)``; an item without
    a name is allowed (its own checks answer it)."""
    items = list(items)
    ok = allowed_names(ctx, operation, resource_type, (name_of(i) for i in items), quiet=quiet)
    allowed: list[T] = []
    refused: list[T] = []
    for item in items:
        name = name_of(item)
        (allowed if name is None or name in ok else refused).append(item)
    return allowed, refused


def any_denied(ctx: RequestContext, operation: Operation, resource_type: ResourceType, names: Iterable[str]) -> bool:
    """Is ``operation`` denied on any of the names (each asked once, every one: each denial is
    recorded, as Kafka's ``filterByAuthorized`` asks and logs them all)?"""
    if not ctx.cluster.authorizer.enabled:
        return False
    return not all([ctx.allowed(operation, resource_type, n) for n in dict.fromkeys(names)])


def refuse_checked(
    ctx: RequestContext, operation: Operation, checked: list[tuple[Any, str | None, Any, ErrorCode]]
) -> list[tuple[Any, str | None, Any, ErrorCode]]:
    """``checked`` (``common.checked_partitions``) with TOPIC_AUTHORIZATION_FAILED on every partition
    of a named topic the principal may not do ``operation`` on."""
    ok = allowed_names(ctx, operation, ResourceType.TOPIC, (name for _, name, _, _ in checked))
    refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return [(t, name, p, refused if name is not None and name not in ok else e) for t, name, p, e in checked]


def operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """The KIP-430 bit set of the operations the principal may do on the resource: every one its
    type supports when no authorizer is configured (Kafka's ``AuthHelper.authorizedOperations``)."""
    authorizer = ctx.cluster.authorizer
    if not authorizer.enabled:
        return ALL_OPERATIONS_BITS[resource_type]
    return authorizer.authorized_operations(ctx.principal, ctx.client_host, resource_type, name)

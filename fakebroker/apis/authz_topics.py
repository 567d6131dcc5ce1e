"""Authorization helpers the data and admin handlers share (issue 37), beside the generic ones
of ``authz.py``: the per-request topic check (Kafka's ``AuthHelper.filterByAuthorized``: each
name asked once), the texts Kafka's denials carry, and the authorized-operations bit sets.

Without an authorizer (``authorizer.class.name`` unset) nothing here is asked: a handler reads
``ctx.cluster.authorizer.enabled`` once per request and skips every check when it is off, so
Produce and Fetch pay one look at the setting per request.
"""

from __future__ import annotations

from ..core.groups.placement import OFFSETS_TOPIC, TRANSACTION_TOPIC
from ..core.security.acls import CLUSTER_NAME, Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from .authz import MESSAGES
from .context import RequestContext

# Kafka's Topic.isInternal: AddPartitionsToTxn asks no WRITE on them (no client may write them
# anyway), and Metadata's denial of their creation says they are internal
INTERNAL_TOPICS = frozenset((OFFSETS_TOPIC, TRANSACTION_TOPIC, "__share_group_state"))

# Errors.X.message(): the text of a denial built as ``new ApiError(Errors.X)``
TOPIC_DENIED = MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED]
GROUP_DENIED = MESSAGES[ErrorCode.GROUP_AUTHORIZATION_FAILED]
CLUSTER_DENIED = MESSAGES[ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
CREATE_DENIED = "Authorization failed."  # ControllerApis.createTopics' text for a topic it may not create


class TopicCheck:
    """May this request's principal do ``operation`` on a topic? Each name is asked once per
    request, as Kafka's ``filterByAuthorized`` asks each distinct name once. A denied name is
    recorded (``access_denied``) unless ``quiet`` (Kafka's ``logIfDenied=false``: an all-topics
    Metadata's filter, CreateTopics' DESCRIBE_CONFIGS on the topics it created)."""

    __slots__ = ("_ctx", "_authorizer", "_principal", "_host", "_operation", "_quiet", "_seen")

    def __init__(self, ctx: RequestContext, operation: Operation, quiet: bool = False):
        self._ctx = ctx
        self._authorizer = ctx.cluster.authorizer
        self._principal = ctx.principal
        self._host = ctx.client_host
        self._operation = operation
        self._quiet = quiet
        self._seen: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        seen = self._seen.get(name)
        if seen is None:
            seen = self._seen[name] = self._authorizer.authorize(
                self._principal, self._host, self._operation, ResourceType.TOPIC, name
            )
            if not seen and not self._quiet:
                self._ctx.note_denied(self._operation, ResourceType.TOPIC, name)
        return seen


def topic_check(ctx: RequestContext, operation: Operation, *, quiet: bool = False) -> TopicCheck | None:
    """The topic check of this request, or None when no authorizer is configured (then every
    topic is allowed, and a handler skips the check)."""
    return TopicCheck(ctx, operation, quiet) if ctx.cluster.authorizer.enabled else None


def topic_operations(ctx: RequestContext, name: str) -> int:
    """KIP-430's ``topic_authorized_operations`` of the topic for this principal (every topic
    operation without an authorizer)."""
    return ctx.cluster.authorizer.authorized_operations(ctx.principal, ctx.client_host, ResourceType.TOPIC, name)


def cluster_operations(ctx: RequestContext) -> int:
    """``cluster_authorized_operations`` as Metadata (v8-10) and DescribeCluster fill it when
    asked: 0 without DESCRIBE on the cluster, else the cluster operations allowed."""
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER):
        return 0
    return ctx.cluster.authorizer.authorized_operations(
        ctx.principal, ctx.client_host, ResourceType.CLUSTER, CLUSTER_NAME
    )


def cluster_denied(ctx: RequestContext, operation: Operation) -> str:
    """The text of ``AuthHelper.authorizeClusterOperation``'s denial. Kafka writes its request's
    ``toString`` into it (processor, connection id, session, listener, buffer, envelope);
    approximated with what a handler knows: the client's address, principal and host."""
    request = (
        f"Request(processor=0, connectionId={ctx.connection or ctx.client_host}, "
        f"session=Session({ctx.principal},/{ctx.client_host}), buffer=null, envelope=None)"
    )
    return f"Request {request} needs {operation.name} permission."

"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51): the users'
SCRAM credentials (``kafka-configs --entity-type users --describe`` and ``--alter
--add-config 'SCRAM-SHA-512=[password=...]'``, the admin clients' ``describeUserScramCredentials``
and ``alterUserScramCredentials``). The core (``core/security/users.py``) keeps them, checks
each change as Kafka's controller does and records it; the client sends the salt and salted
password, never the password. Without an authorizer, anyone may describe and alter them; with
one, describing needs DESCRIBE and altering ALTER on the cluster (else the request's error
answer, CLUSTER_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..core.security.users import Deletion, Upsertion
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import cluster_denied
from .context import RequestContext
from .registry import api

SCRAM_METADATA_VERSION = 11  # MetadataVersion.IBP_3_5_IV2: the first with SCRAM credentials


def describe_user_scram_credentials(ctx: RequestContext, request: Message) -> Message:
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER):
        # DescribeUserScramCredentialsRequest.getErrorResponse: the error at the top and once per
        # user asked (with no name), no text (the error's default)
        denied = {"user": "", "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
        results = [dict(denied, credential_infos=[]) for _ in request.users or ()]
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, results=results
        )
    names = [u.name for u in request.users] if request.users else None
    results = [
        {
            "user": d.user,
            "error_code": d.error_code,
            "error_message": d.message,
            "credential_infos": [{"mechanism": m, "iterations": i} for m, i in d.credentials],
        }
        for d in ctx.cluster.users.describe(names)
    ]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", results=results)


def alter_user_scram_credentials(ctx: RequestContext, request: Message) -> Message:
    if not ctx.allowed(Operation.ALTER, ResourceType.CLUSTER):
        # the controller's authorizeClusterOperation: every user named, in name order
        message = cluster_denied(ctx, Operation.ALTER)
        users = sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions})
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        results = [{"user": u, "error_code": denied, "error_message": message} for u in users]
        return ctx.response(throttle_time_ms=0, results=results)
    deletions = [Deletion(d.name, d.mechanism) for d in request.deletions]
    upsertions = [Upsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password) for u in request.upsertions]
    supported = ctx.cluster.features.finalized.get("metadata.version", 0) >= SCRAM_METADATA_VERSION
    altered = ctx.cluster.users.alter(deletions, upsertions, scram_supported=supported, now_ms=ctx.now_ms)
    results = [{"user": a.user, "error_code": a.error_code, "error_message": a.message} for a in altered]
    return ctx.response(throttle_time_ms=0, results=results)


APIS = (
    api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, (0, 0), describe_user_scram_credentials),
    api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, (0, 0), alter_user_scram_credentials),
)

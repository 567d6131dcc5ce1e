"""DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31), as Kafka's AclApis answers
them (v1-3: Kafka 4.0 removed v0, KIP-896).

- A request naming an UNKNOWN (0) or unknown code for a resource type, pattern type, operation
  or permission fails to parse on Kafka (the request classes' ``validate``): the connection
  closes without an answer, authorizer or not.
- DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER: without it the
  whole answer is CLUSTER_AUTHORIZATION_FAILED (``authorizeClusterOperation``'s text).
- Without an authorizer (``authorizer.class.name`` unset) everything else is SECURITY_DISABLED,
  as before issue 37; with one, the cluster's authorizer (``core/security/authorizer.py``)
  creates, lists and removes the ACLs. DescribeAcls lists them grouped by resource pattern;
  DeleteAcls lists what each filter removed, and (as DeleteAclsResponse.filterResult does) sends
  a filter's error code without its message.
- A creation Kafka's broker cannot even build as an ``AclBinding`` (``ResourcePattern`` refuses
  an ANY resource type and a MATCH or ANY pattern type, ``AccessControlEntry`` an ANY operation
  or permission) fails the whole CreateAcls request: every creation UNKNOWN_SERVER_ERROR without
  a message, nothing created (Kafka 4.4, seen by the secured conformance probes). The other
  invalid bindings are refused one by one with INVALID_REQUEST and Kafka's text.
- Answers without an error carry the message Kafka leaves at its default: "" in CreateAcls'
  results and DescribeAcls, null in DeleteAcls' filter results.
"""

from __future__ import annotations

from ..core.security.acls import (
    Acl,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    from_code,
)
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz_topics import cluster_denied
from .context import CloseInstead, RequestContext
from .registry import api

NO_AUTHORIZER = "No Authorizer is configured on the broker"  # AclApis's DescribeAcls message
NO_AUTHORIZER_SHORT = "No Authorizer is configured."  # its Create/DeleteAcls message


def _codes(
    resource_type: int, pattern_type: int, operation: int, permission: int
) -> tuple[ResourceType, PatternType, Operation, Permission] | None:
    """The four enums, or None when one is UNKNOWN (Kafka's request fails to parse)."""
    codes = (
        from_code(ResourceType, resource_type),
        from_code(PatternType, pattern_type),
        from_code(Operation, operation),
        from_code(Permission, permission),
    )
    return None if any(c == 0 for c in codes) else codes


def _unbuildable(acl: Acl) -> bool:
    """Kafka's broker cannot make an ``AclBinding`` of it (an IllegalArgumentException)."""
    return (
        acl.resource_type == ResourceType.ANY
        or acl.pattern_type in (PatternType.MATCH, PatternType.ANY)
        or acl.operation == Operation.ANY
        or acl.permission == Permission.ANY
    )


def describe_acls(ctx: RequestContext, request: Message) -> Message | CloseInstead:
    codes = _codes(
        request.resource_type_filter, request.pattern_type_filter, request.operation, request.permission_type
    )
    if codes is None:
        return CloseInstead(f"DescribeAclsRequest contains UNKNOWN elements: {request}")
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER):
        return ctx.response(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=cluster_denied(ctx, Operation.DESCRIBE),
            resources=[],
            throttle_time_ms=0,
        )
    authorizer = ctx.cluster.authorizer
    if not authorizer.enabled:
        return ctx.response(
            error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER, resources=[], throttle_time_ms=0
        )
    resource_type, pattern_type, operation, permission = codes
    acl_filter = AclFilter(
        resource_type,
        request.resource_name_filter,
        pattern_type,
        request.principal_filter,
        request.host_filter,
        operation,
        permission,
    )
    code, message, found = authorizer.describe(acl_filter)
    grouped: dict[tuple[ResourceType, str, PatternType], list[Acl]] = {}
    for acl in found:
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    resources = [
        {
            "resource_type": rt,
            "resource_name": name,
            "pattern_type": pattern,
            "acls": [
                {"principal": a.principal, "host": a.host, "operation": a.operation, "permission_type": a.permission}
                for a in acls
            ],
        }
        for (rt, name, pattern), acls in grouped.items()
    ]
    message = "" if message is None else message  # Kafka's default
    return ctx.response(error_code=code, error_message=message, resources=resources, throttle_time_ms=0)


def create_acls(ctx: RequestContext, request: Message) -> Message | CloseInstead:
    acls = []
    for c in request.creations:
        codes = _codes(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type)
        if codes is None:
            return CloseInstead("CreatableAcls contain unknown elements")
        resource_type, pattern_type, operation, permission = codes
        acls.append(Acl(resource_type, c.resource_name, pattern_type, c.principal, c.host, operation, permission))
    if not ctx.allowed(Operation.ALTER, ResourceType.CLUSTER):
        denied = cluster_denied(ctx, Operation.ALTER)
        results = [{"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": denied} for _ in acls]
    elif not ctx.cluster.authorizer.enabled:
        results = [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER_SHORT} for _ in acls]
    elif any(_unbuildable(acl) for acl in acls):  # the whole request fails (ApiError.fromThrowable)
        results = [{"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": None} for _ in acls]
    else:
        created = ctx.cluster.authorizer.create(acls, ctx.now_ms)
        results = [
            {"error_code": code, "error_message": "" if message is None else message} for code, message in created
        ]
    return ctx.response(results=results, throttle_time_ms=0)


def delete_acls(ctx: RequestContext, request: Message) -> Message | CloseInstead:
    filters = []
    for f in request.filters:
        codes = _codes(f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type)
        if codes is None:
            return CloseInstead("Filters contain UNKNOWN elements")
        resource_type, pattern_type, operation, permission = codes
        filters.append(
            AclFilter(
                resource_type,
                f.resource_name_filter,
                pattern_type,
                f.principal_filter,
                f.host_filter,
                operation,
                permission,
            )
        )
    if not ctx.allowed(Operation.ALTER, ResourceType.CLUSTER):
        denied = cluster_denied(ctx, Operation.ALTER)
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        results = [{"error_code": code, "error_message": denied, "matching_acls": []} for _ in filters]
    elif not ctx.cluster.authorizer.enabled:
        code = ErrorCode.SECURITY_DISABLED
        results = [{"error_code": code, "error_message": NO_AUTHORIZER_SHORT, "matching_acls": []} for _ in filters]
    else:
        results = [
            {  # DeleteAclsResponse.filterResult sends the error code only
                "error_code": code,
                "error_message": None,
                "matching_acls": [
                    {
                        "error_code": ErrorCode.NONE,
                        "error_message": None,
                        "resource_type": a.resource_type,
                        "resource_name": a.resource_name,
                        "pattern_type": a.pattern_type,
                        "principal": a.principal,
                        "host": a.host,
                        "operation": a.operation,
                        "permission_type": a.permission,
                    }
                    for a in removed
                ],
            }
            for code, _message, removed in ctx.cluster.authorizer.delete(filters, ctx.now_ms)
        ]
    return ctx.response(filter_results=results, throttle_time_ms=0)


APIS = (
    api(ApiKey.DESCRIBE_ACLS, (1, 3), describe_acls),
    api(ApiKey.CREATE_ACLS, (1, 3), create_acls),
    api(ApiKey.DELETE_ACLS, (1, 3), delete_acls),
)

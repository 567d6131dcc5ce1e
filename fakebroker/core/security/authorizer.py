"""The authorizer: Kafka 4.4's StandardAuthorizer over the cluster's ACLs (``acls.py`` says the
rules). One per cluster (``ClusterState.authorizer``); handlers ask it through
``RequestContext.allowed``.

A decision (:meth:`Authorizer.authorize`) is StandardAuthorizerData's ``authorize``, step by step:

1. a principal listed in ``super.users`` (``User:admin;User:ops``) may do everything;
2. the ACLs of the resource's type that match its name: LITERAL of the name, LITERAL ``*``,
   PREFIXED of a prefix of the name;
3. of those, the ones that apply: the principal or ``User:*``; the host ``*``, the client's
   address as Java writes it (IPv6 uncompressed: ``0:0:0:0:0:0:0:1``) or a CIDR range holding
   it; the operation, ALL, or (ALLOW only) one implying it (READ, WRITE, DELETE and ALTER imply
   DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS);
4. an applying DENY denies, whatever allows; 5. else an applying ALLOW allows;
6. else denied, unless no ACL matched the resource at all (step 2, whoever and whatever it is
   for): then ``allow.everyone.if.no.acl.found`` decides.

The ACLs are kept indexed by resource type, then by name (LITERAL and PREFIXED apart), so a
decision looks at the few ACLs that can match, however many there are.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Iterator
from typing import Any

from ...protocol.error_codes import ErrorCode
from ..configs import STANDARD_AUTHORIZER
from ..events import AccessDenied, AclsCreated, AclsDeleted
from .acls import (
    ALL_OPERATIONS_BITS,
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    Acl,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

__all__ = ["STANDARD_AUTHORIZER", "Authorizer", "creation_error", "java_host"]

MAX_RECORDS_PER_USER_OP = 10_000  # QuorumController's limit on the ACLs one request may add or remove

# ALLOW ACLs of these operations allow DESCRIBE / DESCRIBE_CONFIGS too (never a DENY's)
IMPLIES_DESCRIBE = frozenset((Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER))
IMPLIES_DESCRIBE_CONFIGS = frozenset((Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS))

_ALLOWED, _DENIED = True, False


@functools.lru_cache(maxsize=4096)
def java_host(host: str) -> str:
    """A client's address as Java's ``InetAddress.getHostAddress()`` writes it, which is what
    host ACLs are compared with: IPv4 dotted; IPv6 as eight hex groups without leading zeros,
    not compressed (``::1`` is ``0:0:0:0:0:0:0:1``), a scope as ``%scope``; an IPv4-mapped IPv6
    address (a dual-stack socket's ``::ffff:127.0.0.1``) as the IPv4 address Java makes of it.
    A host that is no address stays as it is."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv4Address):
        return str(address)
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    groups = address.packed
    text = ":".join(format(groups[i] << 8 | groups[i + 1], "x") for i in range(0, 16, 2))
    return f"{text}%{address.scope_id}" if address.scope_id else text


@functools.lru_cache(maxsize=4096)
def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def cidr_network(host: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The range an ACL's host names when it is CIDR notation (holds a ``/``), else None.
    Raises ValueError for a bad one."""
    if "/" not in host:
        return None
    return ipaddress.ip_network(host, strict=False)


def _host_applies(acl_host: str, host: str) -> bool:
    if acl_host == WILDCARD or acl_host == host:
        return True
    if "/" not in acl_host:
        return False
    try:
        network = cidr_network(acl_host)
    except ValueError:  # never created so; stays harmless
        return False
    address = _ip(host)
    return network is not None and address is not None and address.version == network.version and address in network


def _result(acl: Acl, principal: str, host: str, operation: Operation) -> bool | None:
    """What one ACL of the resource says about the action: allowed, denied or nothing (None),
    as StandardAuthorizerData's ``findResult``."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return None
    if not _host_applies(acl.host, host):
        return None
    if acl.operation != Operation.ALL:
        if acl.permission == Permission.ALLOW:
            if operation == Operation.DESCRIBE:
                if acl.operation not in IMPLIES_DESCRIBE:
                    return None
            elif operation == Operation.DESCRIBE_CONFIGS:
                if acl.operation not in IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation != acl.operation:
                return None
        elif operation != acl.operation:
            return None
    return _ALLOWED if acl.permission == Permission.ALLOW else _DENIED


class _Section:
    """The ACLs of one resource type: LITERAL ones by name (``*`` among them) and PREFIXED ones
    by prefix, each a list in the order they were created."""

    __slots__ = ("literal", "prefixed")

    def __init__(self) -> None:
        self.literal: dict[str, list[Acl]] = {}
        self.prefixed: dict[str, list[Acl]] = {}

    def by_pattern(self, pattern: PatternType) -> dict[str, list[Acl]]:
        return self.literal if pattern == PatternType.LITERAL else self.prefixed

    def matching(self, name: str) -> Iterator[list[Acl]]:
        """The lists of ACLs that match the literal resource ``name``."""
        literal = self.literal
        found = literal.get(name)
        if found:
            yield found
        if name != WILDCARD:
            found = literal.get(WILDCARD)
            if found:
                yield found
        prefixed = self.prefixed
        if not prefixed:
            return
        if len(prefixed) <= len(name):
            for prefix, acls in prefixed.items():
                if name.startswith(prefix):
                    yield acls
        else:
            for end in range(1, len(name) + 1):
                found = prefixed.get(name[:end])
                if found:
                    yield found


class Authorizer:
    """The cluster's ACLs and the decisions made from them. ``config`` is the broker config
    (``authorizer.class.name``, ``super.users``, ``allow.everyone.if.no.acl.found``, read live:
    a test may change them between requests). ``events``: where ACL changes are recorded."""

    def __init__(self, config: Any, events: Any = None):
        self.config = config
        self.events = events
        self._acls: dict[Acl, None] = {}  # every ACL, in the order created
        self._sections: dict[ResourceType, _Section] = {}
        self._super_users: tuple[str, frozenset[str]] = ("", frozenset())

    # -- settings ------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """An authorizer is configured: ``authorizer.class.name`` is not empty (start-time
        checks let only Kafka's StandardAuthorizer through). Off, Kafka checks nothing and the
        ACL APIs answer SECURITY_DISABLED."""
        return bool(self.config.get("authorizer.class.name").strip())

    @property
    def super_users(self) -> frozenset[str]:
        """``super.users``: principals separated by ``;`` (spaces around each ignored)."""
        raw = self.config.get("super.users")
        if raw != self._super_users[0]:
            self._super_users = (raw, frozenset(p.strip() for p in raw.split(";") if p.strip()))
        return self._super_users[1]

    @property
    def allow_everyone_if_no_acl_found(self) -> bool:
        """``allow.everyone.if.no.acl.found`` (Java's ``Boolean.parseBoolean``: only ``true``,
        in any case, is true)."""
        return bool(self.config.get("allow.everyone.if.no.acl.found").strip().lower() == "true")

    @property
    def acls(self) -> list[Acl]:
        """Every ACL, in the order created."""
        return list(self._acls)

    # -- decisions -----------------------------------------------------------------------------
    def authorize(
        self, principal: str, host: str, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        """May ``principal`` (``User:alice``) from ``host`` (the client's address as the socket
        gives it: normalised to Java's text here) do ``operation`` on the resource named
        ``name`` (a literal name)? StandardAuthorizer's steps 1-6 (see the module)."""
        if principal in self.super_users:
            return True
        section = self._sections.get(resource_type)
        if section is None:
            return self.allow_everyone_if_no_acl_found
        host = java_host(host)
        found = allowed = False
        for acls in section.matching(name):
            found = True
            for acl in acls:
                result = _result(acl, principal, host, operation)
                if result is _DENIED:
                    return False
                if result is _ALLOWED:
                    allowed = True
        if allowed:
            return True
        return not found and self.allow_everyone_if_no_acl_found

    def log_denied(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
        now_ms: int | None = None,
        *,
        broker: int | None = None,
        api: str | None = None,
        client_id: str | None = None,
    ) -> None:
        """Record a denial as ``access_denied``: what Kafka's authorizer logs at INFO
        (``kafka.authorizer.logger``, "Principal = ... is Denied operation = ...") for an action
        that asks for it (``logIfDenied``), the checks a request asks for. The caller decides
        which those are (``RequestContext.allowed``); :meth:`authorize` itself records nothing,
        as it also answers the quiet checks (KIP-430 bit sets, filters)."""
        if self.events is None:
            return
        self.events.append(
            AccessDenied(
                broker=broker,
                principal=principal,
                host=java_host(host),
                operation=operation.name,
                resource_type=resource_type.name,
                resource=name,
                api=api,
                client_id=client_id,
                group=name if resource_type == ResourceType.GROUP else None,
            ),
            now_ms,
        )

    def authorize_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """May ``principal`` do ``operation`` on some resource of the type? Kafka's
        ``Authorizer.authorizeByResourceType`` (an idempotent producer's IDEMPOTENT_WRITE or any
        topic WRITE): first :meth:`authorize` on a resource named ``hardcode`` (so super users,
        and ``allow.everyone.if.no.acl.found`` when no ACL matches that name, pass); then, of the
        ACLs of the type for the principal or ``User:*``, the host and the operation itself or
        ALL (no implied operations here): a LITERAL ``*`` DENY denies; a LITERAL ``*`` ALLOW
        allows; else an ALLOW allows unless a DENY of the same literal name, or a PREFIXED DENY
        of a prefix of its name, covers it."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        section = self._sections.get(resource_type)
        if section is None:
            return False
        host = java_host(host)
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow_literal: list[str] = []
        allow_prefixed: list[str] = []
        wildcard_allow = False
        for acl in self._acls_of(section):
            if not _host_applies(acl.host, host):
                continue
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.operation != operation and acl.operation != Operation.ALL:
                continue
            literal = acl.pattern_type == PatternType.LITERAL
            if acl.permission == Permission.DENY:
                if literal and acl.resource_name == WILDCARD:
                    return False
                (deny_literal if literal else deny_prefixed).add(acl.resource_name)
            elif literal and acl.resource_name == WILDCARD:
                wildcard_allow = True
            else:
                (allow_literal if literal else allow_prefixed).append(acl.resource_name)
        if wildcard_allow:
            return True
        for literal, names in ((True, allow_literal), (False, allow_prefixed)):
            for name in names:
                if literal and name in deny_literal:
                    continue
                if not any(name[:end] in deny_prefixed for end in range(1, len(name) + 1)):
                    return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The bit set (``1 << code``) of the operations the principal may do on the resource,
        each supported operation of its type (:data:`.acls.SUPPORTED_OPERATIONS`) checked with
        :meth:`authorize` (KIP-430's ``authorized_operations``; AuthHelper.authorizedOperations).
        Without an authorizer, every supported operation."""
        if not self.enabled:
            return ALL_OPERATIONS_BITS.get(resource_type, 0)
        bits = 0
        for operation in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, operation, resource_type, name):
                bits |= 1 << operation
        return bits

    # -- the ACL APIs --------------------------------------------------------------------------
    def create(self, acls: Iterable[Acl], now_ms: int | None = None) -> list[tuple[int, str | None]]:
        """CreateAcls: (error code, message) per binding, in order, as AclApis then
        AclControlManager check them (INVALID_REQUEST with Kafka's text for a CLUSTER not named
        ``kafka-cluster``, an empty name, an ANY/MATCH type, an ANY operation or permission, a
        principal without ``:``, an empty host, a bad CIDR range). An ACL that exists already
        succeeds and is not added again. More than 10000 new ACLs at once: all INVALID_REQUEST,
        nothing added. Records ``acls_created`` with the ACLs added."""
        given = list(acls)
        results: list[tuple[int, str | None]] = []
        new: dict[Acl, None] = {}
        for acl in given:
            reason = creation_error(acl)
            if reason is not None:
                results.append((ErrorCode.INVALID_REQUEST, reason))
                continue
            if acl not in self._acls:
                new[acl] = None
            results.append((ErrorCode.NONE, None))
        if len(new) > MAX_RECORDS_PER_USER_OP:
            message = f"Cannot create more than {MAX_RECORDS_PER_USER_OP} acls in a single create operation."
            return [(ErrorCode.INVALID_REQUEST, message)] * len(given)
        for acl in new:
            self._add(acl)
        if new and self.events is not None:
            self.events.append(AclsCreated(acls=[str(a) for a in new]), now_ms)
        return results

    def describe(self, acl_filter: AclFilter) -> tuple[int, str | None, list[Acl]]:
        """DescribeAcls: (error code, message, the matching ACLs in the order created)."""
        return ErrorCode.NONE, None, self.matching(acl_filter)

    def matching(self, acl_filter: AclFilter) -> list[Acl]:
        """The ACLs ``acl_filter`` matches (:meth:`.acls.AclFilter.matches`), in the order created."""
        rt = acl_filter.resource_type
        if rt != ResourceType.ANY and rt not in self._sections:
            return []
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def delete(
        self, filters: Iterable[AclFilter], now_ms: int | None = None
    ) -> list[tuple[int, str | None, list[Acl]]]:
        """DeleteAcls: per filter, (error code, message, the ACLs it removed); an ACL two
        filters match is listed under both. A filter with an UNKNOWN resource or pattern type,
        operation or permission: INVALID_REQUEST ("Unknown patternFilter." / "Unknown
        entryFilter."). More than 10000 ACLs removed at once: every filter INVALID_REQUEST and
        nothing removed. Records ``acls_deleted`` with the ACLs removed."""
        given = list(filters)
        out: list[tuple[int, str | None, list[Acl]]] = []
        gone: dict[Acl, None] = {}
        for acl_filter in given:
            if acl_filter.resource_type == ResourceType.UNKNOWN or acl_filter.pattern_type == PatternType.UNKNOWN:
                out.append((ErrorCode.INVALID_REQUEST, "Unknown patternFilter.", []))
                continue
            if acl_filter.operation == Operation.UNKNOWN or acl_filter.permission == Permission.UNKNOWN:
                out.append((ErrorCode.INVALID_REQUEST, "Unknown entryFilter.", []))
                continue
            found = self.matching(acl_filter)
            gone.update(dict.fromkeys(found))
            out.append((ErrorCode.NONE, None, found))
        if len(gone) > MAX_RECORDS_PER_USER_OP:
            message = f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a single delete operation."
            return [(ErrorCode.INVALID_REQUEST, message, [])] * len(given)
        for acl in gone:
            self._remove(acl)
        if gone and self.events is not None:
            self.events.append(AclsDeleted(acls=[str(a) for a in gone]), now_ms)
        return out

    # -- the index -----------------------------------------------------------------------------
    def _add(self, acl: Acl) -> None:
        self._acls[acl] = None
        section = self._sections.get(acl.resource_type)
        if section is None:
            section = self._sections[acl.resource_type] = _Section()
        section.by_pattern(acl.pattern_type).setdefault(acl.resource_name, []).append(acl)

    def _remove(self, acl: Acl) -> None:
        del self._acls[acl]
        section = self._sections[acl.resource_type]
        names = section.by_pattern(acl.pattern_type)
        same = names[acl.resource_name]
        same.remove(acl)
        if not same:
            del names[acl.resource_name]
            if not section.literal and not section.prefixed:
                del self._sections[acl.resource_type]

    @staticmethod
    def _acls_of(section: _Section) -> Iterator[Acl]:
        for names in (section.literal, section.prefixed):
            for acls in names.values():
                yield from acls


def creation_error(acl: Acl) -> str | None:
    """Why CreateAcls refuses ``acl`` (INVALID_REQUEST), or None: AclApis' checks, then
    AclControlManager's ``validateNewAcl``, in Kafka's order and words."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.resource_name:
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (Operation.UNKNOWN, Operation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (Permission.ALLOW, Permission.DENY):
        return f"Invalid permissionType {acl.permission.name}"
    if ":" not in acl.principal:
        return (
            f"Could not parse principal from `{acl.principal}` "
            "(no colon is present separating the principal type from the principal name)"
        )
    if not acl.host:
        return "Host pattern cannot be null or empty"
    try:
        cidr_network(acl.host)
    except ValueError as e:
        return f"Invalid CIDR notation '{acl.host}': {e}"
    return None

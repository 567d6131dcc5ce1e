"""ACLs and the authorizer, as Kafka 4.4's StandardAuthorizer decides (issue 37).

Off unless the broker setting ``authorizer.class.name`` names an authorizer (as on Kafka:
then the ACL APIs answer SECURITY_DISABLED and everything is allowed). On, a principal
(``User:alice``; ``User:ANONYMOUS`` on a PLAINTEXT listener) may do an operation on a resource
when an ALLOW ACL matching it applies and no DENY does: literal names, ``*``, prefixes; the
principal or ``User:*``; the host, ``*`` or a CIDR range; implied operations (READ, WRITE,
DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) for ALLOW only.
``super.users`` may do everything; a resource no ACL names at all follows
``allow.everyone.if.no.acl.found`` (default false).
"""

from __future__ import annotations

import enum
from typing import TypeVar

from ...lazy_dataclasses import dataclass

_Code = TypeVar("_Code", bound=enum.IntEnum)


def from_code(kind: type[_Code], code: int) -> _Code:
    """The member of ``kind`` with ``code``, UNKNOWN for a code Kafka does not know (as Java's
    ``fromCode`` maps it)."""
    try:
        return kind(code)
    except ValueError:
        return kind(0)


class Operation(enum.IntEnum):
    """Kafka's AclOperation codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class ResourceType(enum.IntEnum):
    """Kafka's ResourceType codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
ANONYMOUS = "User:ANONYMOUS"  # the principal of a connection that did not authenticate
WILDCARD = "*"  # the resource name and host every ACL of that name or host matches
WILDCARD_PRINCIPAL = "User:*"  # the principal every principal matches

# The operations a resource type supports (Kafka's AclEntry.supportedOperations, 4.4: TWO_PHASE_COMMIT
# on transactional ids), in Kafka's order: what ``authorized_operations`` checks one by one; all
# of them are the answer without an authorizer.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        Operation.READ,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE, Operation.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (Operation.DESCRIBE,),
    ResourceType.USER: (Operation.CREATE_TOKENS, Operation.DESCRIBE_TOKENS),
}


def operations_bits(operations: tuple[Operation, ...] | list[Operation]) -> int:
    """KIP-430's bit set of ``operations`` (``1 << code`` each)."""
    bits = 0
    for operation in operations:
        bits |= 1 << operation
    return bits


# every supported operation of the type, as bits: the answer without an authorizer
ALL_OPERATIONS_BITS: dict[ResourceType, int] = {t: operations_bits(ops) for t, ops in SUPPORTED_OPERATIONS.items()}


@dataclass(frozen=True)
class Acl:
    """One ACL binding: a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def __str__(self) -> str:
        """As Kafka's audit log writes a resource: ``ALLOW User:alice READ TOPIC:LITERAL:orders from *``."""
        return (
            f"{self.permission.name} {self.principal} {self.operation.name} "
            f"{self.resource_type.name}:{self.pattern_type.name}:{self.resource_name} from {self.host}"
        )


@dataclass(frozen=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls match: None matches anything; ANY types match every type;
    ``PatternType.MATCH`` matches the ACLs that would apply to ``resource_name``."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def matches(self, acl: Acl) -> bool:
        """Kafka's ``AclBindingFilter.matches``: the resource type ANY or equal; the pattern type
        ANY (any pattern, the name equal), MATCH (the ACLs that apply to the name: a LITERAL of the
        name or ``*``, a PREFIXED prefix of it) or equal (and the name equal); a None name, principal
        or host matches any (``*`` and ``User:*`` are no wildcards here); the operation and
        permission ANY or equal."""
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        pattern = self.pattern_type
        if pattern not in (PatternType.ANY, PatternType.MATCH) and pattern != acl.pattern_type:
            return False
        name = self.resource_name
        if name is not None:
            if pattern == PatternType.ANY or pattern == acl.pattern_type:
                if name != acl.resource_name:
                    return False
            elif acl.pattern_type == PatternType.LITERAL:
                if name != acl.resource_name and acl.resource_name != WILDCARD:
                    return False
            elif not name.startswith(acl.resource_name):  # PREFIXED
                return False
        return (
            (self.principal is None or self.principal == acl.principal)
            and (self.host is None or self.host == acl.host)
            and (self.operation == Operation.ANY or self.operation == acl.operation)
            and (self.permission == Permission.ANY or self.permission == acl.permission)
        )

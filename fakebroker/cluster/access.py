"""ACLs from a test: ``cluster.acls.allow("User:alice", "READ", group="billing")``. They are the
same ACLs CreateAcls, DescribeAcls and DeleteAcls manage, checked the same way; they decide
only when an authorizer is configured (``config={"authorizer.class.name": STANDARD_AUTHORIZER}``)."""

from __future__ import annotations

from ..core.security.acls import CLUSTER_NAME, Acl, AclFilter, Operation, PatternType, Permission, ResourceType
from ..core.security.authorizer import STANDARD_AUTHORIZER
from ..protocol.error_codes import ErrorCode, error_code
from ..protocol.suggest import close_matches
from ..server.runtime import Runtime
from .errors import ClusterUsageError
from .proxy import LoopProxy

__all__ = ["STANDARD_AUTHORIZER", "AclControl"]

_RESOURCES = {
    "topic": ResourceType.TOPIC,
    "group": ResourceType.GROUP,
    "transactional_id": ResourceType.TRANSACTIONAL_ID,
    "cluster": ResourceType.CLUSTER,
}
_OPERATIONS = [op.name for op in Operation if op not in (Operation.UNKNOWN, Operation.ANY)]
_PATTERNS = {"literal": PatternType.LITERAL, "prefixed": PatternType.PREFIXED}


def _operation(name: str | Operation) -> Operation:
    if isinstance(name, Operation):
        return name
    key = str(name).upper().replace("-", "_").replace(" ", "_")
    if key in _OPERATIONS:
        return Operation[key]
    near = close_matches(key, _OPERATIONS, n=2, cutoff=0.6)
    hint = f"did you mean {' or '.join(map(repr, near))}? " if near else ""
    raise ClusterUsageError(f"no ACL operation {name!r}: {hint}the operations are {', '.join(_OPERATIONS)}")


def _resource(
    topic: str | None, group: str | None, transactional_id: str | None, cluster: bool
) -> tuple[ResourceType, str]:
    named = (("topic", topic), ("group", group), ("transactional_id", transactional_id))
    given = [(kind, name) for kind, name in named if name is not None]
    if cluster:
        given.append(("cluster", CLUSTER_NAME))
    if len(given) != 1:
        raise ClusterUsageError(
            "name one resource: topic=NAME, group=NAME, transactional_id=NAME or cluster=True "
            f"(got {', '.join(k for k, _ in given) or 'none'})"
        )
    kind, name = given[0]
    if not name:
        raise ClusterUsageError(f"{kind}= needs a name ('*' for every {kind})")
    return _RESOURCES[kind], name


class AclControl:
    """``cluster.acls``: add, list and remove ACLs."""

    def __init__(self, proxy: LoopProxy, runtime: Runtime):
        self._proxy = proxy
        self._runtime = runtime

    def allow(
        self,
        principal: str,
        operation: str | Operation,
        *,
        topic: str | None = None,
        group: str | None = None,
        transactional_id: str | None = None,
        cluster: bool = False,
        pattern: str = "literal",
        host: str = "*",
    ) -> Acl:
        """Let ``principal`` (``"User:alice"``, ``"User:*"``) do ``operation`` (``"READ"``,
        ``"WRITE"``, ``"DESCRIBE"``, ``"ALL"``, ...) on one resource (a name, ``"*"``, or with
        ``pattern="prefixed"`` every name starting with it), from ``host`` (``"*"``, an address or
        a CIDR range)."""
        return self._add(Permission.ALLOW, principal, operation, topic, group, transactional_id, cluster, pattern, host)

    def deny(
        self,
        principal: str,
        operation: str | Operation,
        *,
        topic: str | None = None,
        group: str | None = None,
        transactional_id: str | None = None,
        cluster: bool = False,
        pattern: str = "literal",
        host: str = "*",
    ) -> Acl:
        """As :meth:`allow`, a DENY: it wins over every ALLOW that applies."""
        return self._add(Permission.DENY, principal, operation, topic, group, transactional_id, cluster, pattern, host)

    def list(self) -> list[Acl]:
        """Every ACL, as DescribeAcls with a filter matching all would answer."""
        authorizer = self._runtime.state.authorizer
        return self._proxy.read(lambda: list(authorizer.describe(AclFilter())[2]))

    def remove(self, acl: Acl) -> None:
        """Remove one ACL (as DeleteAcls with a filter naming it exactly)."""
        exact = AclFilter(
            acl.resource_type,
            acl.resource_name,
            acl.pattern_type,
            acl.principal,
            acl.host,
            acl.operation,
            acl.permission,
        )
        self._proxy.check_running()
        state = self._runtime.state
        self._proxy.act(lambda: state.authorizer.delete([exact], self._runtime.clock.now_ms()))

    def clear(self) -> None:
        """Remove every ACL."""
        self._proxy.check_running()
        state = self._runtime.state
        self._proxy.act(lambda: state.authorizer.delete([AclFilter()], self._runtime.clock.now_ms()))

    def _add(
        self,
        permission: Permission,
        principal: str,
        operation: str | Operation,
        topic: str | None,
        group: str | None,
        transactional_id: str | None,
        cluster: bool,
        pattern: str,
        host: str,
    ) -> Acl:
        resource_type, name = _resource(topic, group, transactional_id, cluster)
        if pattern not in _PATTERNS:
            raise ClusterUsageError(f"pattern={pattern!r}: the patterns are 'literal' and 'prefixed'")
        acl = Acl(resource_type, name, _PATTERNS[pattern], principal, host, _operation(operation), permission)
        self._proxy.check_running()
        state = self._runtime.state
        ((code, message),) = self._proxy.act(lambda: state.authorizer.create([acl], self._runtime.clock.now_ms()))
        if code != ErrorCode.NONE:
            raise ClusterUsageError(f"ACL {acl} refused: {message or error_code(code).name}")
        return acl

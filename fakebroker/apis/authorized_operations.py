"""The ``authorized_operations`` bit sets answers carry (KIP-430): ``1 << code`` of each
operation (Kafka's AclOperation codes) the principal may do on the resource, among those its
type supports (AclEntry.supportedOperations, in ``core/security/acls.py``). Without an
authorizer, AuthHelper.authorizedOperations answers all of them (the constants below); a client
that did not ask gets INT_MIN (:data:`OMITTED`). With one, ``authz.operations`` asks
``Authorizer.authorized_operations``."""

from __future__ import annotations

from ..core.security.acls import ALL_OPERATIONS_BITS, ResourceType

OMITTED = -(2**31)

# every supported operation: the answer without an authorizer
TOPIC = ALL_OPERATIONS_BITS[ResourceType.TOPIC]  # 3576
GROUP = ALL_OPERATIONS_BITS[ResourceType.GROUP]  # 3400
CLUSTER = ALL_OPERATIONS_BITS[ResourceType.CLUSTER]  # 8096
TRANSACTIONAL_ID = ALL_OPERATIONS_BITS[ResourceType.TRANSACTIONAL_ID]  # DESCRIBE, WRITE, TWO_PHASE_COMMIT

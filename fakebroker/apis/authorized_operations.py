"""The ``authorized_operations`` bit sets answers carry (KIP-430). Kafka's AclOperation codes, and
the operations AclEntry.supportedOperations lists per resource type: without an authorizer,
AuthHelper.authorizedOperations answers all of them; a client that did not ask gets INT_MIN."""

from __future__ import annotations

OMITTED = -(2**31)
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION = 3, 4, 5, 6, 7, 8, 9
DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 10, 11, 12

TOPIC = sum(1 << op for op in (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS))
CLUSTER = sum(
    1 << op for op in (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE)
)
GROUP = sum(1 << op for op in (READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS))

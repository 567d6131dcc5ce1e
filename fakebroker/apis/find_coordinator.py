"""FindCoordinator (key 10): the leader of the group's ``__consumer_offsets`` partition.

A transactional id is placed the same way on ``__transaction_state`` (hashed over
``transaction.state.log.num.partitions``), created on first use as Kafka creates it.

Kafka 4.4 answers the FindCoordinator that finds its internal topic missing
COORDINATOR_NOT_AVAILABLE while the controller creates it (``KafkaApis.getCoordinator``); clients
retry after their backoff. Ours is created at once and answered NONE, unless the broker setting
:data:`FIRST_FIND_UNAVAILABLE` is true: then the request that creates the topic answers
COORDINATOR_NOT_AVAILABLE for its keys and the next one finds the coordinator. It is off by
default because every test on a fresh cluster would wait one client backoff (0.1-1 s) first.

With an authorizer, a GROUP key needs DESCRIBE on the group and a TRANSACTION key DESCRIBE on
the transactional id, checked first (``getCoordinator``): GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_
FAILED for that key (v4+), the whole answer before v4. A SHARE key (brokers asking) needs
CLUSTER_ACTION on the cluster, else the whole request fails CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import base64
import binascii
import re

from ..core.groups.placement import OFFSETS_TOPIC, TRANSACTION_TOPIC, partition_for
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import MESSAGES, denied
from .context import RequestContext
from .registry import api

GROUP, TRANSACTION, SHARE = 0, 1, 2
# a fakebroker setting (FakeCluster(config={...})), not Kafka's: answer the first FindCoordinator
# that creates an internal topic COORDINATOR_NOT_AVAILABLE, as Kafka 4.4 does
FIRST_FIND_UNAVAILABLE = "fakebroker.coordinator.first.find.unavailable"
# Errors.INVALID_REQUEST.message(), which Kafka 4.4 answers for a key type it does not know
MALFORMED = (
    "This most likely occurs because of a request being malformed by the client library or the message "
    "was sent to an incompatible broker. See the broker logs for more details."
)


def handle(ctx: RequestContext, request: Message) -> Message:
    v = ctx.api_version
    key_type = request.key_type if v >= 1 else GROUP
    keys = list(request.coordinator_keys) if v >= 4 else [request.key]
    if key_type == SHARE and v >= 6 and denied(ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED  # thrown: every key fails, with the default text
        found = [{**_error(key, code, v), "error_message": MESSAGES[code]} for key in keys]
        return ctx.response(coordinators=found, throttle_time_ms=0)
    refused = {key: code for key in keys if (code := _authorization_error(ctx, key_type, key))}
    creating = key_type in (GROUP, TRANSACTION) and len(refused) < len(keys) and _creates_internal_topic(ctx, key_type)
    found = [
        _error(key, refused[key], v)
        if key in refused
        else _unavailable(key, v)
        if creating
        else _find(ctx, key, key_type, v)
        for key in keys
    ]
    if v >= 4:
        return ctx.response(coordinators=found, throttle_time_ms=0)
    one = found[0]
    message = "NONE" if one["error_code"] == ErrorCode.NONE else one["error_message"]
    return ctx.response(
        error_code=one["error_code"],
        error_message=message,
        node_id=one["node_id"],
        host=one["host"],
        port=one["port"],
        throttle_time_ms=0,
    )


def _creates_internal_topic(ctx: RequestContext, key_type: int) -> bool:
    """With :data:`FIRST_FIND_UNAVAILABLE`: whether this request finds the key type's internal
    topic missing; it is created now, and the request answers COORDINATOR_NOT_AVAILABLE."""
    cluster = ctx.cluster
    if not cluster.config.get_bool(FIRST_FIND_UNAVAILABLE):
        return False
    name = OFFSETS_TOPIC if key_type == GROUP else TRANSACTION_TOPIC
    if name in cluster.topics:
        return False
    cluster.offsets_topic() if key_type == GROUP else cluster.transaction_topic()
    return True


def _share_key_valid(key: str) -> bool:
    """A share coordinator key as Kafka parses it (``SharePartitionKey``): group, a Uuid in
    URL-safe base64 and a 32-bit partition number, split on ":"."""
    parts = key.split(":")
    while parts and not parts[-1]:  # Java's String.split drops trailing empty strings
        parts.pop()
    if len(parts) != 3 or not parts[0] or not re.fullmatch(r"[+-]?[0-9]+", parts[2]):
        return False
    try:
        topic_id = base64.b64decode(parts[1] + "=" * (-len(parts[1]) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(topic_id) == 16 and -(2**31) <= int(parts[2]) < 2**31


def _authorization_error(ctx: RequestContext, key_type: int, key: str) -> ErrorCode:
    """DESCRIBE on the key's group or transactional id, checked before anything else."""
    if key_type == GROUP and denied(ctx, Operation.DESCRIBE, ResourceType.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION and denied(ctx, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return ErrorCode.NONE


def _error(key: str, code: ErrorCode, version: int) -> dict:
    """A key's error entry: no node; v4+ carry no text, v0-3 (one key: the whole answer) Kafka's
    default text (``prepareOldResponse``)."""
    message = "" if version >= 4 else MESSAGES.get(code, "")
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": message}


def _unavailable(key: str, version: int) -> dict:
    return {
        **_error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, version),
        "error_message": "" if version >= 4 else "The coordinator is not available.",
    }


def _find(ctx: RequestContext, key: str, key_type: int, version: int) -> dict:
    none = {"key": key, "node_id": -1, "host": "", "port": -1}
    if key_type == SHARE and version < 4 or key_type not in (GROUP, TRANSACTION, SHARE):
        return {**none, "error_code": ErrorCode.INVALID_REQUEST, "error_message": MALFORMED}
    if key_type == SHARE and (version < 6 or not _share_key_valid(key)):
        return {**none, "error_code": ErrorCode.INVALID_REQUEST, "error_message": ""}
    cluster = ctx.cluster
    if key_type == TRANSACTION:
        partition = cluster.transaction_topic().partitions[cluster.transactions.placement.partition_of(key)]
    elif key_type == SHARE:  # a share partition's state: "group:topicId:partition"
        topic = cluster.share_state_topic()
        partition = topic.partitions[partition_for(key, len(topic.partitions))]
    else:
        partition = cluster.offsets_topic().partitions[cluster.groups.partition_of(key)]
    broker = cluster.brokers.get(partition.leader)
    if broker is None or not broker.alive:
        return _unavailable(key, version)
    host, port = broker.endpoint(ctx.listener)
    return {
        "key": key,
        "node_id": broker.node_id,
        "host": host,
        "port": port,
        "error_code": ErrorCode.NONE,
        "error_message": "",
    }


API = api(ApiKey.FIND_COORDINATOR, (0, 6), handle)

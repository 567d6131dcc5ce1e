"""Kafka protocol error codes.

The numbering and names follow Apache Kafka's wire protocol as shipped in the
Kafka 4.1-4.3 release lines (codes -1 through 133; 4.0 stops at 129).  Codes,
once assigned, never change meaning, so this table is also correct for older
clients: they simply never see the newer codes.

``retriable`` mirrors whether the Java client's exception class for the code
derives from ``RetriableException`` (directly or via
``RefreshRetriableException`` / ``InvalidMetadataException``).  Note that most
group-membership errors (``UNKNOWN_MEMBER_ID``, ``ILLEGAL_GENERATION``,
``REBALANCE_IN_PROGRESS``, ``MEMBER_ID_REQUIRED``, ``FENCED_INSTANCE_ID``...)
are *not* retriable in that sense: the client reacts by rejoining rather than
by resending the same request.  The coordinator-location errors
(``COORDINATOR_LOAD_IN_PROGRESS``, ``COORDINATOR_NOT_AVAILABLE``,
``NOT_COORDINATOR``) are retriable.

The descriptions are short paraphrases written for this project.
"""

from __future__ import annotations

import enum

from .suggest import close_matches

__all__ = ["ErrorCode", "error_code", "KAFKA_VERSION"]

#: Kafka release line this table was checked against.
KAFKA_VERSION = "4.3"


@enum.unique
class ErrorCode(enum.IntEnum):
    """A Kafka protocol error code (an ``int16`` on the wire)."""

    _retriable: bool
    _description: str

    def __new__(cls, code: int, retriable: bool, description: str) -> ErrorCode:
        obj = int.__new__(cls, code)
        obj._value_ = code
        obj._retriable = retriable
        obj._description = description
        return obj

    @property
    def retriable(self) -> bool:
        """Whether Kafka treats this error as retriable (RetriableException)."""
        return self._retriable

    @property
    def description(self) -> str:
        """One-line human-readable summary of the error."""
        return self._description

    # fmt: off
    UNKNOWN_SERVER_ERROR = (-1, False, "Unexpected server-side error.")
    NONE = (0, False, "No error.")
    OFFSET_OUT_OF_RANGE = (1, False, "Requested offset is outside the log's range.")
    CORRUPT_MESSAGE = (2, True, "Record failed CRC, size or validity checks.")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "Broker does not host this topic-partition.")
    INVALID_FETCH_SIZE = (4, False, "Fetch size is invalid.")
    LEADER_NOT_AVAILABLE = (5, True, "Partition has no leader (election in progress).")
    NOT_LEADER_OR_FOLLOWER = (6, True, "Broker is not the leader or a replica for the partition.")
    REQUEST_TIMED_OUT = (7, True, "Request timed out.")
    BROKER_NOT_AVAILABLE = (8, False, "Broker is not available.")
    REPLICA_NOT_AVAILABLE = (9, True, "Replica is not available for the partition.")
    MESSAGE_TOO_LARGE = (10, False, "Message exceeds the maximum size the broker accepts.")
    STALE_CONTROLLER_EPOCH = (11, False, "Controller epoch is stale; the controller moved.")
    OFFSET_METADATA_TOO_LARGE = (12, False, "Offset commit metadata is too large.")
    NETWORK_EXCEPTION = (13, True, "Connection closed before a response arrived.")
    COORDINATOR_LOAD_IN_PROGRESS = (14, True, "Coordinator is still loading its state.")
    COORDINATOR_NOT_AVAILABLE = (15, True, "Coordinator is not available.")
    NOT_COORDINATOR = (16, True, "Broker is not the coordinator for this key.")
    INVALID_TOPIC_EXCEPTION = (17, False, "Topic is invalid for the requested operation.")
    RECORD_LIST_TOO_LARGE = (18, False, "Record batch exceeds the log segment size.")
    NOT_ENOUGH_REPLICAS = (19, True, "Too few in-sync replicas; write rejected.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True, "Written, but to fewer in-sync replicas than required.")
    INVALID_REQUIRED_ACKS = (21, False, "Invalid acks value in a produce request.")
    ILLEGAL_GENERATION = (22, False, "Group generation id is not current.")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "Member's protocols are incompatible with the group's.")
    INVALID_GROUP_ID = (24, False, "Group id is invalid.")
    UNKNOWN_MEMBER_ID = (25, False, "Coordinator does not know this member id.")
    INVALID_SESSION_TIMEOUT = (26, False, "Session timeout is outside the broker's allowed range.")
    REBALANCE_IN_PROGRESS = (27, False, "Group is rebalancing; the member must rejoin.")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "Offset commit data size is invalid.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "Not authorized to access the topic.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "Not authorized to access the group.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "Not authorized for the cluster operation.")
    INVALID_TIMESTAMP = (32, False, "Record timestamp is outside the acceptable range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "SASL mechanism is not supported by the broker.")
    ILLEGAL_SASL_STATE = (34, False, "Request is not valid in the current SASL state.")
    UNSUPPORTED_VERSION = (35, False, "API version is not supported.")
    TOPIC_ALREADY_EXISTS = (36, False, "Topic already exists.")
    INVALID_PARTITIONS = (37, False, "Invalid number of partitions.")
    INVALID_REPLICATION_FACTOR = (38, False, "Invalid replication factor.")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "Invalid replica assignment.")
    INVALID_CONFIG = (40, False, "Invalid configuration.")
    NOT_CONTROLLER = (41, True, "Broker is not the active controller.")
    INVALID_REQUEST = (42, False, "Malformed or incompatible request.")
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False, "Broker's message format does not support the request.")
    POLICY_VIOLATION = (44, False, "Request violates a configured policy.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "Producer sequence number is out of order.")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "Producer sequence number is a duplicate.")
    INVALID_PRODUCER_EPOCH = (47, False, "Producer epoch is stale.")
    INVALID_TXN_STATE = (48, False, "Operation is invalid in the current transaction state.")
    INVALID_PRODUCER_ID_MAPPING = (49, False, "Producer id is not mapped to this transactional id.")
    INVALID_TRANSACTION_TIMEOUT = (50, False, "Transaction timeout exceeds the broker's maximum.")
    CONCURRENT_TRANSACTIONS = (51, True, "Another operation on the transaction is in progress.")
    TRANSACTION_COORDINATOR_FENCED = (52, False, "Transaction coordinator has been superseded.")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "Not authorized for the transactional id.")
    SECURITY_DISABLED = (54, False, "Security features are disabled.")
    OPERATION_NOT_ATTEMPTED = (55, False, "Operation skipped because another in the batch failed.")
    KAFKA_STORAGE_ERROR = (56, True, "Disk error while accessing the log.")
    LOG_DIR_NOT_FOUND = (57, False, "Log directory is not in the broker's config.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL authentication failed.")
    UNKNOWN_PRODUCER_ID = (59, False, "Broker has no state for this producer id.")
    REASSIGNMENT_IN_PROGRESS = (60, False, "A partition reassignment is in progress.")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "Delegation tokens are disabled.")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "Delegation token not found.")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "Principal is not the token's owner or renewer.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (64, False, "Delegation token requests are not allowed on this channel.")
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "Not authorized for the delegation token.")
    DELEGATION_TOKEN_EXPIRED = (66, False, "Delegation token has expired.")
    INVALID_PRINCIPAL_TYPE = (67, False, "Principal type is not supported.")
    NON_EMPTY_GROUP = (68, False, "Group still has members.")
    GROUP_ID_NOT_FOUND = (69, False, "Group does not exist.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "Fetch session id not found.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "Fetch session epoch is invalid.")
    LISTENER_NOT_FOUND = (72, True, "Leader has no listener matching the request's listener.")
    TOPIC_DELETION_DISABLED = (73, False, "Topic deletion is disabled.")
    FENCED_LEADER_EPOCH = (74, True, "Request's leader epoch is older than the broker's.")
    UNKNOWN_LEADER_EPOCH = (75, True, "Request's leader epoch is newer than the broker's.")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "Client cannot handle the partition's compression type.")
    STALE_BROKER_EPOCH = (77, False, "Broker epoch is stale.")
    OFFSET_NOT_AVAILABLE = (78, True, "Offset not yet available after a leader change.")
    MEMBER_ID_REQUIRED = (79, False, "Member must rejoin using the member id it was given.")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "Preferred leader is not available.")
    GROUP_MAX_SIZE_REACHED = (81, False, "Group has reached its maximum size.")
    FENCED_INSTANCE_ID = (82, False, "Static member fenced by another with the same instance id.")
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "No eligible leader for the partition.")
    ELECTION_NOT_NEEDED = (84, True, "Leader election is not needed.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "No partition reassignment is in progress.")
    GROUP_SUBSCRIBED_TO_TOPIC = (86, False, "Cannot delete offsets of a topic the group is subscribed to.")
    INVALID_RECORD = (87, False, "Record failed broker-side validation.")
    UNSTABLE_OFFSET_COMMIT = (88, True, "Pending transactional offsets must settle first.")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "Throttling quota exceeded.")
    PRODUCER_FENCED = (90, False, "A newer producer with the same transactional id exists.")
    RESOURCE_NOT_FOUND = (91, False, "Referenced resource does not exist.")
    DUPLICATE_RESOURCE = (92, False, "Same resource referenced more than once.")
    UNACCEPTABLE_CREDENTIAL = (93, False, "Credential does not meet the acceptance criteria.")
    INCONSISTENT_VOTER_SET = (94, False, "Sender or receiver is not an expected voter.")
    INVALID_UPDATE_VERSION = (95, False, "Update version is invalid.")
    FEATURE_UPDATE_FAILED = (96, False, "Finalized feature update failed on the server.")
    PRINCIPAL_DESERIALIZATION_FAILURE = (97, False, "Forwarded request's principal could not be deserialized.")
    SNAPSHOT_NOT_FOUND = (98, False, "Snapshot not found.")
    POSITION_OUT_OF_RANGE = (99, False, "Snapshot position is out of range.")
    UNKNOWN_TOPIC_ID = (100, True, "Broker does not host this topic id.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "Broker id is already registered.")
    BROKER_ID_NOT_REGISTERED = (102, False, "Broker id is not registered.")
    INCONSISTENT_TOPIC_ID = (103, True, "Topic id does not match the log's topic id.")
    INCONSISTENT_CLUSTER_ID = (104, False, "Cluster id does not match the server's.")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "Transactional id not found.")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "Inconsistent topic id usage in the fetch session.")
    INELIGIBLE_REPLICA = (107, False, "Proposed ISR contains an ineligible replica.")
    NEW_LEADER_ELECTED = (108, False, "Partition state updated, but the leader changed.")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "Offset has moved to tiered storage.")
    FENCED_MEMBER_EPOCH = (110, False, "Member epoch is fenced; the member must rejoin.")
    UNRELEASED_INSTANCE_ID = (111, False, "Instance id is still held by another group member.")
    UNSUPPORTED_ASSIGNOR = (112, False, "Assignor or its version is not supported by the group.")
    STALE_MEMBER_EPOCH = (113, False, "Member epoch is stale; retry with the updated epoch.")
    MISMATCHED_ENDPOINT_TYPE = (114, False, "Request sent to the wrong endpoint type.")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "Endpoint type is not supported.")
    UNKNOWN_CONTROLLER_ID = (116, False, "Controller id is not known.")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "Telemetry subscription id is unknown or outdated.")
    TELEMETRY_TOO_LARGE = (118, False, "Telemetry push exceeds the size limit.")
    INVALID_REGISTRATION = (119, False, "Broker registration is invalid.")
    TRANSACTION_ABORTABLE = (120, False, "Transaction failed; the client may abort and carry on.")
    INVALID_RECORD_STATE = (121, False, "Record state is invalid; acknowledgement failed.")
    SHARE_SESSION_NOT_FOUND = (122, True, "Share session not found.")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "Share session epoch is invalid.")
    FENCED_STATE_EPOCH = (124, False, "Share-group state epoch does not match.")
    INVALID_VOTER_KEY = (125, False, "Voter key does not match the replica's key.")
    DUPLICATE_VOTER = (126, False, "Voter is already in the voter set.")
    VOTER_NOT_FOUND = (127, False, "Voter is not in the voter set.")
    INVALID_REGULAR_EXPRESSION = (128, False, "Regular expression is invalid.")
    REBOOTSTRAP_REQUIRED = (129, False, "Client metadata is stale; rebootstrap required.")
    STREAMS_INVALID_TOPOLOGY = (130, False, "Streams topology is invalid.")
    STREAMS_INVALID_TOPOLOGY_EPOCH = (131, False, "Streams topology epoch is invalid.")
    STREAMS_TOPOLOGY_FENCED = (132, False, "Streams topology epoch is outdated.")
    SHARE_SESSION_LIMIT_REACHED = (133, True, "Share session limit reached.")
    GROUP_DELETION_FAILED = (
        134, False, "DeleteGroups could not complete; see the error message on the per-group result for details."
    )
    STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED = (
        135, False,
        "The broker could not process the topology description update; see the error message for details.",
    )
    CONTROLLER_ID_NOT_REGISTERED = (136, False, "The given controller ID was not registered.")
    # fmt: on


_BY_NAME: dict[str, ErrorCode] = {member.name: member for member in ErrorCode}
_BY_CODE: dict[int, ErrorCode] = {member.value: member for member in ErrorCode}


def error_code(name_or_code: str | int) -> ErrorCode:
    """Resolve a Kafka error by name (case-insensitive) or numeric code.

    Accepts an :class:`ErrorCode`, an ``int``, a Kafka error name such as
    ``"not_coordinator"``, or a numeric string such as ``"16"``.  Raises
    :class:`ValueError` for unknown names or codes (the message lists the
    valid names) and :class:`TypeError` for other argument types.
    """
    if isinstance(name_or_code, ErrorCode):
        return name_or_code
    if isinstance(name_or_code, bool):
        raise TypeError("error_code() expects a Kafka error name or int code, not bool")
    if isinstance(name_or_code, int):
        try:
            return _BY_CODE[name_or_code]
        except KeyError:
            raise ValueError(
                f"unknown Kafka error code {name_or_code}; valid codes are {min(ErrorCode)}..{max(ErrorCode)}"
            ) from None
    if isinstance(name_or_code, str):
        text = name_or_code.strip()
        try:
            number = int(text)
        except ValueError:
            pass
        else:
            return error_code(number)
        key = text.upper().replace("-", "_").replace(" ", "_")
        member = _BY_NAME.get(key)
        if member is not None:
            return member
        close = close_matches(key, _BY_NAME, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown Kafka error name {name_or_code!r}.{hint} Valid names: {', '.join(_BY_NAME)}")
    raise TypeError(f"error_code() expects a Kafka error name or int code, not {type(name_or_code).__name__}")

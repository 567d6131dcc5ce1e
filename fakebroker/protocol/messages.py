"""The registry of every Kafka message: typed classes and per-version codecs.

>>> from fakebroker.protocol import messages
>>> heartbeat = messages.request_type(12)           # HeartbeatRequest
>>> body = heartbeat.encode({"group_id": "g", "generation_id": 1, "member_id": "m"}, version=3)
>>> heartbeat.decode(body, version=3).group_id
'g'
"""

from __future__ import annotations

import enum
import io
from functools import cache
from typing import Any

import construct as c

from .errors import DecodeError, EncodeError, UnsupportedVersionError
from .schema import ClassBuilder, FieldInfo, Message, StructCodec, build_codec
from .specs import SpecFamily, families


class ApiKey(enum.IntEnum):
    """Every API key by name, the one place the numbers are written (``api_keys()`` reads the
    same keys from the specs; a test keeps the two equal). An ``int``: it goes on the wire as is.

    >>> ApiKey.PRODUCE, ApiKey(18).name
    (<ApiKey.PRODUCE: 0>, 'API_VERSIONS')
    """

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92
    STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = 93


class MessageType:
    """One message (e.g. ``JoinGroupRequest``) across all the versions fakebroker knows."""

    def __init__(self, family: SpecFamily):
        self.family = family
        self.name = family.name
        self.api_key = family.api_key
        self.kind = family.type  # request | response | header | data
        self.versions: tuple[int, ...] = tuple(family.versions)
        self._classes = ClassBuilder(family)
        self.cls: type[Message] = self._classes.message_class(family.name)
        self._codecs: dict[int, StructCodec] = {}

    def __repr__(self) -> str:
        return (
            f"<MessageType {self.name} v{self.versions[0]}-{self.versions[-1]}>"
            if self.versions
            else f"<MessageType {self.name}>"
        )

    @property
    def structs(self) -> dict[str, type[Message]]:
        """Every class of this message by struct name, the message's own included."""
        return dict(self._classes.classes)

    def is_flexible(self, version: int) -> bool:
        return version in self.family.spec(version).flexible_versions

    def new(self, **values: Any) -> Message:
        """A message with the given fields and spec defaults for the rest."""
        return self.cls(**values)

    def codec(self, version: int) -> StructCodec:
        """The construct that reads and writes this message at ``version`` (built once, cached)."""
        codec = self._codecs.get(version)
        if codec is None:
            if version not in self.family.by_version:
                raise UnsupportedVersionError(f"{self.name} has no version {version} (known: {list(self.versions)})")
            codec = self._codecs[version] = build_codec(self.family.spec(version), self._classes, version)
        return codec

    def fields(self, version: int) -> list[dict[str, Any]]:
        """The spec's field list (raw JSON dicts) for the file that defines ``version``."""
        return self.family.spec(version).fields

    def decode(self, data: bytes | bytearray | memoryview, version: int, *, strict: bool = False) -> Message:
        """Decode a message body. Like Kafka, bytes left over at the end are ignored unless ``strict``."""
        stream = io.BytesIO(data)
        try:
            msg: Message = self.codec(version)._parsereport(stream, c.Container(), self.name)
            if strict and stream.tell() != len(data):
                raise ValueError(f"{len(data) - stream.tell()} bytes left over after the message")
            return msg
        except UnsupportedVersionError:
            raise
        except (c.ConstructError, ValueError, OverflowError, UnicodeDecodeError, IndexError, TypeError) as exc:
            raise DecodeError(self.name, self.api_key, version, stream.tell(), _reason(exc)) from None

    def decode_from(self, stream: io.BytesIO, version: int) -> Message:
        """Decode from a stream positioned at the body (the headers module uses this)."""
        try:
            msg: Message = self.codec(version)._parsereport(stream, c.Container(), self.name)
            return msg
        except UnsupportedVersionError:
            raise
        except (c.ConstructError, ValueError, OverflowError, UnicodeDecodeError, IndexError, TypeError) as exc:
            raise DecodeError(self.name, self.api_key, version, stream.tell(), _reason(exc)) from None

    def encode(self, value: Message | dict[str, Any], version: int) -> bytes:
        """Encode a message (or a dict of its fields) at ``version``.

        Fields the version does not carry are left out, as Kafka does for ``ignorable`` ones.
        """
        stream = io.BytesIO()
        self.encode_into(stream, value, version)
        return stream.getvalue()

    def encode_into(self, stream: io.BytesIO, value: Message | dict[str, Any], version: int) -> None:
        if isinstance(value, dict):
            value = self.cls.from_dict(value)
        elif not isinstance(value, self.cls):
            raise EncodeError(f"{self.name} cannot encode a {type(value).__name__}")
        try:
            self.codec(version)._build(value, stream, c.Container(), self.name)
        except UnsupportedVersionError:
            raise
        except (
            c.ConstructError,
            ValueError,
            OverflowError,
            TypeError,
            AttributeError,
            UnicodeEncodeError,
            KeyError,
        ) as exc:
            raise EncodeError(f"cannot encode {self.name} v{version}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    trail = getattr(exc, "kafka_path", None)
    where = f" in {' <- '.join(trail)}" if trail else ""
    return f"{type(exc).__name__}{where}: {text}"


@cache
def message_type(name: str) -> MessageType:
    """Any message by its spec name: ``"FetchResponse"``, ``"ConsumerProtocolAssignment"``, ..."""
    try:
        return MessageType(families()[name])
    except KeyError:
        raise UnsupportedVersionError(f"no message named {name!r}") from None


@cache
def _by_key() -> dict[tuple[int, str], str]:
    return {(f.api_key, f.type): f.name for f in families().values() if f.api_key is not None}


def request_type(api_key: int) -> MessageType:
    """The request message of an API key."""
    try:
        return message_type(_by_key()[(api_key, "request")])
    except KeyError:
        raise UnsupportedVersionError(f"unknown API key {api_key}") from None


def response_type(api_key: int) -> MessageType:
    """The response message of an API key."""
    try:
        return message_type(_by_key()[(api_key, "response")])
    except KeyError:
        raise UnsupportedVersionError(f"unknown API key {api_key}") from None


def api_keys() -> dict[int, str]:
    """API key -> API name (``0: "Produce"``) for every key some shipped spec defines."""
    return {key: name[: -len("Request")] for (key, kind), name in sorted(_by_key().items()) if kind == "request"}


def api_versions(api_key: int) -> tuple[int, ...]:
    """Every version of an API that fakebroker can read and write (the 3.9 and 4.3.1 union)."""
    return request_type(api_key).versions


def all_message_names() -> list[str]:
    return sorted(families())


__all__ = [
    "ApiKey",
    "MessageType",
    "Message",
    "FieldInfo",
    "message_type",
    "request_type",
    "response_type",
    "api_keys",
    "api_versions",
    "all_message_names",
]

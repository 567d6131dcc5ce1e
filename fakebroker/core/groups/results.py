"""What the classic coordinator answers: typed results the API handlers turn into responses."""

from __future__ import annotations

from dataclasses import field

from ...lazy_dataclasses import dataclass
from ...protocol.error_codes import ErrorCode


@dataclass(frozen=True)
class JoinedMember:
    """A member as the leader's JoinGroup answer lists it (the selected protocol's metadata)."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class LeaveResult:
    """The top-level error and one error per member named, in the request's order."""

    error: ErrorCode
    members: list[ErrorCode] = field(default_factory=list)


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    """DescribeGroups' view of one group; a missing group is GROUP_ID_NOT_FOUND in state Dead."""

    error: ErrorCode
    state: str
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


def join_error(error: ErrorCode, member_id: str = "") -> JoinResult:
    return JoinResult(error, member_id)


def sync_error(error: ErrorCode) -> SyncResult:
    return SyncResult(error)


@dataclass(frozen=True)
class HeartbeatResult:
    """A KIP-848 consumer or a share group heartbeat's answer."""

    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict[str, set[int]] | None = None  # None: unchanged since the member was last told


class HeartbeatError(Exception):
    """Raised inside a heartbeat's checks: the answer is this error (and message)."""

    def __init__(self, error: ErrorCode, message: str | None = None):
        super().__init__(message or error.name)
        self.error = error
        self.message = message

"""What a group request asks of the group service, typed: the handlers fill these from the
decoded request (versions already applied) and the service and the coordinators read them.
The answers are in ``results.py``."""

from __future__ import annotations

from ...lazy_dataclasses import dataclass

# topic name -> partitions
Assignment = dict[str, set[int]]


@dataclass(frozen=True)
class JoinRequest:
    """JoinGroup. ``rebalance_timeout_ms`` is the session timeout for v0, which has none."""

    group_id: str | None
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    version: int


@dataclass(frozen=True)
class SyncRequest:
    """SyncGroup. ``protocol_type`` and ``protocol_name`` are None before v5."""

    group_id: str | None
    member_id: str
    group_instance_id: str | None
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]
    version: int


@dataclass(frozen=True)
class HeartbeatRequest:
    """A classic member's Heartbeat."""

    group_id: str | None
    member_id: str
    group_instance_id: str | None
    generation_id: int


@dataclass(frozen=True)
class LeaveRequest:
    """LeaveGroup: (member id, instance id) pairs, one for v0-2."""

    group_id: str | None
    members: list[tuple[str, str | None]]


@dataclass(frozen=True)
class ConsumerHeartbeatRequest:
    """ConsumerGroupHeartbeat (KIP-848). ``owned`` is None when the request sent no partitions,
    topic ids already named; ``subscribed_regex`` is None before v1."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_names: list[str] | None
    subscribed_regex: str | None
    server_assignor: str | None
    owned: Assignment | None
    client_id: str
    client_host: str
    version: int
    principal: str | None = None  # who sent it: a regex resolves to the topics it may describe


@dataclass(frozen=True)
class CommitRequest:
    """Who commits offsets for a group: OffsetCommit (``generation_id`` is the member epoch for
    a KIP-848 member; -1 and no member for an admin or a simple consumer) or TxnOffsetCommit
    (``transactional``; ``precise_errors`` from v6, KIP-1319)."""

    group_id: str | None
    member_id: str
    group_instance_id: str | None
    generation_id: int
    version: int
    transactional: bool = False
    precise_errors: bool = False

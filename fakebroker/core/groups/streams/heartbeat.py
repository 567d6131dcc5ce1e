"""What a StreamsGroupHeartbeat asks and what the coordinator answers, and the request checks
``GroupCoordinatorService.streamsGroupHeartbeat`` makes before the coordinator is asked."""

from __future__ import annotations

from ....lazy_dataclasses import dataclass
from ....protocol.error_codes import ErrorCode as E
from ..results import HeartbeatError
from .model import STATIC_LEAVE_EPOCH, Task, Tasks
from .topology import TopicToCreate, Topology

# (host, port) -> its active and standby partitions, topic -> partitions
Endpoint = tuple[tuple[str, int], dict[str, list[int]], dict[str, list[int]]]


@dataclass(frozen=True)
class StreamsHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = -1
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active_tasks: frozenset[Task] | None = None
    standby_tasks: frozenset[Task] | None = None
    warmup_tasks: frozenset[Task] | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] | None = None
    task_offsets: dict[Task, int] | None = None
    task_end_offsets: dict[Task, int] | None = None
    shutdown_application: bool = False
    uses_regex: bool = False  # a subtopology names a SourceTopicRegex
    client_id: str = ""
    client_host: str = ""
    version: int = 0

    def owned(self) -> Tasks | None:
        if self.active_tasks is None or self.standby_tasks is None or self.warmup_tasks is None:
            return None
        return Tasks(self.active_tasks, self.standby_tasks, self.warmup_tasks)


@dataclass(frozen=True)
class StreamsHeartbeatResult:
    error: E
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    task_offset_interval_ms: int = 0
    acceptable_recovery_lag: int = -1
    statuses: tuple[tuple[int, str], ...] = ()
    tasks: Tasks | None = None  # None: unchanged since the member was last told
    endpoint_epoch: int = 0
    endpoints: tuple[Endpoint, ...] | None = None
    to_create: tuple[TopicToCreate, ...] = ()


def validate(req: StreamsHeartbeatRequest) -> None:
    """GroupCoordinatorService's checks (§2.3 #7-13), before the coordinator is asked."""
    bad = E.INVALID_REQUEST
    if req.uses_regex:
        raise HeartbeatError(bad, "Regular expressions for source topics are not supported yet.")
    if not req.member_id.strip():
        raise HeartbeatError(bad, "MemberId can't be empty.")
    if not req.group_id.strip():
        raise HeartbeatError(bad, "GroupId can't be empty.")
    if req.instance_id is not None and not req.instance_id.strip():
        raise HeartbeatError(bad, "InstanceId can't be empty.")
    if req.rack_id is not None and not req.rack_id.strip():
        raise HeartbeatError(bad, "RackId can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise HeartbeatError(bad, "RebalanceTimeoutMs must be provided in first request.")
        for name, tasks in (
            ("ActiveTasks", req.active_tasks),
            ("StandbyTasks", req.standby_tasks),
            ("WarmupTasks", req.warmup_tasks),
        ):
            if tasks is None or tasks:
                raise HeartbeatError(bad, f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            raise HeartbeatError(bad, "Topology must be non-null when (re-)joining.")
        for sub in req.topology.subtopologies:
            for info in sub.state_changelog_topics:
                if info.partitions != 0:
                    raise HeartbeatError(
                        E.STREAMS_INVALID_TOPOLOGY,
                        f"Changelog topic {info.name} must have an undefined partition count, "
                        f"but it is set to {info.partitions}.",
                    )
    elif req.member_epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            raise HeartbeatError(bad, "InstanceId can't be null.")
    elif req.member_epoch < STATIC_LEAVE_EPOCH:
        raise HeartbeatError(bad, f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2.")
    lists = (req.active_tasks, req.standby_tasks, req.warmup_tasks)
    if any(t is not None for t in lists) and not all(t is not None for t in lists):
        raise HeartbeatError(bad, "If one task-type is non-null, all must be non-null.")
    if req.member_epoch != 0 and req.topology is not None:
        raise HeartbeatError(bad, "Topology can only be provided when (re-)joining.")

"""Who may commit offsets for a group: the group-level checks of OffsetCommit and
TxnOffsetCommit, per group type, in Kafka's order (``validateOffsetCommit``,
``validateTransactionalOffsetCommit``). The group service picks the function for the group's
type; the offsets themselves are ``offsets.py``'s."""

from __future__ import annotations

from ...protocol.error_codes import ErrorCode as E
from .classic.coordinator import GroupCoordinator
from .classic.model import ClassicGroup, GroupState
from .consumer.model import ConsumerGroup
from .requests import CommitRequest

S = GroupState


def classic_commit_error(coord: GroupCoordinator, now_ms: int, req: CommitRequest) -> E:
    """OffsetCommit to a classic group (or to no group yet: a simple consumer's commit with
    generation -1 makes an offsets-only group)."""
    group_id = req.group_id
    if group_id is None:
        return E.INVALID_GROUP_ID
    group = coord.groups.get(group_id)
    if group is None:
        if req.generation_id < 0:
            coord.create_simple_group(group_id, now_ms)
            return E.NONE
        return E.GROUP_ID_NOT_FOUND if req.version >= 9 else E.ILLEGAL_GENERATION
    if group.is_state(S.DEAD):
        return E.COORDINATOR_NOT_AVAILABLE
    if req.generation_id < 0 and group.is_state(S.EMPTY):
        return E.NONE
    if req.generation_id >= 0 or req.member_id or req.group_instance_id:
        error = _member_at_generation(coord, group, req)
        if error:
            return error
    elif not group.is_state(S.EMPTY):
        return E.UNKNOWN_MEMBER_ID
    if group.is_state(S.COMPLETING_REBALANCE):
        return E.REBALANCE_IN_PROGRESS
    member = group.members.get(req.member_id)
    if member is not None and group.is_state(S.STABLE, S.PREPARING_REBALANCE):
        coord.keep_alive(group, member, now_ms)  # a commit counts as a heartbeat
    return E.NONE


def classic_txn_commit_error(coord: GroupCoordinator, now_ms: int, req: CommitRequest) -> E:
    """TxnOffsetCommit to a classic group (KIP-447): the producer's view of the group must be
    current, so a zombie that lost its partitions in a rebalance cannot commit.
    ``precise_errors`` (v6, KIP-1319): a missing group is GROUP_ID_NOT_FOUND, where older
    versions answer ILLEGAL_GENERATION."""
    assert req.group_id is not None
    group = coord.groups.get(req.group_id)
    if group is None:
        if req.generation_id < 0:
            coord.create_simple_group(req.group_id, now_ms)
            return E.NONE
        return E.GROUP_ID_NOT_FOUND if req.precise_errors else E.ILLEGAL_GENERATION
    if group.is_state(S.DEAD):
        return E.COORDINATOR_NOT_AVAILABLE
    if req.generation_id < 0 and group.is_state(S.EMPTY):
        return E.NONE
    if req.generation_id >= 0 or req.member_id or req.group_instance_id:
        return _member_at_generation(coord, group, req)
    return E.NONE


def consumer_txn_commit_error(group: ConsumerGroup, req: CommitRequest) -> E:
    """TxnOffsetCommit to a KIP-848 group: the member and its epoch. A stale epoch is
    STALE_MEMBER_EPOCH from v6 for a consumer-protocol member, ILLEGAL_GENERATION before (which
    older producers understand) and for a classic member."""
    if req.generation_id < 0 and not group.members:
        return E.NONE
    if req.generation_id == -1 and not req.member_id and req.group_instance_id is None:
        return E.NONE  # a producer that is not a member (no group metadata)
    member = group.members.get(req.member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if req.generation_id <= member.member_epoch:
        return E.NONE  # an older epoch is judged per partition
    return E.STALE_MEMBER_EPOCH if req.precise_errors and not member.is_classic else E.ILLEGAL_GENERATION


def _member_at_generation(coord: GroupCoordinator, group: ClassicGroup, req: CommitRequest) -> E:
    """The member is the group's (and holds its instance id) at the group's generation."""
    error = coord.validate_member(group, req.member_id, req.group_instance_id)
    if error:
        return error
    return E.ILLEGAL_GENERATION if req.generation_id != group.generation_id else E.NONE

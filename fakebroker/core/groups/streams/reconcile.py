"""A member's reconciliation towards its target tasks (Kafka's streams ``CurrentAssignmentBuilder``):
tasks it must give up are revoked first (UNREVOKED_TASKS until its heartbeat no longer owns
them), then it gets the tasks no other member still holds (UNRELEASED_TASKS while some are
held elsewhere, or by a member of its own process), then STABLE at the assignment epoch."""

from __future__ import annotations

from .model import EMPTY, MemberState, StreamsGroup, StreamsMember, Tasks


def revocation_done(member: StreamsMember, owned: Tasks | None) -> bool:
    """The member's heartbeat no longer owns any task it was asked to revoke."""
    r = member.revoking
    return not (owned is None or (owned.active & r.active) or (owned.standby & r.standby) or (owned.warmup & r.warmup))


def finish_revocation(member: StreamsMember) -> None:
    for task in member.revoking.active:
        member.active_epochs.pop(task, None)
    member.revoking = EMPTY
    member.state = MemberState.STABLE


def advance(group: StreamsGroup, member: StreamsMember, *, force: bool = False) -> MemberState | None:
    """Moves ``member``'s tasks and epoch towards the group's target (``CurrentAssignmentBuilder``):
    revoke first, then grant what no other member still holds. Returns the member's new state,
    None when it is already there."""
    epoch = group.assignment_epoch
    if not force and member.member_epoch == epoch and member.state == MemberState.STABLE:
        return None
    cur = member.assigned
    target = group.target.get(member.member_id, EMPTY)
    revoke_active = cur.active - target.active
    revoke_standby = cur.standby - target.standby - target.active - target.warmup
    revoke_warmup = cur.warmup - target.warmup - target.active - target.standby
    # in place: standby <-> warm-up now; a promoted standby/warm-up stays until the active is granted
    standby = (cur.standby | cur.warmup) & target.standby
    warmup = (cur.standby | cur.warmup) & target.warmup
    promoted_s = cur.standby & target.active
    promoted_w = cur.warmup & target.active
    if revoke_active or revoke_standby or revoke_warmup:
        # an own active demoted to standby/warm-up gets that role now; the active is revoked first
        member.assigned = Tasks(
            cur.active & target.active,
            standby | (revoke_active & target.standby) | promoted_s,
            warmup | (revoke_active & target.warmup) | promoted_w,
        )
        member.revoking = Tasks(revoke_active, revoke_standby, revoke_warmup)
        return MemberState.UNREVOKED_TASKS
    others = [m for m in group.members.values() if m.member_id != member.member_id]
    same_process = [m for m in others if m.process_id == member.process_id]
    held_active = {t for m in others for t in m.assigned.active | m.revoking.active}
    held_local = {t for m in same_process for t in m.assigned.all() | m.revoking.all()}
    added_active = {t for t in target.active - cur.active if t not in held_active and t not in held_local}
    withheld = bool(target.active - cur.active - added_active)
    new_standby, new_warmup = set(standby), set(warmup)
    for role, wanted in ((new_standby, target.standby), (new_warmup, target.warmup)):
        for t in wanted - cur.all():
            if t in held_local:
                withheld = True
            else:
                role.add(t)
    kept_promoted_s = promoted_s - added_active
    kept_promoted_w = promoted_w - added_active
    member.assigned = Tasks(
        frozenset((cur.active & target.active) | added_active),
        frozenset(new_standby | kept_promoted_s),
        frozenset(new_warmup | kept_promoted_w),
    )
    for task in added_active:
        member.active_epochs[task] = epoch
    for task in list(member.active_epochs):
        if task not in member.assigned.active:
            del member.active_epochs[task]
    if member.member_epoch != epoch:
        member.previous_epoch, member.member_epoch = member.member_epoch, epoch
    return MemberState.UNRELEASED_TASKS if withheld else MemberState.STABLE

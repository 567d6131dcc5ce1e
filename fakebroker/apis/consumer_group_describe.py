"""ConsumerGroupDescribe (key 69): KIP-848 groups with epochs, current and target assignments."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message
from . import authorized_operations as ops
from .common import coordinator_error
from .context import RequestContext
from .registry import api

AUTHORIZED_OPERATIONS_OMITTED = ops.OMITTED
GROUP_OPERATIONS = ops.GROUP
CONSUMER_MEMBER = 1  # MemberType: 0 classic (in a consumer group), 1 consumer


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    out = []
    for group_id in request.group_ids:
        entry = {
            "group_id": group_id,
            "group_state": "",
            "group_epoch": 0,
            "assignment_epoch": 0,
            "assignor_name": "",
            "members": [],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }
        error = coordinator_error(ctx, group_id)
        group = cluster.consumer_groups.groups.get(group_id)
        if not error and (group is None or group.dead):
            out.append(
                {**entry, "error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": f"Group {group_id} not found."}
            )
            continue
        if error:
            out.append({**entry, "error_code": error})
            continue
        assert group is not None
        assignor = next((m.server_assignor for m in group.members.values() if m.server_assignor), None)
        members = [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_names),
                "subscribed_topic_regex": m.subscribed_regex or "",  # Kafka's member record has "" for none
                "assignment": {"topic_partitions": _partitions(cluster, m.assigned)},
                "target_assignment": {"topic_partitions": _partitions(cluster, group.target.get(m.member_id, {}))},
                "member_type": CONSUMER_MEMBER,
            }
            for m in group.members.values()
        ]
        out.append(
            {
                **entry,
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "group_state": group.state.value,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": assignor or cluster.consumer_groups.assignors()[0],
                "members": members,
                "authorized_operations": GROUP_OPERATIONS
                if request.include_authorized_operations
                else AUTHORIZED_OPERATIONS_OMITTED,
            }
        )
    return ctx.response(groups=out, throttle_time_ms=0)


def _partitions(cluster, assignment: dict[str, set[int]]) -> list[dict]:
    return [
        {"topic_id": cluster.topics[t].topic_id, "topic_name": t, "partitions": sorted(ps)}
        for t, ps in sorted(assignment.items())
        if t in cluster.topics and ps
    ]


API = api(69, (0, 1), handle)

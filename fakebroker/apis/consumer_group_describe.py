"""ConsumerGroupDescribe (key 69): KIP-848 groups with epochs, current and target assignments."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from . import authorized_operations as ops
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
        found = cluster.groups.describe_consumer(ctx.broker_id, group_id)
        group = found.group
        if found.error == ErrorCode.GROUP_ID_NOT_FOUND:
            out.append({**entry, "error_code": found.error, "error_message": f"Group {group_id} not found."})
            continue
        if found.error or group is None:
            out.append({**entry, "error_code": found.error})
            continue
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
                "assignor_name": found.assignor,
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


API = api(ApiKey.CONSUMER_GROUP_DESCRIBE, (0, 1), handle)

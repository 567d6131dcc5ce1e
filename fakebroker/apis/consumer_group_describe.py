"""ConsumerGroupDescribe (key 69): KIP-848 groups with epochs, current and target assignments.

With an authorizer (as ``KafkaApis``): DESCRIBE per group (the refused ones answered first,
GROUP_AUTHORIZATION_FAILED), ``authorized_operations`` from the authorizer, and a group whose
members' current or target assignments name a topic the principal may not DESCRIBE becomes
TOPIC_AUTHORIZATION_FAILED with :data:`UNDESCRIBABLE_TOPICS` and nothing else."""

from __future__ import annotations

from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from . import authorized_operations as ops
from .authz import allowed_names, operations, split
from .context import RequestContext
from .registry import api

AUTHORIZED_OPERATIONS_OMITTED = ops.OMITTED
CONSUMER_MEMBER = 1  # MemberType: 0 classic (in a consumer group), 1 consumer
UNDESCRIBABLE_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def handle(ctx: RequestContext, request: Message) -> Message:
    cluster = ctx.cluster
    allowed, refused = split(ctx, Operation.DESCRIBE, ResourceType.GROUP, request.group_ids, lambda g: g)
    out: list[dict] = [group_error(g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in refused]
    for group_id in allowed:
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
            # Kafka's text for a streams group's id: it exists, as another type
            streams = cluster.groups.made("streams") and cluster.groups.streams.live(group_id) is not None
            what = "is not a consumer group" if streams else "not found"
            out.append({**entry, "error_code": found.error, "error_message": f"Group {group_id} {what}."})
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
                "authorized_operations": operations(ctx, ResourceType.GROUP, group_id)
                if request.include_authorized_operations
                else AUTHORIZED_OPERATIONS_OMITTED,
            }
        )
    return ctx.response(groups=hide_undescribable(ctx, out, ("assignment", "target_assignment")), throttle_time_ms=0)


def group_error(group_id: str | None, code: ErrorCode, message: str | None = None) -> dict:
    """A described group that is only an error (Kafka's new ``DescribedGroup`` with its defaults)."""
    return {
        "group_id": group_id,
        "error_code": code,
        "error_message": message,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def hide_undescribable(ctx: RequestContext, groups: list[dict], assignments: tuple[str, ...]) -> list[dict]:
    """The described groups, each naming in its members' ``assignments`` a topic the principal may
    not DESCRIBE replaced by TOPIC_AUTHORIZATION_FAILED (ConsumerGroupDescribe, ShareGroupDescribe)."""

    def topics(group: dict) -> list[str]:
        return [
            tp["topic_name"] for m in group["members"] for kind in assignments for tp in m[kind]["topic_partitions"]
        ]

    shown = allowed_names(ctx, Operation.DESCRIBE, ResourceType.TOPIC, (t for g in groups for t in topics(g)))
    return [
        group_error(g["group_id"], ErrorCode.TOPIC_AUTHORIZATION_FAILED, UNDESCRIBABLE_TOPICS)
        if any(t not in shown for t in topics(g))
        else g
        for g in groups
    ]


def _partitions(cluster, assignment: dict[str, set[int]]) -> list[dict]:
    return [
        {"topic_id": cluster.topics[t].topic_id, "topic_name": t, "partitions": sorted(ps)}
        for t, ps in sorted(assignment.items())
        if t in cluster.topics and ps
    ]


API = api(ApiKey.CONSUMER_GROUP_DESCRIBE, (0, 1), handle)
